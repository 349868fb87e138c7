import { Gauge } from 'prom-client';
import { KubeClient, type KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { registry as metricsRegistry } from '../metrics/registry.ts';
import { hasComponents, type Provisioner } from '../provisioners/provisioner.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import {
  DEFAULT_HEALTH_LIMITS,
  judge,
  missedDeath,
  sameHealth,
  type ComponentName,
  type HealthLimits,
  type HealthVerdict,
  type LeaseResult,
  type ProbeResults,
  type ReadyzResult,
  type SyncerLag,
} from './health.ts';

const log = childLogger({ controller: 'tenant-health' });

/** DEFAULT_HEALTH_INTERVAL_MS is how often every served tenant is probed. */
export const DEFAULT_HEALTH_INTERVAL_MS = 10_000;
/** DEFAULT_PROBE_TIMEOUT_MS bounds each request of a probe. */
export const DEFAULT_PROBE_TIMEOUT_MS = 5000;
/** PROBE_CONCURRENCY is how many tenants are probed at once. */
const PROBE_CONCURRENCY = 4;

/** HealthTarget is one served tenant the monitor probes. */
export interface HealthTarget {
  /** the VirtualCluster's cache key (namespace/name): what onChange names */
  key: string;
  /** the tenant's root namespace: its cluster key in the syncer and the provisioner */
  root: string;
  vc: VirtualCluster;
  /** admin kubeconfig of the tenant control plane */
  kubeconfig: string;
  provisioner?: Provisioner;
}

/** SyncerLagSource answers what the syncer of this process knows of a tenant (by root), or undefined. */
export type SyncerLagSource = (root: string) => { waiting: number; inFlight: number; synced: boolean } | undefined;

/** HealthMonitorOptions configure the monitor. */
export interface HealthMonitorOptions {
  intervalMs?: number;
  timeoutMs?: number;
  limits?: Partial<HealthLimits>;
  syncerLag?: SyncerLagSource;
  /** called with a target's key when its verdict changes (the VirtualCluster controller enqueues it) */
  onChange: (key: string) => void;
}

interface Entry {
  target: HealthTarget;
  client: KubeClient;
  verdict?: HealthVerdict;
  /** a failure seen since the controller last took a verdict: it is shown once even if it healed meanwhile */
  pending?: HealthVerdict;
  probing?: Promise<void>;
  /** a probe was asked for while one ran: run once more after it */
  again: boolean;
  /** the restart count last seen per component, and the growths not yet taken by the controller */
  restartsSeen: Map<string, number>;
  restarted: Map<ComponentName, number>;
  /** components the provisioner said died since the last probe began: shown down once even if back before it looked */
  died: Set<string>;
  /** bumped by reset: a probe that began before it reports on processes that are gone, and is dropped */
  generation: number;
  unsyncedSince?: number;
}

const liveMonitors = new Set<HealthMonitor>();
const TENANT_BOUND =
  "Bounded: one series per tenant this manager serves (the manager's own VirtualCluster count, capped per namespace " +
  'by virtualClusters.maxPerNamespace), times the four components; a removed tenant’s series are dropped.';
new Gauge({
  name: 'vc_tenant_healthy',
  help: `Whether a served tenant passed its last health probe (1) or not (0). ${TENANT_BOUND}`,
  labelNames: ['tenant'],
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const m of liveMonitors) for (const [root, v] of m.verdicts()) this.set({ tenant: root }, v.healthy ? 1 : 0);
  },
});
new Gauge({
  name: 'vc_tenant_component_healthy',
  help: `Whether one component of a served tenant (etcd, kube-apiserver, kube-controller-manager, syncer) passed its last health probe. ${TENANT_BOUND}`,
  labelNames: ['tenant', 'component'],
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const m of liveMonitors)
      for (const [root, v] of m.verdicts())
        for (const c of v.components) this.set({ tenant: root, component: c.name }, c.healthy ? 1 : 0);
  },
});
new Gauge({
  name: 'vc_tenant_component_restarts',
  help:
    'How often a component of a served tenant was restarted after it died, as its provisioner counts ' +
    `(local: since the manager started it). ${TENANT_BOUND}`,
  labelNames: ['tenant', 'component'],
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const m of liveMonitors)
      for (const [root, v] of m.verdicts())
        for (const c of v.components)
          if (c.restarts !== undefined) this.set({ tenant: root, component: c.name }, c.restarts);
  },
});

/**
 * HealthMonitor probes every tenant it is given, each interval and at once when the provisioner reports a component
 * died: the provisioner's report of its processes or workloads, the apiserver's /readyz?verbose and /version, the
 * controller manager's leader Lease, and the syncer's queue and caches for the tenant. It keeps the latest verdict per
 * tenant (core/lifecycle/health.ts) and calls onChange when one changes; it writes nothing itself, so the VirtualCluster
 * controller stays the one writer of status.
 */
