import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../../core/names/names.ts';
import type { Decision, RouteContext } from '../../core/plugins/contract.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { builtinPlugins } from '../registry.ts';
import type { Tenant } from '../../core/tenancy/tenant.ts';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';
import plugin, { buildVNode, CONFIG_SCHEMA, nodesPlugin, PODS_BY_NODE, type Node } from './index.ts';

const KEY = testTenant().key;
const OTHER = 'team-b-4d5e6f-prod';
const NOW = new Date('2026-01-01T00:10:00Z');
const ago = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString();

const superNode: Node = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'node-1',
    uid: 'super-node-uid',
    resourceVersion: '99',
    labels: {
      'kubernetes.io/hostname': 'node-1',
      'kubernetes.io/os': 'linux',
      'topology.kubernetes.io/zone': 'z1',
      'node-role.kubernetes.io/control-plane': '',
      'pool.platform.example/tenants': 'gold',
      'platform.example/rack': 'r12',
    },
    annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'csi.volume.kubernetes.io/nodeid': '{"ebs":"i-0abc"}' },
  },
  spec: {
    podCIDR: '10.244.1.0/24',
    providerID: 'aws:///eu-west-1a/i-0abc',
    taints: [
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' },
    ],
  },
  status: {
    conditions: [
      { type: 'MemoryPressure', status: 'True', reason: 'KubeletHasInsufficientMemory' },
      { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure' },
      { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID' },
      { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    ],
    capacity: { cpu: '8', memory: '32Gi', pods: '110' },
    allocatable: { cpu: '7800m', memory: '31Gi', pods: '110' },
    nodeInfo: {
      machineID: 'ec2a8f0e4b1d',
      systemUUID: 'ec2a8f0e-4b1d-0000-0000-000000000000',
      bootID: 'b0b0b0b0-0000-0000-0000-000000000000',
      kernelVersion: '5.15.0-1051-aws',
      osImage: 'Ubuntu 22.04.3 LTS',
      containerRuntimeVersion: 'containerd://1.7.2',
      kubeletVersion: 'v1.36.3',
      kubeProxyVersion: 'v1.36.3',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
    addresses: [
      { type: 'InternalIP', address: '192.168.0.11' },
      { type: 'ExternalIP', address: '203.0.113.7' },
      { type: 'Hostname', address: 'node-1.super.example' },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    images: [{ names: ['other-tenant/secret-image:1'], sizeBytes: 1 }],
    volumesInUse: ['kubernetes.io/csi/ebs^vol-other-tenant'],
    volumesAttached: [{ name: 'kubernetes.io/csi/ebs^vol-other-tenant', devicePath: '/dev/xvdf' }],
    config: { active: { configMap: { name: 'kubelet-config', namespace: 'kube-system' } } },
    runtimeHandlers: [{ name: 'kata', features: {} }],
  },
};

/** hiddenInfo is what the tenant apiserver stores for the nodeInfo fields a vNode hides: empty strings. */
const hiddenInfo = {
  machineID: '',
  systemUUID: '',
  bootID: '',
  kernelVersion: '',
  osImage: '',
  containerRuntimeVersion: '',
  kubeProxyVersion: '',
};

/** mirrored is the vNode of superNode: what every rule that keeps a vNode expects. */
const mirrored = (
  o: {
    host?: string;
    port?: number;
    extraMeta?: Record<string, unknown>;
    extraLabels?: Record<string, string>;
    /** the tenant's forced tolerations tolerate the node's taint, which the vNode then leaves out */
    untainted?: boolean;
  } = {},
): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'node-1',
    labels: {
      'kubernetes.io/hostname': 'node-1',
      'kubernetes.io/os': 'linux',
      'topology.kubernetes.io/zone': 'z1',
      ...o.extraLabels,
      'tenancy.x-k8s.io/vnode': 'true',
    },
    ...o.extraMeta,
  },
  spec: o.untainted ? {} : { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
  status: {
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
    capacity: { cpu: '8', memory: '32Gi', pods: '110' },
    allocatable: { cpu: '7800m', memory: '31Gi', pods: '110' },
    nodeInfo: { ...hiddenInfo, kubeletVersion: 'v1.36.3', operatingSystem: 'linux', architecture: 'amd64' },
    addresses: [
      { type: 'InternalIP', address: o.host ?? '192.168.0.11' },
      { type: 'Hostname', address: 'node-1' },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: o.port ?? 10550 } },
  },
});

/** written labels a mirror as the syncer wrote it in the tenant (the core adds the managed-by label). */
const written = (n: Node): Node => {
  n.metadata!.labels = { ...n.metadata!.labels, [LABEL.managedBy]: MANAGER };
  return n;
};

/** existing is a vNode as read from the tenant, with fields the tenant apiserver set. */
const existing = (annotations?: Record<string, string>): Node => {
  const n = written(
    mirrored({ extraMeta: { uid: 'vnode-uid', resourceVersion: '5', ...(annotations ? { annotations } : {}) } }),
  );
  n.status!.capacity = { cpu: '4' };
  return n;
};

/** tenantMade is a Node the tenant created itself under a super node's name, as the tenant apiserver returns it. */
const tenantMade = (labels?: Record<string, string>): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'node-1', uid: 'own-uid', resourceVersion: '3', ...(labels ? { labels } : {}) },
  spec: {},
  status: {},
});

