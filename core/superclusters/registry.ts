// SuperClusterRegistry keeps the set of super clusters registered in the meta cluster, the way the original
// VirtualCluster found them: a Cluster API Cluster per super cluster, its `<name>-kubeconfig` Secret, and in the super
// cluster the supercluster-info ConfigMap whose id must equal the Cluster's name. Each Cluster is reconciled on change
// and probed periodically; what it found goes to the Cluster's status (condition SuperClusterReady) and to onChange
// subscribers (the manager's syncers, the scheduler).

import { isDeepStrictEqual } from 'node:util';
import { KubeClient, type KubeObject, type Resource } from '../kube/client.ts';
import { LABEL } from '../names/names.ts';
import { Informer, objectKey } from '../kube/informer.ts';
import { renderSafeKubeconfig } from '../kube/kubeconfig.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { Runner, type Result } from '../controller/runner.ts';
import { setCondition, type Condition } from '../controller/status.ts';
import { queueMetrics } from '../controller/metrics.ts';
import { WorkQueue } from '../queue/workqueue.ts';
import {
  clusterState,
  DEFAULT_REGISTRATION_NAMESPACE,
  kubeconfigSecretName,
  RegistrationError,
  SUPERCLUSTER_INFO,
  superClusterId,
  type ClusterState,
  CLUSTER_NAME_LABEL,
  CLUSTERS,
  duplicateOf,
  kubeconfigFromSecret,
  readyCondition,
  RegistrationFailure,
  unreachable,
  type ClusterRef,
  type SecretLike,
} from './registration.ts';

const log = childLogger({ controller: 'superclusters' });

/** REGISTRY_DEFAULTS are the registry's timings when its options leave them out. */
export const REGISTRY_DEFAULTS = { probeIntervalMs: 30_000, connectTimeoutMs: 10_000 } as const;

/** RegisteredSuperCluster is one registration as the registry last found it. */
export interface RegisteredSuperCluster {
  /** name is the Cluster's name, which the super cluster's supercluster-info names as its id */
  name: string;
  /** namespace is the Cluster's namespace in the meta cluster */
  namespace: string;
  state: ClusterState;
  /**
   * client reaches the super cluster; it is set once its supercluster-info id checked with the current credentials
   * and stays while the super cluster is merely unreachable (a new client replaces it when the Secret changes)
   */
  client?: KubeClient;
  /** kubeconfig is the accepted kubeconfig (inline credentials only), for a syncer in its own process */
  kubeconfig?: string;
  /** message says why the registration is not ready, naming the object and field */
  message?: string;
}

/** SuperClusterRegistryOptions configure a SuperClusterRegistry. */
export interface SuperClusterRegistryOptions {
  /** meta is the meta cluster, where Clusters and their kubeconfig Secrets live */
  meta: KubeClient;
  /** namespace is the one namespace whose Clusters are registrations; default DEFAULT_REGISTRATION_NAMESPACE */
  namespace?: string;
  /** names of statically configured super clusters, which no Cluster may take */
  reserved?: readonly string[];
  /** probeIntervalMs is how often each registration is checked again; default REGISTRY_DEFAULTS */
  probeIntervalMs?: number;
  /** connectTimeoutMs bounds every request to a super cluster; default REGISTRY_DEFAULTS */
  connectTimeoutMs?: number;
  /** fieldManager of the status writes */
  fieldManager?: string;
  /**
   * only limits the registry to the Clusters of this name and their kubeconfig Secrets (the `vc syncer` of one
   * registered super cluster, which has no use for the others' credentials); default every Cluster
   */
  only?: string;
  /** writeStatus false leaves the Clusters' status alone (a `vc syncer` reads them; the manager reports); default true */
  writeStatus?: boolean;
}

