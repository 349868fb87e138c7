import { isIP } from 'node:net';
import type { KubeClient, KubeObject } from '../../kube/client.ts';
import type { InformerFactory, SharedInformer } from '../../kube/factory.ts';
import type { PluginHost } from '../../plugins/host.ts';
import type { TenantCacheStates } from '../../lifecycle/cachelimit.ts';
import { VirtualClusterController } from '../../lifecycle/controller.ts';
import { BackupController, snapshotBeforeDeletion, snapshotBeforeUpgrade } from '../../lifecycle/backups.ts';
import { storeFromConfig } from '../../backup/config.ts';
import { ImportProvisioner } from '../../provisioners/import/provisioner.ts';
import { NativeProvisioner } from '../../provisioners/native/provisioner.ts';
import type { VnAgentAddress } from '../../provisioners/native/egress.ts';
import { SuperPodAddresses } from '../../provisioners/podaddresses.ts';
import { followsPodAddresses, type Provisioner } from '../../provisioners/provisioner.ts';
import { R } from '../../kube/resources.ts';
import { LABEL, MANAGER } from '../../../plugins/sdk/src/names.ts';
import type { MutableTenantRegistry } from '../../tenancy/tenant.ts';
import { tenantSyncerLag } from '../../syncer/metrics.ts';
import { ConfigError, managerDefaults, type ManagerConfig } from './config.ts';
import { schedulerNamespace } from './shape.ts';
import { joinedNetworks } from '../../provisioners/dnsview.ts';

/** superPodsOf is the informer of the Pods the syncer made in a super cluster, shared with its syncer's. */
export const superPodsOf = (f: InformerFactory): SharedInformer<KubeObject> =>
  f.informer({ resource: R.pods, labelSelector: `${LABEL.managedBy}=${MANAGER}` });

/**
 * lifecycleControllers makes the provisioners a manager configuration turns on and a factory of VirtualCluster
 * controllers over them (one controller per leadership term; the provisioners, and the control planes they run,
 * last for the process). import and native are the manager's own; `offered` are the ones the program running it adds
 * (`vc up` adds the developer environment's local provisioner, core/dev/provisioner), which it stops with its own.
 */
