import { describe, expect, it } from 'vitest';
import { anchor, loadProgram, renderCLIReference } from './docs/clidoc.ts';
import { staleDocs } from './docs/generate.ts';
import { registeredMetrics } from './docs/metricsdoc.ts';
import { reasonConstants, scanReasons } from './docs/reasonsdoc.ts';
import { type JsonSchema, schemaFields } from './docs/schemadoc.ts';

describe('generated reference pages', () => {
  it('docs/reference/* equal what the code renders now (run `npm run docs:gen` after changing a flag, schema or metric)', async () => {
    expect(await staleDocs()).toEqual([]);
  }, 60_000);
});

describe('schemaFields', () => {
  const other: Record<string, JsonSchema> = {
    'other.schema.json': {
      $defs: { port: { description: 'A port.', type: 'integer', minimum: 1, maximum: 65535, default: 443 } },
    },
  };
  const load = (file: string): JsonSchema => {
    const s = other[file];
    if (!s) throw new Error(`no ${file}`);
    return s;
  };
  const cases: Array<{ name: string; schema: JsonSchema; rows: Array<[string, string, boolean, string?]> }> = [
    {
      name: 'nested objects, required fields and defaults',
      schema: {
        type: 'object',
        required: ['spec'],
        properties: {
          spec: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string', maxLength: 63 }, weight: { type: 'integer', default: 1 } },
          },
        },
      },
      rows: [
        ['spec', 'object', true],
        ['spec.name', 'string (length ≤ 63)', true],
        ['spec.weight', 'integer', false, '1'],
      ],
    },
    {
      name: 'local and cross-file references, enums, arrays of objects and maps',
      schema: {
        $defs: { level: { description: 'A level.', enum: ['a', 'b'] } },
        type: 'object',
        properties: {
          level: { $ref: '#/$defs/level' },
          port: { $ref: 'other.schema.json#/$defs/port' },
          rules: { type: 'array', items: { type: 'object', properties: { key: { type: 'string' } } } },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      rows: [
        ['level', '"a" | "b"', false],
        ['port', 'integer (≥ 1, ≤ 65535)', false, '443'],
        ['rules', 'array of object', false],
        ['rules[]', 'object', false],
        ['rules[].key', 'string', false],
        ['labels', 'map of string', false],
      ],
    },
    {
      name: 'a definition that contains itself is listed once',
      schema: {
        $defs: { node: { type: 'object', properties: { child: { $ref: '#/$defs/node' } } } },
        type: 'object',
        properties: { root: { $ref: '#/$defs/node' } },
      },
      rows: [
        ['root', 'object', false],
        ['root.child', 'recursive', false],
      ],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(
        schemaFields(c.schema, load).map((r) => [r.path, r.type, r.required, ...(r.default ? [r.default] : [])]),
      ).toEqual(c.rows);
    });

  it('takes the description beside a $ref over the definition’s own', () => {
    const rows = schemaFields(
      {
        $defs: { d: { description: 'generic', type: 'string' } },
        properties: { a: { $ref: '#/$defs/d', description: 'specific' }, b: { $ref: '#/$defs/d' } },
      },
      load,
    );
    expect(rows.map((r) => r.description)).toEqual(['specific', 'generic']);
  });

  it('names the file of a reference it cannot follow', () => {
    expect(() => schemaFields({ properties: { a: { $ref: 'missing.schema.json#/$defs/x' } } }, load)).toThrow(
      /missing\.schema\.json/,
    );
  });
});

describe('the CLI reference', () => {
  it('lists every command of the vc program with each of its flags', async () => {
    const program = await loadProgram();
    const text = renderCLIReference(program);
    const walk = (c: typeof program, path: string): void => {
      for (const s of c.commands) {
        const p = `${path} ${s.name()}`;
        expect(text).toContain(`## ${p}\n`);
        for (const o of s.options) expect(text).toContain(`\`${o.flags}\``);
        walk(s, p);
      }
    };
    walk(program, 'vc');
    for (const c of ['up', 'status', 'down', 'create', 'get', 'delete', 'exec', 'validate', 'diff', 'syncer'])
      expect(program.commands.map((x) => x.name())).toContain(c);
  });

  it.each([
    ['vc superclusters drain', 'vc-superclusters-drain'],
    ['The `vc` command', 'the-vc-command'],
    ["The syncer's writes", 'the-syncers-writes'],
    ['A super cluster’s syncer, as a process', 'a-super-clusters-syncer-as-a-process'],
  ])('anchors %s as #%s', (heading, want) => expect(anchor(heading)).toBe(want));
});

describe('the metrics reference', () => {
  it('reads type and label names from the registry', async () => {
    const rows = await registeredMetrics();
    expect(rows.find((r) => r.name === 'vc_syncer_writes_total')).toMatchObject({
      type: 'counter',
      labels: ['tenant', 'plugin', 'op', 'side', 'verb', 'resource'],
    });
    expect(rows.find((r) => r.name.endsWith('vnagent_requests_total'))?.labels).toEqual(['tenant', 'kind', 'result']);
  });
});

describe('the reasons reference', () => {
  const source = [
    '/** GONE is the skip and event reason of a Pod whose super Pod is gone. */',
    "export const GONE = 'SuperPodGone';",
    "const LABEL = 'NotAReason';",
    '/** REASONS are why. */',
    'export const REASONS = [',
    "  'NoRoom',",
    '  /** the pin names no ready super cluster */',
    "  'PinnedUnavailable',",
    '] as const;',
    "status({ reason: 'Running' }); skip({ reason: GONE });",
    "record(obj, 'Warning', 'PolicyViolation', message);",
    "await this.warn(s, ns, 'DrainBlocked', text); throw new SourceError('AddressRefused', why);",
    "const kind = 'ConfigMap';",
  ].join('\n');
  const { values } = reasonConstants(new Map([['x.ts', source]]));
  const found = scanReasons('x.ts', source, values);

  it('finds reasons in every form the code raises them, and nothing else', () => {
    expect([...new Set(found.map((s) => s.reason))].sort()).toEqual(
      [
        'AddressRefused',
        'DrainBlocked',
        'NoRoom',
        'PinnedUnavailable',
        'PolicyViolation',
        'Running',
        'SuperPodGone',
      ].sort(),
    );
  });

  it('keeps the doc comment of the constant or list entry that declares a reason', () => {
    expect(found.find((s) => s.reason === 'SuperPodGone' && s.doc)?.doc).toMatch(/skip and event reason/);
    expect(found.find((s) => s.reason === 'PinnedUnavailable')?.doc).toBe('the pin names no ready super cluster');
    expect(found.find((s) => s.reason === 'NoRoom')?.doc).toBeUndefined();
  });
});