const tenantPodOn = (node: string | undefined): Pod => ({
  metadata: { name: 'web', namespace: 'default', uid: 't1' },
  spec: { containers: [{ name: 'c' }], ...(node ? { nodeName: node } : {}) },
});

const superPodOn = (node: string, cluster: string): Pod => ({
  metadata: {
    name: 'web',
    namespace: `${cluster}-default`,
    labels: { [LABEL.managedBy]: MANAGER },
    annotations: { [ANN.cluster]: cluster, [ANN.namespace]: 'default', [ANN.name]: 'web', [ANN.uid]: 't1' },
  },
  spec: { containers: [{ name: 'c' }], nodeName: node },
});

interface Case {
  name: string;
  superNode?: Node;
  vNode?: Node;
  tenantPods?: Pod[];
  superPods?: Pod[];
  pluginConfig?: Tenant['pluginConfig'];
  /** the super cluster of the syncer (PluginContext.superCluster) */
  superCluster?: string;
  /** the syncer's note on the key from the last decision (PluginContext.remembered) */
  remembered?: string;
  want: Decision<Node>;
}

const notOwned = { reason: 'NotOwned', message: "Node node-1 was not made by the syncer: it stays the tenant's" };

const cases: Case[] = [
  {
    name: 'a tenant Pod bound to the node: the vNode mirrors the super node and points at the vn-agent on the node',
    superPods: [superPodOn('node-1', KEY)],
    want: { object: mirrored() },
  },
  {
    name: 'the vn-agent host and port come from pluginConfig.vnAgent',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { vnAgent: { host: 'vn-agent.example', port: 10666 } },
    want: { object: mirrored({ host: 'vn-agent.example', port: 10666 }) },
  },
  {
    name: 'the vn-agent host and port come from pluginConfig.nodes.vnAgent',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { nodes: { vnAgent: { host: 'vn-agent.example', port: 10666 } } },
    want: { object: mirrored({ host: 'vn-agent.example', port: 10666 }) },
  },
  {
    name: 'pluginConfig.nodes.vnAgent wins over the 0.1 top-level pluginConfig.vnAgent',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { nodes: { vnAgent: { port: 10888 } }, vnAgent: { host: 'old.example', port: 10666 } },
    want: { object: mirrored({ port: 10888 }) },
  },
  {
    name: "vnAgent.superClusters.<name> of the syncer's super cluster overrides the port, keeping the host",
    superPods: [superPodOn('node-1', KEY)],
    superCluster: 'r2',
    pluginConfig: {
      nodes: { vnAgent: { host: '127.0.0.1', port: 10666, superClusters: { r2: { port: 10777 }, r3: { port: 1 } } } },
    },
    want: { object: mirrored({ host: '127.0.0.1', port: 10777 }) },
  },
  {
    name: 'vnAgent.superClusters overrides the host too',
    superPods: [superPodOn('node-1', KEY)],
    superCluster: 'r3',
    pluginConfig: { nodes: { vnAgent: { port: 10666, superClusters: { r3: { host: 'agent.r3.example' } } } } },
    want: { object: mirrored({ host: 'agent.r3.example', port: 10666 }) },
  },
  {
    name: 'a super cluster not in vnAgent.superClusters takes host and port of vnAgent',
    superPods: [superPodOn('node-1', KEY)],
    superCluster: 'r1',
    pluginConfig: { nodes: { vnAgent: { host: '127.0.0.1', port: 10666, superClusters: { r2: { port: 10777 } } } } },
    want: { object: mirrored({ host: '127.0.0.1', port: 10666 }) },
  },
  {
    name: 'without a super cluster name (one unnamed super cluster) vnAgent.superClusters is not read',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { nodes: { vnAgent: { port: 10666, superClusters: { default: { port: 10777 } } } } },
    want: { object: mirrored({ port: 10666 }) },
  },
  {
    name: 'a super cluster named like an Object.prototype key takes no inherited value',
    superPods: [superPodOn('node-1', KEY)],
    superCluster: 'constructor',
    pluginConfig: { nodes: { vnAgent: { port: 10666, superClusters: {} } } },
    want: { object: mirrored({ port: 10666 }) },
  },
  {
    name: 'a vn-agent port without host keeps the node InternalIP',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { vnAgent: { port: 10777 } },
    want: { object: mirrored({ port: 10777 }) },
  },
  {
    name: 'pluginConfig.nodes.extraLabels shows more super labels: exact keys and prefixes ending in /',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { nodes: { extraLabels: ['platform.example/rack', 'pool.platform.example/'] } },
    want: {
      object: mirrored({ extraLabels: { 'platform.example/rack': 'r12', 'pool.platform.example/tenants': 'gold' } }),
    },
  },
  {
    name: 'an extraLabels prefix without the trailing / is an exact key, not a prefix',
    superPods: [superPodOn('node-1', KEY)],
    pluginConfig: { nodes: { extraLabels: ['pool.platform.example'] } },
    want: { object: mirrored() },
  },
  {
    name: 'a super Pod of this tenant on the node (not yet bound in the tenant) keeps the vNode',
    tenantPods: [tenantPodOn(undefined)],
    superPods: [superPodOn('node-1', KEY)],
    want: { object: mirrored() },
  },
  {
    name: 'an existing vNode is updated in place: tenant-set metadata survives, super changes follow',
    vNode: existing(),
    superPods: [superPodOn('node-1', KEY)],
    want: { object: mirrored({ extraMeta: { uid: 'vnode-uid', resourceVersion: '5' } }) },
  },
  {
    name: 'a Pod reappearing on an empty vNode clears the empty-since mark',
    vNode: existing({ 'tenancy.x-k8s.io/empty-since': ago(60), keep: 'me' }),
    superPods: [superPodOn('node-1', KEY)],
    want: { object: mirrored({ extraMeta: { uid: 'vnode-uid', resourceVersion: '5', annotations: { keep: 'me' } } }) },
  },
  {
    name: 'the last Pod left: nothing written yet, the time noted, looked at again after the 15 s settle time',
    vNode: existing(),
    tenantPods: [tenantPodOn('node-2')],
    superPods: [superPodOn('node-1', OTHER)],
    want: { object: existing(), requeueAfterMs: 15_000, remember: NOW.toISOString() },
  },
  {
    name: 'a Pod back within the settle time: the vNode as it was (no write), the note dropped',
    vNode: existing(),
    superPods: [superPodOn('node-1', KEY)],
    remembered: ago(5),
    want: { object: mirrored({ extraMeta: { uid: 'vnode-uid', resourceVersion: '5' } }) },
  },
  {
    name: 'empty for part of the settle time: still nothing written, the same time noted, requeued for the rest',
    vNode: existing(),
    remembered: ago(5),
    want: { object: existing(), requeueAfterMs: 10_000, remember: ago(5) },
  },
  {
    name: 'empty for the settle time: marked with the time it emptied, so the grace period ends as it would have',
    vNode: existing(),
    remembered: ago(15),
    want: { object: existing({ 'tenancy.x-k8s.io/empty-since': ago(15) }), requeueAfterMs: 105_000 },
  },
  {
    name: 'a note that does not parse counts as emptied now',
    vNode: existing(),
    remembered: 'not a time',
    want: { object: existing(), requeueAfterMs: 15_000, remember: NOW.toISOString() },
  },
  {
    name: 'a mark already written wins over a note',
    vNode: existing({ 'tenancy.x-k8s.io/empty-since': ago(100) }),
    remembered: ago(5),
    want: { object: existing({ 'tenancy.x-k8s.io/empty-since': ago(100) }), requeueAfterMs: 20_000 },
  },
  {
    name: 'the settle time comes from pluginConfig.nodes.emptySettleSeconds',
    vNode: existing(),
    pluginConfig: { nodes: { emptySettleSeconds: 30 } },
    remembered: ago(20),
    want: { object: existing(), requeueAfterMs: 10_000, remember: ago(20) },
  },
  {
    name: 'a settle time of 0 marks the vNode empty at once (one write on emptying, one on refilling)',
    vNode: existing(),
    pluginConfig: { nodes: { emptySettleSeconds: 0 } },
    want: { object: existing({ 'tenancy.x-k8s.io/empty-since': NOW.toISOString() }), requeueAfterMs: 120_000 },
  },
  {
    name: 'empty for less than the grace period: kept, requeued for the rest',
    vNode: existing({ 'tenancy.x-k8s.io/empty-since': ago(100) }),
    want: { object: existing({ 'tenancy.x-k8s.io/empty-since': ago(100) }), requeueAfterMs: 20_000 },
  },
  {
    name: 'empty for the grace period: deleted',
    vNode: existing({ 'tenancy.x-k8s.io/empty-since': ago(120) }),
    want: { object: null },
  },
  {
    name: 'the grace period comes from pluginConfig.nodes.gracePeriodSeconds',
    vNode: existing({ 'tenancy.x-k8s.io/empty-since': ago(100) }),
    pluginConfig: { nodes: { gracePeriodSeconds: 30 } },
    want: { object: null },
  },
  {
    name: 'a grace period shorter than the settle time is used for the first requeue',
    vNode: existing(),
    pluginConfig: { nodes: { gracePeriodSeconds: 10 } },
    want: { object: existing(), requeueAfterMs: 10_000, remember: NOW.toISOString() },
  },
  {
    name: 'a grace period that ends within the settle time deletes the vNode without ever marking it',
    vNode: existing(),
    pluginConfig: { nodes: { gracePeriodSeconds: 10 } },
    remembered: ago(10),
    want: { object: null },
  },
  {
    name: "a tenant-made Node with the syncer's labels forged, no Pod there: left as it is, none of the node's data",
    vNode: tenantMade({ [LABEL.managedBy]: MANAGER, 'tenancy.x-k8s.io/vnode': 'true' }),
    want: {
      object: tenantMade({ [LABEL.managedBy]: MANAGER, 'tenancy.x-k8s.io/vnode': 'true' }),
      requeueAfterMs: 15_000,
      remember: NOW.toISOString(),
    },
  },
  {
    name: "a tenant-made Node with the syncer's labels forged, empty for the settle time: only marked empty",
    vNode: tenantMade({ [LABEL.managedBy]: MANAGER, 'tenancy.x-k8s.io/vnode': 'true' }),
    remembered: NOW.toISOString(),
    pluginConfig: { nodes: { emptySettleSeconds: 0 } },
    want: {
      object: {
        ...tenantMade({ [LABEL.managedBy]: MANAGER, 'tenancy.x-k8s.io/vnode': 'true' }),
        metadata: {
          ...tenantMade().metadata,
          labels: { [LABEL.managedBy]: MANAGER, 'tenancy.x-k8s.io/vnode': 'true' },
          annotations: { 'tenancy.x-k8s.io/empty-since': NOW.toISOString() },
        },
      },
      requeueAfterMs: 120_000,
    },
  },
  {
    name: 'a tenant Pod naming the node in spec.nodeName itself (no super Pod there): no vNode, nothing learnt',
    tenantPods: [tenantPodOn('node-1')],
    want: { object: null },
  },
  {
    name: 'a Node the tenant made under the name of a super node it has no Pod on: never written, nothing mirrored',
    vNode: tenantMade(),
    want: { object: null, skip: notOwned },
  },
  {
    name: "a tenant-made Node carrying the vNode label is still not the syncer's: nothing mirrored",
    vNode: tenantMade({ 'tenancy.x-k8s.io/vnode': 'true' }),
    tenantPods: [tenantPodOn('node-1')],
    want: { object: null, skip: notOwned },
  },
  {
    name: 'a tenant-made Node of a node its Pods do run on is not adopted either',
    vNode: tenantMade(),
    superPods: [superPodOn('node-1', KEY)],
    want: { object: null, skip: notOwned },
  },
  {
    name: 'no Pod and no vNode: nothing is created',
    want: { object: null },
  },
  {
    name: 'the super node is gone: the vNode is deleted even with Pods bound',
    superNode: undefined,
    vNode: existing(),
    superPods: [superPodOn('node-1', KEY)],
    want: { object: null },
  },
];

