import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { loadSchema, SCHEMAS, type SchemaName } from './validate.ts';

/**
 * This module turns the project's JSON Schemas into the TypeScript object types of core/api/generated.ts, so that the
 * code's view of a VirtualCluster, a TenantPolicy or a configuration is the schema's and cannot drift from it. It
 * covers the schema features these files use: types, properties and required, additionalProperties, items, enum,
 * const, oneOf and $ref (within a file or to another schema's $defs). Constraints a type cannot carry (patterns,
 * bounds, if/then/else) are left to ajv; any other keyword is an error naming the file and the path, so that a new
 * schema feature is never silently dropped.
 */

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..');

/** API_SCHEMAS are the schemas whose types core/api/generated.ts holds. */
export const API_SCHEMAS = [
  'virtualCluster',
  'clusterVersion',
  'tenantPolicy',
  'gitSource',
  'managerConfig',
  'vnAgentConfig',
  'virtualClusterControlPlane',
  'virtualClusterInfraCluster',
] as const satisfies readonly SchemaName[];

/** API_FILE is the generated file, relative to the repository root. */
export const API_FILE = 'core/api/generated.ts';

/** Schema is one JSON Schema node as the generator reads it. */
export type Schema = boolean | { [keyword: string]: unknown };

/** SchemaError is a schema feature the generator cannot express; the message names the file and the path. */
export class SchemaError extends Error {}

// Keywords that constrain values without changing their TypeScript type; ajv checks them.
const CONSTRAINTS = new Set([
  '$schema',
  '$id',
  '$defs',
  'title',
  'description',
  'default',
  'examples',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'propertyNames',
  'dependentRequired',
  'if',
  'then',
  'else',
  'required',
]);
const SHAPES = new Set([
  'type',
  'properties',
  'additionalProperties',
  'items',
  'enum',
  'const',
  '$ref',
  'oneOf',
  'allOf',
  'anyOf',
]);

/** TypeSource is one schema file to translate: its title names the types, file resolves cross-file references. */
export interface TypeSource {
  file: string;
  schema: Record<string, unknown>;
}

const pascal = (s: string): string =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (name: string): string => (IDENT.test(name) ? name : JSON.stringify(name));

// Doc comments are wrapped at the width Prettier gives code, since Prettier leaves comments as they are.
const WIDTH = 120;

function doc(description: unknown, indent = ''): string {
  if (typeof description !== 'string' || description === '') return '';
  const words = description.replace(/\*\//g, '*\\/').split(/\s+/);
  const single = `${indent}/** ${words.join(' ')} */`;
  if (single.length <= WIDTH) return `${single}\n`;
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line !== '' && indent.length + 3 + line.length + 1 + w.length > WIDTH) {
      lines.push(line);
      line = w;
    } else line = line === '' ? w : `${line} ${w}`;
  }
  if (line !== '') lines.push(line);
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}\n`).join('')}${indent} */\n`;
}

/** Translator renders the types of a set of schema files that may refer to each other's $defs. */
class Translator {
  private readonly titles = new Map<string, string>();

  constructor(private readonly sources: readonly TypeSource[]) {
    for (const s of sources) {
      if (typeof s.schema.title !== 'string' || !IDENT.test(s.schema.title))
        throw new SchemaError(`${s.file}: title must name the type, found ${JSON.stringify(s.schema.title)}`);
      this.titles.set(s.file, s.schema.title);
    }
  }

  render(): string {
    return this.sources.map((s) => this.file(s)).join('\n');
  }

  private file(s: TypeSource): string {
    const title = this.titles.get(s.file)!;
    const out: string[] = [];
    const defs = (s.schema.$defs ?? {}) as Record<string, Schema>;
    for (const [name, def] of Object.entries(defs))
      out.push(this.named(`${title}${pascal(name)}`, def, s.file, `#/$defs/${name}`));
    // The root's object-valued properties (spec, status, a configuration's sections) get names of their own.
    const root = { ...s.schema };
    const props = { ...((root.properties ?? {}) as Record<string, Schema>) };
    for (const [name, sub] of Object.entries(props)) {
      if (typeof sub === 'object' && sub.type === 'object' && sub.properties !== undefined) {
        const typeName = `${title}${pascal(name)}`;
        out.push(this.named(typeName, sub, s.file, `#/properties/${name}`));
        props[name] = { $ref: `#/$named/${typeName}`, description: sub.description };
      }
    }
    root.properties = props;
    out.push(this.named(title, root, s.file, '#'));
    return out.join('\n');
  }

  private named(name: string, schema: Schema, file: string, path: string): string {
    const description = typeof schema === 'object' ? schema.description : undefined;
    const body = this.type(schema, file, path, '');
    const isObject = typeof schema === 'object' && schema.type === 'object' && body.startsWith('{');
    if (isObject) return `${doc(description)}export interface ${name} ${body}\n`;
    return `${doc(description)}export type ${name} = ${body};\n`;
  }

