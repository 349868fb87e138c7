import { describe, expect, it } from 'vitest';
import type { SnapshotMeta } from '../backup/catalog.ts';
import {
  backupSettingsOf,
  DEFAULT_RETAIN_FOR_MS,
  nextAutomatic,
  retainedFate,
  restoreRefusal,
  retainedStatus,
  type BackupSettings,
} from './backuppolicy.ts';
import { parseCron, type Cron } from './cron.ts';

const parsedCron = (e: string) => parseCron(e) as Cron;

describe('backupSettingsOf', () => {
  const cases: [string, Parameters<typeof backupSettingsOf>, BackupSettings][] = [
    [
      'nothing said: no schedule, per revision, Retain for 7 days, platform retention',
      [undefined, undefined, { count: 5 }],
      { onRevision: true, retention: { count: 5 }, deletionPolicy: 'Retain', retainForMs: DEFAULT_RETAIN_FOR_MS },
    ],
    [
      'the policy sets all',
      [
        {},
        {
          schedule: { every: '1h30m' },
          onRevision: false,
          retention: { maxAgeSeconds: 60 },
          deletionPolicy: 'Delete',
          retainFor: '72h',
        },
        { count: 5 },
      ],
      {
        everyMs: 5_400_000,
        onRevision: false,
        retention: { maxAgeSeconds: 60 },
        deletionPolicy: 'Delete',
        retainForMs: 72 * 3_600_000,
      },
    ],
    [
      "the VirtualCluster's deletionPolicy wins over the policy's",
      [{ deletionPolicy: 'Retain' }, { deletionPolicy: 'Delete' }],
      { onRevision: true, deletionPolicy: 'Retain', retainForMs: DEFAULT_RETAIN_FOR_MS },
    ],
    [
      'a cron expression is read',
      [undefined, { schedule: { cron: '0 */6 * * *' } }],
      {
        cron: parsedCron('0 */6 * * *'),
        onRevision: true,
        deletionPolicy: 'Retain',
        retainForMs: DEFAULT_RETAIN_FOR_MS,
      },
    ],
    [
      'a cron expression that cannot be read is no schedule, and says why',
      [undefined, { schedule: { cron: '0 */6 * *' } }],
      {
        scheduleError:
          'cron expression "0 */6 * *" has 4 fields: it takes 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)',
        onRevision: true,
        deletionPolicy: 'Retain',
        retainForMs: DEFAULT_RETAIN_FOR_MS,
      },
    ],
    [
      'an interval under a second is no schedule',
      [undefined, { schedule: { every: '500ms' } }],
      { onRevision: true, deletionPolicy: 'Retain', retainForMs: DEFAULT_RETAIN_FOR_MS },
    ],
  ];
  it.each(cases)('%s', (_n, args, want) => expect(backupSettingsOf(...args)).toEqual(want));
});

const snap = (uid: string, reason: SnapshotMeta['reason'], at: string, spec: unknown = { a: 1 }): SnapshotMeta => ({
  id: `${at}-x`,
  tenant: { namespace: 'ns', name: 'n', uid },
  spec,
  createdAt: at,
  reason,
  sizeBytes: 1,
  sha256: 'x',
});

