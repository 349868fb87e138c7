// Over 500 lines: the manager is one wiring function, read top to bottom; splitting it would scatter its order.
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { GitOpsController } from '../../../gitops/controller.ts';
import { KubeClient, type KubeObject } from '../../kube/client.ts';
import { GITSOURCES } from '../../../gitops/applier/gitsource.ts';
import { LeaderElector } from '../../leader/election.ts';
import { InformerFactory } from '../../kube/factory.ts';
import { RunGroup, type Runnable } from '../../controller/runnables.ts';
import { lifecycleControllers, superPodsOf } from './lifecycle.ts';
import { checkSyncerOnly } from './syncermode.ts';
import { holderGone, localIdentity } from '../../leader/local.ts';
import { childLogger } from '../../log.ts';
import { IDENTITY } from '../../names/names.ts';
import { addHealthCheck, addReadyCheck, startOpsServer, type OpsServer } from '../../metrics/ops.ts';
import type { PluginHost } from '../../plugins/host.ts';
import type { Provisioner } from '../../provisioners/provisioner.ts';
import { pluginHostFromConfig } from '../plugins.ts';
import { Syncer, SYNCER_DEFAULTS, type SyncerTerm } from '../../syncer/syncer.ts';
import { TenantInformerPool } from '../../sessions/pool.ts';
import { MutableTenantRegistry, type Tenant, type TenantRegistry } from '../../tenancy/tenant.ts';
import { routedRegistry } from '../../tenancy/routing.ts';
import { signedPlacements } from '../../syncer/placement.ts';
import { NamespaceScheduler, type SuperClusterSource } from '../../scheduler/controller.ts';
import { loadSigningKey } from '../../scheduler/signature.ts';
import { managerDefaults, staticTenants, type ManagerConfig } from './config.ts';
import type { VirtualClusterController } from '../../lifecycle/controller.ts';
import type { BackupController } from '../../lifecycle/backups.ts';
import { CapiProvider } from '../../lifecycle/capi.ts';
import { reportCacheExceeded, TenantCacheStates } from '../../lifecycle/cachelimit.ts';
import { CACHE_RETRY_MS } from '../../sessions/tenants.ts';
import { MetaTenantRegistry } from '../../lifecycle/metatenants.ts';
import { SuperClusterRegistry, type RegisteredSuperCluster } from '../../superclusters/registry.ts';
import { RegisteredPods, RegisteredSyncers } from './registered.ts';

