import { describe, expect, it } from 'vitest';
import { SIGNATURE, sign, signedValue, verify, type Signed } from './signature.ts';
import { PLACEMENTS, SUPER_CLUSTER } from './annotations.ts';

const key = Buffer.alloc(32, 7);
const other = Buffer.alloc(32, 8);
const base: Signed = { tenant: 't1', kind: 'Namespace', namespace: 'dev', name: 'dev', uid: 'u1', value: '{"r1":1}' };

describe('sign and verify', () => {
  it('verifies what it signed', () => {
    expect(verify(key, base, sign(key, base))).toBe(true);
  });

  it.each<[string, Partial<Signed> | undefined, Uint8Array, string | undefined]>([
    ['another key', undefined, other, undefined],
    ['another tenant', { tenant: 't2' }, key, undefined],
    ['another namespace', { namespace: 'prod', name: 'prod' }, key, undefined],
    ['a recreated object (new uid)', { uid: 'u2' }, key, undefined],
    ['another value', { value: '{"r1":2}' }, key, undefined],
    ['another kind', { kind: 'Pod' }, key, undefined],
    ['no signature', undefined, key, ''],
    ['a malformed signature', undefined, key, 'v1.!!!'],
    ['another version', undefined, key, 'v0.abc'],
  ])('refuses a signature for %s', (_, change, k, given) => {
    const signature = given === undefined ? sign(k, base) : given === '' ? undefined : given;
    expect(verify(key, { ...base, ...change }, signature)).toBe(false);
  });
});

describe('signedValue', () => {
  const ns = (annotations: Record<string, string>) => ({ metadata: { name: 'dev', uid: 'u1', annotations } });
  const pod = (annotations: Record<string, string>, uid = 'p1') => ({
    metadata: { name: 'web', namespace: 'dev', uid, annotations },
  });
  const podSigned: Signed = { tenant: 't1', kind: 'Pod', namespace: 'dev', name: 'web', uid: 'p1', value: 'r2' };

  it('returns a signed namespace placements value', () => {
    const o = ns({ [PLACEMENTS]: '{"r1":1}', [SIGNATURE]: sign(key, base) });
    expect(signedValue(key, 't1', o, PLACEMENTS, 'Namespace')).toBe('{"r1":1}');
  });

  it('ignores a value the tenant wrote or changed', () => {
    expect(signedValue(key, 't1', ns({ [PLACEMENTS]: '{"r1":1}' }), PLACEMENTS, 'Namespace')).toBeUndefined();
    const o = ns({ [PLACEMENTS]: '{"r1":5}', [SIGNATURE]: sign(key, base) });
    expect(signedValue(key, 't1', o, PLACEMENTS, 'Namespace')).toBeUndefined();
  });

  it('returns a signed Pod super cluster, not once copied to another Pod', () => {
    const a = { [SUPER_CLUSTER]: 'r2', [SIGNATURE]: sign(key, podSigned) };
    expect(signedValue(key, 't1', pod(a), SUPER_CLUSTER, 'Pod')).toBe('r2');
    expect(signedValue(key, 't1', pod(a, 'p2'), SUPER_CLUSTER, 'Pod')).toBeUndefined();
    expect(signedValue(key, 't2', pod(a), SUPER_CLUSTER, 'Pod')).toBeUndefined();
  });
});
