import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superClusterName } from '../../core/names/names.ts';
import type { TenantView } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { podsPlugin } from './index.ts';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';

// The pods plugin's side of RuntimeClasses: the runtimeClassName of a new super Pod (plugins/runtimeclasses/policy.ts
// holds the full table of the translation).

const KEY = testTenant().key;
const SNS = testContext().names.superNamespace('default');
const rc = (name: string, handler: string, meta: Record<string, unknown> = {}) => ({
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name, ...meta },
  handler,
});
const superCache = new MapCache([
  [
    R.serviceaccounts,
    [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vc-tenant-pod', namespace: SNS } }],
  ],
  [
    R.runtimeclasses,
    [
      rc('kata', 'kata', { labels: { [LABEL.public]: 'true' } }),
      rc(superClusterName(KEY, 'fast'), 'runc', {
        labels: { [LABEL.managedBy]: MANAGER },
        annotations: { [ANN.cluster]: KEY, [ANN.uid]: 'fast-uid' },
      }),
    ],
  ],
]);
const tenantCache = new MapCache([
  [
    R.runtimeclasses,
    [
      rc('kata', 'kata', { labels: { [LABEL.managedBy]: MANAGER } }),
      rc('fast', 'runc', { uid: 'fast-uid' }),
      rc('new', 'runc', { uid: 'new-uid' }),
    ],
  ],
]);

const pod = (runtimeClassName?: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'pod-uid' },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...(runtimeClassName && { runtimeClassName }) },
});

const run = (p: Pod, tenant: TenantView = testTenant(), superPod?: Pod) =>
  podsPlugin.toSuper!(p, superPod, testContext({ tenant, superCache, tenantCache }));

describe('pods plugin: runtimeClassName', () => {
  it.each([
    ['none stays none', undefined, testTenant(), undefined],
    ['a public class keeps its name', 'kata', testTenant(), 'kata'],
    ["the tenant's own class gets its tenant-unique super name", 'fast', testTenant(), `${KEY}-fast`],
    [
      'a required sandbox is set on a Pod naming none',
      undefined,
      testTenant({ runtimeClasses: { required: 'kata' } }),
      'kata',
    ],
  ])('%s', (_, requested, tenant, want) => {
    const d = run(pod(requested), tenant);
    expect(d.skip).toBeUndefined();
    expect(d.object?.spec?.runtimeClassName).toBe(want);
  });

  it.each([
    ['a class the tenant does not have', 'nope', testTenant()],
    ['a class that leaves the required sandbox', 'fast', testTenant({ runtimeClasses: { required: 'kata' } })],
  ])('refuses %s with an event and a VCSynced condition naming the field', (_, requested, tenant) => {
    const d = run(pod(requested), tenant);
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe('PodPolicyViolation');
    expect(d.skip?.message).toMatch(/^spec\.runtimeClassName: /);
    expect(d.effects).toEqual([
      expect.objectContaining({ type: 'event', eventType: 'Warning', message: d.skip?.message }),
      expect.objectContaining({
        type: 'tenantCondition',
        condition: expect.objectContaining({ type: 'VCSynced', status: 'False', message: d.skip?.message }) as unknown,
      }),
    ]);
  });

  it("waits, quietly, for the tenant's class to reach the super cluster", () => {
    expect(run(pod('new'))).toEqual({
      object: null,
      skip: {
        reason: 'WaitingForRuntimeClass',
        message: `RuntimeClass "new" is being synced to the super cluster as ${KEY}-new`,
      },
      requeueAfterMs: 500,
    });
  });

  it('leaves an existing super Pod as it runs (the spec is immutable)', () => {
    const existing: Pod = { ...pod(), metadata: { name: 'web', namespace: SNS, uid: 'super-uid' } };
    existing.spec = { ...existing.spec!, runtimeClassName: `${KEY}-fast` };
    expect(
      run(pod('fast'), testTenant({ runtimeClasses: { required: 'kata' } }), existing).object?.spec?.runtimeClassName,
    ).toBe(`${KEY}-fast`);
  });
});
