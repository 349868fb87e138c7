import { readFileSync } from 'node:fs';
import type { BackupsConfig } from '../../backup/config.ts';
import { loadConfigFile, pluginPath } from '../../../schemas/load.ts';
import { formatErrors, validate } from '../../../schemas/validate.ts';
import { tenantFrom, type PodSecurityLevel, type Tenant } from '../../tenancy/tenant.ts';
import type { ManagerDefaults } from '../../tenancy/policy.ts';
import { defaultProvisioner } from '../../tenancy/defaults.ts';
import type { CopiedMetadataView, ForcedPlacementView } from '../../plugins/contract.ts';
import type { NativeOptions } from '../../provisioners/native/provisioner.ts';
import type { SourcePolicy } from '../../../gitops/applier/scope.ts';
import type { SourceLimits } from '../../../gitops/source/source.ts';
import type { PluginsConfig } from '../plugins.ts';
import { SYNCER_DEFAULTS } from '../../syncer/syncer.ts';
import type { ProvisionerType } from '../../api/virtualcluster.ts';

/** ManagerConfig is a validated manager configuration (schemas/manager-config.schema.json). */
export interface ManagerConfig {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1';
  kind: 'ManagerConfiguration';
  superClusters?: Array<{
    name: string;
    kubeconfig?: string;
    external?: boolean;
    metaOnly?: boolean;
    /** super clusters with one network name have joined Pod networks (core/provisioners/dnsview.ts, joinedNetworks) */
    network?: string;
  }>;
  superClusterRegistry?: {
    enabled?: boolean;
    namespace?: string;
    probeIntervalSeconds?: number;
    connectTimeoutSeconds?: number;
    external?: string[];
  };
  plugins?: PluginsConfig;
  syncer?: {
    workers?: number;
    maxInFlightPerTenant?: number;
    adaptiveConcurrency?: boolean;
    schedulingWindow?: number;
    podCreateRate?: { perSecond: number; burst: number };
    podCreateYield?: number;
    superByteRate?: { perSecond: number; burst: number };
    tenantRequestTimeoutSeconds?: number;
    patrolIntervalSeconds?: number;
    placedOnly?: boolean;
  };
  scheduler?: { enabled?: boolean; policy?: 'spread' | 'pack'; namespace?: string; workers?: number };
  leaderElection?: {
    enabled?: boolean;
    namespace?: string;
    name?: string;
    leaseDurationSeconds?: number;
    renewDeadlineSeconds?: number;
    retryPeriodSeconds?: number;
  };
  metrics?: { host?: string; port?: number };
  gitops?: {
    enabled?: boolean;
    cacheDir?: string;
    timeoutSeconds?: number;
    webhook?: { host?: string; port?: number };
    allowPrivateAddresses?: boolean | string[];
    minIntervalSeconds?: number;
    limits?: SourceLimits;
    policy?: { sources?: Record<string, SourcePolicy> };
    sources?: Array<Record<string, unknown>>;
  };
  /** the Cluster API provider's controllers (core/lifecycle/capi.ts) */
  clusterApi?: { enabled?: boolean };
  tenantDefaults?: {
    pods?: { forced?: ForcedPlacementView; preloadedImages?: string[]; etcHostsImage?: string };
    copiedMetadata?: CopiedMetadataView;
  };
  virtualClusters?: {
    enabled?: boolean;
    workers?: number;
    /** the provisioner of a VirtualCluster that names none (defaultProvisioner of core/tenancy/defaults.ts) */
    defaultProvisioner?: ProvisionerType;
    /** VirtualClusters of one namespace provisioned, oldest first (DEFAULT_MAX_PER_NAMESPACE) */
    maxPerNamespace?: number;
    local?: {
      stateDir: string;
      etcdEndpoint: string;
      podAddress?: string;
      kubeletCAFile?: string;
      /** lifetime and renewal fraction of the tenants' leaf certificates (LocalProvisionerOptions.certificates) */
      certificates?: { validityDays?: number; renewFraction?: number };
      /** network confinement of the tenants' control planes (core/dev/local/netconfine.ts) */
      confine?: { podCidrs: string[]; endpoints: Array<{ host: string; port: number }> };
      /** metrics-server beside each tenant (LocalProvisionerOptions.metricsServer) */
      metricsServer?: boolean;
    };
    /** the native provisioner's platform settings (NativeOptions) */
    native?: NativeOptions;
    tenantDNS?: { enabled?: boolean; image?: string };
    defaultPluginConfig?: Record<string, unknown>;
  };
  /** the backup store and its retention (core/backup) */
  backups?: BackupsConfig;
  tenants?: Array<{
    name: string;
    namespace: string;
    uid: string;
    kubeconfig: string;
    superCluster?: string;
    weight?: number;
    clusterDomain?: string;
    podSecurityLevel?: PodSecurityLevel;
    opaqueMetaPrefixes?: string[];
    transparentMetaPrefixes?: string[];
    plugins?: { enable?: string[]; disable?: string[] };
    pluginConfig?: Record<string, unknown>;
  }>;
}

