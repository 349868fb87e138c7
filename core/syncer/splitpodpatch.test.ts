import type { Operation } from 'rfc6902';
import { describe, expect, it } from 'vitest';
import { R } from '../kube/resources.ts';
import { stepWrite } from './execute.ts';
import { type PodPatch, splitPodPatch, type Step } from './plan.ts';

const RV: Operation = { op: 'test', path: '/metadata/resourceVersion', value: '7' };
const cpu: Operation = { op: 'replace', path: '/spec/containers/1/resources/requests/cpu', value: '200m' };
const limits: Operation = { op: 'add', path: '/spec/containers/0/resources/limits', value: { memory: '64Mi' } };
const policy: Operation = { op: 'add', path: '/spec/containers/0/resizePolicy', value: [] };
const image: Operation = { op: 'replace', path: '/spec/containers/0/image', value: 'nginx' };
const ann: Operation = { op: 'add', path: '/metadata/annotations/a', value: 'b' };
// an init container's resources are not resized in place: they stay with the Pod patch (and its error)
const init: Operation = { op: 'replace', path: '/spec/initContainers/0/resources/requests/cpu', value: '1' };
// kubectl debug's first ephemeral container, and a second one beside it
const debug: Operation = { op: 'add', path: '/spec/ephemeralContainers', value: [{ name: 'd', image: 'busybox' }] };
const debug2: Operation = { op: 'add', path: '/spec/ephemeralContainers/1', value: { name: 'e', image: 'busybox' } };

const split = (main: Operation[], resize: Operation[] = [], ephemeralcontainers: Operation[] = []): PodPatch => ({
  main,
  resize,
  ephemeralcontainers,
});

describe('splitPodPatch', () => {
  it.each<[string, Operation[], PodPatch]>([
    ['nothing to write', [], split([])],
    ['no resources: all in the Pod patch', [RV, image, ann], split([RV, image, ann])],
    ['resources only: all through resize', [RV, cpu, limits, policy], split([], [RV, cpu, limits, policy])],
    ['both: each part with the test', [RV, ann, cpu, image], split([RV, ann, image], [RV, cpu])],
    ['init containers stay in the Pod patch', [RV, init], split([RV, init])],
    ['ephemeral containers go through ephemeralcontainers', [RV, debug], split([], [], [RV, debug])],
    ['all three, each with the test', [RV, ann, debug2, cpu], split([RV, ann], [RV, cpu], [RV, debug2])],
  ])('%s', (_, ops, want) => expect(splitPodPatch(ops)).toEqual(want));
});

describe('stepWrite', () => {
  it('names the subresource of a super patch in vc_syncer_writes_total', () => {
    const step: Step = { op: 'patchSuper', name: 'p', namespace: 'n', ops: [RV, cpu], subresource: 'resize' };
    expect(stepWrite(R.pods, step)).toEqual({ side: 'super', verb: 'patch', resource: 'pods/resize' });
    expect(stepWrite(R.pods, { ...step, ops: [RV, debug], subresource: 'ephemeralcontainers' })).toEqual({
      side: 'super',
      verb: 'patch',
      resource: 'pods/ephemeralcontainers',
    });
    expect(stepWrite(R.pods, { op: 'patchSuper', name: 'p', namespace: 'n', ops: [RV, cpu] })).toEqual({
      side: 'super',
      verb: 'patch',
      resource: 'pods',
    });
  });
});
