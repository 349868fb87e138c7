import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { superNode, superPod } from './testing.ts';
import type { NodesView, TenantView } from '../sdk/src/index.ts';
import { checkNodePins, translateNodePins } from './nodepin.ts';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

const KEY = testTenant().key;
const OTHER = 'team-b-4d5e6f-prod';
const REQUIRED = 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]';

const node = superNode;

/**
 * The super cluster: n1 runs a Pod of this tenant, n2 only another tenant's, n3 none, gpu is tainted for a dedicated
 * pool, pool-b carries the label of another tenant's forced pool.
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
      ],
    ],
    [R.pods, [superPod(KEY, 'n1'), superPod(OTHER, 'n2')]],
  ]);

/** daemonPin is the DaemonSet controller's pin: the only required term, matchFields metadata.name In [vNode]. */
const daemonPin = (...values: string[]): PodSpec => ({
  containers: [{ name: 'c', image: 'x' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values }] }],
      },
    },
  },
});

const tenant = (view: NodesView, over: Partial<TenantView> = {}) => testTenant({ nodes: { view }, ...over });

describe('checkNodePins', () => {
  it.each<[string, PodSpec, { view?: NodesView; shared?: boolean; tenant?: Partial<TenantView> }, string | undefined]>([
    ['a Pod without a pin passes', { containers: [] }, {}, undefined],
    ['a pin to a node running one of the tenant Pods passes', daemonPin('n1'), {}, undefined],
    [
      "a pin to a node running only another tenant's Pods is refused (withPods view)",
      daemonPin('n2'),
      {},
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    [
      'a pin to an empty node is refused under the withPods view',
      daemonPin('n3'),
      {},
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    ['a pin to an empty node passes under the schedulable view', daemonPin('n3'), { view: 'schedulable' }, undefined],
    [
      'a pin to a node tainted for a pool the tenant may not use is refused, whatever the view',
      daemonPin('gpu'),
      { view: 'schedulable' },
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    [
      "a pin outside the platform's forced node selector is refused",
      daemonPin('n3'),
      { view: 'schedulable', tenant: { pods: { forced: { nodeSelector: { pool: 'b' } } } } },
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    [
      'a pin to a node that does not exist (a Node the tenant made itself) is refused',
      daemonPin('super-apiserver-host'),
      { view: 'schedulable' },
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    [
      'every value is checked: the second is refused',
      daemonPin('n1', 'n2'),
      {},
      `${REQUIRED}.matchFields[0].values[1]`,
    ],
    [
      'with several super clusters a vNode of this super cluster passes',
      daemonPin('r1.n1'),
      { shared: true },
      undefined,
    ],
    [
      "with several super clusters a vNode of another super cluster is refused on this one's",
      daemonPin('r2.n1'),
      { shared: true },
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    [
      'with several super clusters an unqualified node name is refused',
      daemonPin('n1'),
      { shared: true },
      `${REQUIRED}.matchFields[0].values[0]`,
    ],
    [
      'NotIn is refused: a tenant cannot pick nodes by name but as a DaemonSet does',
      {
        containers: [],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['n2'] }] }],
            },
          },
        },
      },
      {},
      `${REQUIRED}.matchFields[0].key`,
    ],
    [
      'another node field is refused',
      {
        containers: [],
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 1,
                preference: { matchFields: [{ key: 'spec.unschedulable', operator: 'In', values: ['n1'] }] },
              },
            ],
          },
        },
      },
      {},
      'spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].key',
    ],
  ])('%s', (_, spec, o, field) => {
    const ctx = testContext({
      tenant: tenant(o.view ?? 'withPods', o.tenant),
      superCache: superCache(),
      ...(o.shared && { sharedTenants: true, superCluster: 'r1' }),
    });
    const refusal = checkNodePins(spec, ctx);
    expect(refusal?.field).toBe(field);
    if (field) expect(refusal?.message).toContain(field);
  });
});

describe('translateNodePins', () => {
  it('names the super node behind each vNode of this super cluster', () => {
    const spec = daemonPin('r1.n1', 'r1.n3');
    translateNodePins(spec, { sharedTenants: true, superCluster: 'r1' });
    expect(spec).toEqual(daemonPin('n1', 'n3'));
  });

  it('keeps the names with one super cluster, where vNodes are named as the super nodes', () => {
    const spec = daemonPin('n1');
    translateNodePins(spec, {});
    expect(spec).toEqual(daemonPin('n1'));
  });
});
