import { describe, expect, it } from 'vitest';
import { rolloutDone, rolloutInProgress, stalledBecause, type RolledPod, type RolledStatefulSet } from './roll.ts';

const sts = (generation: number, replicas: number, status: RolledStatefulSet['status']): RolledStatefulSet => ({
  metadata: { name: 'apiserver', generation },
  spec: { replicas },
  status,
});
const done = {
  observedGeneration: 2,
  replicas: 3,
  readyReplicas: 3,
  updatedReplicas: 3,
  currentRevision: 'b',
  updateRevision: 'b',
};

describe('rolloutDone and rolloutInProgress', () => {
  it.each([
    { name: 'all replicas updated and ready on the current revision', s: sts(2, 3, done), isDone: true, moving: false },
    {
      name: 'the controller has not seen the new generation',
      s: sts(3, 3, done),
      isDone: false,
      moving: true,
    },
    {
      name: 'one replica still on the old revision',
      s: sts(2, 3, { ...done, updatedReplicas: 2, currentRevision: 'a' }),
      isDone: false,
      moving: true,
    },
    {
      name: 'updated but one not ready',
      s: sts(2, 3, { ...done, readyReplicas: 2 }),
      isDone: false,
      moving: false,
    },
    { name: 'no status yet', s: sts(1, 1, undefined), isDone: false, moving: true },
  ])('$name', ({ s, isDone, moving }) => {
    expect(rolloutDone(s)).toBe(isDone);
    expect(rolloutInProgress(s)).toBe(moving);
  });
});

const pod = (name: string, revision: string, status: RolledPod['status']): RolledPod => ({
  metadata: { name, labels: { 'controller-revision-hash': revision } },
  status,
});
const stalled = sts(2, 1, {
  observedGeneration: 2,
  readyReplicas: 0,
  updatedReplicas: 1,
  currentRevision: 'a',
  updateRevision: 'b',
});

describe('stalledBecause', () => {
  it.each([
    {
      name: 'the scheduler message of an unscheduled Pod',
      pods: [
        pod('apiserver-0', 'b', {
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              reason: 'Unschedulable',
              message: '0/1 nodes are available: 1 Insufficient cpu.',
            },
          ],
        }),
      ],
      want: '1/1 replicas updated, 0/1 ready; Pod apiserver-0 is not scheduled (Unschedulable): 0/1 nodes are available: 1 Insufficient cpu.',
    },
    {
      name: "a container's waiting reason",
      pods: [
        pod('apiserver-0', 'b', {
          phase: 'Running',
          containerStatuses: [
            {
              name: 'apiserver',
              state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting' } },
            },
          ],
        }),
      ],
      want: '1/1 replicas updated, 0/1 ready; Pod apiserver-0 container apiserver is waiting (CrashLoopBackOff): back-off 20s restarting',
    },
    {
      name: 'a terminated container with its exit code',
      pods: [
        pod('apiserver-0', 'b', {
          phase: 'Running',
          containerStatuses: [{ name: 'apiserver', state: { terminated: { exitCode: 1 } } }],
        }),
      ],
      want: '1/1 replicas updated, 0/1 ready; Pod apiserver-0 container apiserver terminated (exit 1)',
    },
    {
      name: 'Pods of the old revision and ready Pods are not the reason',
      pods: [
        pod('apiserver-1', 'a', { phase: 'Pending' }),
        pod('apiserver-0', 'b', { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }),
      ],
      want: '1/1 replicas updated, 0/1 ready',
    },
    {
      name: 'a Pod running but not ready',
      pods: [pod('apiserver-0', 'b', { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] })],
      want: '1/1 replicas updated, 0/1 ready; Pod apiserver-0 is Running and not ready',
    },
  ])('$name', ({ pods, want }) => {
    expect(stalledBecause(stalled, pods)).toBe(want);
  });
});
