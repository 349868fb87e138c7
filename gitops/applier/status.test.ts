import { describe, expect, it } from 'vitest';
import { validate } from '../../schemas/validate.ts';
import { computeStatus, MAX_MESSAGE, type StatusInput } from './status.ts';
import { REV1, REV2, vcEntry } from './testing.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');
const base: StatusInput = {
  previous: undefined,
  revision: REV1,
  digest: 'sha256:0',
  inventory: [vcEntry('team-a', 'dev')],
  generation: 3,
  now: t0,
};
const cond = (s: ReturnType<typeof computeStatus>, type: string) => s.conditions!.find((c) => c.type === type)!;
const gitSource = (status: unknown) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'GitSource',
  metadata: { name: 'tenants', namespace: 'platform' },
  spec: { url: 'https://git.example.com/t.git', ref: { branch: 'main' } },
  status,
});

describe('computeStatus', () => {
  it('marks success Ready and records the applied revision, inventory and generation', () => {
    const s = computeStatus(base);
    expect(cond(s, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Succeeded',
      observedGeneration: 3,
      lastTransitionTime: t0.toISOString(),
    });
    expect(cond(s, 'Reconciling')).toMatchObject({ status: 'False', reason: 'Succeeded' });
    expect(cond(s, 'Stalled')).toMatchObject({ status: 'False', reason: 'Succeeded' });
    expect(s).toMatchObject({
      lastAppliedRevision: REV1,
      lastAttemptedRevision: REV1,
      observedGeneration: 3,
      artifact: { revision: REV1, digest: 'sha256:0' },
    });
    expect(s.inventory).toEqual([vcEntry('team-a', 'dev')]);
    expect(validate('gitSource', gitSource(s))).toEqual([]);
  });

  it('keeps lastAppliedRevision on a stalled revision and says why', () => {
    const ok = computeStatus(base);
    const s = computeStatus({
      ...base,
      previous: ok,
      revision: REV2,
      now: t1,
      stop: { reason: 'ValidationFailed', stalled: true, message: 'a.yaml: bad' },
    });
    expect(s.lastAppliedRevision).toBe(REV1);
    expect(s.lastAttemptedRevision).toBe(REV2);
    expect(cond(s, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ValidationFailed',
      message: 'a.yaml: bad',
      lastTransitionTime: t1.toISOString(),
    });
    expect(cond(s, 'Stalled')).toMatchObject({ status: 'True', reason: 'ValidationFailed' });
    expect(cond(s, 'Reconciling')).toMatchObject({ status: 'False', lastTransitionTime: t0.toISOString() });
    expect(validate('gitSource', gitSource(s))).toEqual([]);
  });

  it('marks a failure that may pass as Reconciling, not Stalled', () => {
    const s = computeStatus({ ...base, stop: { reason: 'PruneFailed', stalled: false, message: 'timeout' } });
    expect(cond(s, 'Reconciling')).toMatchObject({ status: 'True', reason: 'PruneFailed' });
    expect(cond(s, 'Stalled')).toMatchObject({ status: 'False' });
    expect(s.lastAppliedRevision).toBeUndefined();
  });

  it('keeps conditions it does not own, records a used confirmation and clips long messages', () => {
    const previous = {
      conditions: [
        { type: 'ArtifactInStorage', status: 'True' as const, reason: 'Fetched', lastTransitionTime: t0.toISOString() },
      ],
    };
    const s = computeStatus({
      ...base,
      previous,
      confirmationUsed: REV1,
      stop: { reason: 'DeletionLimitExceeded', stalled: true, message: 'x'.repeat(40_000) },
    });
    expect(s.conditions!.map((c) => c.type)).toEqual(['ArtifactInStorage', 'Ready', 'Reconciling', 'Stalled']);
    expect(s.lastHandledConfirmation).toBe(REV1);
    expect(cond(s, 'Ready').message!.length).toBeLessThanOrEqual(MAX_MESSAGE);
    expect(validate('gitSource', gitSource(s))).toEqual([]);
  });
});