  private type(schema: Schema, file: string, path: string, indent: string): string {
    const where = `${file} ${path}`;
    if (schema === true) return 'unknown';
    if (schema === false) return 'never';
    for (const k of Object.keys(schema))
      if (!CONSTRAINTS.has(k) && !SHAPES.has(k) && !k.startsWith('x-kubernetes-'))
        throw new SchemaError(`${where}: keyword ${k} is not supported by the type generator`);
    if (schema.allOf !== undefined) {
      for (const [i, part] of (schema.allOf as Schema[]).entries())
        if (typeof part !== 'object' || Object.keys(part).some((k) => !['if', 'then', 'else'].includes(k)))
          throw new SchemaError(`${where}/allOf/${i}: only if/then/else is supported (a constraint, left to ajv)`);
    }
    if (schema.anyOf !== undefined) {
      // Only as a constraint on a typed value (a string that is an IPv4 or an IPv6 address), left to ajv.
      const parts = schema.anyOf as Schema[];
      if (schema.type === undefined)
        throw new SchemaError(`${where}/anyOf: only beside a type, as a constraint, is supported`);
      for (const [i, part] of parts.entries())
        if (typeof part !== 'object' || Object.keys(part).some((k) => !CONSTRAINTS.has(k)))
          throw new SchemaError(
            `${where}/anyOf/${i}: only constraint keywords are supported (a constraint, left to ajv)`,
          );
    }
    if (typeof schema.$ref === 'string') return this.ref(schema.$ref, file, where);
    if ('const' in schema) return JSON.stringify(schema.const);
    if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
    if (Array.isArray(schema.oneOf))
      return (schema.oneOf as Schema[])
        .map((s, i) => {
          const t = this.type(s, file, `${path}/oneOf/${i}`, indent);
          return t.includes(' | ') || t.endsWith('[]') ? `(${t})` : t;
        })
        .join(' | ');
    switch (schema.type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'array': {
        if (schema.items === undefined) return 'unknown[]';
        const t = this.type(schema.items as Schema, file, `${path}/items`, indent);
        return /[ |&]/.test(t) && !t.startsWith('{') ? `Array<${t}>` : `${t}[]`;
      }
      case 'object':
        return this.object(schema, file, path, indent);
      default:
        throw new SchemaError(`${where}: type ${JSON.stringify(schema.type)} is not supported by the type generator`);
    }
  }

  private object(schema: Record<string, unknown>, file: string, path: string, indent: string): string {
    const props = (schema.properties ?? {}) as Record<string, Schema>;
    const required = new Set((schema.required ?? []) as string[]);
    const extra = schema.additionalProperties as Schema | undefined;
    const inner = `${indent}  `;
    const lines: string[] = [];
    for (const [name, sub] of Object.entries(props)) {
      const t = this.type(sub, file, `${path}/properties/${name}`, inner);
      const description = typeof sub === 'object' ? sub.description : undefined;
      lines.push(`${doc(description, inner)}${inner}${key(name)}${required.has(name) ? '' : '?'}: ${t};`);
    }
    if (extra === undefined || extra === true) lines.push(`${inner}[key: string]: unknown;`);
    else if (extra !== false) {
      const t = this.type(extra, file, `${path}/additionalProperties`, inner);
      // With named properties too, the index signature must admit theirs.
      lines.push(`${inner}[key: string]: ${Object.keys(props).length > 0 ? 'unknown' : t};`);
    }
    if (lines.length === 0) return 'Record<string, never>';
    return `{\n${lines.join('\n')}\n${indent}}`;
  }

  private ref(ref: string, file: string, where: string): string {
    const [target, pointer] = ref.includes('#') ? (ref.split('#', 2) as [string, string]) : [ref, ''];
    const targetFile = target === '' ? file : target;
    const title = this.titles.get(targetFile);
    if (title === undefined)
      throw new SchemaError(`${where}: $ref ${ref} names a schema outside ${API_FILE}'s sources`);
    const named = /^\/\$named\/([A-Za-z0-9]+)$/.exec(pointer);
    if (named) return named[1]!;
    const def = /^\/\$defs\/([^/]+)$/.exec(pointer);
    if (!def) throw new SchemaError(`${where}: $ref ${ref} must point at #/$defs/<name>`);
    return `${title}${pascal(def[1]!)}`;
  }
}

/** renderTypes returns the TypeScript source (not yet formatted) of the types of the given schema files. */
export function renderTypes(sources: readonly TypeSource[]): string {
  return new Translator(sources).render();
}

const HEADER = `// Generated by schemas/apigen.ts from schemas/*.schema.json (npm run gen:api); do not edit by hand.
// Each schema gives an interface named after its title; its $defs and the root's object-valued properties (spec,
// status, a configuration's sections) get names of their own, prefixed with the title.

`;

/** generateApi returns the formatted content of core/api/generated.ts from the schemas as they are on disk. */
export async function generateApi(): Promise<string> {
  const sources = API_SCHEMAS.map((n) => ({ file: SCHEMAS[n], schema: loadSchema(n) }));
  const target = resolve(repoRoot, API_FILE);
  const options = (await resolveConfig(target)) ?? {};
  return format(HEADER + renderTypes(sources), { ...options, filepath: target });
}

async function main(cmd: string | undefined): Promise<number> {
  const target = resolve(repoRoot, API_FILE);
  const want = await generateApi();
  if (cmd === 'write') {
    writeFileSync(target, want);
    process.stdout.write(`wrote ${API_FILE}\n`);
    return 0;
  }
  if (cmd === 'check') {
    if (readFileSync(target, 'utf8') === want) return 0;
    process.stderr.write(`stale: ${API_FILE} (run npm run gen:api)\n`);
    return 1;
  }
  process.stderr.write('usage: tsx schemas/apigen.ts write|check\n');
  return 2;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = await main(process.argv[2]);
