import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import type { Effect, PodsPolicyView } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { applyForcedPlacement, podsPlugin, SYNCED_CONDITION, SYNCED_REASON } from './index.ts';
import type { Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

/**
 * Forced placement (pods.forced) and the VCSynced condition of a Pod that was refused and then synced: the parts of
 * the pods plugin that decide where a super Pod may run and tell the tenant what became of its Pod.
 */

const SNS = testContext().names.superNamespace('default');
const superCache = new MapCache([
  [
    R.serviceaccounts,
    [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vc-tenant-pod', namespace: SNS } }],
  ],
]);

const forced: PodsPolicyView = {
  nodeLabelKeys: ['kubernetes.io/os', 'pool'],
  forced: {
    nodeSelector: { pool: 'tenants' },
    tolerations: [{ key: 'pool', operator: 'Equal', value: 'tenants', effect: 'NoSchedule' }],
  },
};

const pod = (spec: Partial<PodSpec> = {}, status?: Pod['status']): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
  ...(status && { status }),
});

const toSuper = (p: Pod, policy: PodsPolicyView | undefined, superPod?: Pod) =>
  podsPlugin.toSuper!(p, superPod, testContext({ tenant: testTenant({ pods: policy }), superCache }));

const notReady = {
  key: 'node.kubernetes.io/not-ready',
  operator: 'Exists',
  effect: 'NoExecute',
  tolerationSeconds: 300,
};
const poolToleration = { key: 'pool', operator: 'Equal', value: 'tenants', effect: 'NoSchedule' };

describe('pods.forced: the platform placement on every new super Pod', () => {
  it.each<
    [string, Partial<PodSpec>, PodsPolicyView | undefined, Record<string, unknown> | undefined, unknown[] | undefined]
  >([
    [
      'nothing forced: selector and tolerations as the tenant wrote them',
      { nodeSelector: { 'kubernetes.io/os': 'linux' } },
      undefined,
      { 'kubernetes.io/os': 'linux' },
      undefined,
    ],
    [
      'forced entries join the tenant selector; forced tolerations follow its own',
      { nodeSelector: { 'kubernetes.io/os': 'linux' }, tolerations: [notReady] },
      forced,
      { 'kubernetes.io/os': 'linux', pool: 'tenants' },
      [notReady, poolToleration],
    ],
    ['a Pod with no selector gets the forced one', {}, forced, { pool: 'tenants' }, [poolToleration]],
    [
      'the tenant may name the forced value itself; a forced toleration it already has is not repeated',
      { nodeSelector: { pool: 'tenants' }, tolerations: [poolToleration] },
      { ...forced, nodeLabelKeys: [], tolerations: [{ key: 'pool', effect: 'NoSchedule' }] },
      { pool: 'tenants' },
      [poolToleration],
    ],
  ])('%s', (_name, spec, policy, nodeSelector, tolerations) => {
    const d = toSuper(pod(spec), policy);
    expect(d.skip).toBeUndefined();
    expect(d.object?.spec?.nodeSelector).toEqual(nodeSelector);
    expect(d.object?.spec?.tolerations).toEqual(tolerations);
  });

  it('refuses a tenant selector giving a forced key another value, naming the field, instead of overwriting it', () => {
    const d = toSuper(pod({ nodeSelector: { pool: 'platform' } }), forced);
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe('PodPolicyViolation');
    expect(d.skip?.message).toBe(
      'spec.nodeSelector["pool"] "platform" conflicts with pool=tenants, which the platform sets on every Pod of ' +
        'this tenant (pods.forced.nodeSelector); remove the entry or select "tenants"',
    );
    const condition = d.effects?.find((e) => e.type === 'tenantCondition');
    expect(condition).toMatchObject({ condition: { type: 'VCSynced', status: 'False', reason: 'PodPolicyViolation' } });
  });

  it('refuses a forced key with another value even where nodeLabelKeys would not allow the key at all', () => {
    const d = toSuper(pod({ nodeSelector: { pool: 'gpu' } }), { ...forced, nodeLabelKeys: [] });
    expect(d.skip?.message).toMatch(/^spec\.nodeSelector\["pool"\] "gpu" conflicts with pool=tenants/);
  });

  it('leaves an existing super Pod as it was created (its spec is immutable)', () => {
    const existing = {
      ...pod({ nodeSelector: { 'kubernetes.io/os': 'linux' } }),
      metadata: { name: 'web', namespace: SNS },
    };
    const d = toSuper(pod({ nodeSelector: { 'kubernetes.io/os': 'linux' } }), forced, existing);
    expect(d.object?.spec?.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(d.object?.spec?.tolerations).toBeUndefined();
  });

  it('applyForcedPlacement copies the forced values, never shares them', () => {
    const spec: PodSpec = { containers: [] };
    applyForcedPlacement(spec, forced);
    (spec.tolerations as Array<{ value?: string }>)[0]!.value = 'changed';
    (spec.nodeSelector as Record<string, string>).pool = 'changed';
    expect(forced.forced?.tolerations?.[0]?.value).toBe('tenants');
    expect(forced.forced?.nodeSelector?.pool).toBe('tenants');
  });
});

describe('VCSynced after a refusal', () => {
  const refused = {
    conditions: [{ type: SYNCED_CONDITION, status: 'False', reason: 'PodPolicyViolation', message: 'no' }],
  };
  const cleared: Effect = {
    type: 'tenantCondition',
    namespace: 'default',
    name: 'web',
    uid: 'uid-1',
    condition: {
      type: SYNCED_CONDITION,
      status: 'True',
      reason: SYNCED_REASON,
      message: 'the Pod is synced to the super cluster',
    },
  };

  it('turns True when a Pod refused earlier is created in the super', () => {
    const d = toSuper(pod({}, refused), undefined);
    expect(d.object).not.toBeNull();
    expect(d.effects).toContainEqual(cleared);
  });

  it('turns True on an update too, should the first write have been lost', () => {
    const existing = { ...pod(), metadata: { name: 'web', namespace: SNS } };
    expect(toSuper(pod({}, refused), undefined, existing).effects).toContainEqual(cleared);
  });

  it('costs no write for a Pod never refused, or already True', () => {
    const ok = { conditions: [{ type: SYNCED_CONDITION, status: 'True', reason: SYNCED_REASON, message: '' }] };
    for (const status of [undefined, { phase: 'Pending' }, ok]) {
      const effects = toSuper(pod({}, status), undefined).effects ?? [];
      expect(effects.filter((e) => e.type === 'tenantCondition')).toEqual([]);
    }
  });

  it('stays False while the Pod is still refused, with the new reason', () => {
    const d = toSuper(pod({ hostNetwork: true }, refused), undefined);
    expect(d.object).toBeNull();
    expect(d.effects).not.toContainEqual(cleared);
  });

  it('waits while the super ServiceAccount is being created (nothing synced yet)', () => {
    const d = podsPlugin.toSuper!(pod({}, refused), undefined, testContext());
    expect(d.skip?.reason).toBe('WaitingForServiceAccount');
    expect(d.effects).not.toContainEqual(cleared);
  });
});
