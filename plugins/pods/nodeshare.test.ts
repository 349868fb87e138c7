import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER } from '../../core/names/names.ts';
import { R } from '../../core/kube/resources.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { applyNodeShare, fullNodes } from './nodeshare.ts';
import { podsPlugin } from './index.ts';

const me = testTenant({ pods: { maxPodsPerNode: 2 } });
const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' });

/** superPod is a super Pod of `owner` on `node` in `phase`. */
const superPod = (owner: string, name: string, node: string | undefined, phase = 'Running'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    namespace: `${owner}-default`,
    name,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: owner },
    annotations: { [ANN.cluster]: owner, [ANN.namespace]: 'default', [ANN.name]: name },
  },
  spec: { ...(node && { nodeName: node }), containers: [{ name: 'c' }] },
  status: { phase },
});

const pods = [
  superPod(me.key, 'a1', 'node-a'),
  superPod(me.key, 'a2', 'node-a'),
  superPod(me.key, 'b1', 'node-b'),
  superPod(me.key, 'b2', 'node-b', 'Succeeded'),
  superPod(me.key, 'p', undefined),
  superPod(other.key, 'c1', 'node-c'),
  superPod(other.key, 'c2', 'node-c'),
  superPod(me.key, 'z1', 'node-z'),
  superPod(me.key, 'z2', 'node-z'),
  superPod(me.key, 'z3', 'node-z'),
];
const ctx = testContext({ tenant: me, superCache: new MapCache([[R.pods, pods]]) });

describe('fullNodes', () => {
  it.each([
    [1, ['node-a', 'node-b', 'node-z']],
    [2, ['node-a', 'node-z']],
    [3, ['node-z']],
    [4, []],
  ])('a share of %d: %j (ended Pods, unbound Pods and other tenants do not count)', (max, want) => {
    expect(fullNodes(ctx, max)).toEqual(want);
  });
});

describe('applyNodeShare', () => {
  // one value per requirement: the apiserver refuses a metadata.name requirement with more
  const notA = { key: 'metadata.name', operator: 'NotIn', values: ['node-a'] };
  const notZ = { key: 'metadata.name', operator: 'NotIn', values: ['node-z'] };
  it.each<[string, PodSpec, unknown]>([
    [
      'no affinity: one term of its own',
      { containers: [] },
      {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [notA, notZ] }] },
        },
      },
    ],
    [
      'every ORed term of the tenant gets the exclusion',
      {
        containers: [],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] },
              ],
            },
          },
          podAntiAffinity: { x: 1 },
        },
      },
      {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }], matchFields: [notA, notZ] },
              { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }, notA, notZ] },
            ],
          },
        },
        podAntiAffinity: { x: 1 },
      },
    ],
  ])('%s', (_name, spec, want) => {
    applyNodeShare(spec, ctx);
    expect(spec.affinity).toEqual(want);
  });

  it('changes nothing without a share or without a full node', () => {
    const spec: PodSpec = { containers: [] };
    applyNodeShare(spec, testContext({ superCache: new MapCache([[R.pods, pods]]) }));
    applyNodeShare(
      spec,
      testContext({ tenant: testTenant({ pods: { maxPodsPerNode: 5 } }), superCache: new MapCache([[R.pods, pods]]) }),
    );
    expect(spec.affinity).toBeUndefined();
  });

  it('the pods plugin creates the super Pod with the exclusion', () => {
    const sa = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'vc-tenant-pod', namespace: ctx.names.superNamespace('default') },
    };
    const c = testContext({
      tenant: me,
      superCache: new MapCache([
        [R.pods, pods],
        [R.serviceaccounts, [sa]],
      ]),
    });
    const tenantPod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: 'default', name: 'new', uid: 'u' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    };
    const d = podsPlugin.toSuper!(tenantPod, undefined, c);
    const spec = (d.object as { spec: PodSpec }).spec;
    expect(spec.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [notA, notZ] }] },
      },
    });
  });
});
