import { describe, expect, it } from 'vitest';
import { ProvisionRefused } from '../provisioner.ts';
import type { ClusterVersion } from './layout.ts';
import { containerResources } from './parts.ts';
import {
  cpuMillis,
  judgeResources,
  resourcesOverPolicy,
  RESOURCES_OVER_POLICY,
  withPolicyLimits,
} from './resourcebounds.ts';

const cv = (spec: Partial<ClusterVersion['spec']> = {}): ClusterVersion['spec'] => ({
  kubernetesVersion: 'v1.36.3',
  ...spec,
});

describe('cpuMillis', () => {
  it.each([
    ['250m', 250],
    ['2', 2000],
    ['1.5', 1500],
    ['0.1', 100],
  ])('%s', (q, want) => expect(cpuMillis(q)).toBe(want));
  it('refuses another form', () => expect(() => cpuMillis('2k')).toThrow(/2k is not of the form/));
});

describe('resourcesOverPolicy', () => {
  const GiB = 1024 ** 3;
  it.each([
    ['no bound for a component the policy leaves out', cv(), { etcd: { memory: '4Gi' } }, undefined, []],
    [
      'the defaults within the bound',
      cv(),
      { etcd: { cpu: '1', memory: '4Gi' }, apiServer: { cpu: '1', memory: '2Gi' }, controllerManager: { cpu: '1' } },
      undefined,
      [],
    ],
    [
      'a ClusterVersion limit over the bound, named with its value',
      cv({ etcd: { resources: { limits: { memory: '8Gi' } } } }),
      { etcd: { memory: '4Gi' } },
      undefined,
      [
        'ClusterVersion big spec.etcd.resources.limits.memory: 8Gi is more than the 4Gi TenantPolicy "small" allows ' +
          '(controlPlane.maxResources.etcd.memory)',
      ],
    ],
    [
      'a request and a CPU limit over the bound, each named',
      cv({ apiServer: { resources: { requests: { cpu: '1500m' }, limits: { cpu: '3' } } } }),
      { apiServer: { cpu: '2' } },
      undefined,
      [
        'ClusterVersion big spec.apiServer.resources.limits.cpu: 3 is more than the 2 TenantPolicy "small" allows ' +
          '(controlPlane.maxResources.apiServer.cpu)',
      ],
    ],
    [
      "the provisioner's default over the bound, said to be the default",
      cv(),
      { apiServer: { memory: '1Gi' } },
      undefined,
      [
        "ClusterVersion big spec.apiServer.resources.limits.memory: 1280Mi (the native provisioner's default) is more " +
          'than the 1Gi TenantPolicy "small" allows (controlPlane.maxResources.apiServer.memory)',
      ],
    ],
    [
      "etcd's default memory limit follows the storage quota",
      cv(),
      { etcd: { memory: '4Gi' } },
      8 * GiB,
      [
        "ClusterVersion big spec.etcd.resources.limits.memory: 8448Mi (the native provisioner's default) is more " +
          'than the 4Gi TenantPolicy "small" allows (controlPlane.maxResources.etcd.memory)',
      ],
    ],
    [
      'a memory request raised alone raises the default limit with it (four times), which is judged too',
      cv({ controllerManager: { resources: { requests: { memory: '1Gi' } } } }),
      { controllerManager: { memory: '2Gi' } },
      undefined,
      [
        "ClusterVersion big spec.controllerManager.resources.limits.memory: 4096Mi (the native provisioner's default) " +
          'is more than the 2Gi TenantPolicy "small" allows (controlPlane.maxResources.controllerManager.memory)',
      ],
    ],
  ])('%s', (_name, spec, max, etcdBytes, want) =>
    expect(resourcesOverPolicy(spec, 'big', { policyName: 'small', max }, etcdBytes)).toEqual(want),
  );

  it('names the default ClusterVersion when the tenant names none', () =>
    expect(resourcesOverPolicy(cv(), undefined, { policyName: 'p', max: { apiServer: { cpu: '100m' } } })).toEqual([
      "spec.apiServer.resources.requests.cpu of the default ClusterVersion: 250m (the native provisioner's default) " +
        'is more than the 100m TenantPolicy "p" allows (controlPlane.maxResources.apiServer.cpu)',
    ]));
});

describe('judgeResources', () => {
  it('refuses with the reason and every field over the bound', () => {
    const big = { spec: cv({ etcd: { resources: { requests: { cpu: '2' }, limits: { memory: '8Gi' } } } }) };
    const e = (() => {
      try {
        judgeResources(big, 'big', { policyName: 'small', max: { etcd: { cpu: '1', memory: '4Gi' } } });
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(ProvisionRefused);
    expect((e as ProvisionRefused).reason).toBe(RESOURCES_OVER_POLICY);
    expect((e as ProvisionRefused).message).toBe(
      'ClusterVersion big spec.etcd.resources.requests.cpu: 2 is more than the 1 TenantPolicy "small" allows ' +
        '(controlPlane.maxResources.etcd.cpu); ClusterVersion big spec.etcd.resources.limits.memory: 8Gi is more ' +
        'than the 4Gi TenantPolicy "small" allows (controlPlane.maxResources.etcd.memory)',
    );
  });
  it('lets everything through without a bound', () =>
    expect(() =>
      judgeResources({ spec: cv({ etcd: { resources: { limits: { memory: '64Gi' } } } }) }, 'x', undefined),
    ).not.toThrow());
});

describe('withPolicyLimits', () => {
  const full = (spec: ClusterVersion['spec']): ClusterVersion => ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'ClusterVersion',
    metadata: { name: 'v' },
    spec,
  });
  /** limits is what each component's container runs with, as render gives it (containerResources). */
  const limits = (c: ClusterVersion) => ({
    etcd: containerResources('etcd', c.spec.etcd?.resources).limits,
    apiserver: containerResources('apiserver', c.spec.apiServer?.resources).limits,
    kcm: containerResources('controller-manager', c.spec.controllerManager?.resources).limits,
  });
  it.each([
    [
      'no bound: the default has no CPU limit',
      cv(),
      undefined,
      { etcd: { memory: '2304Mi' }, apiserver: { memory: '1280Mi' }, kcm: { memory: '512Mi' } },
    ],
    [
      "a bounded CPU without a limit gets the policy's maximum; a default memory limit within the bound stays",
      cv(),
      { apiServer: { cpu: '1', memory: '2Gi' }, etcd: { cpu: '500m' } },
      {
        etcd: { memory: '2304Mi', cpu: '500m' },
        apiserver: { memory: '1280Mi', cpu: '1' },
        kcm: { memory: '512Mi' },
      },
    ],
    [
      "the ClusterVersion's own limit stays (judgeResources refuses one over the bound)",
      cv({ controllerManager: { resources: { limits: { cpu: '300m' } } } }),
      { controllerManager: { cpu: '1' } },
      { etcd: { memory: '2304Mi' }, apiserver: { memory: '1280Mi' }, kcm: { memory: '512Mi', cpu: '300m' } },
    ],
  ])('%s', (_what, spec, max, want) => {
    const before = full(spec);
    const copy = structuredClone(before);
    expect(limits(withPolicyLimits(before, max))).toEqual(want);
    expect(before).toEqual(copy);
  });
  it('leaves what it renders within the bound it was judged by', () => {
    const max = { etcd: { cpu: '1' }, apiServer: { cpu: '2' }, controllerManager: { cpu: '1' } };
    const bounded = withPolicyLimits(full(cv()), max);
    expect(resourcesOverPolicy(bounded.spec, 'v', { policyName: 'p', max })).toEqual([]);
  });
});
