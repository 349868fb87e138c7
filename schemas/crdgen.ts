import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { loadSchema, SCHEMAS } from './validate.ts';

/**
 * This module turns the JSON Schemas of the project's own kinds into CustomResourceDefinitions. The JSON Schema stays
 * the single source: ajv checks it at every entry point that reads these objects, and the CRD carries the structural
 * subset the apiserver accepts. What the CRD cannot say is dropped by an explicit list; any other keyword is an
 * error, so a new schema feature is never lost unnoticed.
 *
 * Over 500 lines, on purpose: about 120 of them are TARGETS, the table of each kind's names, scope, printer columns
 * and subresources, and the rest is one walk from a JSON Schema to its structural subset that shares the kept and
 * dropped keyword lists; it runs at build time (npm run gen:crds) and in tests, never in the manager.
 */

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..');

/** GROUP is the API group of the project's kinds. */
export const GROUP = 'tenancy.x-k8s.io';
/** CAPI_GROUPS are the API groups of the Cluster API provider kinds (control plane, infrastructure cluster). */
export const CAPI_GROUPS = {
  controlPlane: 'controlplane.tenancy.x-k8s.io',
  infrastructure: 'infrastructure.tenancy.x-k8s.io',
} as const;

/**
 * CAPI_CONTRACT_LABELS mark a provider CRD with the Cluster API contract it follows and the versions that serve it
 * (`cluster.x-k8s.io/<contract>: <versions joined by _>`): Cluster API reads it to pick the apiVersion it talks.
 */
export const CAPI_CONTRACT_LABELS: Readonly<Record<string, string>> = { 'cluster.x-k8s.io/v1beta2': 'v1alpha1' };

/** VERSION is the only served and stored version. */
export const VERSION = 'v1alpha1';

/** CRD_NAMES are the schemas a CRD is generated from. */
export const CRD_NAMES = [
  'virtualCluster',
  'clusterVersion',
  'gitSource',
  'tenantPolicy',
  'virtualClusterControlPlane',
  'virtualClusterInfraCluster',
] as const;
/** CRDName is one of CRD_NAMES. */
export type CRDName = (typeof CRD_NAMES)[number];

/** PrinterColumn is one additionalPrinterColumns entry of a CRD version. */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** StructuralSchema is one node of a CRD's openAPIV3Schema. */
export interface StructuralSchema {
  type?: string;
  description?: string;
  properties?: Record<string, StructuralSchema>;
  items?: StructuralSchema;
  additionalProperties?: StructuralSchema;
  required?: string[];
  'x-kubernetes-validations'?: ValidationRule[];
  [keyword: string]: unknown;
}

/** ValidationRule is one x-kubernetes-validations CEL rule. */
export interface ValidationRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired';
}

/** CustomResourceDefinition is the apiextensions.k8s.io/v1 object generateCRD returns. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories?: string[];
    };
    scope: 'Namespaced' | 'Cluster';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: StructuralSchema };
      subresources?: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
    }>;
  };
}

interface Target {
  kind: string;
  plural: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  columns: PrinterColumn[];
  /** arrays of objects that are maps keyed by these fields (x-kubernetes-list-type: map), by dotted path */
  listMaps?: Record<string, string[]>;
  /** the API group when it is not GROUP (the Cluster API provider kinds) */
  group?: string;
  /** labels of the CRD, e.g. the Cluster API contract label */
  labels?: Record<string, string>;
  /** categories kubectl groups the kind under (`kubectl get cluster-api`) */
  categories?: string[];
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

