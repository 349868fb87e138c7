import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { readYamlDocuments } from '../../../schemas/load.ts';
import { formatErrors, validate } from '../../../schemas/validate.ts';
import { isNotFound, type KubeClient } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { STATE_CONFIGMAP } from '../../scheduler/state.ts';
import { formatTenantPlacements, parseTenantPlacements, readSchedulerState } from './placements.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../../api/virtualcluster.ts';
import { checkPolicies, formatViolations, type TenantPolicy } from '../../tenancy/policy.ts';
import { readNamespaceLabelsOf, readTenantPolicies, type NamespaceLabels } from '../../../gitops/applier/policy.ts';
import { subjectOf } from '../../tenancy/grants.ts';
import { healthOf } from './describe.ts';
import { retainedStatus } from '../../lifecycle/backuppolicy.ts';
import { listRetained, readRetained, type Retained } from '../../lifecycle/retained.ts';
import { age, formatObjects, formatTable, outputOption } from './output.ts';
import { GITSOURCE_WORDS, listGitSources } from './sources.ts';
import { CliError } from './errors.ts';
import { withServer } from '../../pki/kubeconfig.ts';
import {
  addClusterOptions,
  clusterClient,
  DEFAULT_STATE_DIR,
  resolveKubeconfig,
  type ClusterFlags,
} from './kubeconfig.ts';

export { CliError };

/** DEFAULT_STATE_DIR is where `vc up` keeps the embedded default (see kubeconfig.ts). */
export { DEFAULT_STATE_DIR };

/** VC_WORDS are the names `vc get` accepts for the VirtualCluster kind. */
const VC_WORDS = ['virtualclusters', 'virtualcluster', 'vc', 'vcs'];

/** metaKubeconfig is the first kubeconfig file KUBECONFIG_RULE chooses for the meta cluster, for commands that need a path. */
export function metaKubeconfig(flag?: string): string {
  return resolveKubeconfig({ flag }).files[0]!;
}

async function meta(o: ClusterFlags): Promise<KubeClient> {
  return clusterClient(o);
}

/**
 * readVirtualClusters reads VirtualCluster documents from a file and validates each against the schema. As kubectl, a
 * document without a namespace takes `namespace` (default `default`), and one naming another namespace is refused.
 */
export function readVirtualClusters(file: string, namespace?: string): VirtualCluster[] {
  const out: VirtualCluster[] = [];
  for (const value of readYamlDocuments(file, CliError)) {
    const v = value as VirtualCluster | null;
    if (!v) continue;
    v.metadata ??= {};
    if (namespace && v.metadata.namespace && v.metadata.namespace !== namespace)
      throw new CliError(
        `${file}: VirtualCluster ${v.metadata.namespace}/${v.metadata.name ?? '?'}: metadata.namespace is not ` +
          `${namespace} (-n); drop -n or the namespace in the file`,
      );
    v.metadata.namespace ??= namespace ?? 'default';
    const errors = validate('virtualCluster', v);
    if (errors.length)
      throw new CliError(
        formatErrors(`${file}: VirtualCluster ${v.metadata.namespace}/${v.metadata.name ?? '?'}`, errors),
      );
    out.push(v);
  }
  if (!out.length) throw new CliError(`${file}: no VirtualCluster in the file`);
  return out;
}

/**
 * refuseByPolicy throws, naming the file, the object and each field, when a VirtualCluster asks for more than its
 * TenantPolicy allows or names what is not granted to its namespace (with the namespace's labels where read). Plugin
 * settings are checked by the manager, which alone knows its defaults.
 */
export function refuseByPolicy(
  file: string,
  vcs: readonly VirtualCluster[],
  policies: readonly TenantPolicy[],
  labels?: NamespaceLabels,
): void {
  const lines: string[] = [];
  for (const vc of vcs) {
    const r = checkPolicies(vc, policies, {}, subjectOf(vc, labels?.get(vc.metadata?.namespace ?? '')));
    if ('violations' in r)
      lines.push(
        formatViolations(`${file}: VirtualCluster ${vc.metadata!.namespace}/${vc.metadata!.name}`, r.violations),
      );
  }
  if (lines.length) throw new CliError(lines.join('\n'));
}