interface ClusterObj extends KubeObject {
  metadata: {
    name: string;
    namespace: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
  status?: { conditions?: Condition[] };
}

interface Entry extends RegisteredSuperCluster {
  /** the kubeconfig text the client was built from */
  text?: string;
  /** a client for new credentials, not yet verified */
  candidate?: { client: KubeClient; text: string };
  /** the failure message last logged, so each is logged once */
  logged?: string;
}

/**
 * SuperClusterRegistry watches Clusters (cluster.x-k8s.io) in the meta cluster and the kubeconfig Secrets that carry
 * Cluster API's cluster-name label, connects to each super cluster with a timeout, checks its supercluster-info id,
 * and reports the result in the Cluster's status. Nothing a Cluster or its Secret holds can stop it: a failure is a
 * condition, logged once, and the registration is tried again at every probe, becoming ready once fixed.
 */
export class SuperClusterRegistry {
  private readonly clusters: Informer<ClusterObj>;
  private readonly secrets: Informer;
  private readonly queue = new WorkQueue({ metrics: queueMetrics('superclusters') });
  private readonly runner: Runner;
  private readonly entries = new Map<string, Entry>();
  private readonly subs = new Set<(list: RegisteredSuperCluster[]) => void>();
  private readonly reserved: ReadonlySet<string>;
  private readonly probeMs: number;
  private readonly timeoutMs: number;
  /** Clusters in tenant namespaces, logged once and left alone */
  private readonly ignored = new Set<string>();

  constructor(private readonly o: SuperClusterRegistryOptions) {
    this.reserved = new Set(o.reserved ?? []);
    this.probeMs = o.probeIntervalMs ?? REGISTRY_DEFAULTS.probeIntervalMs;
    this.timeoutMs = o.connectTimeoutMs ?? REGISTRY_DEFAULTS.connectTimeoutMs;
    this.clusters = new Informer<ClusterObj>({
      client: o.meta,
      resource: CLUSTERS as Resource,
      namespace: o.namespace ?? DEFAULT_REGISTRATION_NAMESPACE,
      ...(o.only !== undefined && { fieldSelector: `metadata.name=${o.only}` }),
      name: 'clusters',
    });
    // A Cluster's name decides which of two same-named Clusters owns it: any change requeues all of that name.
    const enqueue = (c: KubeObject) => {
      const name = c.metadata?.name;
      for (const x of this.clusters.list()) if (x.metadata.name === name) this.queue.add(objectKey(x));
      this.queue.add(objectKey(c));
    };
    this.clusters.addHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    this.secrets = new Informer({
      client: o.meta,
      resource: R.secrets,
      namespace: o.namespace ?? DEFAULT_REGISTRATION_NAMESPACE,
      labelSelector: o.only === undefined ? CLUSTER_NAME_LABEL : `${CLUSTER_NAME_LABEL}=${o.only}`,
      name: 'supercluster-kubeconfigs',
    });
    const secretChanged = (s: KubeObject) => {
      const cluster = s.metadata?.labels?.[CLUSTER_NAME_LABEL];
      if (cluster && s.metadata?.name === kubeconfigSecretName(cluster))
        this.queue.add(`${s.metadata.namespace}/${cluster}`);
    };
    this.secrets.addHandler({ onAdd: secretChanged, onUpdate: (_a, b) => secretChanged(b), onDelete: secretChanged });
    this.runner = new Runner({
      name: 'superclusters',
      queue: this.queue,
      concurrency: 4,
      reconciler: { reconcile: (k) => this.reconcile(k) },
    });
  }

  /** start lists the Clusters and starts reconciling them; it does not wait for the super clusters to answer. */
  async start(): Promise<void> {
    this.clusters.start();
    this.secrets.start();
    await Promise.all([this.clusters.waitForSync(), this.secrets.waitForSync()]);
    this.runner.start();
  }

  /** stop stops reconciling and closes every super cluster client. */
  async stop(): Promise<void> {
    await this.runner.stop();
    await Promise.all([this.clusters.stop(), this.secrets.stop()]);
    for (const e of this.entries.values()) {
      e.client?.close();
      e.candidate?.client.close();
    }
    this.entries.clear();
  }

