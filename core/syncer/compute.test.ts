import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import type { ComputeQuotaView, TenantView } from '../plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import { PendingCreates } from './caps.ts';
import { checkCompute, claimUsage, podUsage, type Usage } from './compute.ts';

const DEFAULTS = { cpu: '100m', memory: '256Mi' };
const Mi = 1024n * 1024n * 1000n;

type C = { requests?: Record<string, string>; limits?: Record<string, string>; restartPolicy?: string };
const podWith = (containers: C[], initContainers: C[] = [], overhead?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  spec: {
    containers: containers.map((r, i) => ({ name: `c${i}`, resources: r })),
    initContainers: initContainers.map(({ restartPolicy, ...r }, i) => ({
      name: `i${i}`,
      resources: r,
      ...(restartPolicy && { restartPolicy }),
    })),
    ...(overhead && { overhead }),
  },
});

/** withPodLevel gives a Pod a Pod-level spec.resources. */
const withPodLevel = (pod: KubeObject, resources: Record<string, Record<string, string>>): KubeObject => ({
  ...pod,
  spec: { ...(pod as { spec?: object }).spec, resources },
});

describe('podUsage', () => {
  it.each<[string, KubeObject, Usage]>([
    [
      'no requests: the policy defaults count',
      podWith([{}, {}]),
      { pods: 1000n, 'requests.cpu': 200n, 'requests.memory': 512n * Mi },
    ],
    [
      'requests and limits as set',
      podWith([{ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } }]),
      {
        pods: 1000n,
        'requests.cpu': 1000n,
        'requests.memory': 1024n * Mi,
        'limits.cpu': 2000n,
        'limits.memory': 2048n * Mi,
      },
    ],
    [
      'a limit without a request counts as the request',
      podWith([{ limits: { cpu: '500m' } }]),
      { pods: 1000n, 'requests.cpu': 500n, 'limits.cpu': 500n, 'requests.memory': 256n * Mi },
    ],
    [
      'the largest init container when it is larger than the containers, sidecars added, overhead added',
      podWith(
        [{ requests: { cpu: '100m', memory: '10Mi' } }],
        [
          { requests: { cpu: '3', memory: '1Mi' } },
          { requests: { cpu: '50m', memory: '5Mi' }, restartPolicy: 'Always' },
        ],
        { cpu: '10m' },
      ),
      { pods: 1000n, 'requests.cpu': 3010n, 'requests.memory': 15n * Mi },
    ],
    [
      'Pod-level requests and limits over containers without requests (each counted at the default)',
      withPodLevel(podWith([{}, {}]), { requests: { cpu: '64' }, limits: { memory: '4Gi' } }),
      { pods: 1000n, 'requests.cpu': 64000n, 'requests.memory': 4096n * Mi, 'limits.memory': 4096n * Mi },
    ],
    [
      'a Pod-level figure smaller than the containers\u2019 sum counts the sum',
      withPodLevel(podWith([{ requests: { cpu: '2' } }]), { requests: { cpu: '1' } }),
      { pods: 1000n, 'requests.cpu': 2000n, 'requests.memory': 256n * Mi },
    ],
  ])('%s', (_name, pod, want) => {
    expect(podUsage(pod, DEFAULTS)).toEqual(want);
  });

  it('claimUsage is the storage a claim requests', () => {
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      spec: { resources: { requests: { storage: '1Gi' } } },
    };
    expect(claimUsage(claim)).toEqual({ 'requests.storage': 1024n * Mi });
  });
});

/** superPod is a super Pod the syncer wrote for `owner`'s tenant Pod `ns/name`. */
const superPod = (
  owner: TenantView,
  ns: string,
  name: string,
  cpu: string | undefined,
  phase = 'Running',
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    namespace: `${owner.key}-${ns}`,
    name,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: owner.key },
    annotations: { [ANN.cluster]: owner.key, [ANN.namespace]: ns, [ANN.name]: name },
  },
  spec: { containers: [{ name: 'c', resources: cpu ? { requests: { cpu } } : {} }] },
  status: { phase },
});
const tenantPod = (ns: string, name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: ns, name, uid: `${name}-uid` },
});

const tenant = testTenant();
const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' });

interface Row {
  name: string;
  hard: Record<string, string>;
  existing: KubeObject[];
  pending?: Array<[string, Usage]>;
  desired: KubeObject;
  /** the quota named in the refusal, or undefined when the Pod fits */
  refusedBy: string | undefined;
}

const mine = [superPod(tenant, 'a', 'p1', '1'), superPod(tenant, 'b', 'p2', '1')];
const theirs = [superPod(other, 'a', 'x', '8')];
const desired = superPod(tenant, 'c', 'new', '1');

