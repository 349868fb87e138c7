import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { KubeObject, Resource } from '../../kube/client.ts';
import { addClusterOptions, clusterClient, type ClusterFlags } from './kubeconfig.ts';
import { formatData, outputOption } from './output.ts';

const DEPLOYMENTS: Resource = {
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};

/** clientVersion is this package's version (package.json), which `vc version` prints as the client's. */
export function clientVersion(): string {
  // From the sources (core/programs/cli) and from dist/core/programs/cli alike, package.json is found above.
  for (const up of ['../../../package.json', '../../../../package.json']) {
    try {
      const p = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (p.name === 'virtualcluster-ts' && p.version) return p.version;
    } catch {
      // not this one
    }
  }
  return 'unknown';
}

interface Deployment extends KubeObject {
  metadata?: { labels?: Record<string, string> };
  spec?: { template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } } };
}

/**
 * managerVersion reads the version of the manager `vc install` runs: the `app.kubernetes.io/version` label of the
 * vc-manager Deployment when it has one, else the tag of its manager container's image. The manager serves no
 * version endpoint of its own; its Deployment is what an installation is.
 */
export function managerVersion(d: Deployment): { version: string; image?: string } {
  const image =
    d.spec?.template?.spec?.containers?.find((c) => c.name === 'manager')?.image ??
    d.spec?.template?.spec?.containers?.[0]?.image;
  const label = d.metadata?.labels?.['app.kubernetes.io/version'];
  // the tag is in the image's last path segment, before any @digest (a registry's :port sits before a slash)
  const tag = image && /:([^:/]+)$/.exec(image.split('@')[0]!.split('/').pop()!)?.[1];
  return { version: label ?? tag ?? 'unknown', ...(image ? { image } : {}) };
}

/** registerVersionCommand adds `vc version`: the client's version and, where reachable, the installed manager's. */
export function registerVersionCommand(program: Command): void {
  addClusterOptions(program.command('version'))
    .description("print vc's version and, when a cluster is reachable, the version of the manager installed on it")
    .option('--client', "only the client's version; talk to no cluster")
    .option('-n, --namespace <ns>', 'namespace of the vc-manager Deployment', 'vc-system')
    .addOption(outputOption(['text', 'json', 'yaml', 'jsonpath']))
    .action(async (o: ClusterFlags & { client?: boolean; namespace: string; output: string }) => {
      const out: {
        clientVersion: string;
        manager?: { version: string; image?: string; namespace: string };
        managerError?: string;
      } = {
        clientVersion: clientVersion(),
      };
      if (!o.client) {
        try {
          const c = await clusterClient(o);
          try {
            const d = await c.getOrNull<Deployment>(DEPLOYMENTS, o.namespace, 'vc-manager');
            if (d) out.manager = { ...managerVersion(d), namespace: o.namespace };
            else out.managerError = `no Deployment ${o.namespace}/vc-manager (install one with vc install)`;
          } finally {
            c.close();
          }
        } catch (e) {
          out.managerError = (e as Error).message.split('\n')[0];
        }
      }
      const data = formatData(out, o.output);
      if (data !== undefined) return void process.stdout.write(data);
      process.stdout.write(`Client Version: ${out.clientVersion}\n`);
      if (out.manager)
        process.stdout.write(
          `Manager Version: ${out.manager.version}${out.manager.image ? ` (${out.manager.image})` : ''}\n`,
        );
      else if (out.managerError) process.stdout.write(`Manager Version: unknown (${out.managerError})\n`);
    });
}
