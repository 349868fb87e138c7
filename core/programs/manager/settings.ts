// The options of the manager's parts, read from its configuration: pure mappings of seconds to milliseconds and of
// defaults, tested from tables in settings.test.ts.

import type { GitOpsOptions } from '../../../gitops/controller.ts';
import type { SuperClusterRegistryOptions } from '../../superclusters/registry.ts';
import { IDENTITY } from '../../names/names.ts';
import { SYNCER_DEFAULTS } from '../../syncer/syncer.ts';
import type { SyncerOptions } from '../../syncer/options.ts';
import type { ManagerConfig } from './config.ts';
import { MANAGER_DEFAULTS, type ManagerShape } from './shape.ts';

/** ms is a number of seconds in milliseconds, undefined left undefined. */
const ms = (seconds: number | undefined): number | undefined => (seconds === undefined ? undefined : seconds * 1000);

/** SyncerSettings are the options every syncer of the process shares, from /syncer. */
export type SyncerSettings = Pick<
  SyncerOptions,
  | 'workers'
  | 'maxInFlightPerTenant'
  | 'adaptiveConcurrency'
  | 'schedulingWindow'
  | 'podCreateRate'
  | 'podCreateYield'
  | 'superByteRate'
  | 'tenantRequestTimeoutMs'
  | 'patrolIntervalMs'
>;

/** syncerSettings reads /syncer into the options every syncer of the process shares. */
export function syncerSettings(cfg: ManagerConfig): SyncerSettings {
  const s = cfg.syncer;
  return {
    workers: s?.workers,
    maxInFlightPerTenant: s?.maxInFlightPerTenant,
    adaptiveConcurrency: s?.adaptiveConcurrency,
    schedulingWindow: s?.schedulingWindow,
    podCreateRate: s?.podCreateRate,
    podCreateYield: s?.podCreateYield,
    superByteRate: s?.superByteRate,
    tenantRequestTimeoutMs: ms(s?.tenantRequestTimeoutSeconds),
    patrolIntervalMs: (s?.patrolIntervalSeconds ?? MANAGER_DEFAULTS.syncer.patrolIntervalSeconds) * 1000,
  };
}

/** tenantRequestTimeoutMs bounds every request to a tenant apiserver but watches, syncers' and scheduler's alike. */
export function tenantRequestTimeoutMs(cfg: ManagerConfig): number {
  return ms(cfg.syncer?.tenantRequestTimeoutSeconds) ?? SYNCER_DEFAULTS.tenantRequestTimeoutMs;
}

/** GitOpsSettings are the GitOps controller's options but its clients. */
export type GitOpsSettings = Omit<GitOpsOptions, 'meta' | 'informers'>;

/** gitopsSettings reads /gitops (enabled) into the GitOps controller's options. */
export function gitopsSettings(gitops: NonNullable<ManagerConfig['gitops']>): GitOpsSettings {
  return {
    cacheRoot: gitops.cacheDir ?? MANAGER_DEFAULTS.gitops.cacheDir,
    timeoutMs: (gitops.timeoutSeconds ?? MANAGER_DEFAULTS.gitops.timeoutSeconds) * 1000,
    webhook: gitops.webhook,
    addresses: { allowPrivateAddresses: gitops.allowPrivateAddresses },
    limits: gitops.limits,
    minIntervalMs: ms(gitops.minIntervalSeconds),
    scope: { sources: gitops.policy?.sources, platformSources: declaredSources(gitops) },
  };
}

/** declaredSources are the `namespace/name` of the GitSources the configuration declares: platform sources. */
export function declaredSources(gitops: NonNullable<ManagerConfig['gitops']>): string[] {
  return (gitops.sources ?? []).map((src) => {
    const m = (src as { metadata?: { namespace?: string; name?: string } }).metadata;
    return `${m?.namespace ?? ''}/${m?.name ?? ''}`;
  });
}

/** RegistrySettings are the super cluster registry's options but its client. */
export type RegistrySettings = Omit<SuperClusterRegistryOptions, 'meta'>;

/**
 * registrySettings reads /superClusterRegistry into the registry's options; the configured super clusters' names
 * are reserved. In `vc syncer` of a registered super cluster the registry reads its own registration only and
 * reports nothing.
 */
export function registrySettings(cfg: ManagerConfig, shape: ManagerShape): RegistrySettings {
  const reg = cfg.superClusterRegistry;
  return {
    namespace: reg?.namespace,
    reserved: shape.supers.map((s) => s.name),
    probeIntervalMs: ms(reg?.probeIntervalSeconds),
    connectTimeoutMs: ms(reg?.connectTimeoutSeconds),
    fieldManager: IDENTITY.manager,
    ...(shape.syncerOnly !== undefined && { only: shape.syncerOnly, writeStatus: false }),
  };
}