describe('nodes plugin: toTenant', () => {
  it.each(cases)('$name', (c) => {
    const ctx = testContext({
      tenant: testTenant(c.pluginConfig ? { pluginConfig: c.pluginConfig } : {}),
      tenantCache: new MapCache([[R.pods, c.tenantPods ?? []]]),
      superCache: new MapCache([[R.pods, c.superPods ?? []]]),
      now: NOW,
      ...(c.superCluster === undefined ? {} : { superCluster: c.superCluster }),
    });
    if (c.remembered !== undefined) ctx.remembered = c.remembered;
    const sn = 'superNode' in c ? c.superNode : superNode;
    const vNode = c.vNode && structuredClone(c.vNode);
    const got = nodesPlugin.toTenant!(sn && structuredClone(sn), vNode, ctx);
    expect(got).toEqual(c.want);
    expect(vNode).toEqual(c.vNode);
  });
});

/** schedulable is a tenant whose policy shows every node its Pods may use: the gold pool, tolerating its taints. */
const schedulable = (over: Partial<Tenant> = {}) =>
  testTenant({
    nodes: { view: 'schedulable' },
    pods: {
      forced: {
        nodeSelector: { 'pool.platform.example/tenants': 'gold' },
        tolerations: [
          { key: 'dedicated', operator: 'Exists' },
          { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' },
        ],
      },
    },
    ...over,
  });
const withLabel = (pool: string): Node => {
  const n = structuredClone(superNode);
  n.metadata!.labels!['pool.platform.example/tenants'] = pool;
  return n;
};
const notReady = (): Node => {
  const n = structuredClone(superNode);
  n.status!.conditions = n.status!.conditions!.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' } : c));
  return n;
};
const emptyMark = (at: string) => ({
  uid: 'vnode-uid',
  resourceVersion: '5',
  annotations: { 'tenancy.x-k8s.io/empty-since': at },
});

interface ViewCase {
  name: string;
  tenant: ReturnType<typeof testTenant>;
  superNode: Node;
  vNode?: Node;
  superPods?: Pod[];
  want: Decision<Node>;
}

const viewCases: ViewCase[] = [
  {
    name: 'schedulable view: a Ready node of the forced pool is shown before any Pod, without the taint it tolerates',
    tenant: schedulable(),
    superNode,
    want: { object: mirrored({ untainted: true }) },
  },
  {
    name: 'schedulable view: a forced toleration of another key or effect leaves the taint shown',
    tenant: schedulable({
      pods: {
        forced: {
          nodeSelector: { 'pool.platform.example/tenants': 'gold' },
          tolerations: [
            { key: 'other', operator: 'Exists' },
            { key: 'dedicated', operator: 'Exists', effect: 'NoExecute' },
            { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' },
          ],
        },
        tolerations: [{ key: 'dedicated' }],
      },
    }),
    superNode,
    want: { object: mirrored() },
  },
  {
    name: 'schedulable view: an emptied vNode of a usable node stays, its empty-since mark cleared',
    tenant: schedulable(),
    superNode,
    vNode: existing({ 'tenancy.x-k8s.io/empty-since': ago(200) }),
    want: { object: mirrored({ untainted: true, extraMeta: { uid: 'vnode-uid', resourceVersion: '5' } }) },
  },
  {
    name: 'schedulable view: a node the forced node selector excludes is not shown',
    tenant: schedulable(),
    superNode: withLabel('silver'),
    want: { object: null },
  },
  {
    name: 'schedulable view: a vNode of a node that left the placement (or that the tenant made) is deleted at once',
    tenant: schedulable(),
    superNode: withLabel('silver'),
    vNode: existing(),
    want: { object: null },
  },
  {
    name: 'schedulable view: a taint nothing tolerates hides the node',
    tenant: schedulable({ pods: { forced: { nodeSelector: { 'pool.platform.example/tenants': 'gold' } } } }),
    superNode,
    want: { object: null },
  },
  {
    name: 'schedulable view: a node that is not Ready is not added',
    tenant: schedulable(),
    superNode: notReady(),
    want: { object: null },
  },
  {
    name: 'schedulable view: a shown node going NotReady shows it for the grace period, like an emptied vNode',
    tenant: schedulable({ pluginConfig: { nodes: { emptySettleSeconds: 0 } } }),
    superNode: notReady(),
    vNode: existing(),
    want: {
      object: (() => {
        const m = mirrored({ untainted: true, extraMeta: emptyMark(NOW.toISOString()) });
        m.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'KubeletReady' }];
        return m;
      })(),
      requeueAfterMs: 120_000,
    },
  },
  {
    name: 'schedulable view: a cordoned node is not added',
    tenant: schedulable(),
    superNode: { ...superNode, spec: { ...superNode.spec, unschedulable: true } },
    want: { object: null },
  },
  {
    name: 'schedulable view: the tenant Pods on a node outside the placement still show it',
    tenant: schedulable(),
    superNode: withLabel('silver'),
    superPods: [superPodOn('node-1', KEY)],
    want: { object: mirrored({ untainted: true }) },
  },
  {
    name: 'withPods view (the default): a fresh tenant sees no node',
    tenant: testTenant(),
    superNode,
    want: { object: null },
  },
  {
    name: 'withPods view: a view named in pluginConfig (tenant-reachable) is not the policy and changes nothing',
    tenant: testTenant({ pluginConfig: { nodes: { view: 'schedulable' } }, pods: schedulable().pods! }),
    superNode,
    want: { object: null },
  },
];

