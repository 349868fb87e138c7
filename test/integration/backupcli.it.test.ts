import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { BackupController } from '../../core/lifecycle/backups.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { DirectoryStore } from '../../core/backup/store.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { runVc } from '../vccli.ts';

/**
 * The backup commands as docs/operations/backup.md gives them, run as a user runs them (the vc program, its one-line
 * answers and exit codes) against a manager's VirtualCluster and backup controllers on a real super cluster, with
 * the local provisioner's tenant `dev`. The snapshot and restore themselves are shown in detail by backup.it.
 */
describe('vc backup and vc restore, as the operations page gives them', () => {
  let t: TestSuper;
  let dir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let backups: BackupController;

  const vc = (args: string[]) => runVc(t.sc.kubeconfigPath, dir, args);

  const tenant = async (): Promise<KubeClient> => {
    const got = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'dev');
    return local.controlPlane(rootNamespace('default', 'dev', got.metadata!.uid!))!.client();
  };
  const settings = async () =>
    (await tenant()).getOrNull<KubeObject & { data?: Record<string, string> }>(R.configmaps, 'default', 'settings');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'local-only', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    dir = mkdtempSync(join(tmpdir(), 'vc-backupcli-'));
    local = new LocalProvisioner(join(dir, 'tenants'), t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      health: false,
    });
    backups = new BackupController({
      meta: t.client,
      provisioners: { local },
      store: new DirectoryStore(join(dir, 'backups')),
      retention: { count: 10 },
    });
    await controller.start();
    await backups.start();
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { namespace: 'default', name: 'dev' },
      spec: { provisioner: { type: 'local' } },
    });
    await eventually(async () => {
      const got = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'dev');
      expect(got.status?.phase).toBe('Running');
    }, 120_000);
    await (
      await tenant()
    ).create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: 'default', name: 'settings' },
      data: { colour: 'blue' },
    } as KubeObject);
  }, 240_000);

  afterAll(async () => {
    await backups?.stop();
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let snapshot = '';

  it('vc backup create prints the snapshot id on stdout and what was taken on stderr', async () => {
    const r = await vc(['backup', 'create', 'dev']);
    expect(r.code, r.stderr).toBe(0);
    snapshot = r.stdout.trim();
    expect(snapshot).toMatch(/^\S+$/);
    expect(r.stderr).toMatch(new RegExp(`^snapshot ${snapshot} taken \\(\\d+ bytes\\)\\n$`));
  }, 300_000);

  it('vc backup list shows it as a table, -o json as data, -o name and -o jsonpath as ids', async () => {
    const table = await vc(['backup', 'list', 'dev']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SNAPSHOT\s+AGE\s+REASON\s+SIZE\s+KUBERNETES\s+REVISION\s+SHA256$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^${snapshot}\\s+\\S+\\s+manual\\s+\\d+\\s+(?:v1\\.\\d+\\.\\d+|-)\\s+-\\s+[0-9a-f]{12}$`),
    );
    const json = await vc(['backup', 'list', 'dev', '-o', 'json']);
    const rows = JSON.parse(json.stdout) as Array<{ id: string; reason: string; sha256: string }>;
    expect(rows.map((x) => [x.id, x.reason])).toEqual([[snapshot, 'manual']]);
    expect(rows[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    const names = await vc(['backup', 'list', 'dev', '-o', 'name']);
    expect([names.code, names.stdout]).toEqual([0, `${snapshot}\n`]);
    const path = await vc(['backup', 'list', 'dev', '-o', 'jsonpath={[*].reason}']);
    expect([path.code, path.stdout]).toEqual([0, 'manual']);
  });

  it('vc restore --from brings back what the snapshot held', async () => {
    await (await tenant()).delete(R.configmaps, 'default', 'settings');
    expect(await settings()).toBeNull();
    const r = await vc(['restore', 'dev', '--from', snapshot]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(`virtualcluster default/dev: restored from snapshot ${snapshot} of default/dev\n`);
    const back = await eventually(async () => {
      const cm = await settings();
      expect(cm).not.toBeNull();
      return cm!;
    }, 60_000);
    expect(back.data).toEqual({ colour: 'blue' });
  }, 300_000);

  it('a snapshot that does not exist, or a tenant that does not, is one line and exit code 1', async () => {
    const none = await vc(['restore', 'dev', '--from', 'nope', '--wait', '60']);
    expect(none.code).toBe(1);
    expect(none.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(none.stderr).toMatch(/^vc: VirtualCluster default\/dev: .*nope/);
    const missing = await vc(['backup', 'create', 'nobody']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('vc: VirtualCluster default/nobody not found\n');
  }, 120_000);

  it('vc backup delete removes it from the store and the list', async () => {
    const r = await vc(['backup', 'delete', 'dev', snapshot]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(`snapshot ${snapshot} deleted\n`);
    const list = await vc(['backup', 'list', 'dev', '-o', 'json']);
    expect(JSON.parse(list.stdout)).toEqual([]);
  });
});
