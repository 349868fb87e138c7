import { describe, expect, it } from 'vitest';
import { loadSchema } from '../../schemas/validate.ts';
import type { ProvisionerType, VirtualClusterSpec } from '../api/virtualcluster.ts';
import { defaultProvisioner, TENANT_DEFAULTS } from './defaults.ts';
import { evaluatePolicy, type TenantPolicy } from './policy.ts';

type Property = { default?: unknown; description?: string; properties?: Record<string, Property> };

const spec = (loadSchema('virtualCluster') as { properties: { spec: Property } }).properties.spec.properties!;

describe('TENANT_DEFAULTS', () => {
  it.each(Object.entries(TENANT_DEFAULTS))('%s is the default the VirtualCluster schema states', (field, value) => {
    const p = spec[field]!;
    expect(p, `spec.${field} in the schema`).toBeDefined();
    if (p.default !== undefined) expect(p.default).toBe(value);
    else expect(p.description).toMatch(`Defaults to ${value}.`);
  });

  it('holds no provisioner: the schema gives the field no default value the apiserver would write', () => {
    expect(TENANT_DEFAULTS).not.toHaveProperty('provisioner');
    expect(spec.provisioner?.default).toBeUndefined();
  });
});

describe('defaultProvisioner', () => {
  it.each<[string, ProvisionerType | undefined, string[], ProvisionerType | undefined]>([
    ['in-cluster manager, configured native', 'native', ['import', 'native'], 'native'],
    ['in-cluster manager, nothing configured', undefined, ['import', 'native'], 'native'],
    ["vc up's embedded manager (local offered)", undefined, ['import', 'native', 'local'], 'local'],
    ['embedded manager configured native', 'native', ['import', 'native', 'local'], 'native'],
    ['configured local but the manager has no local section', 'local', ['import', 'native'], undefined],
    ['only import offered: no default', undefined, ['import'], undefined],
    ['configured import', 'import', ['import', 'native'], 'import'],
  ])('%s', (_case, configured, offered, want) => {
    expect(defaultProvisioner(configured, offered)).toBe(want);
  });
});

describe("evaluatePolicy and the manager's default provisioner", () => {
  const localOnly: TenantPolicy = {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'TenantPolicy',
    metadata: { name: 'local-only' },
    spec: { provisioners: { allowed: ['local'] } },
  };
  it.each<[string, VirtualClusterSpec, ProvisionerType | undefined, ProvisionerType | undefined, string[]]>([
    ['names native, manager default local', { provisioner: { type: 'native' } }, 'local', 'native', []],
    ['names none, manager default native', {}, 'native', 'native', []],
    ['names none, manager default local', {}, 'local', 'local', []],
    // `vc create` and the GitOps dry run do not know the manager's default: the controller checks it.
    ['names none, default unknown (outside the manager)', {}, undefined, undefined, []],
  ])('built-in defaults: %s', (_case, s, manager, want, violations) => {
    const r = evaluatePolicy({ spec: s }, undefined, { provisioner: manager });
    expect(r.effective.provisioner).toBe(want);
    expect(r.violations.map((v) => v.message)).toEqual(violations);
  });

  it("refuses the manager's default where the policy does not allow it, naming it as the default", () => {
    const r = evaluatePolicy({ spec: {} }, localOnly, { provisioner: 'native' });
    expect(r.violations).toEqual([
      {
        field: 'spec.provisioner.type',
        message:
          'the manager\'s default provisioner "native" is not allowed under policy "local-only" (provisioners.allowed: local)',
      },
    ]);
    expect(evaluatePolicy({ spec: {} }, localOnly, {}).violations).toEqual([]);
  });
});