  /** list is every registration, sorted by name. */
  list(): RegisteredSuperCluster[] {
    return [...this.entries.values()]
      .map(({ name, namespace, state, client, kubeconfig, message }) => ({
        name,
        namespace,
        state,
        client,
        kubeconfig,
        message,
      }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.namespace < b.namespace ? -1 : 1));
  }

  /** onChange calls cb with list() after every change of a registration's state, client or message. */
  onChange(cb: (list: RegisteredSuperCluster[]) => void): () => void {
    this.subs.add(cb);
    return () => this.subs.delete(cb);
  }

  private changed(): void {
    const list = this.list();
    for (const cb of this.subs) {
      try {
        cb(list);
      } catch (e) {
        log.error({ err: e }, 'a registry subscriber failed');
      }
    }
  }

  private async reconcile(key: string): Promise<Result> {
    const c = this.clusters.get(key);
    if (!c) {
      const e = this.entries.get(key);
      if (e) {
        this.entries.delete(key);
        e.client?.close();
        e.candidate?.client.close();
        log.info({ cluster: key }, 'super cluster deregistered');
        this.changed();
      }
      return;
    }
    const ref: ClusterRef = { namespace: c.metadata.namespace, name: c.metadata.name };
    if (await this.inTenantNamespace(ref.namespace)) {
      // What a tenant's objects become in the super cluster lives in namespaces labelled with its cluster: a Cluster
      // there (a plugin copying custom resources down, say) would let a tenant choose where others' Pods run.
      if (!this.ignored.has(key)) log.warn({ cluster: key }, 'a Cluster in a tenant namespace is never registered');
      this.ignored.add(key);
      return;
    }
    const known = this.entries.get(key);
    const entry: Entry = known ?? { name: ref.name, namespace: ref.namespace, state: 'unreachable' };
    this.entries.set(key, entry);
    const before = known && { state: entry.state, message: entry.message, client: entry.client };
    if (c.metadata.deletionTimestamp) {
      this.dropClient(entry);
      this.update(entry, before, 'deregistered', undefined);
      await this.writeStatus(
        c,
        new RegistrationFailure('Deregistering', `Cluster ${key} is being deleted: no new placements`),
      );
      return;
    }
    let outcome: RegistrationFailure | { server: string };
    try {
      outcome = await this.check(c, ref, entry);
    } catch (e) {
      if (!(e instanceof RegistrationFailure)) throw e;
      outcome = e;
    }
    let state: ClusterState;
    try {
      state = clusterState(c, !(outcome instanceof RegistrationFailure));
    } catch (e) {
      if (!(e instanceof RegistrationError)) throw e;
      outcome = new RegistrationFailure('InvalidAnnotation', e.message);
      state = 'unreachable';
    }
    if (outcome instanceof RegistrationFailure) {
      if (entry.logged !== outcome.message) log.warn({ cluster: key, reason: outcome.reason }, outcome.message);
      entry.logged = outcome.message;
      // Only an outage keeps a verified client: anything else means these credentials must not be used.
      if (outcome.reason !== 'Unreachable') this.dropClient(entry);
    } else {
      if (entry.logged !== '') log.info({ cluster: key, server: outcome.server }, 'super cluster registered');
      entry.logged = '';
    }
    this.update(entry, before, state, outcome instanceof RegistrationFailure ? outcome.message : undefined);
    await this.writeStatus(c, outcome);
    return { requeueAfter: this.probeMs };
  }

