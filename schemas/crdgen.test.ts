import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parse } from 'yaml';
import {
  CRD_NAMES,
  celField,
  crdFile,
  generateCRD,
  renderCRDYaml,
  staleCRDs,
  toStructural,
  writeCRDs,
  type StructuralSchema,
} from './crdgen.ts';
import { validate } from './validate.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

// Keywords a structural openAPIV3Schema may hold (apiextensions.k8s.io/v1 JSONSchemaProps, the subset used here).
const ALLOWED = new Set([
  'type',
  'description',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'enum',
  'default',
  'required',
  'properties',
  'items',
  'additionalProperties',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-validations',
]);

/** walk calls fn on every schema node with its dotted path. */
function walk(node: StructuralSchema, fn: (n: StructuralSchema, path: string) => void, path = ''): void {
  fn(node, path);
  for (const [k, sub] of Object.entries(node.properties ?? {})) walk(sub, fn, path ? `${path}.${k}` : k);
  if (node.items) walk(node.items, fn, `${path}[]`);
  if (node.additionalProperties) walk(node.additionalProperties, fn, `${path}.*`);
}

const schemaOf = (n: (typeof CRD_NAMES)[number]) => generateCRD(n).spec.versions[0]!.schema.openAPIV3Schema;

describe('generated CRDs', () => {
  it.each(CRD_NAMES)('deploy/crds file of %s is up to date', (name) => {
    const file = crdFile(name);
    const committed = readFileSync(join(repoRoot, file), 'utf8');
    expect(committed, `${file} is stale: run npm run gen:crds`).toBe(renderCRDYaml(name));
  });

  it.each(CRD_NAMES)('%s has a structural schema', (name) => {
    const problems: string[] = [];
    walk(schemaOf(name), (n, path) => {
      const at = path || '<root>';
      if (!n.type) problems.push(`${at}: no type`);
      if (n.properties && n.type !== 'object') problems.push(`${at}: properties without type object`);
      if (n.properties && n.additionalProperties) problems.push(`${at}: properties with additionalProperties`);
      if ('$ref' in n || 'const' in n) problems.push(`${at}: $ref or const`);
      if ((n.additionalProperties as unknown) === false) problems.push(`${at}: additionalProperties false`);
      if (n.uniqueItems) problems.push(`${at}: uniqueItems`);
      for (const k of Object.keys(n)) if (!ALLOWED.has(k)) problems.push(`${at}: keyword ${k}`);
      if (path && !path.startsWith('metadata') && !n.description && !path.endsWith('.*'))
        problems.push(`${at}: no description`);
    });
    expect(problems).toEqual([]);
  });

  it('keeps only the type and the name restrictions of metadata', () => {
    expect(schemaOf('virtualCluster').properties!.metadata).toEqual({
      type: 'object',
      properties: { name: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } },
    });
    expect(Object.keys(schemaOf('clusterVersion').properties!.metadata!.properties!)).toEqual(['name']);
  });

  it('describes VirtualCluster: namespaced, vc, status subresource, its printer columns', () => {
    const crd = generateCRD('virtualCluster');
    expect(crd.metadata.name).toBe('virtualclusters.tenancy.x-k8s.io');
    expect(crd.spec).toMatchObject({
      group: 'tenancy.x-k8s.io',
      scope: 'Namespaced',
      names: {
        kind: 'VirtualCluster',
        listKind: 'VirtualClusterList',
        plural: 'virtualclusters',
        singular: 'virtualcluster',
        shortNames: ['vc'],
      },
    });
    const v = crd.spec.versions[0]!;
    expect(crd.spec.versions).toHaveLength(1);
    expect(v).toMatchObject({ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } });
    expect(v.additionalPrinterColumns.map((c) => [c.name, c.jsonPath])).toEqual([
      ['Phase', '.status.phase'],
      ['Provisioner', '.spec.provisioner.type'],
      ['Age', '.metadata.creationTimestamp'],
    ]);
    expect(v.schema.openAPIV3Schema.required).toEqual(['spec']);
  });

  it('describes ClusterVersion: cluster-scoped, cv, no status subresource', () => {
    const crd = generateCRD('clusterVersion');
    expect(crd.metadata.name).toBe('clusterversions.tenancy.x-k8s.io');
    expect(crd.spec).toMatchObject({
      scope: 'Cluster',
      names: { kind: 'ClusterVersion', plural: 'clusterversions', shortNames: ['cv'] },
    });
    const v = crd.spec.versions[0]!;
    expect(v.subresources).toBeUndefined();
    expect(v.additionalPrinterColumns.map((c) => c.name)).toEqual(['Version', 'Age']);
  });

  it('maps the VirtualCluster fields the apiserver must get right', () => {
    const spec = schemaOf('virtualCluster').properties!.spec!;
    const p = spec.properties!;
    expect(p.pluginConfig).toMatchObject({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(p.apiServer!.properties!.extraArgs).toMatchObject({
      type: 'object',
      additionalProperties: { type: 'string' },
    });
    expect(p.plugins!.properties!.enable).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'set' });
    expect(p.weight).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    // The TenantPolicy gives the default weight and Pod Security level: an apiserver default would hide an absent one.
    expect(p.weight!.default).toBeUndefined();
    expect(p.podSecurityLevel!.default).toBeUndefined();
    expect(p.policyName).toMatchObject({ type: 'string', maxLength: 253 });
    expect(p.provisioner!['x-kubernetes-validations']).toEqual([
      {
        rule: "!(has(self.type) && self.type == 'import') || has(self.__import__)",
        message: 'import is required when type is import',
        fieldPath: '.import',
        reason: 'FieldValueRequired',
      },
      {
        rule: "(has(self.type) && self.type == 'import') || !has(self.__import__)",
        message: 'import is not allowed unless type is import',
        fieldPath: '.import',
        reason: 'FieldValueForbidden',
      },
    ]);
    const conditions = schemaOf('virtualCluster').properties!.status!.properties!.conditions!;
    expect(conditions).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
    expect(schemaOf('virtualCluster').properties!.kind).toEqual({
      description: 'Kind of this object.',
      type: 'string',
    });
  });

  it('keeps only defaults the JSON Schema accepts', () => {
    const defaults: Record<string, unknown> = {};
    walk(schemaOf('virtualCluster').properties!.spec!, (n, path) => {
      if (n.default !== undefined && !path.includes('.')) defaults[path] = n.default;
    });
    expect(defaults).toEqual({ clusterDomain: 'cluster.local' });
    const value = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'a', namespace: 'b' },
      spec: defaults,
    };
    expect(validate('virtualCluster', value)).toEqual([]);
  });

  it('renders YAML under the generated-file header', () => {
    const text = renderCRDYaml('clusterVersion');
    expect(text.split('\n')[0]).toBe(
      '# generated from schemas/clusterversion.schema.json by npm run gen:crds; do not edit',
    );
    expect(parse(text)).toEqual(generateCRD('clusterVersion'));
  });

  it('lists missing and changed files as stale, and none after writing', () => {
    const root = mkdtempSync(join(tmpdir(), 'vc-crdgen-'));
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    const all = CRD_NAMES.map(crdFile);
    expect(all).toContain('deploy/crds/virtualclusters.yaml');
    expect(staleCRDs(root)).toEqual(all);
    expect(writeCRDs(root)).toEqual(all);
    expect(staleCRDs(root)).toEqual([]);
    writeFileSync(join(root, 'deploy/crds/clusterversions.yaml'), '# edited\n');
    expect(staleCRDs(root)).toEqual(['deploy/crds/clusterversions.yaml']);
  });
});

