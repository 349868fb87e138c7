import {
  clone,
  type KubeObject,
  type MutatorPlugin,
  PLUGIN_API_VERSION,
  superViewServer,
} from '@virtualcluster-ts/plugin-sdk';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

interface Kubeconfig {
  clusters?: Array<{ cluster?: { server?: string } }>;
}

/**
 * perSuperKubeconfig is CoreDNS' kubeconfig (JSON, as core/lifecycle/tenantdns.ts writes it) pointed at the DNS view of
 * one super cluster: each server URL without a path gets the view's prefix for `superCluster`. Anything else (a
 * server with a path already, a kubeconfig the tenant rewrote in YAML) is left as it is: undefined.
 */
export function perSuperKubeconfig(text: string, superCluster: string): string | undefined {
  let k: Kubeconfig;
  try {
    k = JSON.parse(text) as Kubeconfig;
  } catch {
    return undefined;
  }
  let changed = false;
  for (const c of k.clusters ?? []) {
    const server = c.cluster?.server;
    if (!server) continue;
    let u: URL;
    try {
      u = new URL(server);
    } catch {
      continue;
    }
    if (u.pathname !== '/' && u.pathname !== '') continue;
    c.cluster!.server = superViewServer(server, superCluster);
    changed = true;
  }
  return changed ? JSON.stringify(k) : undefined;
}

/**
 * dnsViewPlugin points the super copy of the tenant's CoreDNS configuration (kube-system/coredns) at the DNS view of
 * the super cluster it is copied to, when several super clusters serve the tenant: the tenant's DNS server on each
 * then answers with that super cluster's own Service IPs, a Service with no copy there with its Pod IPs where the
 * platform's network joins the super clusters holding it (superClusters[].network), else as a name that says so.
 * With one super cluster nothing changes.
 */
export const dnsViewPlugin: MutatorPlugin<ConfigMap> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'dnsview',
    version: '0.1.0',
    description: "Points each super cluster's copy of the tenant CoreDNS kubeconfig at that super cluster's DNS view",
    direction: 'mutator',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
    mutates: 'configmaps',
  },

  mutate(desired, tenantObj, ctx) {
    const m = tenantObj.metadata;
    if (!ctx.sharedTenants || !ctx.superCluster || m?.namespace !== 'kube-system' || m.name !== 'coredns')
      return { object: desired };
    const kubeconfig = desired?.data?.kubeconfig;
    const next = kubeconfig && perSuperKubeconfig(kubeconfig, ctx.superCluster);
    if (!next) return { object: desired };
    const out = clone(desired);
    out.data = { ...out.data, kubeconfig: next };
    return { object: out };
  },
};

export default dnsViewPlugin;
