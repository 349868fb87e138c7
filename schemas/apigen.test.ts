import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { API_FILE, generateApi, renderTypes, SchemaError, type TypeSource } from './apigen.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const one = (schema: Record<string, unknown>): TypeSource[] => [
  { file: 'x.schema.json', schema: { title: 'X', ...schema } },
];
const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();

describe('core/api/generated.ts', () => {
  it('is what npm run gen:api writes from the schemas as they are (stale: run npm run gen:api)', async () => {
    expect(readFileSync(join(repoRoot, API_FILE), 'utf8')).toBe(await generateApi());
  }, 30_000);
});

describe('renderTypes', () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      'required and optional properties of a closed object',
      {
        type: 'object',
        additionalProperties: false,
        required: ['a'],
        properties: { a: { type: 'string' }, b: { type: 'integer' } },
      },
      'export interface X { a: string; b?: number; }',
    ],
    [
      'anyOf as a constraint beside a type (left to ajv)',
      {
        type: 'object',
        additionalProperties: false,
        properties: { ip: { type: 'string', anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] } },
      },
      'export interface X { ip?: string; }',
    ],
    [
      'an object without additionalProperties stays open',
      { type: 'object' },
      'export interface X { [key: string]: unknown; }',
    ],
    [
      'a map',
      { type: 'object', additionalProperties: { type: 'boolean' } },
      'export interface X { [key: string]: boolean; }',
    ],
    [
      'enum, const, oneOf and arrays',
      {
        type: 'object',
        additionalProperties: false,
        properties: {
          e: { type: 'string', enum: ['a', 'b'] },
          c: { const: 3 },
          o: { oneOf: [{ type: 'boolean' }, { type: 'array', items: { type: 'string' } }] },
          l: { type: 'array', items: { enum: ['x', 'y'] } },
        },
      },
      `export interface X { e?: "a" | "b"; c?: 3; o?: boolean | (string[]); l?: Array<"x" | "y">; }`,
    ],
    [
      '$defs and the root object-valued properties get names; descriptions become doc comments',
      {
        type: 'object',
        additionalProperties: false,
        $defs: { dnsLabel: { description: 'A label.', type: 'string' } },
        properties: {
          spec: { type: 'object', additionalProperties: false, properties: { n: { $ref: '#/$defs/dnsLabel' } } },
        },
      },
      '/** A label. */ export type XDnsLabel = string; export interface XSpec { n?: XDnsLabel; } export interface X { spec?: XSpec; }',
    ],
    [
      'if/then/else inside allOf is a constraint left to ajv',
      { type: 'object', allOf: [{ if: { required: ['a'] }, then: { required: ['b'] } }] },
      'export interface X { [key: string]: unknown; }',
    ],
  ])('%s', (_name, schema, want) => {
    expect(squash(renderTypes(one(schema)))).toBe(squash(want));
  });

  it('resolves a $ref to another source by its title', () => {
    const sources: TypeSource[] = [
      { file: 'a.schema.json', schema: { title: 'A', type: 'object', $defs: { p: { type: 'string' } } } },
      {
        file: 'b.schema.json',
        schema: {
          title: 'B',
          type: 'object',
          additionalProperties: false,
          properties: { q: { $ref: 'a.schema.json#/$defs/p' } },
        },
      },
    ];
    expect(squash(renderTypes(sources))).toContain('export interface B { q?: AP; }');
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'an unknown keyword',
      { type: 'object', properties: { a: { type: 'string', contentMediaType: 'x' } } },
      'x.schema.json #/properties/a: keyword contentMediaType',
    ],
    [
      'an unsupported type',
      { type: 'object', properties: { a: { type: 'null' } } },
      'x.schema.json #/properties/a: type "null"',
    ],
    [
      'allOf beyond if/then/else',
      { type: 'object', allOf: [{ required: ['a'] }] },
      'x.schema.json #/allOf/0: only if/then/else',
    ],
    [
      'anyOf without a type beside it',
      { type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } },
      'x.schema.json #/properties/a/anyOf: only beside a type',
    ],
    [
      'anyOf whose parts give shapes',
      { type: 'object', properties: { a: { type: 'string', anyOf: [{ type: 'string' }] } } },
      'x.schema.json #/properties/a/anyOf/0: only constraint keywords',
    ],
    [
      'a $ref outside the sources',
      { type: 'object', properties: { a: { $ref: 'other.json#/$defs/x' } } },
      '$ref other.json#/$defs/x names a schema outside',
    ],
  ])('refuses %s, naming the file and path', (_name, schema, want) => {
    expect(() => renderTypes(one(schema))).toThrow(SchemaError);
    expect(() => renderTypes(one(schema))).toThrow(want);
  });
});