const TARGETS: Record<CRDName, Target> = {
  virtualCluster: {
    kind: 'VirtualCluster',
    plural: 'virtualclusters',
    shortNames: ['vc'],
    scope: 'Namespaced',
    columns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
      {
        name: 'Provisioner',
        type: 'string',
        jsonPath: '.spec.provisioner.type',
        description: 'How the control plane is provided.',
      },
      age,
    ],
    listMaps: { 'status.conditions': ['type'] },
  },
  clusterVersion: {
    kind: 'ClusterVersion',
    plural: 'clusterversions',
    shortNames: ['cv'],
    scope: 'Cluster',
    columns: [
      { name: 'Version', type: 'string', jsonPath: '.spec.kubernetesVersion', description: 'Kubernetes version.' },
      age,
    ],
  },
  gitSource: {
    kind: 'GitSource',
    plural: 'gitsources',
    shortNames: ['gs'],
    scope: 'Namespaced',
    columns: [
      { name: 'URL', type: 'string', jsonPath: '.spec.url', description: 'Repository URL.' },
      {
        name: 'Ready',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
        description: 'Whether the last revision was applied in full.',
      },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        description: 'Why it is or is not ready.',
        priority: 1,
      },
      {
        name: 'Revision',
        type: 'string',
        jsonPath: '.status.lastAppliedRevision',
        description: 'Last revision applied in full.',
      },
      age,
    ],
    listMaps: { 'status.conditions': ['type'] },
  },
  tenantPolicy: {
    kind: 'TenantPolicy',
    plural: 'tenantpolicies',
    shortNames: ['tp'],
    scope: 'Cluster',
    columns: [
      {
        name: 'Default',
        type: 'string',
        jsonPath: ".metadata.annotations['tenancy\\.x-k8s\\.io/is-default-policy']",
        description: 'Whether VirtualClusters that name no policy get this one.',
      },
      age,
    ],
  },
  virtualClusterControlPlane: {
    kind: 'VirtualClusterControlPlane',
    plural: 'virtualclustercontrolplanes',
    shortNames: ['vccp'],
    scope: 'Namespaced',
    group: CAPI_GROUPS.controlPlane,
    labels: CAPI_CONTRACT_LABELS,
    categories: ['cluster-api'],
    columns: [
      { name: 'Version', type: 'string', jsonPath: '.spec.version', description: 'Kubernetes version asked for.' },
      {
        name: 'Initialized',
        type: 'boolean',
        jsonPath: '.status.initialization.controlPlaneInitialized',
        description: 'Whether the tenant apiserver has served.',
      },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: "The VirtualCluster's phase." },
      age,
    ],
    listMaps: { 'status.conditions': ['type'] },
  },
  virtualClusterInfraCluster: {
    kind: 'VirtualClusterInfraCluster',
    plural: 'virtualclusterinfraclusters',
    shortNames: ['vcic'],
    scope: 'Namespaced',
    group: CAPI_GROUPS.infrastructure,
    labels: CAPI_CONTRACT_LABELS,
    categories: ['cluster-api'],
    columns: [
      {
        name: 'Provisioned',
        type: 'boolean',
        jsonPath: '.status.initialization.provisioned',
        description: 'Whether Cluster API may go on.',
      },
      age,
    ],
    listMaps: { 'status.conditions': ['type'] },
  },
};

type Json = Record<string, unknown>;

/** Keywords copied into the CRD unchanged (where their values are not schemas). */
const KEPT = new Set([
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
]);

/**
 * Keywords with no structural counterpart, dropped. Conditionals (if/then/else, allOf, anyOf, oneOf, not) are
 * dropped unless they are the simple if/then/else form toStructural turns into CEL, and so is propertyNames: ajv
 * validates the full schema at every entry point of the project, and only an object written past them (kubectl
 * straight to the apiserver) escapes these checks.
 */
const DROPPED = new Set([
  '$schema',
  '$id',
  '$defs',
  '$comment',
  'title',
  'examples',
  'propertyNames',
  'not',
  'anyOf',
  'oneOf',
]);

// CEL names that must be written __name__ when they are property names.
const CEL_RESERVED = new Set([
  'true',
  'false',
  'null',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
]);

/** celField is how a CEL rule in a CRD names a property: Kubernetes' escaping of reserved words and `_.-/`. */
export function celField(name: string): string {
  if (CEL_RESERVED.has(name)) return `__${name}__`;
  return name
    .replaceAll('__', '__underscores__')
    .replaceAll('.', '__dot__')
    .replaceAll('-', '__dash__')
    .replaceAll('/', '__slash__');
}