  /** check reads the Secret, connects (building a new client when the credentials changed) and checks the id. */
  private async check(c: ClusterObj, ref: ClusterRef, entry: Entry): Promise<{ server: string }> {
    const rivals: ClusterObj[] = [];
    for (const x of this.clusters.list())
      if (x.metadata.name === ref.name && !(await this.inTenantNamespace(x.metadata.namespace))) rivals.push(x);
    const dup = duplicateOf(ref, rivals, this.reserved);
    if (dup)
      throw new RegistrationFailure(
        'DuplicateName',
        `Cluster ${ref.namespace}/${ref.name}: metadata.name ${ref.name} is already registered by ${dup}`,
      );
    const secret = await this.o.meta.getOrNull<KubeObject & SecretLike>(
      R.secrets,
      ref.namespace,
      kubeconfigSecretName(ref.name),
    );
    const { safe, text } = kubeconfigFromSecret(ref, secret);
    let client = entry.text === text ? entry.client : undefined;
    if (!client) {
      if (entry.candidate?.text !== text) {
        entry.candidate?.client.close();
        entry.candidate = { client: KubeClient.fromSafe(safe, { timeoutMs: this.timeoutMs }), text };
      }
      client = entry.candidate.client;
    }
    let info: (KubeObject & { data?: Record<string, string> }) | null;
    try {
      info = await client.getOrNull(R.configmaps, SUPERCLUSTER_INFO.namespace, SUPERCLUSTER_INFO.name);
    } catch (e) {
      throw unreachable(ref, safe.server, e);
    }
    if (!info) {
      const cm = `ConfigMap ${SUPERCLUSTER_INFO.namespace}/${SUPERCLUSTER_INFO.name}`;
      throw new RegistrationFailure(
        'InfoInvalid',
        `Cluster ${ref.namespace}/${ref.name}: ${cm} not found in the super cluster at ${safe.server}`,
      );
    }
    try {
      superClusterId(c, info.data);
    } catch (e) {
      if (e instanceof RegistrationError) throw new RegistrationFailure('InfoInvalid', e.message);
      throw e;
    }
    if (entry.candidate?.client === client) {
      entry.client?.close();
      entry.client = client;
      entry.text = text;
      entry.kubeconfig = renderSafeKubeconfig(safe, ref.name);
      entry.candidate = undefined;
    }
    return { server: safe.server };
  }

  /** inTenantNamespace tells whether a namespace holds a tenant's synced objects (or is unreadable: then yes). */
  private async inTenantNamespace(namespace: string): Promise<boolean> {
    const ns = await this.o.meta.getOrNull(R.namespaces, undefined, namespace);
    return !ns || !!ns.metadata?.labels?.[LABEL.cluster];
  }

  private dropClient(entry: Entry): void {
    entry.client?.close();
    entry.candidate?.client.close();
    entry.client = entry.candidate = entry.text = entry.kubeconfig = undefined;
  }

  /** update records the outcome and tells subscribers when state, message or client differ from `before`. */
  private update(
    entry: Entry,
    before: Pick<Entry, 'state' | 'message' | 'client'> | undefined,
    state: ClusterState,
    message: string | undefined,
  ): void {
    entry.state = state;
    entry.message = message;
    if (!before || before.state !== state || before.message !== message || before.client !== entry.client)
      this.changed();
  }

  /** writeStatus sets READY_CONDITION; a write that fails is logged, never retried in a loop: the probe writes again. */
  private async writeStatus(c: ClusterObj, outcome: RegistrationFailure | { server: string }): Promise<void> {
    if (this.o.writeStatus === false) return;
    const conditions = setCondition(c.status?.conditions, readyCondition(outcome, c.metadata.generation));
    if (isDeepStrictEqual(conditions, c.status?.conditions ?? [])) return;
    try {
      await this.o.meta.patch(
        CLUSTERS as Resource,
        c.metadata.namespace,
        c.metadata.name,
        { status: { conditions } },
        'merge',
        { subresource: 'status', fieldManager: this.o.fieldManager ?? 'vc-manager' },
      );
    } catch (e) {
      log.warn({ cluster: objectKey(c), err: e }, 'cannot write the Cluster status');
    }
  }
}
