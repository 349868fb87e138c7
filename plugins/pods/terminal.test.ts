import { describe, expect, it } from 'vitest';
import { CONTAINER_STATUS_UNKNOWN, CONTAINER_STATUS_UNKNOWN_MESSAGE, terminalStatus } from './terminal.ts';
import type { Pod, PodStatus } from '@virtualcluster-ts/plugin-sdk/pods';

const NOW = new Date('2026-01-01T00:00:00Z');
const unknown = {
  terminated: { exitCode: 137, reason: CONTAINER_STATUS_UNKNOWN, message: CONTAINER_STATUS_UNKNOWN_MESSAGE },
};
const exited = (exitCode: number) => ({ terminated: { exitCode, reason: exitCode ? 'Error' : 'Completed' } });

const pod = (status: PodStatus | undefined, restartPolicy = 'Never', containers = ['main']): Pod => ({
  metadata: { name: 'job-x', namespace: 'default', uid: 'u', deletionTimestamp: '2026-01-01T00:00:00Z' },
  spec: { restartPolicy, containers: containers.map((name) => ({ name })) },
  ...(status && { status }),
});

const running = (name = 'main') => ({ name, ready: true, started: true, state: { running: { startedAt: 'x' } } });
const readyConditions = [
  { type: 'Initialized', status: 'True' },
  { type: 'Ready', status: 'True' },
  { type: 'ContainersReady', status: 'True' },
  { type: 'PodScheduled', status: 'True' },
];
const notReady = [
  { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: NOW.toISOString() },
  { type: 'ContainersReady', status: 'False', reason: 'PodCompleted', lastTransitionTime: NOW.toISOString() },
];

describe('terminalStatus: what a kubelet leaves on a deleted Pod whose containers are gone', () => {
  it.each<[string, Pod, PodStatus | undefined]>([
    [
      'a Running Job Pod: its running container is unknown (137), the Pod Failed, no longer ready',
      pod({ phase: 'Running', conditions: readyConditions, containerStatuses: [running()] }),
      {
        phase: 'Failed',
        containerStatuses: [{ name: 'main', ready: false, started: false, state: unknown }],
        conditions: notReady,
      },
    ],
    [
      'every container exited 0: Succeeded',
      pod({ phase: 'Running', containerStatuses: [{ name: 'main', ready: false, state: exited(0) }] }),
      { phase: 'Succeeded', containerStatuses: [{ name: 'main', ready: false, started: false, state: exited(0) }] },
    ],
    [
      'every container exited 0 under restartPolicy Always: Succeeded too (a terminal Pod restarts nothing)',
      pod({ phase: 'Running', containerStatuses: [{ name: 'main', state: exited(0) }] }, 'Always'),
      { phase: 'Succeeded', containerStatuses: [{ name: 'main', ready: false, started: false, state: exited(0) }] },
    ],
    [
      'one container exited 1, another still running: Failed, the running one unknown',
      pod({ phase: 'Running', containerStatuses: [{ name: 'a', state: exited(1) }, running('b')] }, 'OnFailure', [
        'a',
        'b',
      ]),
      {
        phase: 'Failed',
        containerStatuses: [
          { name: 'a', ready: false, started: false, state: exited(1) },
          { name: 'b', ready: false, started: false, state: unknown },
        ],
      },
    ],
    [
      'a regular container without any status: Failed',
      pod({ phase: 'Running', containerStatuses: [{ name: 'a', state: exited(0) }] }, 'Never', ['a', 'b']),
      { phase: 'Failed', containerStatuses: [{ name: 'a', ready: false, started: false, state: exited(0) }] },
    ],
    [
      'init containers done with 0 and a regular one done with 0: Succeeded, init statuses kept',
      pod({
        phase: 'Running',
        initContainerStatuses: [{ name: 'init', state: exited(0) }],
        containerStatuses: [{ name: 'main', state: exited(0) }],
      }),
      {
        phase: 'Succeeded',
        containerStatuses: [{ name: 'main', ready: false, started: false, state: exited(0) }],
        initContainerStatuses: [{ name: 'init', ready: false, started: false, state: exited(0) }],
      },
    ],
    ['a Pending Pod that never ran a container: Failed', pod({ phase: 'Pending' }), { phase: 'Failed' }],
    ['a Pod without status: Failed', pod(undefined), { phase: 'Failed' }],
    ['already Failed: nothing to write', pod({ phase: 'Failed' }), undefined],
    ['already Succeeded: nothing to write', pod({ phase: 'Succeeded' }), undefined],
  ])('%s', (_name, p, want) => {
    const before = structuredClone(p);
    expect(terminalStatus(p, NOW)).toEqual(want);
    expect(p).toEqual(before);
  });
});
