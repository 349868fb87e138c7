import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '@virtualcluster-ts/plugin-sdk/pods';
import { testContext } from '../../core/plugins/testing.ts';
import {
  generationAnnotation,
  mapObservedGenerations,
  TENANT_GENERATION,
  tenantObservedGeneration,
} from './generation.ts';
import { podsPlugin } from './index.ts';

/** superAt is a super Pod at generation `gen`, observed by its kubelet at `observed`, written from tenant `tenant`. */
const superAt = (
  gen: number,
  observed: number | undefined,
  tenant: string | undefined,
  status: PodStatus = {},
): Pod => ({
  metadata: {
    name: 'p',
    generation: gen,
    ...(tenant !== undefined && { annotations: { [TENANT_GENERATION]: tenant } }),
  },
  status: { ...status, ...(observed !== undefined && { observedGeneration: observed }) },
});
const tenantAt = (gen: number, status?: PodStatus): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 't-uid', generation: gen },
  spec: { containers: [{ name: 'c', image: 'busybox' }], nodeName: 'vnode' },
  ...(status && { status }),
});

describe('generationAnnotation', () => {
  it.each<[string, Pod, Record<string, string>]>([
    ['the tenant generation, as a string', tenantAt(7), { [TENANT_GENERATION]: '7' }],
    ['none without a generation', { metadata: { name: 'p' } }, {}],
  ])('%s', (_, p, want) => expect(generationAnnotation(p)).toEqual(want));
});

describe('tenantObservedGeneration', () => {
  it.each<[string, Pod, number | undefined]>([
    ['the super kubelet caught up: the recorded tenant generation', superAt(2, 2, '5'), 5],
    ['observed beyond (a later write not yet in the cache): still the recorded one', superAt(2, 3, '5'), 5],
    ['the super kubelet lags: unknown', superAt(3, 2, '6'), undefined],
    ['no observedGeneration (a kubelet that does not track it): unknown', superAt(1, undefined, '1'), undefined],
    ['no annotation (a super Pod written before it was recorded): unknown', superAt(1, 1, undefined), undefined],
    ['an annotation that is not a whole number: unknown', superAt(1, 1, '1x'), undefined],
  ])('%s', (_, p, want) => expect(tenantObservedGeneration(p)).toBe(want));
});

describe('mapObservedGenerations', () => {
  const cond = (type: string, observedGeneration?: number) => ({
    type,
    status: 'True',
    ...(observedGeneration !== undefined && { observedGeneration }),
  });
  it.each<[string, PodStatus, Pod, Pod, PodStatus]>([
    [
      'caught up: status and current conditions take the tenant generation',
      { observedGeneration: 2, conditions: [cond('Ready', 2), cond('PodScheduled')] },
      superAt(2, 2, '5'),
      tenantAt(5),
      { observedGeneration: 5, conditions: [cond('Ready', 5), cond('PodScheduled')] },
    ],
    [
      'lagging: the tenant keeps its observedGeneration; an older condition keeps the tenant value or none',
      { observedGeneration: 1, conditions: [cond('Ready', 1), cond('Initialized', 1)] },
      superAt(2, 1, '4'),
      tenantAt(4, { observedGeneration: 3, conditions: [cond('Ready', 3)] }),
      { observedGeneration: 3, conditions: [cond('Ready', 3), cond('Initialized')] },
    ],
    [
      'lagging and never observed on the tenant: no observedGeneration at all (not the super number)',
      { observedGeneration: 1 },
      superAt(2, 1, '2'),
      tenantAt(2),
      {},
    ],
    [
      'never goes back: a recorded generation below what the tenant shows leaves it',
      { observedGeneration: 1 },
      superAt(1, 1, '2'),
      tenantAt(4, { observedGeneration: 3 }),
      { observedGeneration: 3 },
    ],
  ])('%s', (_, status, sup, ten, want) => expect(mapObservedGenerations(status, sup, ten)).toEqual(want));
});

describe('pods plugin: generations', () => {
  const ctx = testContext();
  it('toTenant shows the tenant generation the super kubelet has observed, not the super number', () => {
    const sup: Pod = {
      ...superAt(2, 2, '6', { phase: 'Running', conditions: [cond2('Ready', 2)] }),
      spec: { containers: [{ name: 'c', image: 'busybox' }], nodeName: 'vnode' },
    };
    const got = podsPlugin.toTenant!(sup, tenantAt(6), ctx).object as Pod;
    expect(got.status).toMatchObject({ phase: 'Running', observedGeneration: 6 });
    expect(got.status?.conditions).toEqual([cond2('Ready', 6)]);
  });
  it('toSuper records the tenant generation on the super Pod it updates', () => {
    const sup: Pod = {
      ...superAt(1, 1, '1'),
      metadata: { ...superAt(1, 1, '1').metadata, namespace: ctx.names.superNamespace('default') },
      spec: { containers: [{ name: 'c', image: 'busybox' }], nodeName: 'node-1' },
    };
    const got = podsPlugin.toSuper!(tenantAt(3), sup, ctx).object as Pod;
    expect(got.metadata?.annotations?.[TENANT_GENERATION]).toBe('3');
  });
});

function cond2(type: string, observedGeneration: number) {
  return { type, status: 'True', observedGeneration };
}
