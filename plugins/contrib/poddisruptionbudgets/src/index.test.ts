import { describe, expect, it } from 'vitest';
import { runTable, testTenant } from '@virtualcluster-ts/plugin-sdk/testing';
import plugin, { BLOCKS_EVICTION, FIELD_REFUSED, type PodDisruptionBudget, SELECTOR_NOT_COPIED } from './index.ts';

const tenant = testTenant();
const sns = `${tenant.key}-web`;

const pdb = (namespace: string, spec: PodDisruptionBudget['spec'], extra: Partial<PodDisruptionBudget> = {}) =>
  ({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { namespace, name: 'web', uid: 'u1', generation: 3, ...extra.metadata },
    spec,
    ...(extra.status && { status: extra.status }),
  }) as PodDisruptionBudget;

describe('poddisruptionbudgets', () => {
  it('copies the budget down and its status up, with the tenant generation once observed', () => {
    const spec = { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } };
    const observed = {
      observedGeneration: 7,
      currentHealthy: 2,
      desiredHealthy: 1,
      disruptionsAllowed: 1,
      expectedPods: 2,
    };
    const got = runTable(plugin, {
      create: { tenantObj: pdb('web', spec) },
      status: {
        tenantObj: pdb('web', spec),
        superObj: pdb(sns, spec, { metadata: { generation: 7 }, status: observed }),
      },
      stale: {
        tenantObj: pdb('web', spec),
        superObj: pdb(sns, spec, { metadata: { generation: 8 }, status: observed }),
      },
    });
    expect(got.create!.down?.object).toEqual({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { namespace: sns, name: 'web' },
      spec,
    });
    expect(got.status!.up?.object?.status).toEqual({ ...observed, observedGeneration: 3 });
    const { observedGeneration: _, ...unobserved } = observed;
    expect(got.stale!.up?.object?.status).toEqual(unobserved);
  });

  it.each([
    ['maxUnavailable 0', { maxUnavailable: 0 }, BLOCKS_EVICTION],
    ['maxUnavailable 0%', { maxUnavailable: '0%' }, BLOCKS_EVICTION],
    ['minAvailable 100%', { minAvailable: '100%' }, BLOCKS_EVICTION],
    [
      'a selector on a key super Pods do not carry',
      { maxUnavailable: 1, selector: { matchLabels: { 'team.example.com/x': 'a' } } },
      SELECTOR_NOT_COPIED,
    ],
    [
      'an expression on such a key',
      { maxUnavailable: 1, selector: { matchExpressions: [{ key: 'corp.io/tier', operator: 'Exists' }] } },
      SELECTOR_NOT_COPIED,
    ],
    ['a spec field newer than the plugin knows', { maxUnavailable: 1, drainWindow: '1h' }, FIELD_REFUSED],
    [
      'a selector field newer than the plugin knows',
      { maxUnavailable: 1, selector: { matchLabels: {}, matchAnnotations: { a: 'b' } } },
      FIELD_REFUSED,
    ],
  ])('refuses %s, with a Warning on the tenant budget', (_, spec, reason) => {
    const d = runTable(plugin, { r: { tenantObj: pdb('web', spec) } }).r!.down!;
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe(reason);
    expect(d.effects).toEqual([
      expect.objectContaining({ type: 'event', side: 'tenant', eventType: 'Warning', reason }),
    ]);
  });

  it('allows a key the tenant policy copies', () => {
    const t = testTenant({ copiedMetadata: { labels: ['*', 'team.example.com/*'] } });
    const spec = { minAvailable: 1, selector: { matchLabels: { 'team.example.com/x': 'a' } } };
    expect(runTable(plugin, { r: { tenant: t, tenantObj: pdb('web', spec) } }).r!.down?.object?.spec).toEqual(spec);
  });
});
