// The manager process: startManager wires the parts of shape.ts (what runs), settings.ts (their options),
// tenantfeed.ts (the meta cluster's tenants), term.ts (what runs while it leads) and election.ts (when it leads).
import { dirname, resolve } from 'node:path';
import type { GitOpsController } from '../../../gitops/controller.ts';
import { RunGroup, type Runnable } from '../../controller/runnables.ts';
import { KubeClient, type KubeObject } from '../../kube/client.ts';
import { InformerFactory } from '../../kube/factory.ts';
import { R } from '../../kube/resources.ts';
import { reportCacheExceeded, TenantCacheStates } from '../../lifecycle/cachelimit.ts';
import type { VirtualClusterController } from '../../lifecycle/controller.ts';
import { MetaTenantRegistry } from '../../lifecycle/metatenants.ts';
import { childLogger } from '../../log.ts';
import { addHealthCheck, addReadyCheck, startOpsServer, type OpsServer } from '../../metrics/ops.ts';
import type { PluginHost } from '../../plugins/host.ts';
import type { Provisioner } from '../../provisioners/provisioner.ts';
import type { NamespaceScheduler } from '../../scheduler/controller.ts';
import { loadSigningKey } from '../../scheduler/signature.ts';
import { TenantInformerPool } from '../../sessions/pool.ts';
import { CACHE_RETRY_MS } from '../../sessions/tenants.ts';
import type { RegisteredSuperCluster, SuperClusterRegistry } from '../../superclusters/registry.ts';
import { recordedPlacements } from '../../syncer/placement.ts';
import { RECORD_SELECTOR } from '../../scheduler/placementrecord.ts';
import { Syncer, SYNCER_DEFAULTS } from '../../syncer/syncer.ts';
import { routedRegistry } from '../../tenancy/routing.ts';
import { MutableTenantRegistry } from '../../tenancy/tenant.ts';
import { pluginHostFromConfig } from '../plugins.ts';
import { managerDefaults, staticTenants, type ManagerConfig } from './config.ts';
import { elect, type Terms } from './election.ts';
import { lifecycleControllers } from './lifecycle.ts';
import { syncerSettings, tenantRequestTimeoutMs } from './settings.ts';
import { MANAGER_DEFAULTS, managerShape, type ManagerShape } from './shape.ts';
import { TenantFeed } from './tenantfeed.ts';
import { knownSuperCluster, ManagerTerm } from './term.ts';

const log = childLogger({ controller: 'manager' });

export { MANAGER_DEFAULTS };

/** ManagerOptions change what startManager runs. */
export interface ManagerOptions {
  /**
   * syncerOnly runs the syncer of this one super cluster and nothing else (`vc syncer --super-cluster`): no
   * VirtualCluster lifecycle, GitOps, scheduler or registry; tenants of VirtualClusters read from the meta cluster;
   * leader election on the Lease `vc-syncer-<name>`. The configuration must mark that super cluster `external` (in
   * /superClusters, or for a registered one in /superClusterRegistry/external); only the meta cluster's and its own
   * kubeconfig are read.
   */
  syncerOnly?: string;
  /** provisioners are offered by the program running it, beside import and native (vc up: core/dev's local) */
  provisioners?: Readonly<Record<string, Provisioner>>;
}

/** Manager is one manager process: ops server, leader election, and a syncer per super cluster. */
export interface Manager {
  opsPort: number;
  /** isLeader reports whether this manager runs the controllers (always true without leader election) */
  isLeader(): boolean;
  /** lifecycle is the VirtualCluster controller of the current leadership term, when configured */
  lifecycle?: VirtualClusterController;
  /** gitops is the GitOps controller of the current leadership term, when configured */
  gitops?: GitOpsController;
  syncers: Syncer[];
  /** scheduler is the namespace scheduler while this manager leads, when configured */
  scheduler?: NamespaceScheduler;
  host: PluginHost;
  /** registry is the super cluster registry when `superClusterRegistry.enabled`, while this manager leads */
  registry?: SuperClusterRegistry;
  /** registeredSyncers are the running syncers of registered super clusters, by name */
  registeredSyncers(): Map<string, Syncer>;
  /**
   * superClusters is the live set: the statically configured super clusters (always ready) and then the registered
   * ones, each with its client when it has one.
   */
  superClusters(): RegisteredSuperCluster[];
  stop(): Promise<void>;
}

/**
 * clientFor is a client of the given kubeconfig file or, without one, of the Pod's in-cluster configuration; either
 * way its token file or exec plugin is re-read or re-run as the credentials rotate.
 */
function clientFor(kubeconfig?: string): Promise<KubeClient> {
  return kubeconfig ? KubeClient.fromFile(kubeconfig) : KubeClient.inCluster();
}

/**
 * startManager loads the plugins, starts /metrics, /healthz and /readyz, and, while it holds the leader Lease (or
 * at once when leader election is off), one syncer per super cluster serving the configured tenants.
 */