const celString = (v: string): string => `'${v.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

function resolveRef(ref: string, root: Json): Json {
  if (!ref.startsWith('#/')) throw new Error(`crdgen: only local $refs are supported, got ${ref}`);
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    node = (node as Json | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  if (!node || typeof node !== 'object') throw new Error(`crdgen: $ref ${ref} does not resolve`);
  return node as Json;
}

function inferType(values: unknown[]): string | undefined {
  const types = new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
  if (types.size !== 1) return undefined;
  const [t] = types;
  return t === 'string' || t === 'integer' || t === 'number' || t === 'boolean' ? t : undefined;
}

/**
 * conditionalRules turns `{if: {properties: {k: {const: v}}, required?: [k]}, then, else}` into CEL rules when then
 * and else only require properties or forbid them (`properties: {p: false}`). Anything else returns null.
 */
function conditionalRules(c: Json): ValidationRule[] | null {
  const keys = Object.keys(c);
  if (!keys.includes('if') || keys.some((k) => k !== 'if' && k !== 'then' && k !== 'else')) return null;
  const cond = c.if as Json;
  const condProps = cond.properties as Record<string, Json> | undefined;
  if (!condProps || Object.keys(cond).some((k) => k !== 'properties' && k !== 'required')) return null;
  const entries = Object.entries(condProps);
  if (entries.length !== 1) return null;
  const [key, test] = entries[0]!;
  if (Object.keys(test).length !== 1 || typeof test.const !== 'string') return null;
  const f = `self.${celField(key)}`;
  const eq = `${f} == ${celString(test.const)}`;
  const present = ((cond.required as string[] | undefined) ?? []).includes(key);
  const when = present ? `has(${f}) && ${eq}` : `!has(${f}) || ${eq}`;
  const label = `${key} is ${test.const}`;

  const rules: ValidationRule[] = [];
  for (const [branch, guard, phrase] of [
    ['then', `!(${when})`, `when ${label}`],
    ['else', `(${when})`, `unless ${label}`],
  ] as const) {
    const b = c[branch] as Json | undefined;
    if (b === undefined) continue;
    if (Object.keys(b).some((k) => k !== 'required' && k !== 'properties')) return null;
    for (const p of (b.required as string[] | undefined) ?? []) {
      rules.push({
        rule: `${guard} || has(self.${celField(p)})`,
        message: `${p} is required ${phrase}`,
        fieldPath: `.${p}`,
        reason: 'FieldValueRequired',
      });
    }
    for (const [p, s] of Object.entries((b.properties as Record<string, unknown> | undefined) ?? {})) {
      if (s !== false) return null;
      rules.push({
        rule: `${guard} || !has(self.${celField(p)})`,
        message: `${p} is not allowed ${phrase}`,
        fieldPath: `.${p}`,
        reason: 'FieldValueForbidden',
      });
    }
  }
  return rules;
}

/**
 * toStructural converts one JSON Schema node into a structural CRD schema: $refs inlined, const as a one-value enum,
 * `additionalProperties: false` dropped (pruning removes unknown fields instead), a free-form object kept whole with
 * x-kubernetes-preserve-unknown-fields, `uniqueItems` on scalars as a set list, simple if/then/else as CEL rules.
 * root is the document $refs resolve against; path is the dotted field path, for listMaps and error messages.
 */
export function toStructural(
  schema: Json,
  root: Json = schema,
  path = '',
  listMaps: Record<string, string[]> = {},
): StructuralSchema {
  let node = schema;
  for (let depth = 0; typeof node.$ref === 'string'; depth++) {
    if (depth > 32) throw new Error(`crdgen: $ref cycle at ${path || '<root>'}`);
    const { $ref, ...rest } = node;
    node = { ...resolveRef($ref as string, root), ...rest };
  }
  const out: StructuralSchema = {};
  const rules: ValidationRule[] = [];
  for (const [k, v] of Object.entries(node)) {
    if (KEPT.has(k)) out[k] = v;
    else if (DROPPED.has(k) || k === '$ref') continue;
    else if (k === 'const') out.enum = [v];
    else if (k === 'properties') {
      out.properties = {};
      for (const [name, sub] of Object.entries(v as Record<string, Json>)) {
        out.properties[name] = toStructural(sub, root, path ? `${path}.${name}` : name, listMaps);
      }
    } else if (k === 'items') {
      out.items = toStructural(v as Json, root, `${path}[]`, listMaps);
    } else if (k === 'additionalProperties') {
      if (node.properties && v !== false)
        throw new Error(`crdgen: ${path || '<root>'}: properties and additionalProperties together are not structural`);
      if (typeof v === 'object' && v !== null)
        out.additionalProperties = toStructural(v as Json, root, `${path}.*`, listMaps);
      else if (v === true) out['x-kubernetes-preserve-unknown-fields'] = true;
    } else if (k === 'uniqueItems') {
      const items = node.items as Json | undefined;
      const itemType = items ? (toStructural(items, root).type ?? '') : '';
      if (v === true && ['string', 'integer', 'number', 'boolean'].includes(itemType))
        out['x-kubernetes-list-type'] = 'set';
    } else if (k === 'allOf') {
      for (const c of v as Json[]) rules.push(...(conditionalRules(c) ?? []));
    } else if (k === 'if') {
      rules.push(...(conditionalRules({ if: node.if, then: node.then, else: node.else }) ?? []));
    } else if (k === 'then' || k === 'else') continue;
    else throw new Error(`crdgen: ${path || '<root>'}: no CRD counterpart for keyword ${k}`);
  }
  if (!out.type) {
    const inferred = out.enum ? inferType(out.enum as unknown[]) : out.properties ? 'object' : undefined;
    if (inferred) out.type = inferred;
  }
  if (out.type === 'object' && !out.properties && !out.additionalProperties)
    out['x-kubernetes-preserve-unknown-fields'] = true;
  if (listMaps[path]) {
    out['x-kubernetes-list-type'] = 'map';
    out['x-kubernetes-list-map-keys'] = listMaps[path];
  }
  if (rules.length) out['x-kubernetes-validations'] = rules;
  const { description, type, ...rest } = out;
  return { ...(description !== undefined ? { description } : {}), ...(type !== undefined ? { type } : {}), ...rest };
}

/**
 * rootSchema converts a whole object's schema. apiVersion, kind and metadata belong to the apiserver and are not
 * listed as required: apiVersion and kind keep their type and description, metadata its type and the restrictions of
 * metadata.name (the apiserver rejects anything else on metadata, descriptions included). A VirtualCluster's name
 * becomes part of namespace names, so the apiserver must refuse one with a dot.
 */
function rootSchema(schema: Json, target: Target): StructuralSchema {
  const out = toStructural(schema, schema, '', target.listMaps);
  const props = out.properties ?? {};
  for (const k of ['apiVersion', 'kind']) {
    const p = props[k];
    if (p) props[k] = { ...(p.description ? { description: p.description } : {}), type: 'string' };
  }
  if (props.metadata) {
    const { type, minLength, maxLength, pattern } = props.metadata.properties?.name ?? {};
    const name = Object.fromEntries(
      Object.entries({ type, minLength, maxLength, pattern }).filter(([, v]) => v !== undefined),
    );
    props.metadata = { type: 'object', ...(Object.keys(name).length ? { properties: { name } } : {}) };
  }
  if (out.required) {
    const required = out.required.filter((r) => !['apiVersion', 'kind', 'metadata'].includes(r));
    if (required.length) out.required = required;
    else delete out.required;
  }
  return out;
}

/** generateCRD builds the apiextensions.k8s.io/v1 CustomResourceDefinition of one of the project's kinds. */
export function generateCRD(name: CRDName): CustomResourceDefinition {
  const t = TARGETS[name];
  const schema = loadSchema(name);
  const openAPIV3Schema = rootSchema(schema, t);
  const group = t.group ?? GROUP;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${t.plural}.${group}`, ...(t.labels ? { labels: { ...t.labels } } : {}) },
    spec: {
      group,
      names: {
        kind: t.kind,
        listKind: `${t.kind}List`,
        plural: t.plural,
        singular: t.kind.toLowerCase(),
        shortNames: t.shortNames,
        ...(t.categories ? { categories: t.categories } : {}),
      },
      scope: t.scope,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema },
          ...(openAPIV3Schema.properties?.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: t.columns,
        },
      ],
    },
  };
}

