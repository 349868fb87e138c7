import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadManagerConfig } from './config.ts';
import { startManager } from './manager.ts';

describe('vc syncer --super-cluster', () => {
  it('refuses a super cluster the configuration does not name, before connecting anywhere', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-syncermode-'));
    const f = join(dir, 'm.yaml');
    writeFileSync(
      f,
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: ManagerConfiguration\nsuperClusters:\n  - {name: r1}\n  - {name: r2}\n',
    );
    const run = startManager(loadManagerConfig(f), f, { syncerOnly: 'r3' });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/superClusters names no super cluster "r3"/);
  }, 60_000);
});