export async function startManager(cfg: ManagerConfig, file: string, o: ManagerOptions = {}): Promise<Manager> {
  const shape = managerShape(cfg, file, o.syncerOnly);
  if (shape.syncerOnly !== undefined && !shape.lease)
    log.warn(
      { superCluster: shape.syncerOnly },
      'leader election is off: run one replica of this syncer only, two would both write the super cluster',
    );
  const host = await pluginHostFromConfig('manager', cfg.plugins, {
    baseDir: dirname(resolve(file)),
    defaultPluginConfig: cfg.virtualClusters?.defaultPluginConfig,
  });
  const clients = await Promise.all(
    shape.supers.map((s, i) => (shape.connects[i] ? clientFor(s.kubeconfig) : undefined)),
  );
  const meta = clients[0]!;
  // One tenant set; each syncer serves the part routed to its super cluster (core/tenancy/routing.ts).
  const tenants = new MutableTenantRegistry(staticTenants(cfg, file));
  // One read (or first creation) of the signing key serves the syncers' filter and every scheduler term.
  const signingKey = retriedOnce(() => loadSigningKey(meta, shape.signingNamespace));
  const { metaInformers, superInformers, tenantInformers } = sharedInformers(meta, cfg);
  const records = shape.placedOnly
    ? await placementRecords(await signingKey(), metaInformers, shape.signingNamespace)
    : undefined;
  const signed = records?.signed;
  // What the syncers say of each tenant's caches, for the VirtualCluster's CacheWithinLimit condition.
  const cacheStates = new TenantCacheStates(CACHE_RETRY_MS);
  const lifecycle = shape.runs.virtualClusters
    ? lifecycleControllers(
        cfg,
        meta,
        metaInformers,
        tenants,
        host,
        (name): true | string => knownSuperCluster(term.superClusters(), name),
        cacheStates,
        o.provisioners,
        shape.supers.flatMap((s, i) => (s.metaOnly || !clients[i] ? [] : [superInformers(clients[i])])),
      )
    : undefined;
  const feed = new TenantFeed(
    tenants,
    shape.metaTenants
      ? new MetaTenantRegistry({ meta, informers: metaInformers, defaults: managerDefaults(cfg) })
      : undefined,
    shape.standbyFeed,
  );
  const newSyncer = (name: string, superClient: KubeClient) =>
    new Syncer({
      ...syncerSettings(cfg),
      superClient,
      superInformers: superInformers(superClient),
      host,
      registry: routedRegistry(tenants, { cluster: name, home: shape.supers[0]!.name, everywhere: shape.placedOnly }),
      tenantInformers,
      name,
      placement: signed && { cluster: name, signed },
      onTenantCacheExceeded: (t, reason) => {
        cacheStates.exceeded(t, reason);
        void reportCacheExceeded(meta, t, reason);
      },
      onTenantServed: (t) => cacheStates.served(t),
    });
  const syncers = shape.supers.flatMap((s, i) => (shape.syncs[i] ? [newSyncer(s.name, clients[i]!)] : []));
  const term: ManagerTerm = new ManagerTerm({
    cfg,
    shape,
    meta,
    metaInformers,
    superInformers,
    tenantInformers,
    tenants,
    feed,
    syncers,
    newSyncer,
    lifecycle,
    signingKey,
    statics: staticSuperClusters(shape, clients),
  });
  let running = false;
  const group = new RunGroup();
  const terms: Terms = {
    start: async (t = {}) => {
      await group.start(term.runnables(t));
      running = true;
    },
    halt: async () => {
      running = false;
      await group.stop();
    },
  };
  // What runs for the whole process, standing by included, started in order and stopped in reverse.
  const always = new RunGroup();
  const lifelong = lifelongRunnables({
    cfg,
    host,
    shape,
    lifecycle,
    cacheStates,
    feed,
    syncers,
    running: () => running,
  });
  await always.start(lifelong.runnables);
  const opsPort = lifelong.opsPort();
  const election = shape.lease ? elect(meta, shape.lease, cfg.leaderElection ?? {}, terms) : undefined;
  if (!election) await terms.start({});
  log.info(
    {
      opsPort,
      superClusters: shape.supers.map((s) => s.name),
      syncerOnly: shape.syncerOnly,
      plugins: host.names(),
    },
    'manager started',
  );
  return {
    opsPort,
    isLeader: () => running,
    get lifecycle() {
      return term.virtualClusters;
    },
    get gitops() {
      return term.gitops;
    },
    syncers,
    get scheduler() {
      return term.scheduler;
    },
    host,
    get registry() {
      return term.registry;
    },
    registeredSyncers: () => term.registered?.syncers() ?? new Map(),
    superClusters: () => term.superClusters(),
    async stop() {
      await election?.stop();
      if (running) await terms.halt();
      await always.stop();
      await records?.informer.stop();
      clients.forEach((c) => c?.close());
      await host.close();
    },
  };
}