export class HealthMonitor {
  private readonly entries = new Map<string, Entry>();
  private readonly limits: HealthLimits;
  private timer?: NodeJS.Timeout;
  private readonly unsubscribes = new Map<Provisioner, () => void>();
  private stopped = false;

  constructor(private readonly o: HealthMonitorOptions) {
    this.limits = { ...DEFAULT_HEALTH_LIMITS, ...o.limits };
  }

  /** start begins the rounds. */
  start(): void {
    liveMonitors.add(this);
    this.stopped = false;
    this.timer = setInterval(() => void this.round(), this.o.intervalMs ?? DEFAULT_HEALTH_INTERVAL_MS);
    this.timer.unref();
  }

  /** stop ends the rounds, waits for the probes under way and closes the tenants' clients. */
  async stop(): Promise<void> {
    this.stopped = true;
    liveMonitors.delete(this);
    clearInterval(this.timer);
    for (const u of this.unsubscribes.values()) u();
    this.unsubscribes.clear();
    await Promise.all([...this.entries.values()].map((e) => e.probing));
    for (const e of this.entries.values()) e.client.close();
    this.entries.clear();
  }

  /**
   * watch starts (or updates) the probing of a served tenant; a new kubeconfig gets a new client. The first probe
   * runs at once.
   */
  async watch(t: HealthTarget): Promise<void> {
    const old = this.entries.get(t.key);
    if (old && old.target.kubeconfig === t.kubeconfig) {
      old.target = t;
      return;
    }
    const client = await KubeClient.fromString(t.kubeconfig, `the kubeconfig of VirtualCluster ${t.key}`, {
      timeoutMs: this.o.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS,
      maxSockets: 2,
    });
    old?.client.close();
    this.entries.set(t.key, {
      target: t,
      client,
      again: false,
      generation: 0,
      restartsSeen: old?.restartsSeen ?? new Map(),
      restarted: old?.restarted ?? new Map(),
      // a death reported before the new kubeconfig (a new control plane, or new credentials) is not shown again
      died: new Set(),
      ...(old?.verdict && { verdict: old.verdict }),
    });
    this.subscribe(t.provisioner);
    void this.probe(t.key);
  }

  /**
   * reset forgets what was seen of a tenant whose control plane was just rolled (every process replaced on purpose):
   * what probes found during the roll is not a failure, and a probe under way is dropped. A new probe starts at once.
   */
  reset(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.generation++;
    e.verdict = undefined;
    e.pending = undefined;
    e.died.clear();
    void this.probe(key);
  }

  /** unwatch stops probing a tenant and forgets its verdict. */
  unwatch(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    void (e.probing ?? Promise.resolve()).finally(() => e.client.close());
  }

  /** verdict is the tenant's latest health verdict, undefined before its first probe ends. */
  verdict(key: string): HealthVerdict | undefined {
    return this.entries.get(key)?.verdict;
  }

