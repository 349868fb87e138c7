import { describe, expect, it } from 'vitest';
import { downOnly, type Plan } from './plan.ts';

const ref = { apiVersion: 'v1', kind: 'Pod', namespace: 'kube-system', name: 'coredns-1', uid: 'u' };
const full: Plan = {
  steps: [
    { op: 'createSuper', obj: { metadata: { name: 'coredns-1' } } },
    { op: 'patchSuper', namespace: 'n', name: 'coredns-1', ops: [] },
    { op: 'patchTenantStatus', namespace: 'kube-system', name: 'coredns-1', ops: [] },
    { op: 'patchTenant', namespace: 'kube-system', name: 'coredns-1', ops: [] },
    { op: 'deleteTenant', namespace: 'kube-system', name: 'coredns-1', uid: 'u' },
  ],
  effects: [
    { type: 'bind', namespace: 'kube-system', name: 'coredns-1', uid: 'u', node: 'r2.n' },
    { type: 'superServiceAccount', namespace: 'kube-system', name: 'coredns' },
    { type: 'event', side: 'tenant', regarding: ref, eventType: 'Normal', reason: 'R', message: 'm' },
    { type: 'event', side: 'super', regarding: ref, eventType: 'Normal', reason: 'R', message: 'm' },
    { type: 'deleteTenant', namespace: 'kube-system', name: 'coredns-1', uid: 'u' },
    {
      type: 'tenantCondition',
      namespace: 'kube-system',
      name: 'coredns-1',
      uid: 'u',
      condition: { type: 'VCSynced', status: 'False', reason: 'R', message: 'm' },
    },
  ],
  afterEffects: [{ op: 'patchTenantStatus', namespace: 'kube-system', name: 'coredns-1', ops: [] }],
  requeueAfterMs: 5,
  skip: { reason: 'S', message: 'm' },
};

describe('downOnly: a followed copy writes only its super side', () => {
  it('keeps super steps and super-side effects, drops every tenant write', () => {
    const out = downOnly(full);
    expect(out.steps.map((s) => s.op)).toEqual(['createSuper', 'patchSuper']);
    expect(out.effects.map((e) => `${e.type}${'side' in e ? `/${e.side}` : ''}`)).toEqual([
      'superServiceAccount',
      'event/super',
    ]);
    expect(out.afterEffects).toBeUndefined();
    expect(out).toMatchObject({ requeueAfterMs: 5, skip: { reason: 'S' } });
  });
});
