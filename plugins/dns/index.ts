import {
  clone,
  type KubeObject,
  type MutatorPlugin,
  PLUGIN_API_VERSION,
  type PluginContext,
  PREFIX,
  R,
} from '@virtualcluster-ts/plugin-sdk';
import type { Pod, PodDNSConfig } from '@virtualcluster-ts/plugin-sdk/pods';

/** DISABLE_DNS_MUTATION is the tenant Pod annotation that, set to "true", keeps the Pod's own DNS settings. */
export const DISABLE_DNS_MUTATION = `${PREFIX}/disable.dnsPolicyMutation`;
/** WAITING_FOR_DNS is the skip reason while the super copy of the tenant's kube-dns Service has no cluster IP. */
export const WAITING_FOR_DNS = 'WaitingForDNS';
/** DNS_RETRY_MS is how soon a Pod waiting for the tenant DNS cluster IP is tried again. */
export const DNS_RETRY_MS = 1000;

const MAX_NAMESERVERS = 3;

interface Service extends KubeObject {
  spec?: { clusterIP?: string };
}

const usesClusterDNS = (spec: NonNullable<Pod['spec']>): boolean => {
  const policy = spec.dnsPolicy ?? 'ClusterFirst';
  return spec.hostNetwork ? policy === 'ClusterFirstWithHostNet' : policy === 'ClusterFirst';
};

/** tenantDnsConfig builds the dnsConfig that points a Pod of tenant namespace `ns` at the tenant's own DNS. */
export function tenantDnsConfig(
  nameserver: string,
  ns: string,
  clusterDomain: string,
  own: PodDNSConfig = {},
): PodDNSConfig {
  const nameservers = [...new Set([nameserver, ...(own.nameservers ?? [])])].slice(0, MAX_NAMESERVERS);
  const searches = [
    ...new Set([`${ns}.svc.${clusterDomain}`, `svc.${clusterDomain}`, clusterDomain, ...(own.searches ?? [])]),
  ];
  const options: NonNullable<PodDNSConfig['options']> = [{ name: 'ndots', value: '5' }];
  for (const o of own.options ?? []) {
    const i = options.findIndex((x) => x.name === o.name);
    if (i >= 0) options[i] = { ...o };
    else options.push({ ...o });
  }
  return { nameservers, searches, options };
}

/**
 * waitingMessage says why a Pod waits for its tenant's DNS. On a named super cluster the tenant's kube-system follows
 * the tenant there (core/syncer/placement.ts dnsFollows), so the wait lasts until its copy of kube-dns is synced.
 */
export function waitingMessage(superCluster: string | undefined): string {
  const base = "the super copy of the tenant's kube-system/kube-dns Service has no cluster IP yet";
  if (!superCluster) return base;
  return (
    `${base} on super cluster ${superCluster}; the tenant's DNS is being copied there (set dnsPolicy: Default, or ` +
    `the annotation ${DISABLE_DNS_MUTATION}: "true" with your own dnsConfig, to run without it)`
  );
}

function superDnsIP(ctx: PluginContext): string | undefined {
  const svc = ctx.superCache.get<Service>(R.services, ctx.names.superNamespace('kube-system'), 'kube-dns');
  const ip = svc?.spec?.clusterIP;
  return ip && ip !== 'None' ? ip : undefined;
}

/**
 * dnsPlugin points new super Pods that use cluster DNS at the tenant's own kube-dns Service (its super cluster IP)
 * with the tenant's search path, instead of the super cluster's DNS. Only new Pods are changed: the spec of an
 * existing Pod is immutable. The tenant's own dnsConfig searches, options and nameservers are merged after ours,
 * as the kubelet would for ClusterFirst.
 */
export const dnsPlugin: MutatorPlugin<Pod> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'dns',
    version: '0.1.0',
    description: "Points new super Pods using cluster DNS at the tenant's kube-dns Service",
    direction: 'mutator',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
    mutates: 'pods',
  },

  reads: [
    { resource: R.services, side: 'tenant' },
    { resource: R.services, side: 'super' },
  ],

  mutate(desired, tenantObj, ctx) {
    const spec = desired?.spec;
    if (!spec || desired.metadata?.uid || !usesClusterDNS(spec)) return { object: desired };
    if (tenantObj.metadata?.annotations?.[DISABLE_DNS_MUTATION] === 'true') return { object: desired };
    if (!ctx.tenantCache.get(R.services, 'kube-system', 'kube-dns')) return { object: desired };
    const ip = superDnsIP(ctx);
    if (!ip) {
      const message = waitingMessage(ctx.superCluster);
      const m = tenantObj.metadata;
      return {
        object: desired,
        skip: { reason: WAITING_FOR_DNS, message },
        // the tenant hears why its Pod stays Pending (the core records one Event per Pod, reason and message)
        effects: m?.name
          ? [
              {
                type: 'event',
                side: 'tenant',
                regarding: { apiVersion: 'v1', kind: 'Pod', namespace: m.namespace, name: m.name, uid: m.uid },
                eventType: 'Warning',
                reason: WAITING_FOR_DNS,
                message,
              },
            ]
          : [],
        requeueAfterMs: DNS_RETRY_MS,
      };
    }
    const out = clone(desired);
    const ns = tenantObj.metadata?.namespace ?? '';
    out.spec!.dnsPolicy = 'None';
    out.spec!.dnsConfig = tenantDnsConfig(ip, ns, ctx.tenant.clusterDomain, spec.dnsConfig);
    return { object: out };
  },
};

export default dnsPlugin;