const rows: Row[] = [
  {
    name: 'under every figure',
    hard: { 'requests.cpu': '3', pods: '3' },
    existing: [...mine, ...theirs],
    desired,
    refusedBy: undefined,
  },
  {
    name: 'requests.cpu over all the tenant namespaces (other tenants do not count)',
    hard: { 'requests.cpu': '2500m' },
    existing: [...mine, ...theirs],
    desired,
    refusedBy: 'requests.cpu',
  },
  { name: 'the Pod count', hard: { pods: '2' }, existing: mine, desired, refusedBy: 'pods' },
  {
    name: 'ended Pods hold nothing',
    hard: { pods: '2', 'requests.cpu': '2' },
    existing: [mine[0]!, superPod(tenant, 'b', 'done', '4', 'Succeeded')],
    desired,
    refusedBy: undefined,
  },
  {
    name: 'Pods without requests count at the default',
    hard: { 'requests.cpu': '250m' },
    existing: [superPod(tenant, 'a', 'd1', undefined), superPod(tenant, 'a', 'd2', undefined)],
    desired: superPod(tenant, 'c', 'new', undefined),
    refusedBy: 'requests.cpu',
  },
  {
    name: 'creates on their way into the cache count',
    hard: { pods: '3' },
    existing: mine,
    pending: [['c/in-flight', { pods: 1000n }]],
    desired,
    refusedBy: 'pods',
  },
  {
    name: 'a pending create already in the cache counts once',
    hard: { pods: '3' },
    existing: mine,
    pending: [['a/p1', { pods: 1000n }]],
    desired,
    refusedBy: undefined,
  },
  {
    name: 'a figure left out is no limit',
    hard: { 'limits.memory': '1Mi' },
    existing: mine,
    desired,
    refusedBy: undefined,
  },
];

describe('checkCompute', () => {
  it.each(rows)('$name', (row) => {
    const compute: ComputeQuotaView = { hard: row.hard, defaultRequests: DEFAULTS };
    const view = testTenant({ quota: { resourceQuota: {}, limitRange: [], objects: {}, compute } });
    const ctx = testContext({ tenant: view, superCache: new MapCache([[R.pods, row.existing]]) });
    const pending = new PendingCreates();
    for (const [k, u] of row.pending ?? []) pending.add(view.key, 'pods', k, 10, u);
    const m = desired.metadata!;
    const over = checkCompute({
      ctx,
      resource: R.pods,
      tenantObj: tenantPod(m.annotations![ANN.namespace]!, m.name!),
      desired: row.desired,
      superObj: undefined,
      pending,
    });
    if (row.refusedBy === undefined) expect(over).toBeUndefined();
    else expect(over).toContain(`quota.compute.hard["${row.refusedBy}"]`);
  });

  it('a claim growing its storage past the quota is refused; an unchanged one passes', () => {
    const claim = (name: string, storage: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        namespace: `${tenant.key}-a`,
        name,
        labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key },
        annotations: { [ANN.cluster]: tenant.key, [ANN.namespace]: 'a', [ANN.name]: name },
      },
      spec: { resources: { requests: { storage } } },
    });
    const compute: ComputeQuotaView = { hard: { 'requests.storage': '10Gi' }, defaultRequests: DEFAULTS };
    const view = testTenant({ quota: { resourceQuota: {}, limitRange: [], objects: {}, compute } });
    const held = [claim('one', '6Gi'), claim('two', '3Gi')];
    const ctx = testContext({ tenant: view, superCache: new MapCache([[R.persistentvolumeclaims, held]]) });
    const check = (desired: KubeObject, superObj?: KubeObject) =>
      checkCompute({
        ctx,
        resource: R.persistentvolumeclaims,
        tenantObj: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { namespace: 'a', name: desired.metadata!.name! },
        },
        desired,
        superObj,
      });
    expect(check(claim('two', '4Gi'), held[1])).toBeUndefined();
    expect(check(claim('two', '5Gi'), held[1])).toContain('11Gi of requests.storage');
    expect(check(claim('two', '3Gi'), held[1])).toBeUndefined();
    expect(check(claim('three', '2Gi'))).toContain('quota.compute.hard["requests.storage"]');
  });

  it('a tenant without a compute quota is not checked', () => {
    const ctx = testContext({ superCache: new MapCache([[R.pods, mine]]) });
    expect(
      checkCompute({ ctx, resource: R.pods, tenantObj: tenantPod('c', 'new'), desired, superObj: undefined }),
    ).toBeUndefined();
  });
});
