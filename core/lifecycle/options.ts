import type { KubeClient } from '../kube/client.ts';
import type { InformerFactory } from '../kube/factory.ts';
import type { Provisioner } from '../provisioners/provisioner.ts';
import type { ManagerDefaults } from '../tenancy/policy.ts';
import type { MutableTenantRegistry } from '../tenancy/tenant.ts';
import type { ProvisionerType, VirtualCluster } from '../api/virtualcluster.ts';
import type { TenantCacheStates } from './cachelimit.ts';
import type { HealthMonitorOptions } from './healthmonitor.ts';

/** LifecycleOptions configure the VirtualCluster controller. */
export interface LifecycleOptions {
  /** the meta cluster, where VirtualCluster objects and kubeconfig Secrets live */
  meta: KubeClient;
  /** the meta cluster's shared informers (one watch per resource for every controller of the process); default: own */
  informers?: InformerFactory;
  /** the super cluster, where root and prefixed namespaces live (often the meta cluster itself) */
  superClient: KubeClient;
  provisioners: Partial<Record<string, Provisioner>>;
  /** where Running tenants are handed to the syncer */
  tenants: MutableTenantRegistry;
  workers?: number;
  /** plugin settings every tenant gets; a TenantPolicy's settings go over them and a VirtualCluster may only add keys */
  defaultPluginConfig?: Record<string, unknown>;
  /** platform-wide forced Pod placement and label allow-lists (the manager's tenantDefaults), under each policy */
  tenantDefaults?: Omit<ManagerDefaults, 'pluginConfig'>;
  /** serve only VirtualClusters whose spec.superCluster is this name (or unset) */
  superCluster?: string;
  /**
   * checkSuperCluster tells whether spec.superCluster names a super cluster this manager serves: true, or why not.
   * Absent, any name is accepted.
   */
  checkSuperCluster?: (name: string) => true | string;
  /** checks spec.pluginConfig against the loaded plugins' config schemas (PluginHost.validatePluginConfig) */
  validatePluginConfig?: (pluginConfig: Record<string, unknown> | undefined) => string[];
  /**
   * tenantDns gives every Running tenant a DNS server of its own (core/lifecycle/tenantdns.ts: CoreDNS and the
   * kube-dns Service in its kube-system, created when missing); the image defaults to the node toolchain's
   */
  tenantDns?: { image?: string };
  /**
   * the provisioner of a VirtualCluster that names none (the manager's virtualClusters.defaultProvisioner); absent,
   * the one defaultProvisioner (core/tenancy/defaults.ts) picks among `provisioners`
   */
  defaultProvisioner?: ProvisionerType;
  /** how many VirtualClusters of one namespace are provisioned, oldest first; default DEFAULT_MAX_PER_NAMESPACE */
  maxPerNamespace?: number;
  /** how served tenants are probed (core/lifecycle/healthmonitor.ts); false: not at all */
  health?: Omit<HealthMonitorOptions, 'onChange'> | false;
  /** what this manager's syncers say of each tenant's caches: the CacheWithinLimit condition; absent, none is set */
  cacheStates?: TenantCacheStates;
  /** how often served tenants with spec.sleep are checked for idleness (default 5 s) */
  idleCheckMs?: number;
  /** runs before a deleted VirtualCluster's control plane is removed (core/lifecycle/backups.ts: its last snapshot) */
  beforeRemove?: (vc: VirtualCluster) => Promise<unknown>;
  /** placementRecords is the namespace of the scheduler's placement records: a deleted tenant's record goes too */
  placementRecords?: string;
  /**
   * runs before a tenant's control plane moves to the next Kubernetes minor (core/lifecycle/backups.ts: a snapshot
   * with reason upgrade); answers the snapshot id, or undefined when there is no store to keep one. A throw holds the
   * upgrade back.
   */
  beforeUpgrade?: (vc: VirtualCluster, from: string, to: string) => Promise<string | undefined>;
}
