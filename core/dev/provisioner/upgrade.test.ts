import { describe, expect, it } from 'vitest';
import { judgeChange, kubernetesOf, type VersionedBinaries } from './upgrade.ts';
import { pinnedVersions } from '../../toolchain/toolchain.ts';

const bins: VersionedBinaries = { binaries: { apiserver: '/a', controllerManager: '/c' } };
const missing: VersionedBinaries = { problem: 'ClusterVersion cv spec.kubernetesVersion: Kubernetes v1.36.99 is not' };

describe('judgeChange', () => {
  const rows: Array<{
    name: string;
    from: string;
    to: string;
    bins?: VersionedBinaries;
    snapshot?: 'ok' | 'fails';
    refused?: string;
    snapshots: number;
  }> = [
    { name: 'a patch change rolls without a snapshot', from: 'v1.36.1', to: 'v1.36.3', snapshot: 'ok', snapshots: 0 },
    { name: 'one minor up snapshots, then rolls', from: 'v1.35.4', to: 'v1.36.3', snapshot: 'ok', snapshots: 1 },
    { name: 'one minor up without a snapshotter rolls', from: 'v1.35.4', to: 'v1.36.3', snapshots: 0 },
    {
      name: 'a snapshot that fails holds the upgrade back',
      from: 'v1.35.4',
      to: 'v1.36.3',
      snapshot: 'fails',
      refused: 'UpgradeSnapshotFailed',
      snapshots: 1,
    },
    {
      name: 'a skipped minor is refused before any snapshot',
      from: 'v1.34.2',
      to: 'v1.36.3',
      snapshot: 'ok',
      refused: 'UpgradeRefused',
      snapshots: 0,
    },
    { name: 'a downgrade is refused', from: 'v1.36.3', to: 'v1.35.4', refused: 'UpgradeRefused', snapshots: 0 },
    {
      name: 'a version without binaries is refused',
      from: 'v1.36.3',
      to: 'v1.36.99',
      bins: missing,
      snapshot: 'ok',
      refused: 'UnknownKubernetesVersion',
      snapshots: 0,
    },
  ];
  for (const r of rows)
    it(r.name, async () => {
      let taken = 0;
      const before =
        r.snapshot &&
        (async () => {
          taken++;
          if (r.snapshot === 'fails') throw new Error('store is full');
        });
      const got = await judgeChange(r.from, r.to, r.bins ?? bins, before || undefined, 'cv');
      expect(got?.refused).toBe(r.refused);
      expect(taken).toBe(r.snapshots);
      if (got) {
        expect(got.kept).toBe(true);
        expect(got.message).toContain(r.from);
      }
    });
});

describe('kubernetesOf', () => {
  it('reads version.kubernetes of a component, else the pinned version', () => {
    expect(kubernetesOf({ version: { kubernetes: 'v1.35.4' } })).toBe('v1.35.4');
    expect(kubernetesOf({ version: { name: 'cv' } })).toBe(pinnedVersions().kubernetes);
    expect(kubernetesOf(undefined)).toBe(pinnedVersions().kubernetes);
  });
});