export function lifecycleControllers(
  cfg: ManagerConfig,
  meta: KubeClient,
  informers: InformerFactory,
  tenants: MutableTenantRegistry,
  host: PluginHost,
  checkSuperCluster: (name: string) => true | string,
  cacheStates?: TenantCacheStates,
  offered: Readonly<Record<string, Provisioner>> = {},
  /** the informer factories of the configured super clusters (not a meta cluster apart), whose Pods are followed */
  superPods: readonly InformerFactory[] = [informers],
) {
  if (cfg.virtualClusters?.local && !offered.local)
    throw new ConfigError(
      '/virtualClusters/local is set, but this program offers no local provisioner: local control planes are the ' +
        'developer environment of the embedded default (vc up); a deployed manager provisions native or import',
    );
  // native runs tenant control planes as Pods in the super cluster (here the meta cluster: superClient is meta).
  const provisioners: Record<string, Provisioner> = {
    ...offered,
    import: new ImportProvisioner(meta),
    native: new NativeProvisioner(meta, {
      ...cfg.virtualClusters?.native,
      ...vnAgentsOf(cfg.virtualClusters?.defaultPluginConfig),
      ...(cfg.superClusters?.some((s) => s.network) && { joined: joinedNetworks(cfg.superClusters) }),
    }),
  };
  // A provisioner that confines its control planes to their own tenant's Pods learns their addresses from the Pods of
  // every configured super cluster (each the syncer's informer of them, shared: no second watch).
  const followers = Object.values(provisioners).filter(followsPodAddresses);
  const podAddresses = followers.length ? new SuperPodAddresses(superPods.map((f) => superPodsOf(f))) : undefined;
  if (podAddresses) {
    for (const p of followers) p.followPodAddresses(podAddresses);
    podAddresses.start();
  }
  const dns = cfg.virtualClusters?.tenantDNS;
  const backups = cfg.backups;
  const store = backups ? storeFromConfig(backups) : undefined;
  const backupOptions = {
    meta,
    informers,
    provisioners,
    ...(cfg.virtualClusters?.defaultProvisioner && { defaultProvisioner: cfg.virtualClusters.defaultProvisioner }),
    ...(store && { store }),
    ...(backups?.retention && { retention: backups.retention }),
    ...(backups?.retainedCheckSeconds && { sweepMs: backups.retainedCheckSeconds * 1000 }),
  };
  const newController = () =>
    new VirtualClusterController({
      meta,
      informers,
      superClient: meta,
      provisioners,
      tenants,
      workers: cfg.virtualClusters?.workers,
      defaultPluginConfig: cfg.virtualClusters?.defaultPluginConfig,
      tenantDefaults: managerDefaults(cfg),
      defaultProvisioner: cfg.virtualClusters?.defaultProvisioner,
      maxPerNamespace: cfg.virtualClusters?.maxPerNamespace,
      validatePluginConfig: (c) => host.validatePluginConfig(c),
      checkSuperCluster,
      // The syncers of this process report each tenant's lag; a syncer in another process leaves it out.
      health: { syncerLag: tenantSyncerLag },
      cacheStates,
      beforeRemove: (vc) => snapshotBeforeDeletion(backupOptions, vc),
      ...(cfg.scheduler?.enabled && { placementRecords: schedulerNamespace(cfg) }),
      beforeUpgrade: (vc, from) => snapshotBeforeUpgrade(backupOptions, vc, from),
      ...(dns?.enabled && { tenantDns: { ...(dns.image && { image: dns.image }) } }),
    });
  /** newBackups makes the controller that answers backup requests (one per leadership term, as newController) */
  const newBackups = () => new BackupController(backupOptions);
  return {
    newController,
    newBackups,
    /** the Pod addresses the confined control planes' fence follows (a super cluster registered later is added) */
    podAddresses,
    stopProvisioners: async () => {
      await Promise.all(Object.values(provisioners).map((p) => p.stop?.()));
      await podAddresses?.stop();
    },
  };
}

/**
 * vnAgentsOf are the vn-agents the platform's vNodes name (defaultPluginConfig.nodes.vnAgent, and that of each super
 * cluster, whose host and port override it as the nodes plugin reads them), for the native apiservers' egress: each
 * with its host when one is named, without when the vNodes name their super node's address (a vn-agent on every
 * node); none when the configuration names no vn-agent.
 */
export function vnAgentsOf(defaults: Record<string, unknown> | undefined): { vnAgents?: VnAgentAddress[] } {
  type Agent = { host?: unknown; port?: unknown };
  const agent = (defaults?.nodes as { vnAgent?: Agent & { superClusters?: Record<string, Agent> } } | undefined)
    ?.vnAgent;
  if (!agent) return {};
  const port = (p: unknown): number | undefined =>
    typeof p === 'number' && Number.isInteger(p) && p > 0 && p < 65536 ? p : undefined;
  const host = (h: unknown): string | undefined => (typeof h === 'string' && isIP(h) ? h : undefined);
  const top = { host: host(agent.host), port: port(agent.port) };
  const all = [
    top,
    ...Object.values(agent.superClusters ?? {}).map((a) => ({
      host: host(a?.host) ?? top.host,
      port: port(a?.port) ?? top.port,
    })),
  ];
  const seen = new Set<string>();
  const out: VnAgentAddress[] = [];
  for (const a of all) {
    if (a.port === undefined) continue;
    const key = `${a.host ?? ''} ${a.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ ...(a.host && { host: a.host }), port: a.port });
  }
  return out.length ? { vnAgents: out } : {};
}
