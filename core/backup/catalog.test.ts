import { describe, expect, it } from 'vitest';
import { expired, snapshotId, type Retention, type SnapshotMeta } from './catalog.ts';

const NOW = new Date('2026-11-29T12:00:00Z');
const snap = (id: string, createdAt: string): SnapshotMeta => ({
  id,
  tenant: { namespace: 'team-a', name: 'dev', uid: 'u' },
  spec: {},
  createdAt,
  reason: 'manual',
  sizeBytes: 1,
  sha256: 'ab',
});
const A = snap('a', '2026-11-20T12:00:00Z');
const B = snap('b', '2026-11-28T12:00:00Z');
const C = snap('c', '2026-11-29T11:00:00Z');
const D = snap('d', '2026-11-29T11:30:00Z');

describe('expired', () => {
  const cases: Array<{ name: string; have: SnapshotMeta[]; r: Retention; drop: string[] }> = [
    { name: 'no limits keep everything', have: [A, B, C, D], r: {}, drop: [] },
    { name: 'count keeps the newest N, drops oldest first', have: [C, A, D, B], r: { count: 2 }, drop: ['a', 'b'] },
    { name: 'count larger than the list drops nothing', have: [A, B], r: { count: 5 }, drop: [] },
    {
      name: 'age drops what is older than the limit',
      have: [A, B, C, D],
      r: { maxAgeSeconds: 2 * 86400 },
      drop: ['a'],
    },
    {
      name: 'both limits: a snapshot goes when either says so',
      have: [A, B, C, D],
      r: { count: 3, maxAgeSeconds: 7200 },
      drop: ['a', 'b'],
    },
    { name: 'the newest is kept however old', have: [A, B], r: { maxAgeSeconds: 60 }, drop: ['a'] },
    { name: 'count 0 still keeps the newest', have: [A, B], r: { count: 0 }, drop: ['a'] },
    { name: 'empty list', have: [], r: { count: 1 }, drop: [] },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(expired(c.have, c.r, NOW).map((s) => s.id)).toEqual(c.drop);
    });
});

describe('snapshotId', () => {
  it('sorts by time and names the checksum', () => {
    expect(snapshotId(new Date('2026-11-29T10:31:05.123Z'), 'deadbeefcafe')).toBe('20261129T103105.123Z-deadbeef');
    const ids = [
      snapshotId(new Date('2026-11-29T10:31:05Z'), 'ff'),
      snapshotId(new Date('2026-01-02T00:00:00Z'), '00'),
    ];
    expect([...ids].sort()).toEqual([ids[1], ids[0]]);
  });
});
