import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import {
  changedNamespaces,
  parseRecord,
  PLACEMENT_RECORD,
  recordConfigMap,
  RecordError,
  recordedValue,
  recordName,
  type RecordEntries,
} from './placementrecord.ts';

const cm = (raw?: string) =>
  ({
    metadata: { name: recordName('t1'), namespace: 'vc-system' },
    ...(raw !== undefined && { data: { [PLACEMENT_RECORD.key]: raw } }),
  }) as KubeObject & { data?: Record<string, string> };
const entries = (o: Record<string, [string, string]>): RecordEntries =>
  new Map(Object.entries(o).map(([ns, [uid, placements]]) => [ns, { uid, placements }]));
const ns = (name: string, uid: string): KubeObject => ({ metadata: { name, uid } });

describe('parseRecord', () => {
  it.each([
    ['no data: nothing placed', undefined, entries({})],
    ['an empty record', '{}', entries({})],
    [
      'two namespaces',
      '{"a":{"uid":"u1","placements":"{\\"r1\\":1}"},"b":{"uid":"u2","placements":"{}"}}',
      entries({ a: ['u1', '{"r1":1}'], b: ['u2', '{}'] }),
    ],
  ])('%s', (_, raw, want) => {
    expect(parseRecord(cm(raw))).toEqual(want);
  });

  it.each([
    ['not JSON', '{', 'configmap vc-system/vc-placements-t1: data.placements.json: not JSON'],
    ['an array', '[]', 'data.placements.json: must be an object of namespaces'],
    ['an entry without uid', '{"a":{"placements":"{}"}}', 'namespace a: must be {"uid": string, "placements": string}'],
    ['an entry of the wrong type', '{"a":"{}"}', 'namespace a: must be {"uid": string, "placements": string}'],
  ])('refuses %s, naming the ConfigMap and field', (_, raw, message) => {
    expect(() => parseRecord(cm(raw))).toThrow(RecordError);
    expect(() => parseRecord(cm(raw))).toThrow(message);
  });
});

describe('recordConfigMap', () => {
  it('writes the entries in name order under the manager label and the tenant', () => {
    const out = recordConfigMap('vc-system', 't1', entries({ b: ['u2', '{"r2":1}'], a: ['u1', '{"r1":1}'] }));
    expect(out.metadata).toEqual({
      name: 'vc-placements-t1',
      namespace: 'vc-system',
      labels: { 'tenancy.x-k8s.io/managed-by': 'vc-manager', [PLACEMENT_RECORD.label]: 't1' },
    });
    expect(Object.keys(JSON.parse(out.data![PLACEMENT_RECORD.key]!) as object)).toEqual(['a', 'b']);
    expect(parseRecord(out)).toEqual(entries({ a: ['u1', '{"r1":1}'], b: ['u2', '{"r2":1}'] }));
  });
});

describe('recordedValue', () => {
  const rec = entries({ a: ['u1', '{"r1":1}'] });
  it.each([
    ['the recorded namespace', ns('a', 'u1'), '{"r1":1}'],
    ['a namespace of that name made again (another uid)', ns('a', 'u9'), undefined],
    ['a namespace not recorded', ns('b', 'u2'), undefined],
  ])('%s', (_, obj, want) => {
    expect(recordedValue(rec, obj)).toBe(want);
  });
  it('reads nothing without a record', () => {
    expect(recordedValue(undefined, ns('a', 'u1'))).toBeUndefined();
  });
});

describe('changedNamespaces', () => {
  it.each([
    ['nothing changed', { a: ['u1', '{"r1":1}'] }, { a: ['u1', '{"r1":1}'] }, []],
    ['a move', { a: ['u1', '{"r1":1}'] }, { a: ['u1', '{"r2":1}'] }, ['a']],
    ['a namespace made again', { a: ['u1', '{"r1":1}'] }, { a: ['u2', '{"r1":1}'] }, ['a']],
    ['one added, one gone', { a: ['u1', '{}'] }, { b: ['u2', '{}'] }, ['a', 'b']],
  ] as const)('%s', (_, a, b, want) => {
    expect(changedNamespaces(entries(a as never), entries(b as never))).toEqual(want);
  });
});
