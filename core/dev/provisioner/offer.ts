import type { ManagerConfig } from '../../programs/manager/config.ts';
import { joinedNetworks } from '../../provisioners/dnsview.ts';
import { LocalProvisioner } from './provisioner.ts';

/**
 * localProvisioners is what a program of the developer environment offers a manager (ManagerOptions.provisioners):
 * the local provisioner that the configuration's /virtualClusters/local describes, or nothing when it sets none. The
 * manager stops it when it stops.
 */
export function localProvisioners(cfg: ManagerConfig): { local?: LocalProvisioner } {
  const local = cfg.virtualClusters?.local;
  if (!local) return {};
  const supers = cfg.superClusters ?? [];
  return {
    local: new LocalProvisioner(
      local.stateDir,
      { endpoint: local.etcdEndpoint },
      {
        ...(local.podAddress && { podAddress: local.podAddress }),
        ...(local.kubeletCAFile && { kubeletCAFile: local.kubeletCAFile }),
        ...(local.confine && { confine: local.confine }),
        ...(local.certificates && { certificates: local.certificates }),
        ...(local.metricsServer && { metricsServer: true }),
        ...(supers.some((s) => s.network) && { joined: joinedNetworks(supers) }),
      },
    ),
  };
}
