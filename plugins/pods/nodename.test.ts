import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { superNode, superPod } from './testing.ts';
import type { NodesView, TenantView } from '../sdk/src/index.ts';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { checkNodeName, translateNodeName } from './nodename.ts';

const KEY = testTenant().key;
const OTHER = 'team-b-4d5e6f-prod';

const node = superNode;

/**
 * The super cluster: n1 runs a Pod of this tenant, n2 only another tenant's, n3 none, gpu is tainted for a dedicated
 * pool, pool-b carries the label of a forced pool, down is not Ready.
 */
const superCache = () =>
  new MapCache([
    [
      R.nodes,
      [
        node('n1'),
        node('n2'),
        node('n3'),
        node('gpu', {}, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]),
        node('pool-b', { pool: 'b' }),
        node('down', {}, [], 'False'),
        node('tainted', {}, [{ key: 'dedicated', value: 'team-b', effect: 'NoSchedule' }]),
        node('soft', {}, [{ key: 'dedicated', value: 'team-b', effect: 'PreferNoSchedule' }]),
        { ...node('cordoned'), spec: { taints: [], unschedulable: true } },
        node('pool-c', { pool: 'c' }),
      ],
    ],
    [
      R.pods,
      [
        superPod(KEY, 'n1'),
        superPod(OTHER, 'n2'),
        superPod(KEY, 'tainted'),
        superPod(KEY, 'soft'),
        superPod(KEY, 'cordoned'),
        superPod(KEY, 'pool-c'),
      ],
    ],
  ]);

const named = (nodeName?: string, over: Partial<PodSpec> = {}): PodSpec => ({
  containers: [{ name: 'c', image: 'x' }],
  ...(nodeName !== undefined && { nodeName }),
  ...over,
});

interface Setup {
  view?: NodesView;
  shared?: boolean;
  tenant?: Partial<TenantView>;
}

describe('checkNodeName', () => {
  it.each<[string, PodSpec, Setup, boolean]>([
    ['a Pod without nodeName passes', named(), {}, true],
    ['an empty nodeName is no choice of node and passes', named(''), {}, true],
    ['a node running one of the tenant Pods passes (withPods view)', named('n1'), {}, true],
    ["a node running only another tenant's Pods is refused (withPods view)", named('n2'), {}, false],
    ['an empty node is refused under the withPods view: the tenant does not see it', named('n3'), {}, false],
    ['an empty Ready node passes under the schedulable view', named('n3'), { view: 'schedulable' }, true],
    ['a node that is not Ready is refused under the schedulable view', named('down'), { view: 'schedulable' }, false],
    ['a node tainted for a pool the tenant may not use is refused', named('gpu'), { view: 'schedulable' }, false],
    [
      "a node outside the platform's forced node selector is refused",
      named('n3'),
      { view: 'schedulable', tenant: { pods: { forced: { nodeSelector: { pool: 'b' } } } } },
      false,
    ],
    [
      "a node inside the platform's forced node selector passes",
      named('pool-b'),
      { view: 'schedulable', tenant: { pods: { forced: { nodeSelector: { pool: 'b' } } } } },
      true,
    ],
    [
      'a node that does not exist in the super cluster (a Node the tenant made itself) is refused',
      named('super-apiserver-host'),
      { view: 'schedulable' },
      false,
    ],
    // A node where the tenant has a Pod, later tainted, cordoned or taken out of its pool: a Pod bound by name skips
    // the scheduler and the kubelet checks none of these, so the syncer does.
    ['a node of the tenant tainted since for another team is refused (NoSchedule)', named('tainted'), {}, false],
    [
      'a node of the tenant tainted for another team passes with a toleration the policy allows',
      named('tainted', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
      { tenant: { pods: { tolerations: [{ key: 'dedicated' }] } } },
      true,
    ],
    [
      'a toleration the policy does not allow does not open a tainted node',
      named('tainted', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
      {},
      false,
    ],
    ['a PreferNoSchedule taint does not close a node', named('soft'), {}, true],
    ['a cordoned node of the tenant is refused', named('cordoned'), {}, false],
    [
      'a cordoned node passes for a Pod tolerating the cordon, as the scheduler lets it',
      named('cordoned', { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists' }] }),
      {},
      true,
    ],
    [
      "a node of the tenant outside the platform's forced node selector (since changed) is refused",
      named('pool-c'),
      { tenant: { pods: { forced: { nodeSelector: { pool: 'b' } } } } },
      false,
    ],
    [
      "a tainted node passes when the platform's forced toleration covers it",
      named('tainted'),
      { tenant: { pods: { forced: { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'team-b' }] } } } },
      true,
    ],
    ['with several super clusters a vNode of this super cluster passes', named('r1.n1'), { shared: true }, true],
    ['with several super clusters a vNode of another is refused here', named('r2.n1'), { shared: true }, false],
    ['with several super clusters an unqualified node name is refused', named('n1'), { shared: true }, false],
  ])('%s', (_, spec, o, passes) => {
    const ctx = testContext({
      tenant: testTenant({ nodes: { view: o.view ?? 'withPods' }, ...o.tenant }),
      superCache: superCache(),
      ...(o.shared && { sharedTenants: true, superCluster: 'r1' }),
    });
    const refusal = checkNodeName(spec, ctx);
    if (passes) expect(refusal).toBeUndefined();
    else {
      expect(refusal?.field).toBe('spec.nodeName');
      expect(refusal?.message).toContain(`"${spec.nodeName}"`);
      if (o.shared) expect(refusal?.message).toContain('super cluster r1');
    }
  });
});

describe('translateNodeName', () => {
  it.each<[string, PodSpec, { shared?: boolean }, PodSpec]>([
    ['without nodeName nothing changes', named(), {}, named()],
    ['with one super cluster the vNode is named as its super node', named('n1'), {}, named('n1')],
    [
      "a shared tenant's vNode of this super cluster names the super node behind it",
      named('r1.n3'),
      { shared: true },
      named('n3'),
    ],
    [
      'the affinity the tenant wrote is kept as it is (the kubelet admits the Pod against it)',
      named('n1', {
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } },
      }),
      {},
      named('n1', {
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } },
      }),
    ],
  ])('%s', (_, spec, o, want) => {
    translateNodeName(spec, o.shared ? { sharedTenants: true, superCluster: 'r1' } : {});
    expect(spec).toEqual(want);
  });
});
