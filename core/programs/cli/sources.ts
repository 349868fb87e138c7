/**
 * `vc get gitsources`, `vc reconcile gitsource`, `vc suspend gitsource` and `vc resume gitsource`: the GitSource
 * verbs a Flux user expects (`flux get sources git`, `flux reconcile source git`, `flux suspend|resume`).
 */
import type { Command } from 'commander';
import { isNotFound, type KubeClient } from '../../kube/client.ts';
import { GITSOURCES, RECONCILE_ANNOTATION, type GitSource } from '../../../gitops/applier/gitsource.ts';
import { addClusterOptions, clusterClient } from './kubeconfig.ts';
import { age, formatObjects, formatTable } from './output.ts';
import { CliError } from './errors.ts';

/** GITSOURCE_WORDS are the names `vc get` and the GitSource verbs accept for the kind, as kubectl accepts its own. */
export const GITSOURCE_WORDS = ['gitsources', 'gitsource', 'gs'];

type Flags = { namespace?: string; kubeconfig?: string; context?: string };

function key(name: string, namespace?: string): { namespace: string; name: string } {
  const [ns, n] = name.includes('/') ? name.split('/') : [namespace ?? 'default', name];
  return { namespace: ns!, name: n! };
}

async function getSource(c: KubeClient, k: { namespace: string; name: string }): Promise<GitSource> {
  try {
    return await c.get<GitSource>(GITSOURCES, k.namespace, k.name);
  } catch (e) {
    if (isNotFound(e))
      throw new CliError(
        `GitSource ${k.namespace}/${k.name} not found: list them with \`vc get gitsources\`, or pass -n NAMESPACE`,
      );
    throw e;
  }
}

const condition = (gs: GitSource, type: string) => gs.status?.conditions?.find((c) => c.type === type);

/** listGitSources prints GitSources as `vc get gitsources [NAME]` does. */
export async function listGitSources(
  name: string | undefined,
  o: Flags & { allNamespaces?: boolean; output: string },
): Promise<void> {
  const c = await clusterClient(o);
  const items = name
    ? [await getSource(c, key(name, o.namespace))]
    : (await c.list<GitSource>(GITSOURCES, { namespace: o.namespace })).items;
  const data = formatObjects(items, {
    format: o.output,
    single: !!name,
    resource: GITSOURCES.resource,
    group: GITSOURCES.group,
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'GitSource',
  });
  if (data !== undefined) return void process.stdout.write(data);
  const wide = o.output === 'wide';
  const rows = items.map((gs) => {
    const ready = condition(gs, 'Ready');
    const inv = gs.status?.inventory ?? [];
    const healthy = inv.filter((e) => e.health === 'Healthy').length;
    return [
      gs.metadata.namespace,
      gs.metadata.name,
      (gs.status?.lastAppliedRevision ?? '').slice(0, 12),
      gs.spec.suspend ? 'True' : 'False',
      ready?.status ?? 'Unknown',
      ready?.reason ?? '',
      `${healthy}/${inv.length}`,
      age(gs.metadata.creationTimestamp),
      ...(wide ? [gs.spec.url, (ready?.message ?? '').split('\n')[0]!] : []),
    ];
  });
  const head = [
    ...['NAMESPACE', 'NAME', 'REVISION', 'SUSPENDED', 'READY', 'REASON', 'HEALTHY', 'AGE'],
    ...(wide ? ['URL', 'MESSAGE'] : []),
  ];
  process.stdout.write(formatTable(head, rows));
}

/** parseTimeout reads --timeout: seconds, or a number with s or m. */
function parseTimeout(v: string): number {
  const m = /^(\d+)(s|m)?$/.exec(v);
  if (!m) throw new CliError(`--timeout ${v}: expected seconds, e.g. 90, 90s or 2m`);
  return Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
}

/**
 * requestAndWait asks the manager for a reconcile now (the annotation, with a fresh timestamp) and waits until status
 * says it handled that request; it prints the outcome and fails when the source is not Ready.
 */
