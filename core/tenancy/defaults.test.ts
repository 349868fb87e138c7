import { describe, expect, it } from 'vitest';
import { loadSchema } from '../../schemas/validate.ts';
import { TENANT_DEFAULTS } from './defaults.ts';

type Property = { default?: unknown; description?: string; properties?: Record<string, Property> };

const spec = (loadSchema('virtualCluster') as { properties: { spec: Property } }).properties.spec.properties!;

describe('TENANT_DEFAULTS', () => {
  it.each(Object.entries(TENANT_DEFAULTS))('%s is the default the VirtualCluster schema states', (field, value) => {
    const p = spec[field]!;
    expect(p, `spec.${field} in the schema`).toBeDefined();
    if (p.default !== undefined) expect(p.default).toBe(value);
    else
      expect(p.description).toMatch(
        field === 'provisioner' ? `Absent: the ${value} provisioner` : `Defaults to ${value}.`,
      );
  });
});
