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
import { pickByRevision, revisionHistory } from '../../backup/revision.ts';
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
    .addOption(outputOption(['table', 'json', 'yaml', 'name', 'jsonpath'], 'name: one snapshot id per line'))
    .action(async (name: string, o: ClusterFlags & { namespace: string; output: string }) => {
      const entries = await readCatalog(await clusterClient(o), { namespace: o.namespace, name });
      if (o.output === 'name') return void process.stdout.write(entries.map((e) => `${e.id}\n`).join(''));
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
    .description(
      "replace a tenant's etcd data with a snapshot, named or the one of a git revision (the syncer then brings the " +
        'super cluster in line)',
    )
    .option('--from <snapshot>', 'the snapshot id (vc backup list NAME)')
    .option(
      '--to-revision <rev>',
      'the newest snapshot taken at this git commit (or, with --repo, its nearest ancestor)',
    )
    .option('--repo <dir>', 'a clone of the tenant repository, to find the snapshot of an ancestor of --to-revision')
    .option(
      '--as <newname>',
      'restore into another VirtualCluster: made with the spec the snapshot recorded when absent',
    )
    .action(async (name: string, o: Flags & { from?: string; toRevision?: string; repo?: string; as?: string }) => {
      if (!o.from === !o.toRevision) throw new CliError('give one of --from SNAPSHOT or --to-revision REV');
      if (o.repo && !o.toRevision) throw new CliError('--repo is for --to-revision');
      const c = await clusterClient(o);
      const waitMs = seconds(o.wait, '--wait');
      const from = { namespace: o.namespace, name };
      const snapshot = o.from ?? (await snapshotOfRevision(c, from, o.toRevision!, o.repo));
      if (!o.as) {
        const r = await requestBackupAction(c, from, { action: 'restore', snapshot }, waitMs);
        return void process.stderr.write(`virtualcluster ${o.namespace}/${name}: ${r.message}\n`);
      }
      const to = { namespace: o.namespace, name: o.as };
      await createFromSnapshot(c, from, to, snapshot);
      const r = await requestBackupAction(c, to, { action: 'restore', snapshot, from: name }, waitMs);
      process.stderr.write(`virtualcluster ${o.namespace}/${o.as}: ${r.message}\n`);
    });
}

/**
 * createFromSnapshot makes the VirtualCluster `to` with the spec the snapshot of `from` recorded, unless it exists
 * (then the snapshot is restored into it as it is). The tenant `from` need not exist any more: its catalog outlives it.
 */
export async function createFromSnapshot(
  c: KubeClient,
  from: { namespace: string; name: string },
  to: { namespace: string; name: string },
  snapshot: string,
): Promise<void> {
  const entry = (await readCatalog(c, from)).find((e) => e.id === snapshot);
  if (!entry) throw new CliError(`snapshot ${snapshot} is not in the catalog of ${from.namespace}/${from.name}`);
  if (await c.getOrNull(R.virtualclusters, to.namespace, to.name)) return;
  await c.create(R.virtualclusters, {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { ...to, annotations: { 'backup.tenancy.x-k8s.io/restored-from': `${from.name}/${snapshot}` } },
    spec: entry.spec,
  } as KubeObject);
  process.stderr.write(`virtualcluster ${to.namespace}/${to.name} created with the spec of snapshot ${snapshot}\n`);
}

/**
 * snapshotOfRevision picks from the tenant's catalog the snapshot `--to-revision` names (pickByRevision), looking at
 * the revision's ancestors in the clone at repo when one is given, and says which it picked.
 */
async function snapshotOfRevision(
  c: KubeClient,
  vc: { namespace: string; name: string },
  rev: string,
  repo: string | undefined,
): Promise<string> {
  const history = repo
    ? await revisionHistory(repo, rev).catch((e: unknown) => {
        throw new CliError(`--repo ${repo}: cannot read the history of ${rev}: ${(e as Error).message}`);
      })
    : undefined;
  let picked: CatalogEntry;
  try {
    picked = pickByRevision(await readCatalog(c, vc), rev, history);
  } catch (e) {
    throw new CliError(`VirtualCluster ${vc.namespace}/${vc.name}: ${(e as Error).message}`);
  }
  process.stderr.write(
    `restoring snapshot ${picked.id} (taken ${picked.createdAt} at revision ${picked.gitRevision?.slice(0, 12)})\n`,
  );
  return picked.id;
}