describe('nodes plugin: the policy view (nodes.view)', () => {
  it.each(viewCases)('$name', (c) => {
    const ctx = testContext({
      tenant: c.tenant,
      tenantCache: new MapCache([[R.pods, []]]),
      superCache: new MapCache([[R.pods, c.superPods ?? []]]),
      now: NOW,
    });
    const vNode = c.vNode && structuredClone(c.vNode);
    expect(nodesPlugin.toTenant!(structuredClone(c.superNode), vNode, ctx)).toEqual(c.want);
    expect(vNode).toEqual(c.vNode);
  });

  it('routes a node to the schedulable-view tenants whose Pods may use it, and to the tenants with Pods on it', () => {
    const gold = { ...schedulable(), key: 'gold-tenant' };
    const plain = { ...testTenant(), key: 'plain-tenant' };
    const rctx: RouteContext = {
      tenants: [gold, plain],
      superCache: new MapCache(),
      tenantsBy: (index, n) => (index === PODS_BY_NODE && n === 'node-1' ? [OTHER] : []),
      tenantOfNamespace: () => undefined,
    };
    expect(nodesPlugin.route!(superNode, rctx).map((k) => k.tenant)).toEqual([OTHER, 'gold-tenant']);
    // A NotReady node still reaches the tenant (its vNode goes through the grace period); another pool does not.
    expect(nodesPlugin.route!(notReady(), rctx).map((k) => k.tenant)).toEqual([OTHER, 'gold-tenant']);
    expect(nodesPlugin.route!(withLabel('silver'), rctx).map((k) => k.tenant)).toEqual([OTHER]);
  });
});

