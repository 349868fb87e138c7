import type { EventRecorder } from '../controller/events.ts';
import type { KubeClient } from '../kube/client.ts';
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { ANN, IDENTITY, LABEL } from '../names/names.ts';
import { DEFAULT_POLICY, type SleepWorkloads } from '../tenancy/policy.ts';
import { canSleep, type ProvisionLimits, type Provisioner } from '../provisioners/provisioner.ts';
import { CONTINUE, type Outcome } from './decisions.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import {
  asleep,
  idleDue,
  servedBefore,
  SCALED_TO_ZERO,
  scaledToZeroMessage,
  SLEEP_DEFERRED,
  SLEEP_REFUSED,
  sleepDeferredMessage,
  sleepDeferredUntil,
  SLEEPING,
  sleepRequestedAt,
  sleepsTotal,
  specChangedWhileAsleep,
  WAKE_WINDOW_MS,
  WOKEN,
  wakeSeconds,
  wakesTotal,
  workloadsRunning,
} from './sleep.ts';

const log = childLogger({ controller: 'virtualcluster-sleep' });

/** SleepControlOptions are what SleepControl reads of the VirtualCluster controller. */
export interface SleepControlOptions {
  meta: KubeClient;
  /** the super cluster, where a tenant's Pods run (read when its policy's sleep.workloads is KeepAwake) */
  superClient: KubeClient;
  events: EventRecorder;
  provisioners: Partial<Record<string, Provisioner>>;
  /** the cached VirtualClusters */
  list: () => VirtualCluster[];
  /** the served tenant's root namespace, provisioner type and its policy's sleep.workloads and maxWakesPerHour, by key */
  served: (key: string) =>
    | {
        root: string;
        provisioner: string | undefined;
        workloads?: SleepWorkloads | undefined;
        maxWakesPerHour?: number | undefined;
      }
    | undefined;
  enqueue: (key: string) => void;
  /** how often served tenants with spec.sleep are checked for idleness (default 5 s) */
  idleCheckMs?: number;
}

/**
 * SleepControl is the I/O of sleep and wake beside the VirtualCluster reconcile: it asks a sleep (the
 * sleep-requested annotation) for each tenant idle past its spec.sleep.afterIdle, and when a front door wakes a
 * tenant it clears the request, records the event and the metrics and enqueues the tenant, whose reconcile then
 * serves it again.
 */
