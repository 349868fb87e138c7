import type { Operation } from 'rfc6902';
import { describe, expect, it } from 'vitest';
import { R } from '../kube/resources.ts';
import { stepWrite } from './execute.ts';
import { splitResize, type Step } from './plan.ts';

const RV: Operation = { op: 'test', path: '/metadata/resourceVersion', value: '7' };
const cpu: Operation = { op: 'replace', path: '/spec/containers/1/resources/requests/cpu', value: '200m' };
const limits: Operation = { op: 'add', path: '/spec/containers/0/resources/limits', value: { memory: '64Mi' } };
const policy: Operation = { op: 'add', path: '/spec/containers/0/resizePolicy', value: [] };
const image: Operation = { op: 'replace', path: '/spec/containers/0/image', value: 'nginx' };
const ann: Operation = { op: 'add', path: '/metadata/annotations/a', value: 'b' };
// an init container's resources are not resized in place: they stay with the Pod patch (and its error)
const init: Operation = { op: 'replace', path: '/spec/initContainers/0/resources/requests/cpu', value: '1' };

describe('splitResize', () => {
  it.each<[string, Operation[], { main: Operation[]; resize: Operation[] }]>([
    ['nothing to write', [], { main: [], resize: [] }],
    ['no resources: all in the Pod patch', [RV, image, ann], { main: [RV, image, ann], resize: [] }],
    ['resources only: all through resize', [RV, cpu, limits, policy], { main: [], resize: [RV, cpu, limits, policy] }],
    ['both: each part with the test', [RV, ann, cpu, image], { main: [RV, ann, image], resize: [RV, cpu] }],
    ['init containers stay in the Pod patch', [RV, init], { main: [RV, init], resize: [] }],
  ])('%s', (_, ops, want) => expect(splitResize(ops)).toEqual(want));
});

describe('stepWrite', () => {
  it('names the resize subresource of a super patch in vc_syncer_writes_total', () => {
    const step: Step = { op: 'patchSuper', name: 'p', namespace: 'n', ops: [RV, cpu], subresource: 'resize' };
    expect(stepWrite(R.pods, step)).toEqual({ side: 'super', verb: 'patch', resource: 'pods/resize' });
    expect(stepWrite(R.pods, { op: 'patchSuper', name: 'p', namespace: 'n', ops: [RV, cpu] })).toEqual({
      side: 'super',
      verb: 'patch',
      resource: 'pods',
    });
  });
});