/** notFound is the error for a VirtualCluster that does not exist, saying how to find the right name. */
function notFound(k: { namespace: string; name: string }): CliError {
  return new CliError(
    `VirtualCluster ${k.namespace}/${k.name} not found: list them with \`vc get\`, or pass -n NAMESPACE`,
  );
}

function splitName(name: string, namespace?: string): { namespace: string; name: string } {
  const [a, b] = name.includes('/') ? name.split('/') : [namespace ?? 'default', name];
  return { namespace: a!, name: b! };
}

async function kubeconfigOf(c: KubeClient, vc: VirtualCluster): Promise<string> {
  // The Secret's name follows from the VirtualCluster's own name, never from status (which a status writer could
  // point at another Secret); status only says whether the manager has written it yet.
  const secretName = kubeconfigSecretName(vc.metadata!.name!);
  if (!vc.status?.kubeconfigSecretName)
    throw new CliError(
      `VirtualCluster ${vc.metadata!.namespace}/${vc.metadata!.name} has no kubeconfig yet (phase ${vc.status?.phase ?? 'Pending'})`,
    );
  const s = await c.get<{ data?: Record<string, string> }>(R.secrets, vc.metadata!.namespace, secretName);
  return Buffer.from(s.data?.kubeconfig ?? '', 'base64').toString('utf8');
}

/** waitSeconds reads a --wait (or `flag`) value: a number of seconds >= 0. */
function waitSeconds(v: string, flag = '--wait'): number {
  const wait = Number(v);
  if (!Number.isFinite(wait) || wait < 0) throw new CliError(`${flag}: ${v} is not a number of seconds >= 0`);
  return wait;
}

/**
 * provisioned gets a VirtualCluster whose kubeconfig is written, waiting up to `waitS` seconds (its phases on stderr)
 * for one still being provisioned: right after `vc up`, or a push of a new tenant, it is still starting.
 */
async function provisioned(
  c: KubeClient,
  k: { namespace: string; name: string },
  waitS: number,
): Promise<VirtualCluster> {
  const vc = await c.getOrNull<VirtualCluster>(R.virtualclusters, k.namespace, k.name);
  if (!vc) throw notFound(k);
  if (vc.status?.kubeconfigSecretName || waitS === 0) return vc;
  return waitRunning(c, k.namespace, k.name, waitS * 1000);
}

