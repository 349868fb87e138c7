import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { nextCondition, planStatusWrite, setCondition, type Condition, type ConditionInput } from './status.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const now = new Date('2026-02-02T00:00:00.000Z');

const ready = (status: Condition['status'], reason = 'R', message = 'm'): ConditionInput => ({
  type: 'Ready',
  status,
  reason,
  message,
});

describe('setCondition', () => {
  it.each<{ name: string; before: Condition[] | undefined; set: ConditionInput; transition: string }>([
    { name: 'a new condition type starts now', before: undefined, set: ready('True'), transition: now.toISOString() },
    {
      name: 'an unchanged status keeps its transition time',
      before: [{ ...ready('True'), lastTransitionTime: T0 }],
      set: ready('True', 'Other', 'new message'),
      transition: T0,
    },
    {
      name: 'a changed status transitions now',
      before: [{ ...ready('True'), lastTransitionTime: T0 }],
      set: ready('False'),
      transition: now.toISOString(),
    },
    {
      name: 'Unknown to False is a transition',
      before: [{ ...ready('Unknown'), lastTransitionTime: T0 }],
      set: ready('False'),
      transition: now.toISOString(),
    },
  ])('$name', ({ before, set, transition }) => {
    const out = setCondition(before, set, now);
    expect(out).toEqual([{ ...set, lastTransitionTime: transition }]);
  });

  it('replaces only the condition of its type, puts it last, and leaves the input list alone', () => {
    const before: Condition[] = [
      { ...ready('True'), lastTransitionTime: T0 },
      { type: 'Stalled', status: 'False', reason: 'S', message: '', lastTransitionTime: T0 },
    ];
    const copy = structuredClone(before);
    const out = setCondition(before, ready('False', 'Broken'), now);
    expect(out.map((c) => c.type)).toEqual(['Stalled', 'Ready']);
    expect(out[1]).toMatchObject({ status: 'False', reason: 'Broken', lastTransitionTime: now.toISOString() });
    expect(before).toEqual(copy);
  });

  it('nextCondition keeps observedGeneration as given', () => {
    expect(nextCondition([], { ...ready('True'), observedGeneration: 4 }, now)).toEqual({
      ...ready('True'),
      observedGeneration: 4,
      lastTransitionTime: now.toISOString(),
    });
  });
});

describe('planStatusWrite', () => {
  interface St {
    phase?: string;
    message?: string;
    conditions?: Condition[];
  }
  interface Obj extends KubeObject {
    status?: St;
  }
  const cached = (): Obj => ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name: 'dev', namespace: 'team-a' },
    status: { phase: 'Provisioning', conditions: [{ ...ready('False'), lastTransitionTime: T0 }] },
  });

  it('writes nothing when the status is the same, whatever the key order or undefined fields', () => {
    const obj = cached();
    expect(
      planStatusWrite<St, Obj>(obj, { conditions: obj.status!.conditions, phase: 'Provisioning', message: undefined }),
    ).toBeUndefined();
  });

  it('never changes the object it is given, nor shares anything with what it returns', () => {
    const obj = cached();
    const before = structuredClone(obj);
    const status: St = { phase: 'Running', conditions: setCondition(obj.status!.conditions, ready('True'), now) };
    const w = planStatusWrite<St, Obj>(obj, status)!;
    expect(obj).toEqual(before);
    expect(w.patch).toEqual({ status });
    expect(w.updated).toEqual({ ...before, status });
    w.updated.metadata!.name = 'changed';
    w.updated.status!.conditions![0]!.reason = 'changed';
    expect(obj).toEqual(before);
    expect(status.conditions![0]!.reason).toBe('R');
  });
});