export class SleepControl {
  private readonly offWake: Array<() => void> = [];
  /**
   * per tenant root a front door woke whose reconcile has not seen the wake yet, the sleep (sleepEpisode) it woke from:
   * a pass that finds the tenant awake already (it answered the sleep request Busy meanwhile) never takes the entry,
   * which then must not be read as the wake of a later sleep
   */
  private readonly wokenByRequest = new Map<string, string | undefined>();
  /** per tenant root, the sleep (sleepEpisode) whose wake by command or spec was counted: a reconcile that runs again
   * before the cache shows the tenant Running sees the same sleep and counts nothing more */
  private readonly counted = new Map<string, string>();
  /** per tenant root, when it was woken (ms epoch) within the last WAKE_WINDOW_MS, by any cause */
  private readonly wakes = new Map<string, number[]>();
  /** per tenant root, the end of the deferral its SleepDeferred event announced (so it is told once) */
  private readonly deferralTold = new Map<string, number>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: SleepControlOptions) {}

  /** start listens for wakes and checks for idle tenants from now on. */
  start(): void {
    for (const prov of Object.values(this.o.provisioners))
      if (canSleep(prov)) this.offWake.push(prov.onWake((root, ms) => void this.woken(root, ms)));
    this.timer = setInterval(() => void this.sleepIdle(), this.o.idleCheckMs ?? 5000);
    this.timer.unref();
  }

  /** stop ends both. */
  stop(): void {
    clearInterval(this.timer);
    this.offWake.splice(0).forEach((off) => off());
  }

  /** request sets (at: RFC 3339) or clears (null) the sleep-requested annotation of vc. */
  async request(vc: VirtualCluster, at: string | null): Promise<void> {
    const m = vc.metadata!;
    const patch = { metadata: { annotations: { [ANN.sleepRequested]: at } } };
    await this.o.meta.patch(R.virtualclusters, m.namespace, m.name!, patch, 'merge', {
      fieldManager: IDENTITY.manager,
    });
  }

  /**
   * takeWake reports, once, whether the tenant at root was woken from its current sleep by a request through its
   * front door: else a Sleeping tenant without a sleep request was woken by hand (`vc wake`).
   */
  takeWake(root: string, vc: VirtualCluster): boolean {
    if (!this.wokenByRequest.has(root)) return false;
    const from = this.wokenByRequest.get(root);
    this.wokenByRequest.delete(root);
    return from === sleepEpisode(vc);
  }

  /** woken records a wake a front door started: the request is cleared, an event and the metrics written. */
  private async woken(root: string, ms: number): Promise<void> {
    const vc = this.o.list().find((v) => this.o.served(objectKey(v))?.root === root);
    if (!vc) return;
    this.wokenByRequest.set(root, sleepEpisode(vc));
    this.noteWake(root);
    wakesTotal.inc({ cause: 'request' });
    wakeSeconds.observe(ms / 1000);
    try {
      await this.request(vc, null);
      await this.o.events.record(vc, 'Normal', WOKEN, `woken by a request through the front door in ${ms} ms`);
    } catch (e) {
      log.warn({ vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) }, 'recording a wake failed');
    }
    this.o.enqueue(objectKey(vc));
  }

  /** sleepIdle asks the sleep of each Running tenant whose front door was idle for its spec.sleep.afterIdle. */
  private async sleepIdle(): Promise<void> {
    const now = Date.now();
    for (const vc of this.o.list()) {
      const served = this.o.served(objectKey(vc));
      const prov = served?.provisioner ? this.o.provisioners[served.provisioner] : undefined;
      if (!served || !canSleep(prov) || !idleDue(vc, prov.activity(served.root), now)) continue;
      if (served.workloads === 'KeepAwake' && (await this.busy(vc, served.root))) continue;
      const max = served.maxWakesPerHour ?? DEFAULT_POLICY.sleepMaxWakesPerHour;
      const until = sleepDeferredUntil(this.wakes.get(served.root) ?? [], now, max);
      if (until !== undefined) {
        await this.tellDeferred(vc, served.root, sleepDeferredMessage(max, until, false), until);
        continue;
      }
      await this.request(vc, new Date(now).toISOString()).catch((e: unknown) =>
        log.warn({ vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) }, 'asking a sleep failed'),
      );
    }
  }

  /** noteWake records a wake of the tenant at root now, forgetting those older than the window sleeps count them in. */
  private noteWake(root: string): void {
    const now = Date.now();
    const kept = (this.wakes.get(root) ?? []).filter((t) => t > now - WAKE_WINDOW_MS);
    kept.push(now);
    this.wakes.set(root, kept);
  }

  /** newDeferral reports whether the deferral until untilMs of the tenant at root is not told yet, and marks it told. */
  private newDeferral(root: string, untilMs: number): boolean {
    if (this.deferralTold.get(root) === untilMs) return false;
    this.deferralTold.set(root, untilMs);
    return true;
  }

  /** tellDeferred records the SleepDeferred event of a tenant kept awake until untilMs, once per deferral. */
  private async tellDeferred(vc: VirtualCluster, root: string, message: string, untilMs: number): Promise<void> {
    if (!this.newDeferral(root, untilMs)) return;
    log.info({ vc: objectKey(vc), until: new Date(untilMs).toISOString() }, 'kept awake: woken too often');
    await this.o.events
      .record(vc, 'Warning', SLEEP_DEFERRED, message)
      .catch((e: unknown) =>
        log.warn({ vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) }, 'recording an event failed'),
      );
  }

  /**
   * busy reports whether the tenant has Pods running (or pending) in the super cluster, its control plane's own Pods
   * (those with a component label) aside; when they cannot be listed it is taken as busy, and sleeps at the next check.
   */
  private async busy(vc: VirtualCluster, root: string): Promise<boolean> {
    try {
      const pods = await this.o.superClient.list(R.pods, {
        labelSelector: `${LABEL.cluster}=${root},!${LABEL.component}`,
      });
      const n = workloadsRunning(pods.items);
      if (n > 0) log.debug({ vc: objectKey(vc), pods: n }, 'idle, kept awake by its running Pods');
      return n > 0;
    } catch (e) {
      log.warn(
        { vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) },
        "listing the tenant's Pods failed",
      );
      return true;
    }
  }

  /**
   * ifAsked puts the tenant to sleep when its sleep-requested annotation asks (and it ran before), and stops
   * there: a sleeping tenant is not provisioned, served or synced. A spec change since it fell asleep, a request
   * through its front door after the sleep was asked for, a tenant that cannot sleep, or one woken maxWakesPerHour
   * times within the last hour (its policy's sleep.maxWakesPerHour: it is kept awake) clears the request instead.
   */
  async ifAsked(
    vc: VirtualCluster,
    root: string,
    provisioner: Provisioner | undefined,
    type: string | undefined,
    effective: () => VirtualCluster,
    limits: ProvisionLimits,
    workloads: SleepWorkloads = 'Ignore',
    maxWakesPerHour: number = DEFAULT_POLICY.sleepMaxWakesPerHour,
  ): Promise<Outcome> {
    const at = sleepRequestedAt(vc);
    if (at === undefined && vc.status?.phase === 'Sleeping') {
      // A wake through the front door was counted by woken; its sleep is marked counted too, so a pass that reads the
      // Sleeping status again (from a cache not yet showing the wake) does not count it once more as a command.
      const byRequest = this.takeWake(root, vc);
      if (this.firstWake(root, vc) && !byRequest) {
        this.noteWake(root);
        wakesTotal.inc({ cause: 'command' });
        return { events: [{ type: 'Normal', reason: WOKEN, message: 'the sleep request was removed (vc wake)' }] };
      }
    }
    if (at === undefined || !servedBefore(vc)) return CONTINUE;
    if (specChangedWhileAsleep(vc)) {
      await this.request(vc, null);
      if (!this.firstWake(root, vc)) return CONTINUE;
      this.noteWake(root);
      wakesTotal.inc({ cause: 'spec' });
      return { events: [{ type: 'Normal', reason: WOKEN, message: 'the spec changed: woken to apply it' }] };
    }
    const until =
      vc.status?.phase === 'Sleeping'
        ? undefined
        : sleepDeferredUntil(this.wakes.get(root) ?? [], Date.now(), maxWakesPerHour);
    if (until !== undefined) {
      // A request from git or by hand is bounded as idleness is: else a definition re-applied after every wake would
      // cycle the tenant through sleeps and wakes as fast as its clients connect.
      await this.request(vc, null);
      if (!this.newDeferral(root, until)) return CONTINUE;
      const message = sleepDeferredMessage(maxWakesPerHour, until, true);
      return { events: [{ type: 'Warning', reason: SLEEP_DEFERRED, message }] };
    }
    const answer = canSleep(provisioner)
      ? await provisioner.sleep(effective(), root, at, limits)
      : ({
          asleep: false,
          reason: 'NoFrontDoor',
          message: `the ${type} provisioner cannot put tenants to sleep`,
        } as const);
    if (answer.asleep) {
      if (vc.status?.phase !== 'Sleeping') sleepsTotal.inc();
      const out = asleep(vc);
      if (workloads !== 'ScaleToZero') return out;
      // Deleted after the apiserver stopped: the syncer cannot delete the tenant's Pods before the wake.
      const n = await this.scaleToZero(root);
      if (n > 0) out.events!.push({ type: 'Normal', reason: SCALED_TO_ZERO, message: scaledToZeroMessage(n) });
      return out;
    }
    await this.request(vc, null);
    if (answer.reason === 'Busy') return CONTINUE;
    return { events: [{ type: 'Warning', reason: SLEEP_REFUSED, message: answer.message }] };
  }

  /**
   * scaleToZero deletes the tenant's Pods in the super cluster (its control plane's own aside) and returns how many it
   * deleted. A failure fails the pass, which is retried: the tenant is asleep by then and the sleep asked again finds
   * it so.
   */
  private async scaleToZero(root: string): Promise<number> {
    const pods = await this.o.superClient.list(R.pods, {
      labelSelector: `${LABEL.cluster}=${root},!${LABEL.component}`,
    });
    let n = 0;
    for (const p of pods.items) {
      const m = p.metadata!;
      if (m.deletionTimestamp) continue;
      if (await this.o.superClient.delete(R.pods, m.namespace, m.name!)) n++;
    }
    if (n > 0)
      log.info({ root, pods: n }, 'asleep: its Pods in the super cluster deleted (sleep.workloads ScaleToZero)');
    return n;
  }

  /** firstWake tells whether this is the first wake seen of the tenant's current sleep, and remembers it. */
  private firstWake(root: string, vc: VirtualCluster): boolean {
    const episode = sleepEpisode(vc);
    if (episode !== undefined && this.counted.get(root) === episode) return false;
    if (episode !== undefined) this.counted.set(root, episode);
    return true;
  }
}

/**
 * sleepEpisode names one sleep of a tenant: the time its Ready condition turned False for Sleeping (undefined when
 * the status shows none: each wake is then counted).
 */
export function sleepEpisode(vc: VirtualCluster): string | undefined {
  const c = vc.status?.conditions?.find((x) => x.type === 'Ready' && x.reason === SLEEPING);
  return c?.lastTransitionTime ?? undefined;
}
