import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import type { PodsPolicyView } from '../sdk/src/index.ts';
import { checkPodPolicy, DEFAULT_PODS_POLICY } from '@virtualcluster-ts/plugin-sdk/pods';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

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
  [
    'a nodeSelector on the OS passes by default',
    { nodeSelector: { 'kubernetes.io/os': 'linux', 'topology.kubernetes.io/zone': 'a' } },
    undefined,
    undefined,
  ],
  [
    'a nodeSelector on a platform label is refused by default',
    { nodeSelector: { 'node-role.kubernetes.io/control-plane': '' } },
    undefined,
    'spec.nodeSelector["node-role.kubernetes.io/control-plane"]',
  ],
  [
    'a listed prefix passes',
    { nodeSelector: { 'example.com/gpu': 'a100' } },
    { nodeLabelKeys: ['example.com/*'] },
    undefined,
  ],
  [
    'required node affinity on kubernetes.io/hostname is refused by default',
    {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] },
            ],
          },
        },
      },
    },
    undefined,
    'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key',
  ],
  [
    'node affinity on a node field is left to the node pin check (nodepin.ts), which knows the vNodes',
    {
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 1, preference: { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] } },
          ],
        },
      },
    },
    undefined,
    undefined,
  ],
  ['the default scheduler passes', { schedulerName: 'default-scheduler' }, undefined, undefined],
  ['another scheduler is refused by default', { schedulerName: 'my-scheduler' }, undefined, 'spec.schedulerName'],
  ['a listed scheduler passes', { schedulerName: 'my-scheduler' }, { schedulerNames: ['my-scheduler'] }, undefined],
  ['hostNetwork is refused by default', { hostNetwork: true }, undefined, 'spec.hostNetwork'],
  ['hostPID is refused even with hostAccess below privileged', { hostPID: true }, { hostAccess: true }, 'spec.hostPID'],
  [
    'a hostPath volume is refused by default',
    { volumes: [{ name: 'root', hostPath: { path: '/' } }] },
    undefined,
    'spec.volumes[0].hostPath',
  ],
  [
    'an nfs volume is refused by default',
    {
      volumes: [
        { name: 'e', emptyDir: {} },
        { name: 'n', nfs: { server: 'x', path: '/' } },
      ],
    },
    undefined,
    'spec.volumes[1].nfs',
  ],
  [
    'an allowed volume type passes',
    { volumes: [{ name: 'n', nfs: { server: 'x', path: '/' } }] },
    { volumeTypes: ['nfs'] },
    undefined,
  ],
  [
    'a gitRepo volume is refused when only nfs is allowed',
    { volumes: [{ name: 'g', gitRepo: { repository: 'x' } }] },
    { volumeTypes: ['nfs'] },
    'spec.volumes[0].gitRepo',
  ],
  [
    'a host port is refused by default',
    {
      initContainers: [{ name: 'i', image: 'x', ports: [{ containerPort: 80 }, { containerPort: 81, hostPort: 81 }] }],
    },
    undefined,
    'spec.initContainers[0].ports[1].hostPort',
  ],
  [
    'a host port passes when allowed',
    { containers: [{ name: 'c', image: 'x', ports: [{ containerPort: 80, hostPort: 80 }] }] },
    { hostPorts: true },
    undefined,
  ],
  // a deleted Pod runs its grace period out: ten years would outlive the tenant's deletion by as long
  ['the default grace period passes', { terminationGracePeriodSeconds: 30 }, undefined, undefined],
  ['a grace period at the default bound passes', { terminationGracePeriodSeconds: 3600 }, undefined, undefined],
  [
    'a grace period of ten years is refused by default',
    { terminationGracePeriodSeconds: 315_360_000 },
    undefined,
    'spec.terminationGracePeriodSeconds',
  ],
  [
    'a grace period one second over the bound is refused',
    { terminationGracePeriodSeconds: 601 },
    { maxTerminationGracePeriodSeconds: 600 },
    'spec.terminationGracePeriodSeconds',
  ],
  [
    'a grace period the policy allows passes',
    { terminationGracePeriodSeconds: 7200 },
    { maxTerminationGracePeriodSeconds: 7200 },
    undefined,
  ],
];

describe('checkPodPolicy', () => {
  it('falls back to the TenantPolicy built-in defaults', () => {
    expect(DEFAULT_PODS_POLICY).toEqual({
      priorityClasses: DEFAULT_POLICY.podPriorityClasses,
      tolerations: DEFAULT_POLICY.podTolerations,
      schedulerNames: DEFAULT_POLICY.podSchedulerNames,
      hostPorts: DEFAULT_POLICY.podHostPorts,
      hostAccess: DEFAULT_POLICY.podHostAccess,
      volumeTypes: DEFAULT_POLICY.podVolumeTypes,
      preloadedImages: DEFAULT_POLICY.podPreloadedImages,
      registries: DEFAULT_POLICY.podRegistries,
      internalRegistries: DEFAULT_POLICY.podInternalRegistries,
      nodeLabelKeys: DEFAULT_POLICY.podNodeLabelKeys,
      forced: DEFAULT_POLICY.podForced,
      serviceAccountTokens: DEFAULT_POLICY.podServiceAccountTokens,
      maxTerminationGracePeriodSeconds: DEFAULT_POLICY.podMaxTerminationGracePeriodSeconds,
    });
  });
  it.each(cases)('%s', (_name, over, policy, field) => {
    expect(checkPodPolicy(spec(over), policy)?.field).toBe(field);
  });
  it('lets a privileged tenant whose policy allows host access use host namespaces and hostPath', () => {
    const host = spec({
      hostNetwork: true,
      hostPID: true,
      hostIPC: true,
      volumes: [{ name: 'root', hostPath: { path: '/' } }],
    });
    expect(checkPodPolicy(host, { hostAccess: true }, 'p', 'privileged')).toBeUndefined();
    expect(checkPodPolicy(host, undefined, 'p', 'privileged')?.field).toBe('spec.hostNetwork');
  });
  it('names the field, the value and the policy in its message', () => {
    expect(checkPodPolicy(spec({ priorityClassName: 'high' }), undefined, 'TenantPolicy "gold"')?.message).toBe(
      'spec.priorityClassName "high" is not allowed by TenantPolicy "gold" (pods.priorityClasses: none)',
    );
  });
});