describe("nodes plugin: a node's totals as the tenant's policy says (nodes.totals)", () => {
  const onNode = () => new MapCache([[R.pods, [superPodOn('node-1', KEY)]]]);
  it.each([
    ["no setting: scaled, the node's capacity and allocatable shown", undefined, true],
    ['scaled: shown', 'scaled' as const, true],
    ['withheld: neither capacity nor allocatable', 'withheld' as const, false],
  ])('%s', (_what, totals, shown) => {
    const tenant = testTenant(totals ? { nodes: { totals } } : {});
    const built = buildVNode(structuredClone(superNode), testContext({ tenant }));
    const got = nodesPlugin.toTenant!(
      structuredClone(superNode),
      existing(),
      testContext({ tenant, superCache: onNode(), now: NOW }),
    );
    for (const n of [built, got.object as Node]) {
      expect(n.status?.capacity).toEqual(shown ? superNode.status!.capacity : undefined);
      expect(n.status?.allocatable).toEqual(shown ? superNode.status!.allocatable : undefined);
      // the rest of the mirror is the same either way
      expect(n.status?.conditions?.map((c) => c.type)).toEqual(['Ready']);
      expect(n.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10550 } });
    }
  });
});

describe('nodes plugin: what a vNode never shows', () => {
  const vNode = buildVNode(structuredClone(superNode), testContext());
  const json = JSON.stringify(vNode);
  it.each([
    ['machine identity', 'ec2a8f0e'],
    ['boot id', 'b0b0b0b0'],
    ['kernel version', '5.15.0-1051-aws'],
    ['OS image', 'Ubuntu'],
    ['container runtime version', 'containerd://'],
    ["other tenants' images", 'other-tenant/secret-image'],
    ["other tenants' volumes", 'vol-other-tenant'],
    ["memory pressure (other tenants' load)", 'MemoryPressure'],
    ['the pressure taint', 'memory-pressure'],
    ['the provider id', 'i-0abc'],
    ['the pod CIDR', '10.244.1.0'],
    ['the external address', '203.0.113.7'],
    ['the super hostname address', 'super.example'],
    ['the super node role', 'node-role.kubernetes.io'],
    ['platform labels not allowed', 'platform.example'],
    ['the kubelet config source', 'kubelet-config'],
    ['runtime handlers', 'kata'],
  ])('%s', (_what, needle) => {
    expect(json).not.toContain(needle);
  });
  it('has no super annotation and only the status fields it keeps', () => {
    expect(vNode.metadata?.annotations).toBeUndefined();
    expect(Object.keys(vNode.status ?? {}).sort()).toEqual(
      ['addresses', 'allocatable', 'capacity', 'conditions', 'daemonEndpoints', 'nodeInfo'].sort(),
    );
    expect(Object.keys(vNode.spec ?? {})).toEqual(['taints']);
  });
  it('writes a hidden nodeInfo string the tenant already shows as empty, so it stops showing it', () => {
    const had = written(mirrored());
    had.status!.nodeInfo = { ...had.status!.nodeInfo, machineID: 'leaked-before' };
    const sn = structuredClone(superNode);
    delete sn.status!.nodeInfo!.machineID;
    const got = nodesPlugin.toTenant!(
      sn,
      had,
      testContext({ superCache: new MapCache([[R.pods, [superPodOn('node-1', KEY)]]]) }),
    );
    expect(got.object?.status?.nodeInfo).toMatchObject({ machineID: '' });
  });
});

