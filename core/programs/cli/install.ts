import type { Command } from 'commander';
import { KubeClient } from '../../kube/client.ts';

/**
 * clusterClient connects to the cluster of `--kubeconfig` (default KUBECONFIG, then ~/.kube/config) in `--context`
 * (default its current context), as kubectl does.
 */
export async function clusterClient(o: { kubeconfig?: string; context?: string }): Promise<KubeClient> {
  // client-node's loader for its default chain (KUBECONFIG, ~/.kube/config, in-cluster), imported only here: it
  // loads the package's whole generated API (kubeconfigfile.ts).
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
  else kc.loadFromDefault();
  if (o.context) {
    if (!kc.getContextObject(o.context))
      throw new Error(
        `--context ${o.context}: no such context in ${o.kubeconfig ?? 'the default kubeconfig'} ` +
          `(have: ${
            kc
              .getContexts()
              .map((x) => x.name)
              .join(', ') || 'none'
          })`,
      );
    kc.setCurrentContext(o.context);
  }
  if (!kc.getCurrentCluster()) throw new Error('no cluster: pass --kubeconfig (and --context) or set KUBECONFIG');
  return KubeClient.fromKubeConfig(kc);
}

const seconds = (flag: string, v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag}: ${v} is not a number of seconds > 0`);
  return n * 1000;
};

/** registerInstallCommands adds `vc install` and `vc uninstall` to the CLI. */
export function registerInstallCommands(program: Command): void {
  program
    .command('install')
    .description(
      'install the manager (and the vn-agent, the scheduler) on a cluster from deploy/: preflight, server-side apply, ' +
        'prune of what a newer version no longer has, rollouts; re-run to upgrade in place',
    )
    .option('--kubeconfig <file>', 'kubeconfig of the cluster (default KUBECONFIG, then ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context (default the current one)')
    .option('--image <ref>', 'image of the manager and vn-agent, e.g. registry.example.com/vc:0.1.0 or …@sha256:…')
    .option('--components <list>', 'what to install: manager (always), vn-agent, scheduler', 'manager')
    .option(
      '--kubelet-ca <file>',
      "CA of the kubelets' serving certificates, for the vn-agent (default: the cluster CA)",
    )
    .option(
      '--pull-credentials',
      "the --image registry's credentials from the docker config file (as vc image push reads them) become the pull " +
        'Secret vc-image-pull in each installed namespace, named by the manager and vn-agent Pods',
    )
    .option(
      '--pull-secret <name>',
      'name this kubernetes.io/dockerconfigjson Secret in the manager and vn-agent Pods; you create it in each ' +
        'installed namespace (vc-system, vc-vn-agent): for --export without credentials in the YAML',
    )
    .option(
      '--export-credentials',
      'with --export --pull-credentials: print the registry credentials into the YAML (refused without this flag)',
    )
    .option(
      '--manager-config <file>',
      "the manager's configuration file, instead of deploy/manager's (validated first)",
    )
    .option(
      '--kubelet-pki-dir <dir>',
      "the nodes' directory with the kubelet's kubelet-client-current.pem, for the vn-agent",
      '/var/lib/kubelet/pki',
    )
    .option('--export', 'print the rendered YAML (labelled as installed) instead of applying it; no cluster is read')
    .option('--no-wait', 'do not wait for the Deployments and DaemonSets to roll out')
    .option('--timeout <seconds>', 'how long to wait for rollouts', '300')
    .action(
      async (o: {
        kubeconfig?: string;
        context?: string;
        image?: string;
        components: string;
        kubeletCa?: string;
        pullCredentials?: boolean;
        pullSecret?: string;
        exportCredentials?: boolean;
        managerConfig?: string;
        kubeletPkiDir: string;
        export?: boolean;
        wait: boolean;
        timeout: string;
      }) => {
        const { InstallError, parseComponents, packageVersion, renderInstall } = await import('../install/render.ts');
        const settings = {
          components: parseComponents(o.components),
          ...(o.image && { image: o.image }),
          version: packageVersion(),
        };
        const { exportCredentialsProblem, pullCredentials } = await import('../install/pullsecret.ts');
        const problem = exportCredentialsProblem(o);
        if (problem) throw new InstallError(problem);
        const { readManagerConfig } = await import('../install/overrides.ts');
        const { customize, install } = await import('../install/install.ts');
        const custom = {
          ...(o.pullCredentials && { pullConfig: pullCredentials(o.image).config }),
          ...(o.pullSecret !== undefined && { pullSecretRef: o.pullSecret }),
          ...(o.managerConfig && { managerConfig: readManagerConfig(o.managerConfig) }),
          ...(o.kubeletPkiDir !== '/var/lib/kubelet/pki' && { kubeletPkiDir: o.kubeletPkiDir }),
        };
        if (o.export) {
          const { stringify } = await import('yaml');
          const r = await renderInstall(settings);
          const changed = Object.keys(custom).length > 0;
          process.stdout.write(
            changed
              ? customize(r.objects, custom)
                  .map((x) => stringify(x))
                  .join('---\n')
              : r.yaml,
          );
          return;
        }
        const c = await clusterClient(o);
        await install(c, {
          settings,
          ...(o.kubeletCa && { kubeletCAFile: o.kubeletCa }),
          ...custom,
          wait: o.wait,
          timeoutMs: seconds('--timeout', o.timeout),
          out: (l) => process.stdout.write(`${l}\n`),
        });
      },
    );

  program
    .command('uninstall')
    .description(
      'remove what `vc install` applied (objects with its label) and nothing else; refuses while VirtualClusters exist',
    )
    .option('--kubeconfig <file>', 'kubeconfig of the cluster (default KUBECONFIG, then ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context (default the current one)')
    .option('--crds', 'also delete the CustomResourceDefinitions, and with them every object of theirs')
    .option('--delete-tenants', 'delete every VirtualCluster first (the manager removes their control planes) and wait')
    .option('--timeout <seconds>', 'how long to wait for deletions', '300')
    .action(
      async (o: {
        kubeconfig?: string;
        context?: string;
        crds?: boolean;
        deleteTenants?: boolean;
        timeout: string;
      }) => {
        const { uninstall } = await import('../install/install.ts');
        const c = await clusterClient(o);
        await uninstall(c, {
          crds: !!o.crds,
          deleteTenants: !!o.deleteTenants,
          timeoutMs: seconds('--timeout', o.timeout),
          out: (l) => process.stdout.write(`${l}\n`),
        });
      },
    );
}