async function waitRunning(c: KubeClient, ns: string, name: string, timeoutMs: number): Promise<VirtualCluster> {
  const started = Date.now();
  let last = '';
  for (;;) {
    const vc = await c.get<VirtualCluster>(R.virtualclusters, ns, name);
    const phase = vc.status?.phase ?? 'Pending';
    const line = `${phase}${vc.status?.message ? `: ${vc.status.message}` : ''}`;
    if (line !== last) process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${ns}/${name} ${line}\n`);
    last = line;
    if (phase === 'Running') return vc;
    if (phase === 'Error') throw new CliError(`VirtualCluster ${ns}/${name}: ${vc.status?.message ?? 'error'}`);
    if (Date.now() - started > timeoutMs)
      throw new CliError(`VirtualCluster ${ns}/${name} not Running after ${timeoutMs / 1000} s (phase ${phase})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** registerVirtualClusterCommands adds create, get, delete, kubeconfig and exec to the CLI. */
export function registerVirtualClusterCommands(program: Command): void {
  const waitOpt = [
    '--wait <seconds>',
    'how long to wait for a VirtualCluster still being provisioned (0: not at all)',
    '120',
  ] as const;

  addClusterOptions(program.command('create'))
    .description('validate and create VirtualClusters, wait until Running, and write the tenant kubeconfig')
    .requiredOption('-f, --file <file>', 'VirtualCluster YAML')
    .option('-n, --namespace <ns>', 'namespace of the documents that name none (default: default)')
    .option('--kubeconfig-out <file>', 'where to write the tenant kubeconfig (mode 0600)')
    .option('--timeout <seconds>', 'how long to wait for Running', '300')
    .action(
      async (o: {
        file: string;
        namespace?: string;
        kubeconfigOut?: string;
        timeout: string;
        kubeconfig?: string;
        context?: string;
      }) => {
        const timeout = waitSeconds(o.timeout, '--timeout');
        const vcs = readVirtualClusters(o.file, o.namespace);
        const c = await meta(o);
        const policies = await readTenantPolicies(c);
        if (policies)
          refuseByPolicy(
            o.file,
            vcs,
            policies,
            await readNamespaceLabelsOf(
              c,
              vcs.map((v) => v.metadata?.namespace ?? ''),
            ),
          );
        for (const vc of vcs) {
          await c.create(R.virtualclusters, { ...vc, apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster' });
          process.stderr.write(`virtualcluster ${vc.metadata!.namespace}/${vc.metadata!.name} created\n`);
        }
        for (const vc of vcs) {
          const done = await waitRunning(c, vc.metadata!.namespace!, vc.metadata!.name!, timeout * 1000);
          const kubeconfig = await kubeconfigOf(c, done);
          const base = o.kubeconfigOut;
          const out = base && vcs.length === 1 ? base : base ? `${base}.${vc.metadata!.name}` : undefined;
          if (out) {
            writeFileSync(out, kubeconfig, { mode: 0o600 });
            process.stdout.write(`${out}\n`);
          }
        }
      },
    );

  addClusterOptions(program.command('get [name] [more]'))
    .description(
      'list VirtualClusters, or show one; `vc get gitsources [NAME]` for GitSources (a VirtualCluster named like a ' +
        'kind: `vc get virtualclusters NAME`)',
    )
    .option('-n, --namespace <ns>', 'namespace (default: all for a list, `default` for one)')
    .option('-A, --all-namespaces', 'list the VirtualClusters of every namespace (the default without -n)')
    .addOption(
      outputOption(
        ['table', 'wide', 'json', 'yaml', 'name', 'jsonpath'],
        'wide adds where the scheduler placed each tenant; a list is a v1 List, as kubectl prints it',
      ),
    )
    .action(
      async (
        first: string | undefined,
        more: string | undefined,
        o: { namespace?: string; allNamespaces?: boolean; output: string; kubeconfig?: string; context?: string },
      ) => {
        if (o.allNamespaces && o.namespace) throw new CliError('give -n/--namespace or -A/--all-namespaces, not both');
        const kind = more !== undefined || first === 'gitsources' || first === 'virtualclusters' ? first : undefined;
        if (kind !== undefined && GITSOURCE_WORDS.includes(kind)) return listGitSources(more, o);
        if (kind !== undefined && !VC_WORDS.includes(kind))
          throw new CliError(`vc get ${kind}: unknown kind; vc get [virtualclusters|gitsources] [NAME]`);
        const name = kind === undefined ? first : more;
        const c = await meta(o);
        let items: VirtualCluster[];
        // A tenant deleted under Retain is gone as an object; the table shows it from its record while it is kept.
        const table = o.output === 'table' || o.output === 'wide';
        let retained: Retained[] = [];
        if (name) {
          const k = splitName(name, o.namespace);
          try {
            items = [await c.get<VirtualCluster>(R.virtualclusters, k.namespace, k.name)];
          } catch (e) {
            if (!isNotFound(e)) throw e;
            const kept = table ? await readRetained(c, k.namespace, k.name) : undefined;
            if (!kept) throw notFound(k);
            items = [];
            retained = [kept];
          }
        } else {
          items = (await c.list<VirtualCluster>(R.virtualclusters, { namespace: o.namespace })).items;
          if (table) {
            const live = new Set(items.map((v) => `${v.metadata!.namespace}/${v.metadata!.name}`));
            retained = (await listRetained(c, o.namespace)).filter((r) => !live.has(`${r.namespace}/${r.name}`));
          }
        }
        const data = formatObjects(items, {
          format: o.output,
          single: !!name,
          resource: R.virtualclusters.resource,
          group: R.virtualclusters.group,
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'VirtualCluster',
        });
        if (data !== undefined) return void process.stdout.write(data);
        const wide = o.output === 'wide';
        const placed = wide ? parseTenantPlacements(await readSchedulerState(c, STATE_CONFIGMAP.name)) : undefined;
        const rows = items.map((v) => [
          v.metadata!.namespace!,
          v.metadata!.name!,
          v.status?.phase ?? 'Pending',
          healthOf(v),
          v.spec?.provisioner?.type ?? '(default)',
          v.status?.clusterNamespace ?? '',
          age(v.metadata!.creationTimestamp),
          ...(wide
            ? [v.spec?.superCluster ?? '-', formatTenantPlacements(placed!.get(v.status?.clusterNamespace ?? ''))]
            : []),
        ]);
        for (const r of retained)
          rows.push([
            r.namespace,
            r.name,
            retainedStatus(r.record),
            '-',
            '-',
            '',
            age(r.record.deletedAt),
            ...(wide ? ['-', ''] : []),
          ]);
        const head = [
          ...['NAMESPACE', 'NAME', 'PHASE', 'HEALTH', 'PROVISIONER', 'ROOT NAMESPACE', 'AGE'],
          ...(wide ? ['PINNED', 'PLACEMENTS'] : []),
        ];
        process.stdout.write(formatTable(head, rows));
      },
    );

  addClusterOptions(program.command('delete <name>'))
    .description('delete a VirtualCluster and wait until its control plane and super namespaces are gone')
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('--wait <seconds>', 'how long to wait (0: do not wait)', '120')
    .action(async (name: string, o: { namespace: string; wait: string; kubeconfig?: string; context?: string }) => {
      const wait = waitSeconds(o.wait);
      const c = await meta(o);
      const k = splitName(name, o.namespace);
      if (!(await c.delete(R.virtualclusters, k.namespace, k.name))) throw notFound(k);
      const deadline = Date.now() + wait * 1000;
      while (wait > 0 && (await c.getOrNull(R.virtualclusters, k.namespace, k.name))) {
        if (Date.now() > deadline)
          throw new CliError(`VirtualCluster ${k.namespace}/${k.name} still deleting after ${o.wait} s`);
        await new Promise((r) => setTimeout(r, 250));
      }
      process.stderr.write(`virtualcluster ${k.namespace}/${k.name} deleted\n`);
    });

  addClusterOptions(program.command('kubeconfig <name>'))
    .description("print a VirtualCluster's admin kubeconfig")
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option('--server <url>', 'a front door the platform runs: the server to write instead (credentials unchanged)')
    .option('--certificate-authority <file>', 'with --server: the CA (PEM) of the front door, instead of the tenant CA')
    .option(...waitOpt)
    .action(
      async (
        name: string,
        o: {
          namespace: string;
          wait: string;
          kubeconfig?: string;
          context?: string;
          server?: string;
          certificateAuthority?: string;
        },
      ) => {
        if (o.certificateAuthority && !o.server) throw new CliError('--certificate-authority needs --server');
        let caPem: string | undefined;
        if (o.certificateAuthority) {
          try {
            caPem = readFileSync(o.certificateAuthority, 'utf8');
          } catch (e) {
            throw new CliError(`--certificate-authority ${o.certificateAuthority}: ${(e as Error).message}`);
          }
        }
        const wait = waitSeconds(o.wait);
        const c = await meta(o);
        const k = splitName(name, o.namespace);
        const text = await kubeconfigOf(c, await provisioned(c, k, wait));
        if (!o.server) return void process.stdout.write(text);
        try {
          process.stdout.write(
            withServer(text, o.server, caPem, `the kubeconfig of VirtualCluster ${k.namespace}/${k.name}`),
          );
        } catch (e) {
          throw new CliError((e as Error).message);
        }
      },
    );

  addClusterOptions(program.command('exec <name>'))
    .description("run a command with KUBECONFIG set to the tenant's kubeconfig: vc exec dev -- kubectl get ns")
    .option('-n, --namespace <ns>', 'namespace', 'default')
    .option(...waitOpt)
    .argument('[command...]')
    .action(
      async (
        name: string,
        command: string[],
        o: { namespace: string; wait: string; kubeconfig?: string; context?: string },
      ) => {
        if (!command.length) throw new CliError('nothing to run: vc exec NAME -- COMMAND [ARGS...]');
        const wait = waitSeconds(o.wait);
        const c = await meta(o);
        const k = splitName(name, o.namespace);
        const vc = await provisioned(c, k, wait);
        const text = await kubeconfigOf(c, vc);
        c.close();
        const { toolchainDir } = await import('../../toolchain/toolchain.ts');
        const { runWithKubeconfig } = await import('./exec.ts');
        const env = { ...process.env, PATH: `${process.env.PATH}:${toolchainDir()}` };
        const code = await runWithKubeconfig(text, command, env);
        process.exitCode = code;
      },
    );
}
