import { describe, expect, it } from 'vitest';
import {
  caRotationCondition,
  certificatesCondition,
  dueForRenewal,
  nextRenewal,
  renewAt,
  type CaRotationReport,
  type IssuedCertificate,
} from './certificates.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const MIN = 60_000;
const cert = (name: string, fromMin: number, toMin: number): IssuedCertificate => ({
  name,
  notBefore: new Date(T0 + fromMin * MIN),
  notAfter: new Date(T0 + toMin * MIN),
});
const at = (min: number) => new Date(T0 + min * MIN);

describe('renewAt', () => {
  const rows: Array<{ name: string; c: IssuedCertificate; fraction: number; want?: number; error?: RegExp }> = [
    { name: 'two thirds of a 30-minute life', c: cert('a', 0, 30), fraction: 2 / 3, want: 20 },
    { name: 'half of a life that started later', c: cert('a', 10, 30), fraction: 0.5, want: 20 },
    { name: '0 would renew in a loop', c: cert('a', 0, 30), fraction: 0, error: /between 0 and 1/ },
    { name: '1 would renew only at expiry', c: cert('a', 0, 30), fraction: 1, error: /between 0 and 1/ },
    { name: 'not a number', c: cert('a', 0, 30), fraction: Number.NaN, error: /between 0 and 1/ },
  ];
  for (const r of rows)
    it(r.name, () => {
      if (r.error) expect(() => renewAt(r.c, r.fraction)).toThrow(r.error);
      else expect(renewAt(r.c, r.fraction)).toEqual(at(r.want!));
    });
});

describe('dueForRenewal and nextRenewal', () => {
  const certs = [cert('long', 0, 90), cert('short', 0, 30), cert('mid', 0, 60)];
  const rows: Array<{ name: string; now: number; want: string[] }> = [
    { name: 'nothing due at the start', now: 0, want: [] },
    { name: 'just before the first renewal time', now: 19, want: [] },
    { name: 'exactly at it', now: 20, want: ['short'] },
    { name: 'two due, soonest expiry first', now: 45, want: ['short', 'mid'] },
    { name: 'all due', now: 60, want: ['short', 'mid', 'long'] },
  ];
  for (const r of rows)
    it(r.name, () => expect(dueForRenewal(certs, at(r.now), 2 / 3).map((c) => c.name)).toEqual(r.want));
  it('looks again at the earliest renewal time, never for no certificates', () => {
    expect(nextRenewal(certs, 2 / 3)).toEqual(at(20));
    expect(nextRenewal([], 2 / 3)).toBeUndefined();
  });
});

describe('certificatesCondition', () => {
  const certs = [cert('apiserver', 0, 30), cert('admin', 0, 60)];
  const rows: Array<{ name: string; now: number; status: string; reason: string; message: RegExp }> = [
    { name: 'fresh', now: 1, status: 'True', reason: 'CertificatesCurrent', message: /earliest expiry: apiserver/ },
    {
      name: 'due but within the grace of its renewal',
      now: 21,
      status: 'True',
      reason: 'CertificatesCurrent',
      message: /apiserver/,
    },
    {
      name: 'past renewal time by more than the grace: overdue, named',
      now: 26,
      status: 'False',
      reason: 'CertificateRenewalOverdue',
      message: /not renewed: apiserver \(2026-01-01T00:30:00.000Z\)$/,
    },
    {
      name: 'expired wins over overdue',
      now: 30,
      status: 'False',
      reason: 'CertificateExpired',
      message: /^expired: apiserver/,
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const c = certificatesCondition(certs, at(r.now), 2 / 3, 5 * MIN);
      expect([c.type, c.status, c.reason]).toEqual(['CertificatesValid', r.status, r.reason]);
      expect(c.message).toMatch(r.message);
    });
  it('says so when nothing was issued', () =>
    expect(certificatesCondition([], at(0), 2 / 3, 0).message).toBe('no certificates issued'));
});

describe('caRotationCondition', () => {
  const cases: Array<[CaRotationReport, string, string]> = [
    [{ step: 'add' }, 'True', 'NewCAAdded'],
    [{ step: 'reissue' }, 'True', 'LeavesReissued'],
    [{ step: 'drop' }, 'True', 'OldCADropped'],
    [{ step: 'drop', refused: 'step drop follows step reissue' }, 'False', 'RotationStepRefused'],
    [{ step: 'shred' }, 'False', 'RotationStepRefused'],
  ];
  it.each(cases)('%j is %s %s', (report, status, reason) => {
    const c = caRotationCondition(report);
    expect(c).toMatchObject({ type: 'CARotation', status, reason });
    expect(c.message).toBeTruthy();
  });
});