describe('nodes plugin: buildVNode', () => {
  it('builds the vNode the core creates before binding', () => {
    expect(buildVNode(structuredClone(superNode), testContext())).toEqual(mirrored());
  });
  it('omits InternalIP when neither the vn-agent host nor the node InternalIP is known', () => {
    const n = structuredClone(superNode);
    n.status!.addresses = [{ type: 'Hostname', address: 'h' }];
    expect(buildVNode(n, testContext()).status?.addresses).toEqual([{ type: 'Hostname', address: 'node-1' }]);
  });
});

describe('nodes plugin: route', () => {
  it('routes a super node to every tenant with Pods on it', () => {
    const rctx: RouteContext = {
      tenants: [],
      superCache: new MapCache(),
      tenantsBy: (index, n) => (index === PODS_BY_NODE && n === 'node-1' ? [KEY, OTHER] : []),
      tenantOfNamespace: () => undefined,
    };
    expect(nodesPlugin.route!(superNode, rctx)).toEqual([
      { tenant: KEY, namespace: '', name: 'node-1' },
      { tenant: OTHER, namespace: '', name: 'node-1' },
    ]);
    expect(nodesPlugin.route!({ ...superNode, metadata: { name: 'node-9' } }, rctx)).toEqual([]);
  });
});

describe("nodes plugin: the view is the policy's, not a plugin setting", () => {
  it('refuses spec.pluginConfig.nodes.view of a VirtualCluster: the schema knows no such setting', async () => {
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    expect(host.validatePluginConfig({ nodes: { view: 'schedulable' } })).toEqual([
      expect.stringMatching(/^spec\.pluginConfig\.nodes.*view/),
    ]);
  });
});

