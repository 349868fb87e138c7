// What one manager process runs, decided from its configuration alone (no connection, no clock): startManager's
// first step, tested from tables in shape.test.ts.

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ManagerConfig } from './config.ts';
import { checkSyncerOnly } from './syncermode.ts';

/**
 * MANAGER_DEFAULTS are the values of the process settings a configuration leaves out (tenant defaults are the
 * tenancy module's).
 */
export const MANAGER_DEFAULTS = {
  gitops: { cacheDir: join(tmpdir(), 'vc-gitops-cache'), timeoutSeconds: 60 },
  syncer: { patrolIntervalSeconds: 60 },
  metrics: { host: '127.0.0.1', port: 0 },
  leaderElection: { namespace: 'kube-system', name: 'vc-manager' },
  /** the Lease of `vc syncer --super-cluster <name>` is this prefix and the name */
  syncerLeasePrefix: 'vc-syncer-',
} as const;

/** SuperClusterConfig is one entry of /superClusters. */
export type SuperClusterConfig = NonNullable<ManagerConfig['superClusters']>[number];

/** ManagerShape is what a manager process runs and connects to, before it connects to anything. */
export interface ManagerShape {
  /** supers are the configured super clusters, or one `default` of the in-cluster configuration; the first is meta */
  supers: SuperClusterConfig[];
  /** syncerOnly is the super cluster of `vc syncer --super-cluster`, which runs that one syncer and nothing else */
  syncerOnly?: string;
  /** connects[i] says whether this process opens a client of supers[i] */
  connects: boolean[];
  /** syncs[i] says whether this process runs a syncer of supers[i] */
  syncs: boolean[];
  /** placedOnly: every syncer syncs only what the namespace scheduler placed and signed on its super cluster */
  placedOnly: boolean;
  /** signingNamespace holds the scheduler's placement signing key */
  signingNamespace: string;
  /** lease is the Lease this process leads on, when leader election is on */
  lease?: { namespace: string; name: string };
  /** configuredSources are the GitSources of the configuration this process applies while it leads */
  configuredSources: readonly Record<string, unknown>[];
  /** which controllers run while this process leads */
  runs: {
    virtualClusters: boolean;
    gitops: boolean;
    scheduler: boolean;
    clusterApi: boolean;
    registry: boolean;
  };
  /**
   * metaTenants: the syncers read the tenants of VirtualClusters from the meta cluster (a syncer process, or a
   * manager standing by under leader election); standbyFeed: that feed is the manager's own, set aside while it leads
   */
  metaTenants: boolean;
  standbyFeed: boolean;
  /** servesRegistered says whether this process runs the syncer of a registered super cluster of that name */
  servesRegistered(name: string): boolean;
}

/**
 * schedulerNamespace is the namespace of the meta cluster that holds the scheduler's signing key, state and placement
 * records: scheduler.namespace, else the leader election namespace.
 */
export function schedulerNamespace(cfg: ManagerConfig): string {
  return cfg.scheduler?.namespace ?? cfg.leaderElection?.namespace ?? MANAGER_DEFAULTS.leaderElection.namespace;
}

/**
 * managerShape reads what a manager process runs from its configuration (`file` names it in errors), and refuses a
 * `vc syncer --super-cluster` name the manager runs itself or does not know.
 */
export function managerShape(cfg: ManagerConfig, file: string, syncerOnly?: string): ManagerShape {
  const supers: SuperClusterConfig[] = cfg.superClusters?.length
    ? cfg.superClusters
    : [{ name: 'default', kubeconfig: undefined }];
  const reg = cfg.superClusterRegistry;
  // Registered super clusters whose syncer runs as `vc syncer`: the manager starts none for them.
  const registeredExternal = new Set(reg?.enabled ? (reg.external ?? []) : []);
  if (syncerOnly !== undefined) checkSyncerOnly(supers, [...registeredExternal], syncerOnly, file);
  const one = syncerOnly !== undefined;
  const leader = !one;
  const vcs = !!cfg.virtualClusters?.enabled;
  const standbyFeed = vcs && !!cfg.leaderElection?.enabled && leader;
  const le = cfg.leaderElection;
  return {
    supers,
    syncerOnly,
    // A syncer process connects to the meta cluster (the first) and its own super cluster only: the configuration
    // it shares with the manager names other super clusters whose credentials are not mounted where it runs.
    connects: supers.map((s, i) => !one || i === 0 || s.name === syncerOnly),
    // The manager runs a syncer for every super cluster not marked external; `vc syncer` the one it is given.
    syncs: supers.map((s) => (one ? s.name === syncerOnly : !s.external && !s.metaOnly)),
    // With the scheduler on, every syncer syncs only what it placed and signed there, unless syncer.placedOnly says no.
    placedOnly: cfg.syncer?.placedOnly ?? !!cfg.scheduler?.enabled,
    signingNamespace: schedulerNamespace(cfg),
    lease: le?.enabled
      ? {
          namespace: le.namespace ?? MANAGER_DEFAULTS.leaderElection.namespace,
          // A syncer process leads on a Lease of its own super cluster: the manager and each such syncer have one
          // leader.
          name: one
            ? `${MANAGER_DEFAULTS.syncerLeasePrefix}${syncerOnly}`
            : (le.name ?? MANAGER_DEFAULTS.leaderElection.name),
        }
      : undefined,
    configuredSources: leader ? (cfg.gitops?.sources ?? []) : [],
    runs: {
      virtualClusters: vcs && leader,
      gitops: !!cfg.gitops?.enabled && leader,
      scheduler: !!cfg.scheduler?.enabled && leader,
      clusterApi: !!cfg.clusterApi?.enabled && leader,
      registry: !!reg?.enabled && (leader || registeredExternal.has(syncerOnly)),
    },
    metaTenants: vcs && (one || standbyFeed),
    standbyFeed,
    servesRegistered: (name) => (one ? name === syncerOnly : !registeredExternal.has(name)),
  };
}