/** crdFile is the path of a generated CRD, relative to the repository root. */
export function crdFile(name: CRDName): string {
  return `deploy/crds/${TARGETS[name].plural}.yaml`;
}

/** renderCRDYaml renders a CRD as YAML under a header naming its source schema. */
export function renderCRDYaml(name: CRDName): string {
  const header = `# generated from schemas/${SCHEMAS[name]} by npm run gen:crds; do not edit\n`;
  return header + stringify(generateCRD(name), { lineWidth: 0, aliasDuplicateObjects: false });
}

/** staleCRDs lists the generated files (relative to the repository root) that are missing or differ from the schemas. */
export function staleCRDs(root = repoRoot): string[] {
  return CRD_NAMES.filter((n) => {
    let current: string;
    try {
      current = readFileSync(join(root, crdFile(n)), 'utf8');
    } catch {
      return true;
    }
    return current !== renderCRDYaml(n);
  }).map(crdFile);
}

/** writeCRDs writes every generated file under root and returns their paths relative to it. */
export function writeCRDs(root = repoRoot): string[] {
  return CRD_NAMES.map((n) => {
    const file = join(root, crdFile(n));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, renderCRDYaml(n));
    return relative(root, file);
  });
}

function main(cmd: string | undefined): number {
  if (cmd === 'write') {
    for (const f of writeCRDs()) process.stdout.write(`wrote ${f}\n`);
    return 0;
  }
  if (cmd === 'check') {
    const stale = staleCRDs();
    for (const f of stale) process.stderr.write(`stale: ${f} (run npm run gen:crds)\n`);
    return stale.length ? 1 : 0;
  }
  process.stderr.write('usage: tsx schemas/crdgen.ts write|check\n');
  return 2;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = main(process.argv[2]);