describe('nodes plugin: vnAgent.superClusters in a VirtualCluster', () => {
  it('accepts a host and port per super cluster and refuses a bad port, naming the field', async () => {
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    expect(host.validatePluginConfig({ nodes: { vnAgent: { superClusters: { r2: { port: 10551 } } } } })).toEqual([]);
    expect(host.validatePluginConfig({ nodes: { vnAgent: { superClusters: { r2: { port: 0 } } } } })).toEqual([
      'spec.pluginConfig.nodes.vnAgent.superClusters.r2.port: must be >= 1',
    ]);
  });
});

describe('nodes plugin: manifest', () => {
  it('owns core/v1 nodes, up from the super, and is the default export', () => {
    expect(nodesPlugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'nodes',
      version: '0.1.0',
      description: expect.any(String),
      resource: { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
      configSchema: CONFIG_SCHEMA,
    });
    expect(plugin).toBe(nodesPlugin);
  });
});

// Two super clusters each with a node-1 serve one tenant: each gives it a vNode of its own, pointing at its own
// vn-agent; one super cluster alone keeps naming vNodes after their super nodes.
describe('nodes plugin: vNode names with several super clusters', () => {
  const agents = { nodes: { vnAgent: { host: '127.0.0.1', port: 10666, superClusters: { r2: { port: 10777 } } } } };
  const ctx = (superCluster: string, sharedTenants: boolean, tenantNodes: Node[] = []) =>
    testContext({
      tenant: testTenant({ pluginConfig: agents }),
      superCluster,
      ...(sharedTenants && { sharedTenants }),
      superCache: new MapCache([[R.nodes, [superNode]]]),
      tenantCache: new MapCache([[R.nodes, tenantNodes]]),
    });
  const rctx = (superCluster: string, sharedTenants: boolean): RouteContext => ({
    tenants: [],
    superCache: new MapCache(),
    tenantsBy: (index, n) => (index === PODS_BY_NODE && n === 'node-1' ? [KEY] : []),
    tenantOfNamespace: () => undefined,
    superCluster,
    ...(sharedTenants && { sharedTenants }),
  });

  it.each([
    ['one super cluster: the super node name', 'r1', false, 'node-1', 10666],
    ['several: r1 qualifies it', 'r1', true, 'r1.node-1', 10666],
    ["several: r2 qualifies it and points at r2's vn-agent", 'r2', true, 'r2.node-1', 10777],
  ])('%s', (_, superCluster, shared, name, port) => {
    const v = buildVNode(structuredClone(superNode), ctx(superCluster, shared));
    expect(v.metadata?.name).toBe(name);
    expect(v.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: port } });
    expect(nodesPlugin.route!(superNode, rctx(superCluster, shared))).toEqual([{ tenant: KEY, namespace: '', name }]);
    expect(nodesPlugin.superName!('', name, ctx(superCluster, shared))).toEqual({ name: 'node-1' });
    const watch = nodesPlugin.watches!.find((w) => w.side === 'super')!;
    const pod = {
      metadata: { labels: { [LABEL.managedBy]: MANAGER }, annotations: { [ANN.cluster]: KEY } },
      spec: { nodeName: 'node-1' },
    };
    expect(watch.side === 'super' && watch.map(pod, rctx(superCluster, shared))).toEqual([
      { tenant: KEY, namespace: '', name },
    ]);
    expect(
      nodesPlugin.beforeBind!(
        { type: 'bind', namespace: 'default', name: 'web', uid: 'u', node: name },
        ctx(superCluster, shared),
      ),
    ).toMatchObject({ metadata: { name } });
  });

  it("leaves another super cluster's vNode alone: it names no super node here", () => {
    expect(nodesPlugin.superName!('', 'r2.node-1', ctx('r1', true))).toEqual({ name: '' });
    expect(nodesPlugin.superName!('', 'node-1', ctx('r1', true))).toEqual({ name: '' });
    expect(
      nodesPlugin.beforeBind!(
        { type: 'bind', namespace: 'default', name: 'web', uid: 'u', node: 'r2.node-1' },
        ctx('r1', true),
      ),
    ).toBeUndefined();
  });
});
