import type { Command } from 'commander';
import { type KubeClient, type KubeObject, type Resource } from '../../kube/client.ts';
import { DRAINING } from '../../superclusters/registration.ts';
import { CliError } from './vcs.ts';
import { clusterClient, type ClusterFlags } from './kubeconfig.ts';

/** CLUSTERS_RESOURCE is the Cluster API Cluster a super cluster is registered with. */
export const CLUSTERS_RESOURCE: Resource = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta1',
  resource: 'clusters',
  kind: 'Cluster',
  namespaced: true,
};

/**
 * setDraining sets (on) or removes (off) the DRAINING annotation on the registered Cluster named `name`, searched in
 * `namespace` or, without it, in every namespace; it returns the Cluster's `namespace/name`. No Cluster, or several
 * in different namespaces without `namespace`, is a CliError.
 */
export async function setDraining(meta: KubeClient, name: string, namespace: string | undefined, on: boolean) {
  const found = (await meta.listAll(CLUSTERS_RESOURCE, { namespace })).items.filter((c) => c.metadata?.name === name);
  if (found.length === 0)
    throw new CliError(`no Cluster (cluster.x-k8s.io) named ${name}${namespace ? ` in namespace ${namespace}` : ''}`);
  if (found.length > 1)
    throw new CliError(
      `Clusters named ${name} in several namespaces (${found.map((c) => c.metadata?.namespace).join(', ')}): pass --namespace`,
    );
  const c: KubeObject = found[0]!;
  const ns = c.metadata!.namespace!;
  await meta.patch(
    CLUSTERS_RESOURCE,
    ns,
    name,
    { metadata: { uid: c.metadata!.uid, annotations: { [DRAINING]: on ? 'true' : null } } },
    'merge',
    { fieldManager: 'vc-cli' },
  );
  return `${ns}/${name}`;
}

/**
 * registerDrainCommands adds `drain` and `undrain` under `vc superclusters`, creating that command when the listing
 * (s1's) has not registered it.
 */
export function registerDrainCommands(program: Command): void {
  const parent =
    program.commands.find((c) => c.name() === 'superclusters') ??
    program.command('superclusters').description('registered super clusters');
  parent
    .command('drain <name>')
    .description(
      'stop new placements on a super cluster, move its namespace slices to others where room allows, and evict the ' +
        'tenant Pods left on it so their controllers recreate them elsewhere (like kubectl drain)',
    )
    .option('-n, --namespace <ns>', 'namespace of the Cluster in the meta cluster (default: search all)')
    .option('--kubeconfig <file>', 'meta cluster kubeconfig (see `vc --help` for the default)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
    .action(async (name: string, o: { namespace?: string; kubeconfig?: string; context?: string }, cmd: Command) => {
      // `vc superclusters drain r2 --kubeconfig f`: the listing's own --kubeconfig takes the flag, so read both.
      const meta = await clusterClient(clusterFlags(o, cmd));
      try {
        const ref = await setDraining(meta, name, o.namespace, true);
        process.stdout.write(
          `Cluster ${ref} draining: no new placements; slices move where room allows, then its tenant Pods are evicted\n`,
        );
      } finally {
        meta.close();
      }
    });
  parent
    .command('undrain <name>')
    .description('let a drained super cluster take new placements again (what moved off it stays where it went)')
    .option('-n, --namespace <ns>', 'namespace of the Cluster in the meta cluster (default: search all)')
    .option('--kubeconfig <file>', 'meta cluster kubeconfig (see `vc --help` for the default)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
    .action(async (name: string, o: { namespace?: string; kubeconfig?: string; context?: string }, cmd: Command) => {
      // `vc superclusters drain r2 --kubeconfig f`: the listing's own --kubeconfig takes the flag, so read both.
      const meta = await clusterClient(clusterFlags(o, cmd));
      try {
        const ref = await setDraining(meta, name, o.namespace, false);
        process.stdout.write(`Cluster ${ref} takes new placements again\n`);
      } finally {
        meta.close();
      }
    });
}

function clusterFlags(o: ClusterFlags, cmd: Command): ClusterFlags {
  const g = cmd.optsWithGlobals() as ClusterFlags;
  return { kubeconfig: o.kubeconfig ?? g.kubeconfig, context: o.context ?? g.context };
}
