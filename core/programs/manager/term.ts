// What a manager runs while it leads (or, without leader election, for the whole process): one leadership term.

import { GitOpsController } from '../../../gitops/controller.ts';
import { GITSOURCES } from '../../../gitops/applier/gitsource.ts';
import type { Runnable } from '../../controller/runnables.ts';
import type { KubeClient, KubeObject } from '../../kube/client.ts';
import type { InformerFactory } from '../../kube/factory.ts';
import type { BackupController } from '../../lifecycle/backups.ts';
import { CapiProvider } from '../../lifecycle/capi.ts';
import type { VirtualClusterController } from '../../lifecycle/controller.ts';
import { IDENTITY } from '../../names/names.ts';
import { childLogger } from '../../log.ts';
import { NamespaceScheduler } from '../../scheduler/controller.ts';
import { PlacementRecords } from '../../scheduler/placementrecord.ts';
import type { TenantInformerPool } from '../../sessions/pool.ts';
import { SuperClusterRegistry, type RegisteredSuperCluster } from '../../superclusters/registry.ts';
import type { SyncerTerm } from '../../syncer/options.ts';
import type { Syncer } from '../../syncer/syncer.ts';
import type { MutableTenantRegistry } from '../../tenancy/tenant.ts';
import { PLUGIN_DEFAULTS_CONFIGMAP, publishPluginDefaults } from '../../tenancy/plugindefaults.ts';
import type { ManagerConfig } from './config.ts';
import { superPodsOf, type lifecycleControllers } from './lifecycle.ts';
import { RegisteredPods, RegisteredSyncers } from './registered.ts';
import { gitopsSettings, registrySettings } from './settings.ts';
import type { ManagerShape } from './shape.ts';
import type { TenantFeed } from './tenantfeed.ts';

const log = childLogger({ controller: 'manager' });

/** TermParts are the long-lived parts of the process a term's controllers are built over. */
export interface TermParts {
  cfg: ManagerConfig;
  shape: ManagerShape;
  meta: KubeClient;
  metaInformers: InformerFactory;
  superInformers(client: KubeClient): InformerFactory;
  tenantInformers: TenantInformerPool;
  tenants: MutableTenantRegistry;
  feed: TenantFeed;
  /** the syncers of configured super clusters, which outlive a term */
  syncers: readonly Syncer[];
  /** newSyncer makes the syncer of a registered super cluster */
  newSyncer(name: string, client: KubeClient): Syncer;
  lifecycle?: ReturnType<typeof lifecycleControllers>;
  signingKey(): Promise<Uint8Array>;
  /** statics are the configured super clusters that have a client, always ready */
  statics: readonly RegisteredSuperCluster[];
}

/**
 * ManagerTerm builds the runnables of one leadership term and holds the controllers the current term runs. Controllers
 * run once (their queues and informers end with a term), so each term makes its own.
 */
export class ManagerTerm {
  virtualClusters?: VirtualClusterController;
  backups?: BackupController;
  gitops?: GitOpsController;
  capi?: CapiProvider;
  scheduler?: NamespaceScheduler;
  registry?: SuperClusterRegistry;
  registered?: RegisteredSyncers;
  private registeredPods?: RegisteredPods;
  private unwatchRegistry?: () => void;

  constructor(private readonly p: TermParts) {}

  /**
   * superClusters is the live set: the statically configured super clusters (always ready), then the registered
   * ones while this manager leads.
   */
  superClusters(): RegisteredSuperCluster[] {
    return [...this.p.statics, ...(this.registry?.list() ?? [])];
  }

  /**
   * runnables are what a term runs, in start order; a term stops them in reverse: writers first, the syncers and the
   * tenant set they serve last. The tenants' control planes this process runs (local provisioner) outlive a term: a
   * lease lost under load must not restart every tenant's apiserver. The next term finds them running; the manager's
   * stop ends them.
   */
  runnables(t: SyncerTerm): Runnable[] {
    const { runs } = this.p.shape;
    return [
      this.configuredSources(),
      this.tenantSet(),
      this.syncers(t),
      ...(runs.registry ? [this.superClusterRegistry()] : []),
      ...(runs.virtualClusters && this.p.lifecycle ? [this.virtualClusterController(this.p.lifecycle)] : []),
      ...(runs.clusterApi ? [this.clusterApiProvider()] : []),
      ...(runs.gitops && this.p.cfg.gitops ? [this.gitopsController(this.p.cfg.gitops)] : []),
      ...(runs.scheduler && this.p.cfg.scheduler ? [this.namespaceScheduler(this.p.cfg.scheduler)] : []),
    ];
  }

  /** configuredSources: GitSources declared in the configuration become objects, of field manager vc-manager-config. */
  private configuredSources(): Runnable {
    return {
      name: 'configured GitSources',
      start: async () => {
        for (const src of this.p.shape.configuredSources)
          await this.p.meta.apply(GITSOURCES, src as KubeObject, IDENTITY.managerConfig);
      },
      stop: async () => {},
    };
  }

  /** tenantSet: while the term runs, its VirtualCluster controller alone changes the tenant set. */
  private tenantSet(): Runnable {
    return { name: 'tenant set', start: () => this.p.feed.lead(), stop: async () => this.p.feed.standBy() };
  }

