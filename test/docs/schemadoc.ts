import { loadSchema, SCHEMAS, type SchemaName } from '../../schemas/validate.ts';

/**
 * This module turns the project's JSON Schemas into the field tables of docs/reference/crds.md and
 * docs/reference/configuration.md. It reads the schemas as ajv does (local and cross-file `$ref`s resolved), so the
 * reference says what validation enforces.
 */

/** JsonSchema is one node of a JSON Schema document, as far as the reference reads it. */
export interface JsonSchema {
  $ref?: string;
  $id?: string;
  $defs?: Record<string, JsonSchema>;
  title?: string;
  description?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema | boolean;
  additionalProperties?: JsonSchema | boolean;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

/** FieldRow is one line of a reference table: a field's dotted path, its type, whether it is required, its default
 * and its description. */
export interface FieldRow {
  path: string;
  type: string;
  required: boolean;
  default?: string;
  description: string;
}

/** SchemaLoader returns the schema document a `$ref`'s file part names (e.g. `tenantpolicy.schema.json`). */
export type SchemaLoader = (file: string) => JsonSchema;

/** projectSchemaLoader reads the schemas of schemas/ by file name. */
export const projectSchemaLoader: SchemaLoader = (file) => {
  const name = (Object.keys(SCHEMAS) as SchemaName[]).find((n) => SCHEMAS[n] === file);
  if (!name) throw new Error(`schema reference to ${file}: not a file of schemas/`);
  return loadSchema(name) as JsonSchema;
};

interface Located {
  node: JsonSchema;
  root: JsonSchema;
  ref?: string;
}

/** resolveRef follows one `$ref` (`#/$defs/x` or `file.schema.json#/$defs/x`) from the document `root`. */
export function resolveRef(ref: string, root: JsonSchema, load: SchemaLoader): Located {
  const [file, pointer = ''] = ref.split('#');
  const doc = file ? load(file) : root;
  let node: unknown = doc;
  for (const part of pointer.split('/').filter(Boolean)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined;
  }
  if (typeof node !== 'object' || node === null) throw new Error(`schema reference ${ref}: nothing at ${pointer}`);
  return { node: node as JsonSchema, root: doc, ref: `${file || '#'}#${pointer}` };
}

function deref(node: JsonSchema, root: JsonSchema, load: SchemaLoader): Located & { description?: string } {
  if (!node.$ref) return { node, root };
  const target = resolveRef(node.$ref, root, load);
  // a description beside the $ref describes this use of the definition and wins over the definition's own
  const inner = deref(target.node, target.root, load);
  return { ...inner, ref: target.ref, description: node.description ?? inner.description ?? target.node.description };
}

function typeName(n: JsonSchema, root: JsonSchema, load: SchemaLoader): string {
  const { node } = deref(n, root, load);
  if (node.const !== undefined) return `const ${JSON.stringify(node.const)}`;
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  const alts = node.oneOf ?? node.anyOf;
  if (alts) return alts.map((a) => typeName(a, root, load)).join(' or ');
  const t = Array.isArray(node.type) ? node.type.join(' or ') : node.type;
  if (t === 'array' && typeof node.items === 'object') return `array of ${typeName(node.items, root, load)}`;
  if (t === 'object' && typeof node.additionalProperties === 'object' && !node.properties)
    return `map of ${typeName(node.additionalProperties, root, load)}`;
  return t ?? (node.properties ? 'object' : 'any');
}

function bounds(n: JsonSchema): string {
  const b: string[] = [];
  if (n.minimum !== undefined) b.push(`≥ ${n.minimum}`);
  if (n.maximum !== undefined) b.push(`≤ ${n.maximum}`);
  if (n.minLength !== undefined) b.push(`length ≥ ${n.minLength}`);
  if (n.maxLength !== undefined) b.push(`length ≤ ${n.maxLength}`);
  if (n.minItems !== undefined) b.push(`items ≥ ${n.minItems}`);
  if (n.maxItems !== undefined) b.push(`items ≤ ${n.maxItems}`);
  return b.length ? ` (${b.join(', ')})` : '';
}

const MAX_DEPTH = 12;

/**
 * schemaFields lists every field under `schema`, depth first in the schema's own order: objects by property
 * (`a.b`), arrays by item (`a[]`), maps by key (`a.<key>`). A definition that refers to itself is listed once and
 * marked where it recurs.
 */
export function schemaFields(schema: JsonSchema, load: SchemaLoader = projectSchemaLoader): FieldRow[] {
  const out: FieldRow[] = [];
  const hasFields = (n: JsonSchema, root: JsonSchema): boolean => {
    const x = deref(n, root, load).node;
    return !!x.properties || [...(x.oneOf ?? []), ...(x.anyOf ?? [])].some((a) => hasFields(a, root));
  };
  const walk = (n: JsonSchema, root: JsonSchema, path: string, required: boolean, seen: string[]): void => {
    const d = deref(n, root, load);
    if (d.ref && seen.includes(d.ref)) {
      out.push({ path, type: 'recursive', required, description: `the same as its enclosing ${d.ref}` });
      return;
    }
    const stack = d.ref ? [...seen, d.ref] : seen;
    const node = d.node;
    if (path) {
      const def = n.default ?? node.default;
      out.push({
        path,
        type: typeName(n, root, load) + bounds(node),
        required,
        ...(def === undefined ? {} : { default: JSON.stringify(def) }),
        description: (n.description ?? d.description ?? node.description ?? '').trim(),
      });
    }
    if (stack.length > MAX_DEPTH) return;
    const children = (s: JsonSchema, base: string) => {
      const req = new Set(s.required ?? []);
      for (const [k, v] of Object.entries(s.properties ?? {}))
        walk(v, d.root, base ? `${base}.${k}` : k, req.has(k), stack);
      // the items of an array and the values of a map get rows of their own only when they have fields: a scalar's
      // type is already in its parent's row
      if (typeof s.items === 'object' && hasFields(s.items, d.root)) walk(s.items, d.root, `${base}[]`, false, stack);
      if (typeof s.additionalProperties === 'object' && !s.properties && hasFields(s.additionalProperties, d.root))
        walk(s.additionalProperties, d.root, `${base}.<key>`, false, stack);
    };
    children(node, path);
    for (const alt of [...(node.oneOf ?? []), ...(node.anyOf ?? []), ...(node.allOf ?? [])]) {
      const a = deref(alt, d.root, load).node;
      if (a.properties || typeof a.items === 'object') children(a, path);
    }
  };
  walk(schema, schema, '', true, []);
  // an alternative may repeat a field its parent lists: keep the first
  const paths = new Set<string>();
  return out.filter((r) => (paths.has(r.path) ? false : (paths.add(r.path), true)));
}

const cell = (s: string): string => s.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

/** fieldTable renders rows as a Markdown table. */
export function fieldTable(rows: FieldRow[]): string {
  const lines = ['| field | type | required | default | description |', '|---|---|---|---|---|'];
  for (const r of rows)
    lines.push(
      `| \`${r.path}\` | ${cell(r.type)} | ${r.required ? 'yes' : ''} | ${r.default ? `\`${cell(r.default)}\`` : ''} | ${cell(r.description)} |`,
    );
  return lines.join('\n');
}

const HEADER = (what: string, source: string) =>
  `<!-- Generated by \`npm run docs:gen\` from ${source}; do not edit. test/docsreference.test.ts fails when stale. -->\n\n# ${what}\n`;

const CRDS: Array<{ name: SchemaName; kind: string }> = [
  { name: 'virtualCluster', kind: 'VirtualCluster' },
  { name: 'clusterVersion', kind: 'ClusterVersion' },
  { name: 'gitSource', kind: 'GitSource' },
  { name: 'tenantPolicy', kind: 'TenantPolicy' },
];

/** renderCRDReference is docs/reference/crds.md: every field of the project's kinds, with type, default and
 * description. */
export function renderCRDReference(load: SchemaLoader = projectSchemaLoader): string {
  const parts = [
    HEADER('CRD reference', 'schemas/*.schema.json'),
    'Every kind is `tenancy.x-k8s.io/v1alpha1`. The CRDs under `deploy/crds/` are generated from the same schemas ' +
      '(`npm run gen:crds`); `vc create -f`, `vc validate` and the GitOps applier check objects against them and name ' +
      'the file, object and field of every violation.\n',
  ];
  for (const c of CRDS) {
    const schema = load(SCHEMAS[c.name]);
    parts.push(`## ${c.kind}\n`);
    if (schema.description) parts.push(`${schema.description.trim()}\n`);
    parts.push(`Schema: \`schemas/${SCHEMAS[c.name]}\`.\n`);
    parts.push(fieldTable(schemaFields(schema, load)) + '\n');
  }
  return parts.join('\n');
}

/** renderConfigReference is docs/reference/configuration.md: every key of the manager and vn-agent configuration
 * files. */
export function renderConfigReference(load: SchemaLoader = projectSchemaLoader): string {
  const parts = [
    HEADER('Configuration reference', 'schemas/manager-config.schema.json and schemas/vnagent-config.schema.json'),
    'The files `vc manager -c`, `vc syncer -c` and `vc vn-agent -c` read. Each is validated when it loads; an error ' +
      'names the file and the field. What the sections are for: [operations/configuration.md](../operations/configuration.md).\n',
  ];
  for (const [name, title] of [
    ['managerConfig', 'Manager configuration'],
    ['vnAgentConfig', 'vn-agent configuration'],
  ] as const) {
    const schema = load(SCHEMAS[name]);
    parts.push(`## ${title}\n`);
    if (schema.description) parts.push(`${schema.description.trim()}\n`);
    parts.push(`Schema: \`schemas/${SCHEMAS[name]}\`.\n`);
    parts.push(fieldTable(schemaFields(schema, load)) + '\n');
  }
  return parts.join('\n');
}