/** ConfigError is a configuration that cannot be used; its message names the file, the field and the problem. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** loadManagerConfig reads, parses and validates a configuration file, resolving relative paths against it. */
export function loadManagerConfig(file: string): ManagerConfig {
  const cfg = loadConfigFile<ManagerConfig>(file, {
    schema: 'managerConfig',
    Err: ConfigError,
    explain: (errors, value) => {
      const tenants = (value as { tenants?: Array<{ namespace?: string; name?: string }> } | null)?.tenants ?? [];
      return errors.map((e) => {
        const m = /^\/tenants\/(\d+)/.exec(e.pointer);
        const t = m ? tenants[Number(m[1])] : undefined;
        return t ? { ...e, message: `${e.message} (tenant ${t.namespace ?? '?'}/${t.name ?? '?'})` } : e;
      });
    },
    resolvePaths: (c, abs) => {
      for (const sc of c.superClusters ?? []) if (sc.kubeconfig) sc.kubeconfig = abs(sc.kubeconfig);
      for (const t of c.tenants ?? []) t.kubeconfig = abs(t.kubeconfig);
      if (c.virtualClusters?.local) {
        c.virtualClusters.local.stateDir = abs(c.virtualClusters.local.stateDir);
        if (c.virtualClusters.local.kubeletCAFile)
          c.virtualClusters.local.kubeletCAFile = abs(c.virtualClusters.local.kubeletCAFile);
      }
      if (c.virtualClusters?.native?.kubeletCAFile)
        c.virtualClusters.native.kubeletCAFile = abs(c.virtualClusters.native.kubeletCAFile);
      if (c.virtualClusters?.native?.etcdHostPathDir)
        c.virtualClusters.native.etcdHostPathDir = abs(c.virtualClusters.native.etcdHostPathDir);
      if (c.gitops?.cacheDir) c.gitops.cacheDir = abs(c.gitops.cacheDir);
      if (c.backups?.directory) c.backups.directory = abs(c.backups.directory);
      if (c.backups?.s3) {
        c.backups.s3.credentialsDir = abs(c.backups.s3.credentialsDir);
        if (c.backups.s3.caFile) c.backups.s3.caFile = abs(c.backups.s3.caFile);
      }
      if (c.plugins?.thirdParty) c.plugins.thirdParty = c.plugins.thirdParty.map((p) => pluginPath(p, abs));
      if (c.plugins?.sandboxed) c.plugins.sandboxed = c.plugins.sandboxed.map((p) => pluginPath(p, abs));
      if (c.plugins?.trustedKeys) c.plugins.trustedKeys = c.plugins.trustedKeys.map(abs);
    },
  });
  for (const [i, src] of (cfg.gitops?.sources ?? []).entries()) {
    const errs = validate('gitSource', src);
    const m = (src as { metadata?: { namespace?: string; name?: string } }).metadata;
    const where = `${file}: /gitops/sources/${i} GitSource ${m?.namespace ?? '?'}/${m?.name ?? '?'}`;
    if (errs.length) throw new ConfigError(formatErrors(where, errs));
  }
  if (cfg.virtualClusters?.defaultProvisioner === 'local' && !cfg.virtualClusters.local) {
    throw new ConfigError(
      `${file}: /virtualClusters/defaultProvisioner is local but /virtualClusters/local is not set: this manager ` +
        'cannot run local control planes (set /virtualClusters/local, or name native)',
    );
  }
  const { workers = SYNCER_DEFAULTS.workers, maxInFlightPerTenant } = cfg.syncer ?? {};
  if (maxInFlightPerTenant !== undefined && maxInFlightPerTenant > workers) {
    throw new ConfigError(
      `${file}: /syncer/maxInFlightPerTenant (${maxInFlightPerTenant}) must not exceed /syncer/workers (${workers})`,
    );
  }
  const metaOnly = metaOnlyProblem(cfg);
  if (metaOnly) throw new ConfigError(`${file}: ${metaOnly}`);
  const names = new Set<string>();
  for (const [i, t] of (cfg.tenants ?? []).entries()) {
    const id = `${t.namespace}/${t.name}`;
    if (names.has(id)) throw new ConfigError(`${file}: /tenants/${i} tenant ${id} is listed twice`);
    names.add(id);
  }
  return cfg;
}

