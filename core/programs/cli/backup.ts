import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import {
  BACKUP_REQUEST_ANNOTATION,
  BACKUP_RESULT_ANNOTATION,
  CATALOG_KEY,
  catalogName,
  type BackupAction,
  type BackupResult,
  type CatalogEntry,
} from '../../backup/requests.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { CliError } from './errors.ts';
import { addClusterOptions, clusterClient, type ClusterFlags } from './kubeconfig.ts';
import { age, formatData, formatTable, outputOption } from './output.ts';

/** DEFAULT_WAIT_SECONDS is how long the backup commands wait for the manager's answer by default. */
const DEFAULT_WAIT_SECONDS = '300';

/**
 * requestBackupAction writes a backup request on a VirtualCluster and waits for the manager's answer to it: the
 * answer when it succeeded, a CliError with the manager's message when it failed or none came in time.
 */
export async function requestBackupAction(
  c: KubeClient,
  vc: { namespace: string; name: string },
  action: Omit<BackupAction, 'token'>,
  waitMs: number,
): Promise<BackupResult> {
  const token = `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const value = JSON.stringify({ token, ...action } satisfies BackupAction);
  const found = await c.getOrNull<VirtualCluster>(R.virtualclusters, vc.namespace, vc.name);
  if (!found) throw new CliError(`VirtualCluster ${vc.namespace}/${vc.name} not found`);
  await c.patch(
    R.virtualclusters,
    vc.namespace,
    vc.name,
    { metadata: { uid: found.metadata?.uid, annotations: { [BACKUP_REQUEST_ANNOTATION]: value } } },
    'merge',
  );
  return waitForAnswer(c, vc, token, waitMs);
}

async function waitForAnswer(
  c: KubeClient,
  vc: { namespace: string; name: string },
  token: string,
  waitMs: number,
): Promise<BackupResult> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const now = await c.getOrNull<VirtualCluster>(R.virtualclusters, vc.namespace, vc.name);
    if (!now) throw new CliError(`VirtualCluster ${vc.namespace}/${vc.name} was deleted while waiting`);
    const raw = now.metadata?.annotations?.[BACKUP_RESULT_ANNOTATION];
    const r = raw ? (JSON.parse(raw) as BackupResult) : undefined;
    if (r?.token === token) {
      if (!r.ok) throw new CliError(`VirtualCluster ${vc.namespace}/${vc.name}: ${r.message}`);
      return r;
    }
    if (Date.now() > deadline)
      throw new CliError(
        `VirtualCluster ${vc.namespace}/${vc.name}: no answer from the manager in ${Math.round(waitMs / 1000)} s ` +
          `(phase ${now.status?.phase ?? 'unknown'}); the request stays in ${BACKUP_REQUEST_ANNOTATION}`,
      );
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** readCatalog returns the snapshots the manager lists for a VirtualCluster, oldest first (none: empty). */
export async function readCatalog(c: KubeClient, vc: { namespace: string; name: string }): Promise<CatalogEntry[]> {
  const cm = await c.getOrNull<KubeObject & { data?: Record<string, string> }>(
    R.configmaps,
    vc.namespace,
    catalogName(vc.name),
  );
  const raw = cm?.data?.[CATALOG_KEY];
  return raw ? (JSON.parse(raw) as CatalogEntry[]) : [];
}

const seconds = (s: string, flag: string) => {
  const n = Number(s);
  if (!Number.isFinite(n) || n < 1) throw new CliError(`${flag} ${s}: a number of seconds, at least 1`);
  return n * 1000;
};

type Flags = ClusterFlags & { namespace: string; wait: string };

/** registerBackupCommands adds `vc backup create|list|delete` and `vc restore`. */
export function registerBackupCommands(program: Command): void {
  const backup = program
    .command('backup')
    .description("etcd snapshots of a tenant, taken and kept by the manager in the platform's backup store");
  const common = (cmd: Command) =>
    addClusterOptions(cmd)
      .option('-n, --namespace <ns>', 'namespace of the VirtualCluster', 'default')
      .option('--wait <seconds>', "how long to wait for the manager's answer", DEFAULT_WAIT_SECONDS);

  common(backup.command('create <name>'))
    .description('snapshot the tenant now; prints the snapshot id')
    .action(async (name: string, o: Flags) => {
      const c = await clusterClient(o);
      const r = await requestBackupAction(
        c,
        { namespace: o.namespace, name },
        { action: 'create' },
        seconds(o.wait, '--wait'),
      );
      process.stdout.write(`${r.snapshot}\n`);
      process.stderr.write(`${r.message}\n`);
    });

  addClusterOptions(backup.command('list <name>'))
    .description('list the snapshots of a tenant, oldest first')
    .option('-n, --namespace <ns>', 'namespace of the VirtualCluster', 'default')
    .addOption(outputOption(['table', 'json', 'yaml']))
    .action(async (name: string, o: ClusterFlags & { namespace: string; output: string }) => {
      const entries = await readCatalog(await clusterClient(o), { namespace: o.namespace, name });
      const data = formatData(entries, o.output);
      if (data !== undefined) return void process.stdout.write(data);
      process.stdout.write(
        formatTable(
          ['SNAPSHOT', 'AGE', 'REASON', 'SIZE', 'KUBERNETES', 'REVISION', 'SHA256'],
          entries.map((e) => [
            e.id,
            age(e.createdAt),
            e.reason,
            String(e.sizeBytes),
            e.kubernetesVersion ?? '-',
            e.gitRevision?.slice(0, 12) ?? '-',
            e.sha256.slice(0, 12),
          ]),
        ),
      );
    });

  common(backup.command('delete <name> <snapshot>'))
    .description('delete one snapshot of a tenant from the store')
    .action(async (name: string, snapshot: string, o: Flags) => {
      const c = await clusterClient(o);
      const r = await requestBackupAction(
        c,
        { namespace: o.namespace, name },
        { action: 'delete', snapshot },
        seconds(o.wait, '--wait'),
      );
      process.stderr.write(`${r.message}\n`);
    });

  common(program.command('restore <name>'))
    .description("replace a tenant's etcd data with a snapshot (the syncer then brings the super cluster in line)")
    .requiredOption('--from <snapshot>', 'the snapshot id (vc backup list NAME)')
    .option('--as <newname>', 'restore into a new VirtualCluster of this name (not supported yet: refused)')
    .action(async (name: string, o: Flags & { from: string; as?: string }) => {
      const c = await clusterClient(o);
      const waitMs = seconds(o.wait, '--wait');
      const from = { namespace: o.namespace, name };
      if (!o.as) {
        const r = await requestBackupAction(c, from, { action: 'restore', snapshot: o.from }, waitMs);
        return void process.stderr.write(`virtualcluster ${o.namespace}/${name}: ${r.message}\n`);
      }
      // A local tenant's keys live under its root namespace, which has the VirtualCluster's uid in it: a snapshot
      // restored into another VirtualCluster would sit under a prefix its apiserver does not read. Until a restore
      // moves the keys, refuse rather than make an empty tenant.
      throw new CliError(
        `--as ${o.as}: restoring into another VirtualCluster is not supported yet (the snapshot's keys are under ` +
          `the etcd prefix of ${o.namespace}/${name}'s root namespace); restore into ${name} itself`,
      );
    });
}