/** LifelongParts are what the runnables of a whole manager process stand on. */
interface LifelongParts {
  cfg: ManagerConfig;
  host: PluginHost;
  shape: ManagerShape;
  lifecycle?: ReturnType<typeof lifecycleControllers>;
  cacheStates: TenantCacheStates;
  feed: TenantFeed;
  syncers: readonly Syncer[];
  /** running says whether a term runs (the syncers' readiness without leader election) */
  running(): boolean;
}

/**
 * lifelongRunnables are what a manager runs for its whole life, standing by included: the ops server and its checks,
 * the provisioners (the tenants' control planes a local provisioner runs outlive a term and end with the process)
 * and the warm caches; opsPort is the ops server's port once it started.
 */
function lifelongRunnables(p: LifelongParts): { runnables: Runnable[]; opsPort(): number } {
  let ops: OpsServer | undefined;
  let warming: Promise<unknown> = Promise.resolve();
  const removeChecks: (() => void)[] = [];
  const runnables: Runnable[] = [
    {
      name: 'ops server',
      start: async () => {
        ops = await startOpsServer({
          host: p.cfg.metrics?.host ?? MANAGER_DEFAULTS.metrics.host,
          port: p.cfg.metrics?.port ?? MANAGER_DEFAULTS.metrics.port,
        });
        removeChecks.push(
          addHealthCheck('plugins', (): true | string => (p.host.names().length ? true : 'no plugin loaded')),
          addReadyCheck('syncers', (): true | string =>
            p.running() || !!p.shape.lease ? true : 'syncers not started',
          ),
        );
      },
      stop: async () => {
        removeChecks.splice(0).forEach((r) => r());
        await ops?.close();
      },
    },
    {
      name: 'provisioners',
      start: async () => {},
      stop: async () => {
        await p.lifecycle?.stopProvisioners();
        p.cacheStates.clear();
      },
    },
    {
      // While another replica leads, this one keeps the syncers' caches (and the tenant feed of `vc syncer`) synced,
      // so that winning the Lease starts the workers over them instead of listing everything again.
      name: 'warm caches',
      start: async () => {
        warming = Promise.all([p.feed.start(), ...p.syncers.map((s) => s.warm())]).catch((err: unknown) =>
          log.error({ err }, 'warming the caches failed; a leadership term starts them again'),
        );
      },
      // Stopping them releases a warm-up still waiting for a cache to sync.
      stop: async () => {
        await p.feed.stop();
        await Promise.all(p.syncers.map((s) => s.stop()));
        await warming;
      },
    },
  ];
  return { runnables, opsPort: () => ops!.port };
}

/**
 * staticSuperClusters are the configured super clusters this process has a client of, always ready. A meta cluster
 * apart (metaOnly) is no super cluster: nothing is placed or synced there.
 */
function staticSuperClusters(
  shape: ManagerShape,
  clients: readonly (KubeClient | undefined)[],
): RegisteredSuperCluster[] {
  return shape.supers.flatMap((s, i) => {
    const client = s.metaOnly ? undefined : clients[i];
    return client ? [{ name: s.name, namespace: '', state: 'ready' as const, client, kubeconfig: s.kubeconfig }] : [];
  });
}

/**
 * placementRecords reads the scheduler's placement records (core/scheduler/placementrecord.ts) for the syncers' filter:
 * one watch of the record ConfigMaps in the scheduler's namespace, listed before any syncer starts, since a syncer that
 * found no record would take its tenants for gone from its super cluster.
 */
async function placementRecords(key: Uint8Array, metaInformers: InformerFactory, namespace: string) {
  const records = metaInformers.informer<KubeObject>({
    resource: R.configmaps,
    namespace,
    labelSelector: RECORD_SELECTOR,
  });
  const signed = recordedPlacements(key, records, namespace);
  records.start();
  await records.waitForSync();
  return { signed, informer: records };
}

/**
 * sharedInformers are the process's informer caches: one list and watch per resource of the meta cluster, whatever
 * number of controllers read it; one per resource of each super cluster, whether its syncer or the scheduler reads
 * it (the first super cluster is the meta cluster, whose factory its syncer shares with the meta controllers); and
 * one per resource of each tenant, whatever number of syncers (one per super cluster) and schedulers serve it, within
 * one cache budget per tenant.
 */
function sharedInformers(meta: KubeClient, cfg: ManagerConfig) {
  const metaInformers = new InformerFactory(meta, 'meta');
  const superFactories = new WeakMap<KubeClient, InformerFactory>([[meta, metaInformers]]);
  const superInformers = (client: KubeClient): InformerFactory => {
    let f = superFactories.get(client);
    if (!f) superFactories.set(client, (f = new InformerFactory(client, 'super')));
    return f;
  };
  const tenantInformers = new TenantInformerPool({
    requestTimeoutMs: tenantRequestTimeoutMs(cfg),
    cacheLimits: SYNCER_DEFAULTS.tenantCache,
  });
  return { metaInformers, superInformers, tenantInformers };
}

/** retriedOnce calls `load` once and hands every caller its promise; when it fails, the next caller calls it again. */
export function retriedOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () =>
    (p ??= load().catch((e: unknown) => {
      p = undefined;
      throw e;
    }));
}
