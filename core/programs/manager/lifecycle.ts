import type { KubeClient } from '../../kube/client.ts';
import type { InformerFactory } from '../../kube/factory.ts';
import type { PluginHost } from '../../plugins/host.ts';
import type { TenantCacheStates } from '../../lifecycle/cachelimit.ts';
import { VirtualClusterController } from '../../lifecycle/controller.ts';
import { ImportProvisioner } from '../../provisioners/import/provisioner.ts';
import { LocalProvisioner } from '../../provisioners/local/provisioner.ts';
import { NativeProvisioner } from '../../provisioners/native/provisioner.ts';
import type { Provisioner } from '../../provisioners/provisioner.ts';
import type { MutableTenantRegistry } from '../../tenancy/tenant.ts';
import { tenantSyncerLag } from '../../syncer/metrics.ts';
import { managerDefaults, type ManagerConfig } from './config.ts';

/**
 * lifecycleControllers makes the provisioners a manager configuration turns on and a factory of VirtualCluster
 * controllers over them (one controller per leadership term; the provisioners, and the control planes they run,
 * last for the process).
 */
export function lifecycleControllers(
  cfg: ManagerConfig,
  meta: KubeClient,
  informers: InformerFactory,
  tenants: MutableTenantRegistry,
  host: PluginHost,
  checkSuperCluster: (name: string) => true | string,
  cacheStates?: TenantCacheStates,
) {
  // native runs tenant control planes as Pods in the super cluster (here the meta cluster: superClient is meta).
  const provisioners: Record<string, Provisioner> = {
    import: new ImportProvisioner(meta),
    native: new NativeProvisioner(meta, cfg.virtualClusters?.native),
  };
  const local = cfg.virtualClusters?.local;
  if (local)
    provisioners.local = new LocalProvisioner(
      local.stateDir,
      { endpoint: local.etcdEndpoint },
      {
        ...(local.podAddress && { podAddress: local.podAddress }),
        ...(local.kubeletCAFile && { kubeletCAFile: local.kubeletCAFile }),
      },
    );
  const dns = cfg.virtualClusters?.tenantDNS;
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
      ...(dns?.enabled && { tenantDns: { ...(dns.image && { image: dns.image }) } }),
    });
  return {
    newController,
    stopProvisioners: async () => {
      await Promise.all(Object.values(provisioners).map((p) => p.stop?.()));
    },
  };
}
