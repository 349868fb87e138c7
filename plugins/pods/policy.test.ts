import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import type { PodsPolicyView } from '../sdk/src/index.ts';
import { checkPodPolicy, DEFAULT_PODS_POLICY } from './policy.ts';
import type { PodSpec } from './types.ts';

const spec = (over: Partial<PodSpec>): PodSpec => ({ containers: [{ name: 'app', image: 'nginx' }], ...over });
const defaultTolerations = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
];

const cases: Array<[string, Partial<PodSpec>, PodsPolicyView | undefined, string | undefined]> = [
  ['a plain Pod passes the default policy', {}, undefined, undefined],
  [
    'the tolerations the tenant apiserver adds pass the default policy',
    { tolerations: defaultTolerations },
    undefined,
    undefined,
  ],
  ['a priority class is refused by default', { priorityClassName: 'high' }, undefined, 'spec.priorityClassName'],
  ['a listed priority class passes', { priorityClassName: 'high' }, { priorityClasses: ['high'] }, undefined],
  [
    'system- priority classes are always refused',
    { priorityClassName: 'system-cluster-critical' },
    { priorityClasses: ['system-cluster-critical'] },
    'spec.priorityClassName',
  ],
  [
    'Exists without a key is refused by default',
    { tolerations: [{ operator: 'Exists' }] },
    undefined,
    'spec.tolerations[0]',
  ],
  [
    'Exists without a key passes when a rule without key allows it',
    { tolerations: [{ operator: 'Exists' }] },
    { tolerations: [{}] },
    undefined,
  ],
  [
    'a toleration for all effects needs a rule for all effects',
    { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }] },
    undefined,
    'spec.tolerations[0]',
  ],
  [
    'an unlisted key is refused, at its index',
    { tolerations: [defaultTolerations[0], { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
    undefined,
    'spec.tolerations[1]',
  ],
  [
    'a listed key and effect passes',
    { tolerations: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
    { tolerations: [{ key: 'dedicated', effect: 'NoSchedule' }] },
    undefined,
  ],
];

describe('checkPodPolicy', () => {
  it('falls back to the TenantPolicy built-in defaults', () => {
    expect(DEFAULT_PODS_POLICY).toEqual({
      priorityClasses: DEFAULT_POLICY.podPriorityClasses,
      tolerations: DEFAULT_POLICY.podTolerations,
    });
  });
  it.each(cases)('%s', (_name, over, policy, field) => {
    expect(checkPodPolicy(spec(over), policy)?.field).toBe(field);
  });
  it('names the field, the value and the policy in its message', () => {
    expect(checkPodPolicy(spec({ priorityClassName: 'high' }), undefined, 'TenantPolicy "gold"')?.message).toBe(
      'spec.priorityClassName "high" is not allowed by TenantPolicy "gold" (pods.priorityClasses: none)',
    );
  });
});
