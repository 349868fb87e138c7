import { describe, expect, it } from 'vitest';
import {
  CLOCK_SKEW_MS,
  DEFAULT_RENEW_FRACTION,
  dueForRenewal,
  kubeletClientStep,
  parseRenewalRequest,
  PUBLISH_GRACE_MS,
  renewAt,
  withRenewalRequest,
  type IssuedCertificate,
  type RenewalRequest,
} from './renewal.ts';

describe('kubeletClientStep: the two steps of the kubelet client certificate renewal', () => {
  const fp = 'a'.repeat(64);
  const old = 'b'.repeat(64);
  it.each([
    // [what, state, step]
    ['not due, nothing staged', { due: false, published: [old] }, 'none'],
    ['due, nothing staged: a renewed pair is made beside it', { due: true, published: [old] }, 'stage'],
    [
      'staged, not yet in the status: the apiserver must not present it',
      { due: true, staged: { fingerprint: fp, ageMs: 60_000 }, published: [old] },
      'wait',
    ],
    [
      'staged and published only a moment ago: the vn-agents may not have it yet',
      { due: true, staged: { fingerprint: fp, ageMs: PUBLISH_GRACE_MS - 1 }, published: [old, fp] },
      'wait',
    ],
    [
      'staged and published for the grace: given to the apiserver',
      { due: true, staged: { fingerprint: fp, ageMs: PUBLISH_GRACE_MS }, published: [old, fp] },
      'promote',
    ],
  ] as const)('%s', (_, state, step) => {
    expect(kubeletClientStep(state)).toBe(step);
  });
});

describe('parseRenewalRequest: the renew-certificates annotation', () => {
  const where = 'VirtualCluster team-a/dev annotation tenancy.x-k8s.io/renew-certificates';
  it.each([
    // [value, request]
    ['2026-12-01T10:00:00Z', { before: new Date('2026-12-01T10:00:00Z') }],
    // to the second: a certificate issued later in that second is not covered
    ['2026-12-01T10:00:00.900Z', { before: new Date('2026-12-01T10:00:00Z') }],
    ['2026-12-01T11:00:00+01:00', { before: new Date('2026-12-01T10:00:00Z') }],
    ['kubelet-client@2026-12-01T10:00:00Z', { before: new Date('2026-12-01T10:00:00Z'), names: ['kubelet-client'] }],
    [
      'admin, controller-manager@2026-12-01T10:00:00Z',
      { before: new Date('2026-12-01T10:00:00Z'), names: ['admin', 'controller-manager'] },
    ],
  ] as const)('%s', (value, request) => {
    expect(parseRenewalRequest(value, where)).toEqual(request);
  });

  it.each([
    // [value, the reason it gives]
    ['now', 'the time is not RFC 3339'],
    ['2026-12-01', 'the time is not RFC 3339'],
    ['2026-12-01T10:00:00', 'the time is not RFC 3339'],
    ['2026-13-45T10:00:00Z', 'is not a time'],
    ['kubelet@2026-12-01T10:00:00Z', 'unknown certificate "kubelet"; the names are apiserver, front-proxy-client'],
    ['@2026-12-01T10:00:00Z', 'unknown certificate ""'],
    ['cluster-ca,admin@2026-12-01T10:00:00Z', 'unknown certificate "cluster-ca"'],
  ])('refuses %s, naming the object, the annotation and why', (value, why) => {
    const r = parseRenewalRequest(value, where);
    expect(r).toHaveProperty('refused');
    const refused = (r as { refused: string }).refused;
    expect(refused.startsWith(`${where}: ${JSON.stringify(value)}: `)).toBe(true);
    expect(refused).toContain(why);
  });
});

describe('withRenewalRequest and renewAt: a renewal asked for by hand', () => {
  // a certificate of 300 days issued at 09:00 (dated a minute back), renewed 200 days on by itself
  const issued = Date.parse('2026-12-01T09:00:00Z');
  const cert = (name: string, at = issued): IssuedCertificate => ({
    name,
    notBefore: new Date(at - CLOCK_SKEW_MS),
    notAfter: new Date(at - CLOCK_SKEW_MS + 300 * 86_400_000),
  });
  const before = new Date('2026-12-01T10:00:00Z');
  it.each([
    // [what, certificate, request, renewed at]
    ['no request: two thirds of its life', cert('admin client'), undefined, '2027-06-19T08:59:00.000Z'],
    ['every certificate, issued before: at the request', cert('admin client'), { before }, '2026-12-01T10:00:00.000Z'],
    [
      'named, issued before',
      cert('kube-apiserver kubelet client'),
      { before, names: ['kubelet-client'] },
      '2026-12-01T10:00:00.000Z',
    ],
    [
      'another one named: untouched',
      cert('admin client'),
      { before, names: ['kubelet-client'] },
      '2027-06-19T08:59:00.000Z',
    ],
    [
      'issued at the request (the one that renewed it): not again',
      cert('admin client', before.getTime()),
      { before },
      '2027-06-19T09:59:00.000Z',
    ],
    ['a CA is not renewed by hand', cert('cluster CA'), { before }, '2027-06-19T08:59:00.000Z'],
    [
      'a request still to come: at that time',
      cert('admin client'),
      { before: new Date('2027-01-01T00:00:00Z') },
      '2027-01-01T00:00:00.000Z',
    ],
    [
      'a request past its own time of renewal: the earlier one',
      cert('admin client'),
      { before: new Date('2027-10-01T00:00:00Z') },
      '2027-06-19T08:59:00.000Z',
    ],
  ] as const)('%s', (_, c, request, at) => {
    const marked = withRenewalRequest(c, request as RenewalRequest | undefined);
    expect(renewAt(marked, DEFAULT_RENEW_FRACTION).toISOString()).toBe(at);
  });

  it('makes a covered certificate due from the request on, and the one renewed at it not due', () => {
    const old = withRenewalRequest(cert('admin client'), { before });
    const renewed = withRenewalRequest(cert('admin client', before.getTime() + 500), { before });
    expect(dueForRenewal([old, renewed], new Date(before.getTime() - 1), DEFAULT_RENEW_FRACTION)).toEqual([]);
    expect(dueForRenewal([old, renewed], before, DEFAULT_RENEW_FRACTION)).toEqual([old]);
  });
});
