import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadManagerConfig } from './config.ts';
import { startManager } from './manager.ts';
import { checkSyncerOnly } from './syncermode.ts';
import { testDir } from '../../../test/tmpdir.ts';

const header = 'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: ManagerConfiguration\n';

/** configFile writes a manager configuration (after the header) and returns its path. */
function configFile(body: string): string {
  const f = join(testDir('vc-syncermode-'), 'm.yaml');
  writeFileSync(f, header + body);
  return f;
}

describe('vc syncer --super-cluster', () => {
  it('refuses a super cluster the configuration does not name, before connecting anywhere', async () => {
    const f = configFile('superClusters:\n  - {name: r1}\n  - {name: r2}\n');
    const run = startManager(loadManagerConfig(f), f, { syncerOnly: 'r3' });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/superClusters names no super cluster "r3" \(known: r1, r2\)$/);
  }, 60_000);

  it('refuses a super cluster not marked external, whose syncer the manager runs itself', async () => {
    const f = configFile('superClusters:\n  - {name: r1}\n  - {name: r2, external: false}\n');
    const run = startManager(loadManagerConfig(f), f, { syncerOnly: 'r2' });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/\/superClusters\/1\/external: super cluster "r2" is not marked external: true/);
  }, 60_000);

  it('accepts a registered super cluster listed in /superClusterRegistry/external, only with the registry on', () => {
    const supers = [{ name: 'r1' }];
    expect(() => checkSyncerOnly(supers, ['r3'], 'r3', 'm.yaml')).not.toThrow();
    expect(() => checkSyncerOnly(supers, ['r3'], 'r2', 'm.yaml')).toThrow(
      /^m\.yaml: \/superClusters names no super cluster "r2" \(known: r1; registered external: r3\)$/,
    );
    const off = configFile('superClusters:\n  - {name: r1}\nsuperClusterRegistry: {enabled: false, external: [r3]}\n');
    return expect(startManager(loadManagerConfig(off), off, { syncerOnly: 'r3' })).rejects.toThrow(
      /names no super cluster "r3" \(known: r1\)$/,
    );
  });

  it("reads only the meta cluster's and its own kubeconfig, not those of the other super clusters", async () => {
    const dir = testDir('vc-syncermode-');
    // Nothing listens on port 1: leader election retries in the background and nothing else connects before it leads.
    const kubeconfig = (name: string) => {
      const p = join(dir, `${name}.kubeconfig`);
      writeFileSync(
        p,
        `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n` +
          `contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\n`,
      );
      return p;
    };
    const f = configFile(
      `superClusters:\n  - {name: meta, kubeconfig: ${kubeconfig('meta')}}\n` +
        `  - {name: r1, kubeconfig: ${join(dir, 'absent.kubeconfig')}, external: true}\n` +
        `  - {name: r2, kubeconfig: ${kubeconfig('r2')}, external: true}\n` +
        'leaderElection: {enabled: true, leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 1}\n',
    );
    const m = await startManager(loadManagerConfig(f), f, { syncerOnly: 'r2' });
    try {
      expect(m.superClusters().map((s) => s.name)).toEqual(['meta', 'r2']);
      expect(m.isLeader()).toBe(false);
    } finally {
      await m.stop();
    }
  }, 60_000);
});

describe('deploy/syncer/deployment.yaml', () => {
  it('runs `vc syncer` for a super cluster its configuration marks external', () => {
    const docs = parseAllDocuments(
      readFileSync(join(import.meta.dirname, '../../../deploy/syncer/deployment.yaml'), 'utf8'),
    ).map((d) => d.toJS() as { kind: string; data?: Record<string, string>; spec?: unknown });
    const f = join(testDir('vc-syncermode-'), 'manager.yaml');
    writeFileSync(f, docs.find((d) => d.kind === 'ConfigMap')!.data!['manager.yaml']!);
    const deployment = docs.find((d) => d.kind === 'Deployment') as {
      spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
    };
    const args = deployment.spec.template.spec.containers[0]!.args;
    const name = args[args.indexOf('--super-cluster') + 1]!;
    const cfg = loadManagerConfig(f);
    expect(cfg.leaderElection?.enabled).toBe(true);
    expect(() => checkSyncerOnly(cfg.superClusters ?? [], [], name, f)).not.toThrow();
  });
});
