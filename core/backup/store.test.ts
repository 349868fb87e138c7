import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotMeta } from './catalog.ts';
import { DirectoryStore, sha256File, SnapshotCorrupt, SnapshotNotFound } from './store.ts';

describe('DirectoryStore', () => {
  let dir: string;
  let store: DirectoryStore;
  const t = { namespace: 'team-a', name: 'dev' };
  const put = async (id: string, createdAt: string, data: string, override: Partial<SnapshotMeta> = {}) => {
    const f = join(dir, `${id}.src`);
    writeFileSync(f, data);
    const meta: SnapshotMeta = {
      id,
      tenant: { ...t, uid: 'u1' },
      spec: {},
      createdAt,
      reason: 'manual',
      ...(await sha256File(f)),
      ...override,
    };
    await store.put(meta, f);
    return meta;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-store-test-'));
    store = new DirectoryStore(join(dir, 'store'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lists oldest first, fetches whole data, deletes', async () => {
    await put('s2', '2026-11-29T11:00:00Z', 'two');
    await put('s1', '2026-11-29T10:00:00Z', 'one');
    expect((await store.list(t)).map((m) => m.id)).toEqual(['s1', 's2']);
    expect(await store.list({ namespace: 'team-a', name: 'other' })).toEqual([]);
    const got = join(dir, 'got');
    expect((await store.fetch(t, 's2', got)).id).toBe('s2');
    expect((await sha256File(got)).sizeBytes).toBe(3);
    await store.delete(t, 's1');
    expect((await store.list(t)).map((m) => m.id)).toEqual(['s2']);
  });

  const bad: Array<{ name: string; override: Partial<SnapshotMeta>; field: RegExp }> = [
    {
      name: 'a wrong checksum names sha256',
      override: { sha256: '00'.repeat(32) },
      field: /snapshot s1 of team-a\/dev in directory .*: the data's sha256 is [0-9a-f]{64}, its metadata says 0000/,
    },
    {
      name: 'a wrong size names sizeBytes',
      override: { sizeBytes: 99 },
      field: /snapshot s1 of team-a\/dev .*: sizeBytes is 3, its metadata says 99/,
    },
  ];
  for (const c of bad)
    it(c.name, async () => {
      await put('s1', '2026-11-29T10:00:00Z', 'one', c.override);
      const e = await store.fetch(t, 's1', join(dir, 'got')).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(SnapshotCorrupt);
      expect((e as Error).message).toMatch(c.field);
    });

  it('an unknown id or one that would leave the folder is not found', async () => {
    await expect(store.fetch(t, 'nope', join(dir, 'got'))).rejects.toBeInstanceOf(SnapshotNotFound);
    await expect(store.fetch(t, '../../x', join(dir, 'got'))).rejects.toBeInstanceOf(SnapshotNotFound);
    await expect(store.list({ namespace: '..', name: 'x' })).rejects.toBeInstanceOf(SnapshotNotFound);
  });
});
