import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { ANN } from '../names/names.ts';
import { refreshOf, secretsReadBy, SHARED_GRACE_MS, TOKEN_SECONDS, unusedShared } from './tokens.ts';

const pod = (namespace: string, volumes: unknown[]): KubeObject =>
  ({ metadata: { namespace, name: 'p' }, spec: { volumes } }) as KubeObject;

const admission = (secretName: string) => ({ name: 'kube-api-access-x', secret: { secretName } });
const projected = (...names: string[]) => ({
  name: 'v',
  projected: { sources: [...names.map((name) => ({ secret: { name } })), { configMap: { name: 'c' } }] },
});

describe('secretsReadBy', () => {
  it.each<[string, KubeObject, string[]]>([
    ['no volumes', { metadata: { namespace: 'n' } }, []],
    ['a Secret volume', pod('n', [admission('sa-vc-token-0123456789')]), ['n/sa-vc-token-0123456789']],
    ['projected Secret sources', pod('n', [projected('a', 'b')]), ['n/a', 'n/b']],
    [
      'other volumes only',
      pod('n', [
        { name: 'e', emptyDir: {} },
        { name: 'c', configMap: { name: 'x' } },
      ]),
      [],
    ],
    ['both kinds', pod('n', [admission('s'), projected('t')]), ['n/s', 'n/t']],
  ])('%s', (_name, p, want) => {
    expect(secretsReadBy(p)).toEqual(want);
  });
});

describe('unusedShared', () => {
  const now = 1_000_000;
  const old = now - SHARED_GRACE_MS;
  it.each<[string, Array<[string, number]>, KubeObject[], { remove: string[]; waiting: boolean }]>([
    ['nothing shared', [], [pod('n', [admission('s')])], { remove: [], waiting: false }],
    ['read by a Pod: kept', [['n/s', old]], [pod('n', [admission('s')])], { remove: [], waiting: false }],
    ['read by no Pod, past its grace: removed', [['n/s', old]], [], { remove: ['n/s'], waiting: false }],
    ['read by no Pod, asked for just now: waiting', [['n/s', now - 1]], [], { remove: [], waiting: true }],
    [
      'the same name in another namespace does not keep it',
      [['n/s', old]],
      [pod('m', [admission('s')])],
      { remove: ['n/s'], waiting: false },
    ],
    [
      'read through a projected source: kept',
      [
        ['n/s', old],
        ['n/t', old],
      ],
      [pod('n', [projected('t')])],
      { remove: ['n/s'], waiting: false },
    ],
    [
      'two Pods, two Secrets, one Pod left',
      [
        ['n/default', old],
        ['n/builder', old],
      ],
      [pod('n', [admission('builder')])],
      { remove: ['n/default'], waiting: false },
    ],
  ])('%s', (_name, shared, pods, want) => {
    expect(unusedShared(new Map(shared.map(([id, lastUse]) => [id, { lastUse }])), pods, now)).toEqual(want);
  });
});

describe('refreshOf', () => {
  it.each<[string, Record<string, string>, number | undefined]>([
    ['the refresh annotation', { [ANN.tokenRefresh]: '2026-01-01T00:48:00Z' }, Date.parse('2026-01-01T00:48:00Z')],
    [
      'else 20% of the lifetime before expiry',
      { [ANN.tokenExpires]: '2026-01-01T01:00:00Z' },
      Date.parse('2026-01-01T01:00:00Z') - 0.2 * TOKEN_SECONDS * 1000,
    ],
    ['neither', {}, undefined],
  ])('%s', (_name, annotations, want) => {
    expect(refreshOf({ metadata: { annotations } })).toBe(want);
  });
});
