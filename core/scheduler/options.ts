/** The namespace scheduler's options, defaults, statistics and the super cluster registrations it reads. */
import type { PlacementRecords } from './placementrecord.ts';
import type { InformerFactory } from '../kube/factory.ts';
import type { KubeClient } from '../kube/client.ts';
import type { TenantInformerPool } from '../sessions/pool.ts';
import type { Clock } from '../queue/clock.ts';
import type { ClusterState } from '../superclusters/registration.ts';
import type { Tenant, TenantRegistry } from '../tenancy/tenant.ts';
import type { Policy } from './namespace.ts';

/** RegisteredSuperCluster is one super cluster as the registry reports it (core/superclusters/registry.ts). */
export interface RegisteredSuperCluster {
  name: string;
  state: ClusterState;
  /** client is the super cluster's admin client, when its kubeconfig could be used. */
  client?: KubeClient;
  kubeconfig?: string;
  message?: string;
}

/** SuperClusterSource is what the scheduler needs of the registry: the registrations now, and word of changes. */
export interface SuperClusterSource {
  list(): RegisteredSuperCluster[];
  /** onChange calls cb after any registration changed; it may return an unsubscribe function. */
  onChange(cb: () => void): (() => void) | void;
}

/** SCHEDULER_DEFAULTS are the scheduler's settings when its options leave them out. */
export const SCHEDULER_DEFAULTS = {
  policy: 'spread' as Policy,
  workers: 4,
  /** how long new placements wait for every tenant known at start to be served (their placements counted) */
  startupGraceMs: 30_000,
  /** the state ConfigMap is written at most this often */
  publishIntervalMs: 2_000,
  tenantRequestTimeoutMs: 10_000,
} as const;

/** FIELD_MANAGER is the field manager of every write the scheduler makes. */
export const FIELD_MANAGER = 'vc-scheduler';

/** PLACED_CONDITION is the Namespace status condition the scheduler keeps: True once placed, False with the reason. */
export const PLACED_CONDITION = 'scheduler.tenancy.x-k8s.io/Placed';

/** SchedulerOptions configure a NamespaceScheduler. */
export interface SchedulerOptions {
  tenants: TenantRegistry;
  /** the process's shared tenant informers (the syncers'); default: the scheduler's own */
  tenantInformers?: TenantInformerPool;
  supers: SuperClusterSource;
  /**
   * the shared informers of a super cluster's client (the syncer of that super cluster reads its nodes too): one
   * watch of its nodes however many read them; default: the scheduler's own informer per super cluster
   */
  superInformers?: (client: KubeClient) => InformerFactory;
  /** signingKey signs and verifies PLACEMENTS and SUPER_CLUSTER (see loadSigningKey). */
  signingKey: Uint8Array;
  policy?: Policy;
  workers?: number;
  /** pinnedOf gives a tenant's pinned super cluster; default its superCluster (the VirtualCluster's spec). */
  pinnedOf?: (t: Tenant) => string | undefined;
  /** publish writes the summary ConfigMap STATE_CONFIGMAP.name in this namespace of the meta cluster. */
  publish?: { client: KubeClient; namespace: string };
  /**
   * records keeps each tenant's current placements in the meta cluster (placementrecord.ts), where the syncers read
   * them; a tenant (re)served is counted from its record, not from the annotations it could have written back.
   * Absent (tests of the decisions alone): counted from the signed annotations.
   */
  records?: PlacementRecords;
  startupGraceMs?: number;
  publishIntervalMs?: number;
  tenantRequestTimeoutMs?: number;
  clock?: Clock;
  /** observe receives each placement written, for benchmarks: what was placed and when its decision was made. */
  observe?: (e: { kind: 'namespace' | 'pod'; key: string; superClusters: string[]; decidedAt: number }) => void;
}

/** SchedulerStats counts what the scheduler decided and wrote. */
export interface SchedulerStats {
  namespaceDecisions: number;
  podDecisions: number;
  writes: number;
  /** placementWrites counts the writes of PLACEMENTS and SUPER_CLUSTER (a subset of writes). */
  placementWrites: number;
  evictions: number;
  unschedulable: number;
  pending: number;
}