describe('nextAutomatic', () => {
  const base = {
    now: new Date('2026-01-01T01:00:00Z'),
    uid: 'u1',
    createdAt: new Date('2026-01-01T00:00:00Z'),
    spec: { a: 1 },
  };
  const off: BackupSettings = { onRevision: false, deletionPolicy: 'Retain', retainForMs: 1 };
  const rev: BackupSettings = { ...off, onRevision: true };
  const hourly: BackupSettings = { ...off, everyMs: 3_600_000 };
  const quarterly: BackupSettings = { ...off, cron: parsedCron('*/15 * * * *') };
  const cases: [
    string,
    Omit<Parameters<typeof nextAutomatic>[0], keyof typeof base> & Partial<typeof base>,
    unknown,
  ][] = [
    ['nothing asked', { catalog: [], settings: off }, {}],
    ['from git, no revision snapshot yet', { catalog: [], settings: rev, appliedRevision: 'r1' }, { take: 'revision' }],
    ['not from git: no revision snapshot', { catalog: [], settings: rev }, {}],
    [
      'the newest revision snapshot holds this spec',
      {
        catalog: [
          snap('u1', 'revision', '2026-01-01T00:10:00Z', { a: 0 }),
          snap('u1', 'revision', '2026-01-01T00:20:00Z'),
        ],
        settings: rev,
        appliedRevision: 'r2',
      },
      {},
    ],
    [
      'the spec changed since the newest revision snapshot',
      {
        catalog: [
          snap('u1', 'revision', '2026-01-01T00:10:00Z'),
          snap('u1', 'revision', '2026-01-01T00:20:00Z', { a: 0 }),
        ],
        settings: rev,
        appliedRevision: 'r2',
      },
      { take: 'revision' },
    ],
    [
      "the spec changed but the source still names the last snapshot's revision: wait for the new one",
      {
        catalog: [{ ...snap('u1', 'revision', '2026-01-01T00:20:00Z', { a: 0 }), gitRevision: 'r1' }],
        settings: rev,
        appliedRevision: 'r1',
      },
      { awaitingRevision: true },
    ],
    [
      'a snapshot of an earlier VirtualCluster of the name does not count',
      { catalog: [snap('u0', 'revision', '2026-01-01T00:20:00Z')], settings: rev, appliedRevision: 'r1' },
      { take: 'revision' },
    ],
    [
      'schedule: due an interval after creation',
      { catalog: [], settings: hourly },
      { take: 'schedule', recheckMs: 3_600_000 },
    ],
    [
      'schedule: not due, a manual snapshot does not count, a revision one does',
      {
        catalog: [snap('u1', 'manual', '2026-01-01T00:55:00Z'), snap('u1', 'revision', '2026-01-01T00:30:00Z')],
        settings: hourly,
      },
      { recheckMs: 1_800_000 },
    ],
    [
      'schedule: due an interval after the last scheduled one',
      { catalog: [snap('u1', 'schedule', '2026-01-01T00:00:00Z')], settings: hourly },
      { take: 'schedule', recheckMs: 3_600_000 },
    ],
    [
      'a revision snapshot is followed by the scheduled one an interval later',
      { catalog: [], settings: { ...hourly, onRevision: true }, appliedRevision: 'r1' },
      { take: 'revision', recheckMs: 3_600_000 },
    ],
    [
      'a revision snapshot is followed by the next cron slot',
      {
        now: new Date('2026-01-01T00:20:00Z'),
        catalog: [],
        settings: { ...quarterly, onRevision: true },
        appliedRevision: 'r1',
      },
      { take: 'revision', recheckMs: 10 * 60_000 },
    ],
    [
      'retention removed the revision snapshot: a newer one at that revision with this spec holds it',
      {
        catalog: [{ ...snap('u1', 'schedule', '2026-01-01T00:50:00Z'), gitRevision: 'r1' }],
        settings: { ...hourly, onRevision: true },
        appliedRevision: 'r1',
      },
      { recheckMs: 50 * 60_000 },
    ],
    [
      'a snapshot at that revision with another spec does not hold it',
      {
        catalog: [{ ...snap('u1', 'schedule', '2026-01-01T00:50:00Z', { a: 0 }), gitRevision: 'r0' }],
        settings: rev,
        appliedRevision: 'r1',
      },
      { take: 'revision' },
    ],
    [
      'cron: the first slot after creation has passed, the next is at the top of the hour',
      { now: new Date('2026-01-01T00:20:00Z'), catalog: [], settings: quarterly },
      { take: 'schedule', recheckMs: 10 * 60_000 },
    ],
    [
      'cron: a scheduled snapshot in this slot already, the next slot is looked at then',
      {
        now: new Date('2026-01-01T00:20:00Z'),
        catalog: [snap('u1', 'schedule', '2026-01-01T00:15:02Z')],
        settings: quarterly,
      },
      { recheckMs: 10 * 60_000 },
    ],
    [
      'cron: slots missed while away give one snapshot, not one per slot',
      { catalog: [snap('u1', 'schedule', '2025-12-31T00:15:02Z')], settings: quarterly },
      { take: 'schedule', recheckMs: 15 * 60_000 },
    ],
    [
      'cron: a revision snapshot counts as the scheduled one of its slot',
      {
        now: new Date('2026-01-01T00:40:00Z'),
        catalog: [snap('u1', 'manual', '2026-01-01T00:39:00Z'), snap('u1', 'revision', '2026-01-01T00:31:00Z')],
        settings: quarterly,
      },
      { recheckMs: 5 * 60_000 },
    ],
    [
      'cron: an expression naming no time takes nothing and looks no more',
      { catalog: [], settings: { ...off, cron: parsedCron('0 0 30 2 *') } },
      {},
    ],
  ];
  it.each(cases)('%s', (_n, input, want) => expect(nextAutomatic({ ...base, ...input })).toEqual(want));
});

describe('retainedFate', () => {
  const r = { uid: 'u1', snapshot: 's', deletedAt: '2026-01-01T00:00:00Z', until: '2026-01-02T00:00:00Z' };
  const cases: [string, Date, { uid: string } | undefined, string][] = [
    ['within the grace, nothing made again: kept', new Date('2026-01-01T12:00:00Z'), undefined, 'keep'],
    ['within the grace, made again: restored', new Date('2026-01-01T12:00:00Z'), { uid: 'u2' }, 'restore'],
    ['the same VirtualCluster still going away: kept', new Date('2026-01-01T12:00:00Z'), { uid: 'u1' }, 'keep'],
    ['after the grace: expired, made again or not', new Date('2026-01-02T00:00:00Z'), { uid: 'u2' }, 'expire'],
  ];
  it.each(cases)('%s', (_n, now, current, want) => expect(retainedFate(r, now, current)).toBe(want));
  it('shows the time it is kept until', () =>
    expect(retainedStatus(r)).toBe('Deleted (retained until 2026-01-02T00:00:00Z)'));
});

describe('restoreRefusal', () => {
  const cases: [string, string | undefined, string | undefined, RegExp | undefined][] = [
    ['same version', 'v1.36.3', 'v1.36.3', undefined],
    ['an older patch into a newer one', 'v1.36.1', 'v1.36.3', undefined],
    ['one minor older: as an upgrade', 'v1.35.2', 'v1.36.3', undefined],
    ['a newer minor into an older tenant', 'v1.37.0', 'v1.36.3', /holds the data of Kubernetes v1\.37\.0 .* downgrade/],
    ['two minors older', 'v1.34.0', 'v1.36.3', /skips 1 minor version/],
    ['snapshot version unknown', undefined, 'v1.36.3', undefined],
    ['tenant version unknown', 'v1.37.0', undefined, undefined],
  ];
  it.each(cases)('%s', (_n, snapshot, tenant, want) => {
    const r = restoreRefusal({ id: 's1', kubernetesVersion: snapshot }, tenant);
    if (want) expect(r).toMatch(want);
    else expect(r).toBeUndefined();
  });
});