const log = childLogger({ controller: 'manager' });

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
  const supers: NonNullable<ManagerConfig['superClusters']> = cfg.superClusters?.length
    ? cfg.superClusters
    : [{ name: 'default', kubeconfig: undefined }];
  const names = supers.map((s) => s.name);
  const reg = cfg.superClusterRegistry;
  // Registered super clusters whose syncer runs as `vc syncer`: the manager starts none for them.
  const registeredExternal = new Set(reg?.enabled ? (reg.external ?? []) : []);
  if (o.syncerOnly !== undefined) checkSyncerOnly(supers, [...registeredExternal], o.syncerOnly, file);
  const syncerOnly = o.syncerOnly !== undefined;
  if (syncerOnly && !cfg.leaderElection?.enabled)
    log.warn(
      { superCluster: o.syncerOnly },
      'leader election is off: run one replica of this syncer only, two would both write the super cluster',
    );
  const host = await pluginHostFromConfig('manager', cfg.plugins, {
    baseDir: dirname(resolve(file)),
    defaultPluginConfig: cfg.virtualClusters?.defaultPluginConfig,
  });
  // A syncer process connects to the meta cluster (the first) and its own super cluster only: the configuration it
  // shares with the manager names other super clusters whose credentials are not mounted where it runs.
  const clients = await Promise.all(
    supers.map((s, i) => (!syncerOnly || i === 0 || s.name === o.syncerOnly ? clientFor(s.kubeconfig) : undefined)),
  );
  // One tenant set; each syncer serves the part routed to its super cluster (core/tenancy/routing.ts).
  const tenants = new MutableTenantRegistry(staticTenants(cfg, file));
  const signingNamespace =
    cfg.scheduler?.namespace ?? cfg.leaderElection?.namespace ?? MANAGER_DEFAULTS.leaderElection.namespace;
  // With the scheduler on, every syncer syncs only what it placed and signed there, unless syncer.placedOnly says no.
  const placedOnly = cfg.syncer?.placedOnly ?? !!cfg.scheduler?.enabled;
  // One read (or first creation) of the signing key serves the syncers' filter and every scheduler term.
  let key: ReturnType<typeof loadSigningKey> | undefined;
  const signingKey = () =>
    (key ??= loadSigningKey(clients[0]!, signingNamespace).catch((e: unknown) => {
      key = undefined;
      throw e;
    }));
  const signed = placedOnly ? signedPlacements(await signingKey()) : undefined;
  // The live set: the statically configured super clusters (always ready), then the registered ones.
  // A meta cluster apart (metaOnly) is no super cluster: nothing is placed or synced there.
  const liveSupers = (): RegisteredSuperCluster[] => [
    ...supers.flatMap((s, i) => {
      const client = s.metaOnly ? undefined : clients[i];
      return client ? [{ name: s.name, namespace: '', state: 'ready' as const, client, kubeconfig: s.kubeconfig }] : [];
    }),
    ...(registry?.list() ?? []),
  ];
  const routed = (name: string) => routedRegistry(tenants, { cluster: name, home: names[0]!, everywhere: placedOnly });
  const checkSuperCluster = (name: string): true | string => {
    const known = liveSupers().map((r) => r.name);
    return (
      known.includes(name) || `no super cluster of that name is configured or registered (known: ${known.join(', ')})`
    );
  };
  // One list and watch per resource of the meta cluster, whatever number of controllers read it; and per resource of
  // each tenant, whatever number of syncers (one per super cluster) and schedulers serve it.
  const metaInformers = new InformerFactory(clients[0]!, 'meta');
  // And one per resource of each super cluster, whether its syncer or the scheduler reads it; the first super cluster
  // is the meta cluster, whose factory its syncer shares with the meta controllers.
  const superFactories = new WeakMap<KubeClient, InformerFactory>([[clients[0]!, metaInformers]]);
  const superInformers = (client: KubeClient): InformerFactory => {
    let f = superFactories.get(client);
    if (!f) superFactories.set(client, (f = new InformerFactory(client, 'super')));
    return f;
  };
  const tenantInformers = new TenantInformerPool({
    requestTimeoutMs:
      cfg.syncer?.tenantRequestTimeoutSeconds === undefined
        ? SYNCER_DEFAULTS.tenantRequestTimeoutMs
        : cfg.syncer.tenantRequestTimeoutSeconds * 1000,
    // One budget per tenant for everything the manager caches of it, whichever syncer or scheduler reads it.
    cacheLimits: SYNCER_DEFAULTS.tenantCache,
  });
  // What the syncers say of each tenant's caches, for the VirtualCluster's CacheWithinLimit condition.
  const cacheStates = new TenantCacheStates(CACHE_RETRY_MS);
  const lifecycle =
    cfg.virtualClusters?.enabled && !syncerOnly
      ? lifecycleControllers(
          cfg,
          clients[0]!,
          metaInformers,
          tenants,
          host,
          checkSuperCluster,
          cacheStates,
          o.provisioners,
          supers.flatMap((s, i) => (s.metaOnly || !clients[i] ? [] : [superInformers(clients[i])])),
        )
      : undefined;
  // A separate syncer reads the VirtualClusters' tenants from the meta cluster, as the manager's controller hands them.
  // So does a manager standing by (leader election), whose controller runs only while it leads: its syncers' caches
  // follow those tenants too, built as the controller builds them, and a term starts its workers over them. While it
  // leads, its controller alone changes the tenant set; when the term ends, the meta cluster's set is applied again.
  const standbyFeed = !!cfg.virtualClusters?.enabled && !!cfg.leaderElection?.enabled && !syncerOnly;
  const metaTenants =
    cfg.virtualClusters?.enabled && (syncerOnly || standbyFeed)
      ? new MetaTenantRegistry({ meta: clients[0]!, informers: metaInformers, defaults: managerDefaults(cfg) })
      : undefined;
  let leading = false;
  /** the meta cluster's tenants as last reported; the configuration's static tenants are never the feed's to remove */
  const metaSet = new Map<string, Tenant>();
  const staticKeys = new Set(tenants.list().map((t) => t.key));
  metaTenants?.subscribe((e) => {
    if (e.type === 'upsert') metaSet.set(e.tenant.key, e.tenant);
    else metaSet.delete(e.key);
    if (leading && !syncerOnly) return;
    if (e.type === 'upsert') tenants.upsert(e.tenant);
    else if (!staticKeys.has(e.key)) tenants.remove(e.key);
  });
  /** standByAgain makes the tenant set the meta cluster's again after a term, whatever the term's controller left. */
  const standByAgain = () => {
    leading = false;
    if (!standbyFeed) return;
    for (const t of tenants.list()) if (!staticKeys.has(t.key) && !metaSet.has(t.key)) tenants.remove(t.key);
    for (const t of metaSet.values()) tenants.upsert(t);
  };
  // It reads only, so it runs for the whole process, standing by included; a start that failed is tried again.
  let metaStarted: Promise<void> | undefined;
  const startMetaTenants = () =>
    (metaStarted ??= metaTenants?.start().catch((e: unknown) => {
      metaStarted = undefined;
      throw e;
    }));
  // Controllers run once (their queues and informers end with a leadership term): one per term.
  const newGitops = () =>
    cfg.gitops?.enabled && !syncerOnly
      ? new GitOpsController({
          meta: clients[0]!,
          informers: metaInformers,
          cacheRoot: cfg.gitops.cacheDir ?? MANAGER_DEFAULTS.gitops.cacheDir,
          timeoutMs: (cfg.gitops.timeoutSeconds ?? MANAGER_DEFAULTS.gitops.timeoutSeconds) * 1000,
          webhook: cfg.gitops.webhook,
          addresses: { allowPrivateAddresses: cfg.gitops.allowPrivateAddresses },
          limits: cfg.gitops.limits,
          minIntervalMs: cfg.gitops.minIntervalSeconds === undefined ? undefined : cfg.gitops.minIntervalSeconds * 1000,
          scope: { sources: cfg.gitops.policy?.sources, platformSources: declaredSources(cfg) },
        })
      : undefined;
  const newSyncer = (name: string, superClient: KubeClient, registry: TenantRegistry) =>
    new Syncer({
      superClient,
      superInformers: superInformers(superClient),
      host,
      registry,
      tenantInformers,
      workers: cfg.syncer?.workers,
      maxInFlightPerTenant: cfg.syncer?.maxInFlightPerTenant,
      adaptiveConcurrency: cfg.syncer?.adaptiveConcurrency,
      schedulingWindow: cfg.syncer?.schedulingWindow,
      podCreateRate: cfg.syncer?.podCreateRate,
      podCreateYield: cfg.syncer?.podCreateYield,
      superByteRate: cfg.syncer?.superByteRate,
      tenantRequestTimeoutMs:
        cfg.syncer?.tenantRequestTimeoutSeconds === undefined
          ? undefined
          : cfg.syncer.tenantRequestTimeoutSeconds * 1000,
      patrolIntervalMs: (cfg.syncer?.patrolIntervalSeconds ?? MANAGER_DEFAULTS.syncer.patrolIntervalSeconds) * 1000,
      name,
      placement: signed && { cluster: name, signed },
      onTenantCacheExceeded: (t, reason) => {
        cacheStates.exceeded(t, reason);
        void reportCacheExceeded(clients[0]!, t, reason);
      },
      onTenantServed: (t) => cacheStates.served(t),
    });
  // The manager runs a syncer for every super cluster not marked external; `vc syncer` the one it is given.
  const makeSyncers = () =>
    supers.flatMap((s, i) =>
      (syncerOnly ? s.name === o.syncerOnly : !s.external && !s.metaOnly)
        ? [newSyncer(s.name, clients[i]!, routed(s.name))]
        : [],
    );
  const syncers = makeSyncers();
  // Registered super clusters serve the tenants of the meta cluster (the first super cluster's registry); which of
  // their objects each one syncs is the syncer's placement decision.
  // A registry per leadership term: its queue and informers end with the term.
  const newRegistry = () =>
    new SuperClusterRegistry({
      meta: clients[0]!,
      namespace: reg?.namespace,
      reserved: supers.map((s) => s.name),
      probeIntervalMs: reg?.probeIntervalSeconds === undefined ? undefined : reg.probeIntervalSeconds * 1000,
      connectTimeoutMs: reg?.connectTimeoutSeconds === undefined ? undefined : reg.connectTimeoutSeconds * 1000,
      fieldManager: IDENTITY.manager,
      // `vc syncer` of a registered super cluster: its own registration only, read but not reported on.
      ...(syncerOnly && { only: o.syncerOnly, writeStatus: false }),
    });
  let registry: SuperClusterRegistry | undefined;
  let registered: RegisteredSyncers | undefined;
  let registeredPods: RegisteredPods | undefined;
  let unwatchRegistry: (() => void) | undefined;
  // The namespace scheduler sees every tenant of every super cluster, and every super cluster: the statically
  // configured ones (always ready) and the registered ones.
  const schedulerSupers: SuperClusterSource = {
    list: liveSupers,
    onChange: (cb) => registry?.onChange(() => cb()),
  };
  let scheduler: NamespaceScheduler | undefined;
  let virtualClusters: VirtualClusterController | undefined;
  let backups: BackupController | undefined;
  let gitops: GitOpsController | undefined;
  let capi: CapiProvider | undefined;
  let running = false;
  const term = new RunGroup();
  /**
   * termRunnables are what runs while this manager leads (or, without leader election, for the whole process), in
   * start order; a term stops them in reverse: writers first, the syncers and the tenant set they serve last. The
   * tenants' control planes this process runs (local provisioner) outlive a term: a lease lost under load must not
   * restart every tenant's apiserver. The next term finds them running; the manager's stop ends them.
   */
  const termRunnables = (t: SyncerTerm): Runnable[] => [
    {
      // GitSources declared in the configuration become objects, owned by the field manager vc-manager-config.
      name: 'configured GitSources',
      start: async () => {
        for (const src of syncerOnly ? [] : (cfg.gitops?.sources ?? []))
          await clients[0]!.apply(GITSOURCES, src as KubeObject, IDENTITY.managerConfig);
      },
      stop: async () => {},
    },
    {
      name: 'tenant set',
      start: async () => {
        await startMetaTenants();
        leading = true;
      },
      stop: async () => standByAgain(),
    },
    {
      // The syncers' caches outlive a term (warmed while standing by): a term starts their workers over them.
      name: 'syncers',
      start: async () => void (await Promise.all(syncers.map((s) => s.start(t)))),
      stop: async () => void (await Promise.all(syncers.map((s) => s.standDown()))),
    },
    ...(reg?.enabled && (!syncerOnly || registeredExternal.has(o.syncerOnly!))
      ? [
          {
            name: 'super cluster registry',
            start: async () => {
              const r = new RegisteredSyncers((name, client) => newSyncer(name, client, routed(name)));
              registered = r;
              registry = newRegistry();
              const mine = (name: string) => (syncerOnly ? name === o.syncerOnly : !registeredExternal.has(name));
              // The fence of confined control planes follows the Pods of every registered super cluster, its syncer
              // here or in a process of its own: the tenant's Pods there are its own to reach.
              const feed = lifecycle?.podAddresses;
              const p = feed && new RegisteredPods(feed, (client) => superPodsOf(superInformers(client)));
              registeredPods = p;
              unwatchRegistry = registry.onChange((list) => {
                void r.apply(list.filter((x) => mine(x.name)));
                void p?.apply(list);
              });
              await registry.start();
            },
            // The registered syncers stop before the registry closes the clients they use.
            stop: async () => {
              unwatchRegistry?.();
              await registeredPods?.stop();
              registeredPods = undefined;
              await registered?.stop();
              registered = undefined;
              await registry?.stop();
              registry = undefined;
            },
          },
        ]
      : []),
    ...(lifecycle
      ? [
          {
            name: 'VirtualCluster controller',
            start: async () => {
              virtualClusters = lifecycle.newController();
              await virtualClusters.start();
              backups = lifecycle.newBackups();
              await backups.start();
            },
            stop: async () => {
              await backups?.stop();
              backups = undefined;
              await virtualClusters?.stop();
              virtualClusters = undefined;
            },
          },
        ]
      : []),
    ...(cfg.clusterApi?.enabled && !syncerOnly
      ? [
          {
            // Cluster API's control planes become VirtualClusters, which the VirtualCluster controller provisions.
            name: 'Cluster API provider',
            start: async () => {
              capi = new CapiProvider({ meta: clients[0]!, informers: metaInformers });
              await capi.start();
            },
            stop: async () => {
              await capi?.stop();
              capi = undefined;
            },
          },
        ]
      : []),
    ...(cfg.gitops?.enabled && !syncerOnly
      ? [
          {
            name: 'GitOps controller',
            start: async () => {
              gitops = newGitops();
              await gitops?.start();
            },
            stop: async () => {
              await gitops?.stop();
              gitops = undefined;
            },
          },
        ]
      : []),
    ...(cfg.scheduler?.enabled && !syncerOnly
      ? [
          {
            name: 'namespace scheduler',
            start: async () => {
              scheduler = new NamespaceScheduler({
                tenants,
                tenantInformers,
                supers: schedulerSupers,
                superInformers,
                signingKey: await signingKey(),
                policy: cfg.scheduler!.policy,
                workers: cfg.scheduler!.workers,
                publish: { client: clients[0]!, namespace: signingNamespace },
              });
              await scheduler.start();
            },
            stop: async () => {
              await scheduler?.stop();
              scheduler = undefined;
            },
          },
        ]
      : []),
  ];
  const start = async (t: SyncerTerm = {}) => {
    await term.start(termRunnables(t));
    running = true;
  };
  const halt = async () => {
    running = false;
    await term.stop();
  };
  const ops: OpsServer = await startOpsServer({
    host: cfg.metrics?.host ?? MANAGER_DEFAULTS.metrics.host,
    port: cfg.metrics?.port ?? MANAGER_DEFAULTS.metrics.port,
  });
  const removeChecks = [
    addHealthCheck('plugins', (): true | string => (host.names().length ? true : 'no plugin loaded')),
    addReadyCheck('syncers', (): true | string =>
      running || !!cfg.leaderElection?.enabled ? true : 'syncers not started',
    ),
  ];
  // While another replica leads, this one keeps the syncers' caches (and the tenant feed of `vc syncer`) synced, so
  // that winning the Lease starts the workers over them instead of listing everything again.
  const warm = async () => {
    await Promise.all([startMetaTenants(), ...syncers.map((s) => s.warm())]);
  };
  const warming = warm().catch((err: unknown) =>
    log.error({ err }, 'warming the caches failed; a leadership term starts them again'),
  );
  const stopElection = new AbortController();
  let lastTerm = Promise.resolve();
  let election: Promise<void> | undefined;
  if (cfg.leaderElection?.enabled) {
    const le = cfg.leaderElection;
    const elector = new LeaderElector({
      client: clients[0]!,
      namespace: le.namespace ?? MANAGER_DEFAULTS.leaderElection.namespace,
      // A syncer process leads on a Lease of its own super cluster: the manager and each such syncer have one leader.
      name: syncerOnly
        ? `${MANAGER_DEFAULTS.syncerLeasePrefix}${o.syncerOnly}`
        : (le.name ?? MANAGER_DEFAULTS.leaderElection.name),
      identity: localIdentity(),
      holderGone: (id) => holderGone(id),
      leaseDurationSeconds: le.leaseDurationSeconds,
      renewDeadlineSeconds: le.renewDeadlineSeconds,
      retryPeriodSeconds: le.retryPeriodSeconds,
      onStartedLeading: async (signal) => {
        // A lost lease does not wait for its term to halt before standing again: terms run one after another, so a
        // new term never starts controllers while the last one still stops them.
        const previous = lastTerm;
        let ended = () => {};
        lastTerm = new Promise<void>((res) => (ended = res));
        try {
          await previous;
          if (signal.aborted) return;
          log.info('became leader; starting syncers');
          try {
            await start({ signal, holds: () => elector.holds() });
            // Leadership can end while start() still runs (a slow cache sync): then the signal is already aborted
            // and no abort event will come, so wait only for one that has not happened yet.
            if (!signal.aborted)
              await new Promise<void>((res) => signal.addEventListener('abort', () => res(), { once: true }));
          } finally {
            // Also after a start() that failed halfway: what it started (syncers' informers and tenant clients)
            // would otherwise keep their connections, and the next term would replace the only references to it.
            await halt();
          }
        } finally {
          ended();
        }
      },
      onStoppedLeading: () => log.info('stopped leading'),
    });
    election = (async () => {
      while (!stopElection.signal.aborted) await elector.run(stopElection.signal);
    })();
  } else {
    await start();
  }
  log.info(
    { opsPort: ops.port, superClusters: names, syncerOnly: o.syncerOnly, plugins: host.names() },
    'manager started',
  );
  return {
    opsPort: ops.port,
    isLeader: () => running,
    get lifecycle() {
      return virtualClusters;
    },
    get gitops() {
      return gitops;
    },
    syncers,
    get scheduler() {
      return scheduler;
    },
    host,
    get registry() {
      return registry;
    },
    registeredSyncers: () => registered?.syncers() ?? new Map(),
    superClusters: liveSupers,
    async stop() {
      stopElection.abort();
      await election;
      await lastTerm;
      if (running) await halt();
      // Stopping them releases a warm-up still waiting for a cache to sync.
      await metaTenants?.stop();
      await Promise.all(syncers.map((s) => s.stop()));
      await warming;
      await lifecycle?.stopProvisioners();
      cacheStates.clear();
      removeChecks.forEach((r) => r());
      await ops.close();
      clients.forEach((c) => c?.close());
      await host.close();
    },
  };
}

/** declaredSources are the `namespace/name` of the GitSources the configuration declares: platform sources. */
function declaredSources(cfg: ManagerConfig): string[] {
  return (cfg.gitops?.sources ?? []).map((src) => {
    const m = (src as { metadata?: { namespace?: string; name?: string } }).metadata;
    return `${m?.namespace ?? ''}/${m?.name ?? ''}`;
  });
}