/**
 * metaOnlyProblem says what is wrong with a configuration's `metaOnly` super cluster (a meta cluster apart from the
 * super clusters), naming the field, or undefined: it may only be the first entry (the meta cluster), and needs the
 * namespace scheduler, which alone puts tenant namespaces on the other super clusters, and a super cluster to put them
 * on (another static entry or the registry).
 */
export function metaOnlyProblem(cfg: ManagerConfig): string | undefined {
  const supers = cfg.superClusters ?? [];
  const later = supers.findIndex((s, i) => i > 0 && s.metaOnly);
  if (later > 0)
    return `/superClusters/${later}/metaOnly: only the first super cluster (the meta cluster) can be the meta cluster alone`;
  if (!supers[0]?.metaOnly) return undefined;
  if (supers[0].network)
    return '/superClusters/0/network: a meta cluster apart (metaOnly) runs no tenant Pod, so it joins no Pod network';
  if (supers[0].external)
    return '/superClusters/0: metaOnly and external together: a meta cluster apart has no syncer to run elsewhere';
  if (!cfg.scheduler?.enabled)
    return '/superClusters/0/metaOnly needs /scheduler/enabled: true (the scheduler places every tenant namespace on a super cluster)';
  if (supers.length < 2 && !cfg.superClusterRegistry?.enabled)
    return '/superClusters/0/metaOnly leaves no super cluster: list another in /superClusters or enable /superClusterRegistry';
  return undefined;
}

/** offeredProvisioners are the provisioners a manager with this configuration runs (core/programs/manager). */
export function offeredProvisioners(cfg: ManagerConfig): ProvisionerType[] {
  return ['import', 'native', ...(cfg.virtualClusters?.local ? (['local'] as const) : [])];
}

/** managerDefaults are the configuration's settings every tenant's policy is layered over. */
export function managerDefaults(cfg: ManagerConfig): ManagerDefaults {
  const d: ManagerDefaults = {};
  if (cfg.virtualClusters?.defaultPluginConfig) d.pluginConfig = cfg.virtualClusters.defaultPluginConfig;
  if (cfg.tenantDefaults?.pods?.forced) d.podsForced = cfg.tenantDefaults.pods.forced;
  if (cfg.tenantDefaults?.pods?.preloadedImages) d.podsPreloadedImages = cfg.tenantDefaults.pods.preloadedImages;
  if (cfg.tenantDefaults?.pods?.etcHostsImage) d.podsEtcHostsImage = cfg.tenantDefaults.pods.etcHostsImage;
  if (cfg.tenantDefaults?.copiedMetadata) d.copiedMetadata = cfg.tenantDefaults.copiedMetadata;
  const provisioner = defaultProvisioner(cfg.virtualClusters?.defaultProvisioner, offeredProvisioners(cfg));
  if (provisioner) d.provisioner = provisioner;
  return d;
}

/**
 * staticTenants turns the configuration's tenant list into syncer tenants, reading each kubeconfig. They have no
 * TenantPolicy: tenantDefaults' forced placement and allow-lists apply to them as they are.
 */
export function staticTenants(cfg: ManagerConfig, file: string, superCluster?: string): Tenant[] {
  return (cfg.tenants ?? [])
    .filter((t) => !superCluster || (t.superCluster ?? cfg.superClusters?.[0]?.name ?? 'default') === superCluster)
    .map((t, i) => {
      let kubeconfig: string;
      try {
        kubeconfig = readFileSync(t.kubeconfig, 'utf8');
      } catch (e) {
        throw new ConfigError(
          `${file}: /tenants/${i}/kubeconfig tenant ${t.namespace}/${t.name}: cannot read ${t.kubeconfig}: ${(e as Error).message}`,
        );
      }
      const { forced, etcHostsImage } = cfg.tenantDefaults?.pods ?? {};
      const copiedMetadata = cfg.tenantDefaults?.copiedMetadata;
      const pods = { ...(forced && { forced }), ...(etcHostsImage && { etcHostsImage }) };
      const settings = {
        ...t,
        ...(Object.keys(pods).length && { pods }),
        ...(copiedMetadata && { copiedMetadata }),
      };
      return tenantFrom({ vcNamespace: t.namespace, vcName: t.name, vcUid: t.uid, kubeconfig, settings });
    });
}
