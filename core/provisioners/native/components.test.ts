import { describe, expect, it } from 'vitest';
import { LABEL } from '../../names/names.ts';
import { componentsOfPods, type PodView } from './components.ts';

const pod = (component: string, ready: boolean, restarts = 0, waiting?: string): PodView => ({
  metadata: { name: `${component}-0`, labels: { [LABEL.component]: component } },
  status: {
    phase: 'Running',
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    containerStatuses: [
      { name: component, restartCount: restarts, state: waiting ? { waiting: { reason: waiting } } : {} },
    ],
  },
});

describe('componentsOfPods', () => {
  it.each([
    {
      name: 'all Ready, restarts counted',
      pods: [pod('etcd', true, 1), pod('apiserver', true, 2), pod('controller-manager', true)],
      want: [
        { name: 'etcd', running: true, restarts: 1 },
        { name: 'kube-apiserver', running: true, restarts: 2 },
        { name: 'kube-controller-manager', running: true, restarts: 0 },
      ],
    },
    {
      name: 'an apiserver in CrashLoopBackOff and a missing controller manager',
      pods: [pod('etcd', true), pod('apiserver', false, 5, 'CrashLoopBackOff')],
      want: [
        { name: 'etcd', running: true, restarts: 0 },
        {
          name: 'kube-apiserver',
          running: false,
          restarts: 5,
          message: 'kube-apiserver has no Ready Pod (Pod apiserver-0: CrashLoopBackOff)',
        },
        { name: 'kube-controller-manager', running: false, restarts: 0, message: 'kube-controller-manager has no Pod' },
      ],
    },
  ])('$name', ({ pods, want }) => expect(componentsOfPods(pods)).toEqual(want));
});