  /**
   * take is the verdict the controller shows next: a failure seen since its last take first, even one that healed
   * before the controller got to it (an etcd restarted in a second still gets its Degraded status and Warning event),
   * then the latest verdict, for which the key is enqueued again.
   */
  take(key: string): HealthVerdict | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    const restarted = [...e.restarted].map(([name, restarts]) => ({ name, restarts }));
    e.restarted.clear();
    const withRestarts = (v: HealthVerdict | undefined) => v && (restarted.length ? { ...v, restarted } : v);
    if (!e.pending) return withRestarts(e.verdict);
    const v = withRestarts(e.pending)!;
    e.pending = undefined;
    if (!sameHealth(v, e.verdict)) queueMicrotask(() => this.o.onChange(key));
    return v;
  }

  /** verdicts lists the latest verdict of each probed tenant by root namespace (for the metrics). */
  *verdicts(): Iterable<[string, HealthVerdict]> {
    for (const e of this.entries.values()) if (e.verdict) yield [e.target.root, e.verdict];
  }

  /** probed resolves when the probe under way for key (if any) has ended: tests and the bench wait on it. */
  async probed(key: string): Promise<void> {
    await this.entries.get(key)?.probing;
  }

  /** subscribe listens once per provisioner for its components dying, and probes their tenants at once. */
  private subscribe(p: Provisioner | undefined): void {
    if (!hasComponents(p) || !p.onComponentExit || this.unsubscribes.has(p)) return;
    this.unsubscribes.set(
      p,
      p.onComponentExit((root, component) => {
        for (const e of this.entries.values())
          if (e.target.root === root) {
            e.died.add(component);
            void this.probe(e.target.key);
          }
      }),
    );
  }

  /** round probes every tenant, PROBE_CONCURRENCY at a time. */
  private async round(): Promise<void> {
    const keys = [...this.entries.keys()];
    for (let i = 0; i < keys.length && !this.stopped; i += PROBE_CONCURRENCY)
      await Promise.all(keys.slice(i, i + PROBE_CONCURRENCY).map((k) => this.probe(k)));
  }

  /** probe runs one probe of key, or asks for one more after the one under way. */
  private probe(key: string): Promise<void> {
    const e = this.entries.get(key);
    if (!e || this.stopped) return Promise.resolve();
    if (e.probing) {
      e.again = true;
      return e.probing;
    }
    e.probing = (async () => {
      do {
        e.again = false;
        await this.probeOnce(e).catch((err: unknown) =>
          log.warn({ vc: key, err: err instanceof Error ? err.message : String(err) }, 'health probe failed'),
        );
      } while (e.again && !this.stopped && this.entries.get(key) === e);
    })().finally(() => (e.probing = undefined));
    return e.probing;
  }

  private async probeOnce(e: Entry): Promise<void> {
    const t = e.target;
    const generation = e.generation;
    const died = [...e.died];
    e.died.clear();
    const results = await this.collect(e);
    const now = new Date();
    const verdict = judge(results, now, this.limits);
    if (this.entries.get(t.key) !== e || e.generation !== generation) return;
    const missed = missedDeath(results, verdict, died, now, this.limits);
    for (const c of verdict.components) {
      if (c.restarts === undefined) continue;
      const seen = e.restartsSeen.get(c.name);
      if (seen !== undefined && c.restarts > seen) e.restarted.set(c.name, c.restarts);
      e.restartsSeen.set(c.name, c.restarts);
    }
    const changed = !sameHealth(e.verdict, verdict);
    e.verdict = verdict;
    if (!changed && !missed) return;
    // what died is shown first, even where the probe's own verdict blames a component that failed with it
    if (missed) e.pending = missed;
    else if (!verdict.healthy) e.pending = verdict;
    log.info(
      { vc: t.key, tenant: t.root, healthy: verdict.healthy, component: verdict.component, reason: verdict.reason },
      verdict.healthy ? 'tenant healthy' : `tenant unhealthy: ${verdict.message}`,
    );
    this.o.onChange(t.key);
  }

  /** collect runs the probes of one tenant; each answers what it found or why it found nothing. */
  private async collect(e: Entry): Promise<ProbeResults> {
    const t = e.target;
    const components = hasComponents(t.provisioner) ? await t.provisioner.components(t.vc, t.root) : undefined;
    const readyz = await readyzOf(e.client);
    const answered = 'status' in readyz;
    const [version, lease] = await Promise.all([
      answered && readyz.status === 200 ? versionOf(e.client) : undefined,
      answered ? leaseOf(e.client) : ({ state: 'unknown', error: 'the apiserver does not answer' } as LeaseResult),
    ]);
    return {
      ...(components && { components }),
      readyz,
      ...(version && { version }),
      lease,
      ...this.syncerOf(e),
    };
  }

  /** syncerOf is the syncer's lag for the tenant, with since when its caches have been seen unsynced. */
  private syncerOf(e: Entry): { syncer?: SyncerLag } {
    const s = this.o.syncerLag?.(e.target.root);
    if (!s) return {};
    const now = Date.now();
    if (s.synced) e.unsyncedSince = undefined;
    else e.unsyncedSince ??= now;
    return { syncer: { ...s, unsyncedForMs: e.unsyncedSince === undefined ? 0 : now - e.unsyncedSince } };
  }
}

/** readyzOf asks the apiserver's /readyz?verbose. */
async function readyzOf(c: KubeClient): Promise<ReadyzResult> {
  try {
    const r = await c.getText('/readyz', { query: { verbose: true } });
    return { status: r.status, body: r.text };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/** versionOf is the apiserver's gitVersion, or undefined. */
async function versionOf(c: KubeClient): Promise<string | undefined> {
  try {
    return (await c.request<{ gitVersion?: string }>('GET', '/version')).gitVersion;
  } catch {
    return undefined;
  }
}

/** leaseOf reads kube-system/kube-controller-manager, the controller manager's leader Lease. */
async function leaseOf(c: KubeClient): Promise<LeaseResult> {
  try {
    const l = await c.getOrNull<
      KubeObject & { spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number } }
    >(R.leases, 'kube-system', 'kube-controller-manager');
    if (!l) return { state: 'absent' };
    return {
      state: 'present',
      ...(l.spec?.holderIdentity && { holder: l.spec.holderIdentity }),
      ...(l.spec?.renewTime && { renewTime: l.spec.renewTime }),
      ...(l.spec?.leaseDurationSeconds !== undefined && { durationSeconds: l.spec.leaseDurationSeconds }),
    };
  } catch (e) {
    return { state: 'unknown', error: e instanceof Error ? e.message : String(e) };
  }
}