describe('toStructural', () => {
  it('inlines $refs, letting the use site override, and drops document keywords', () => {
    const out = toStructural({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'x',
      title: 'T',
      type: 'object',
      additionalProperties: false,
      $defs: { n: { description: 'def', type: 'string', maxLength: 3, $comment: 'c' } },
      properties: { a: { $ref: '#/$defs/n', description: 'use' }, b: { const: 'x' }, c: { enum: [1, 2] } },
    });
    expect(out).toEqual({
      type: 'object',
      properties: {
        a: { description: 'use', type: 'string', maxLength: 3 },
        b: { type: 'string', enum: ['x'] },
        c: { type: 'integer', enum: [1, 2] },
      },
    });
  });

  it('drops conditionals it cannot express in CEL', () => {
    const out = toStructural({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      allOf: [{ if: { properties: { a: { pattern: '^x' } } }, then: { required: ['b'] } }],
      oneOf: [{ required: ['a'] }, { required: ['b'] }],
    });
    expect(out['x-kubernetes-validations']).toBeUndefined();
    expect(Object.keys(out)).toEqual(['type', 'properties']);
  });

  it('reads an if without required as true when the property is absent', () => {
    const out = toStructural({
      type: 'object',
      properties: { mode: { type: 'string' }, 'dry-run': { type: 'string' } },
      if: { properties: { mode: { const: "it's" } } },
      then: { required: ['dry-run'] },
    });
    expect(out['x-kubernetes-validations']).toEqual([
      {
        rule: "!(!has(self.mode) || self.mode == 'it\\'s') || has(self.dry__dash__run)",
        message: "dry-run is required when mode is it's",
        fieldPath: '.dry-run',
        reason: 'FieldValueRequired',
      },
    ]);
  });

  it('keeps uniqueItems only as a set of scalars', () => {
    expect(
      toStructural({
        type: 'array',
        uniqueItems: true,
        items: { type: 'object', properties: { a: { type: 'string' } } },
      }),
    ).not.toHaveProperty('x-kubernetes-list-type');
  });

  it('rejects keywords it does not know and non-structural maps', () => {
    expect(() => toStructural({ type: 'object', patternProperties: { '^a': { type: 'string' } } })).toThrow(
      /no CRD counterpart for keyword patternProperties/,
    );
    expect(() =>
      toStructural({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'string' } }),
    ).toThrow(/not structural/);
  });

  it.each([
    ['type', 'type'],
    ['import', '__import__'],
    ['namespace', '__namespace__'],
    ['a-b.c/d', 'a__dash__b__dot__c__slash__d'],
    ['x__y', 'x__underscores__y'],
  ])('names property %s as %s in CEL', (name, want) => {
    expect(celField(name)).toBe(want);
  });
});