async function requestAndWait(c: KubeClient, k: { namespace: string; name: string }, timeoutMs: number) {
  const at = new Date().toISOString();
  await c.patch(
    GITSOURCES,
    k.namespace,
    k.name,
    { metadata: { annotations: { [RECONCILE_ANNOTATION]: at } } },
    'merge',
  );
  process.stderr.write(`► reconcile of GitSource ${k.namespace}/${k.name} requested\n`);
  const deadline = Date.now() + timeoutMs;
  let gs = await getSource(c, k);
  while (gs.status?.lastHandledReconcileAt !== at) {
    if (Date.now() > deadline)
      throw new CliError(
        `GitSource ${k.namespace}/${k.name}: the manager did not handle the reconcile request within ` +
          `${timeoutMs / 1000}s; is it running? (\`vc status\`, or the manager's logs)`,
      );
    await new Promise((r) => setTimeout(r, 500));
    gs = await getSource(c, k);
  }
  const ready = condition(gs, 'Ready');
  const revision = (gs.status?.lastAppliedRevision ?? 'none').slice(0, 12);
  const why = ready?.message ? `: ${ready.message.split('\n')[0]}` : '';
  const line = `GitSource ${k.namespace}/${k.name}: revision ${revision}; Ready ${ready?.status ?? 'Unknown'} (${ready?.reason ?? 'no condition'})${why}`;
  if (ready?.status === 'False') throw new CliError(line);
  process.stdout.write(`${line}\n`);
}

/** source checks that the verb names GitSources and reads the one named: the client, its key and the object. */
async function source(kind: string, name: string, o: Flags) {
  if (!GITSOURCE_WORDS.includes(kind))
    throw new CliError(`${kind}: only GitSources can be reconciled, suspended or resumed (vc … gitsource NAME)`);
  const c = await clusterClient(o);
  const k = key(name, o.namespace);
  return { c, k, gs: await getSource(c, k) };
}

/** registerGitSourceCommands adds `vc reconcile`, `vc suspend` and `vc resume` for GitSources. */
export function registerGitSourceCommands(program: Command): void {
  const common = (cmd: Command) =>
    addClusterOptions(cmd).option('-n, --namespace <ns>', 'namespace of the GitSource', 'default');
  const waiting = (cmd: Command) =>
    cmd.option('--timeout <duration>', 'how long to wait for the manager (seconds, or with s or m)', '2m');

  waiting(common(program.command('reconcile <kind> <name>')))
    .description('fetch and apply a GitSource now, and wait for the result: vc reconcile gitsource tenants')
    .action(async (kind: string, name: string, o: Flags & { timeout: string }) => {
      const timeout = parseTimeout(o.timeout);
      const { c, k, gs } = await source(kind, name, o);
      if (gs.spec.suspend)
        throw new CliError(`GitSource ${k.namespace}/${k.name} is suspended: \`vc resume gitsource ${k.name}\` first`);
      await requestAndWait(c, k, timeout);
    });

  common(program.command('suspend <kind> <name>'))
    .description('stop fetching and applying a GitSource (what it applied stays as it is)')
    .action(async (kind: string, name: string, o: Flags) => {
      const { c, k } = await source(kind, name, o);
      await c.patch(GITSOURCES, k.namespace, k.name, { spec: { suspend: true } }, 'merge');
      process.stdout.write(`GitSource ${k.namespace}/${k.name} suspended\n`);
    });

  waiting(common(program.command('resume <kind> <name>')))
    .description('fetch and apply a suspended GitSource again, and wait for the result')
    .action(async (kind: string, name: string, o: Flags & { timeout: string }) => {
      const timeout = parseTimeout(o.timeout);
      const { c, k } = await source(kind, name, o);
      await c.patch(GITSOURCES, k.namespace, k.name, { spec: { suspend: false } }, 'merge');
      await requestAndWait(c, k, timeout);
    });
}