  /** syncers: their caches outlive a term (warmed while standing by); a term starts their workers over them. */
  private syncers(t: SyncerTerm): Runnable {
    return {
      name: 'syncers',
      start: async () => void (await Promise.all(this.p.syncers.map((s) => s.start(t)))),
      stop: async () => void (await Promise.all(this.p.syncers.map((s) => s.standDown()))),
    };
  }

  /**
   * superClusterRegistry follows the registered super clusters and runs a syncer for each this process serves; they
   * serve the tenants of the meta cluster, and which of their objects each one syncs is its placement decision.
   */
  private superClusterRegistry(): Runnable {
    return {
      name: 'super cluster registry',
      start: async () => {
        const r = new RegisteredSyncers((name, client) => this.p.newSyncer(name, client));
        this.registered = r;
        const registry = new SuperClusterRegistry({ meta: this.p.meta, ...registrySettings(this.p.cfg, this.p.shape) });
        this.registry = registry;
        const mine = (name: string) => this.p.shape.servesRegistered(name);
        // The fence of confined control planes follows the Pods of every registered super cluster, its syncer here or
        // in a process of its own: the tenant's Pods there are its own to reach.
        const feed = this.p.lifecycle?.podAddresses;
        const p = feed && new RegisteredPods(feed, (client) => superPodsOf(this.p.superInformers(client)));
        this.registeredPods = p;
        this.unwatchRegistry = registry.onChange((list) => {
          void r.apply(list.filter((x) => mine(x.name)));
          void p?.apply(list);
        });
        await registry.start();
      },
      // The registered syncers stop before the registry closes the clients they use.
      stop: async () => {
        this.unwatchRegistry?.();
        await this.registeredPods?.stop();
        this.registeredPods = undefined;
        await this.registered?.stop();
        this.registered = undefined;
        await this.registry?.stop();
        this.registry = undefined;
      },
    };
  }

  /** virtualClusterController provisions VirtualClusters and answers backup requests. */
  private virtualClusterController(lifecycle: ReturnType<typeof lifecycleControllers>): Runnable {
    return {
      name: 'VirtualCluster controller',
      start: async () => {
        // the vn-agents layer the tenants' plugin configuration over it as this controller does (plugindefaults.ts)
        const ns = this.p.cfg.scheduler?.namespace ?? PLUGIN_DEFAULTS_CONFIGMAP.namespace;
        await publishPluginDefaults(this.p.meta, ns, this.p.cfg.virtualClusters?.defaultPluginConfig).catch((e) =>
          log.error(
            { namespace: ns, err: e instanceof Error ? e.message : String(e) },
            "the plugin defaults are not published: the vn-agents layer the tenants' TenantPolicies only",
          ),
        );
        this.virtualClusters = lifecycle.newController();
        await this.virtualClusters.start();
        this.backups = lifecycle.newBackups();
        await this.backups.start();
      },
      stop: async () => {
        await this.backups?.stop();
        this.backups = undefined;
        await this.virtualClusters?.stop();
        this.virtualClusters = undefined;
      },
    };
  }

  /** clusterApiProvider: Cluster API's control planes become VirtualClusters, which the controller provisions. */
  private clusterApiProvider(): Runnable {
    return {
      name: 'Cluster API provider',
      start: async () => {
        this.capi = new CapiProvider({ meta: this.p.meta, informers: this.p.metaInformers });
        await this.capi.start();
      },
      stop: async () => {
        await this.capi?.stop();
        this.capi = undefined;
      },
    };
  }

  private gitopsController(gitops: NonNullable<ManagerConfig['gitops']>): Runnable {
    return {
      name: 'GitOps controller',
      start: async () => {
        this.gitops = new GitOpsController({
          meta: this.p.meta,
          informers: this.p.metaInformers,
          ...gitopsSettings(gitops),
        });
        await this.gitops.start();
      },
      stop: async () => {
        await this.gitops?.stop();
        this.gitops = undefined;
      },
    };
  }

  /**
   * namespaceScheduler sees every tenant of every super cluster, and every super cluster: the statically configured
   * ones (always ready) and the registered ones.
   */
  private namespaceScheduler(cfg: NonNullable<ManagerConfig['scheduler']>): Runnable {
    return {
      name: 'namespace scheduler',
      start: async () => {
        this.scheduler = new NamespaceScheduler({
          tenants: this.p.tenants,
          tenantInformers: this.p.tenantInformers,
          supers: { list: () => this.superClusters(), onChange: (cb) => this.registry?.onChange(() => cb()) },
          superInformers: (c) => this.p.superInformers(c),
          signingKey: await this.p.signingKey(),
          policy: cfg.policy,
          workers: cfg.workers,
          publish: { client: this.p.meta, namespace: this.p.shape.signingNamespace },
          records: new PlacementRecords(this.p.meta, this.p.shape.signingNamespace),
        });
        await this.scheduler.start();
      },
      stop: async () => {
        await this.scheduler?.stop();
        this.scheduler = undefined;
      },
    };
  }
}

/** knownSuperCluster is true when a super cluster of that name is live, else the reason a tenant may not name it. */
export function knownSuperCluster(live: readonly Pick<RegisteredSuperCluster, 'name'>[], name: string): true | string {
  const known = live.map((r) => r.name);
  return (
    known.includes(name) || `no super cluster of that name is configured or registered (known: ${known.join(', ')})`
  );
}
