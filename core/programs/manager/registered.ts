// One syncer per registered super cluster, started and stopped as the registry's registrations come and go; and the
// Pods of each followed for the fence of confined control planes.

import type { KubeClient, KubeObject } from '../../kube/client.ts';
import type { SharedInformer } from '../../kube/factory.ts';
import { childLogger } from '../../log.ts';
import type { RegisteredSuperCluster } from '../../superclusters/registry.ts';
import type { Syncer } from '../../syncer/syncer.ts';

const log = childLogger({ controller: 'manager' });

/** SyncerPlan is what to do with the syncers of registered super clusters: names to stop, then names to start. */
export interface SyncerPlan {
  stop: string[];
  start: string[];
}

/**
 * planSyncers decides which syncers run: one per registration that has a verified client and is ready or draining
 * (draining keeps its placements, which its syncer must keep serving). A running syncer stays while its super cluster
 * is merely unreachable with the same client (its informers retry by themselves), and stops when the registration is
 * gone or deregistered, or its client changed (new credentials: it is started again with the new client).
 */
export function planSyncers(
  registrations: readonly Pick<RegisteredSuperCluster, 'name' | 'state' | 'client'>[],
  running: ReadonlyMap<string, KubeClient>,
): SyncerPlan {
  const want = new Map<string, KubeClient>();
  for (const r of registrations) {
    if (!r.client) continue;
    const keep = r.state === 'unreachable' && running.get(r.name) === r.client;
    if (r.state === 'ready' || r.state === 'draining' || keep) want.set(r.name, r.client);
  }
  const stop = [...running].filter(([n, c]) => want.get(n) !== c).map(([n]) => n);
  const start = [...want.keys()].filter((n) => running.get(n) !== want.get(n));
  return { stop: stop.sort(), start: start.sort() };
}

interface Running {
  client: KubeClient;
  syncer: Syncer;
  started: Promise<void>;
}

/**
 * RegisteredSyncers runs planSyncers' decisions one at a time. A syncer's start waits for its super cluster's caches,
 * which an outage can hold up: it runs in the background, so one slow super cluster never delays another's changes.
 */
export class RegisteredSyncers {
  private readonly running = new Map<string, Running>();
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly build: (name: string, client: KubeClient) => Syncer) {}

  /** apply brings the running syncers in line with the registrations; calls are applied in order. */
  apply(registrations: readonly RegisteredSuperCluster[]): Promise<void> {
    const list = [...registrations];
    this.chain = this.chain
      .then(() => this.step(list))
      .catch((err: unknown) => log.error({ err }, 'syncer change failed'));
    return this.chain;
  }

  /** syncers lists the running syncers by super cluster name, in name order. */
  syncers(): Map<string, Syncer> {
    return new Map([...this.running].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, r]) => [n, r.syncer]));
  }

  /** stop stops every syncer; later apply calls do nothing. */
  stop(): Promise<void> {
    this.closed = true;
    this.chain = this.chain.then(async () => {
      await Promise.all([...this.running.keys()].map((n) => this.stopOne(n)));
    });
    return this.chain;
  }

  private async step(list: RegisteredSuperCluster[]): Promise<void> {
    if (this.closed) return;
    const plan = planSyncers(list, new Map([...this.running].map(([n, r]) => [n, r.client])));
    for (const name of plan.stop) await this.stopOne(name);
    for (const name of plan.start) {
      const r = list.find((x) => x.name === name)!;
      const syncer = this.build(name, r.client!);
      const started = syncer
        .start()
        .catch((err: unknown) => log.error({ superCluster: name, err }, 'syncer failed to start'));
      this.running.set(name, { client: r.client!, syncer, started });
      log.info({ superCluster: name, state: r.state }, 'syncer started for a registered super cluster');
    }
  }

  private async stopOne(name: string): Promise<void> {
    const r = this.running.get(name);
    if (!r) return;
    this.running.delete(name);
    // A start still waiting for caches is released by stopping the informers; it then starts its workers, which the
    // second stop ends.
    await r.syncer.stop();
    await r.started;
    await r.syncer.stop();
    log.info({ superCluster: name }, 'syncer stopped for a registered super cluster');
  }
}

/** FollowPlan is what to do with the Pods of registered super clusters: names to leave, then names to follow. */
export interface FollowPlan {
  leave: string[];
  follow: string[];
}

/**
 * planFollow decides whose Pods a confined control plane's fence follows: every registered super cluster with a
 * verified client that is not deregistered (an unreachable or draining one still runs the tenant's Pods). A name
 * followed with another client (new credentials) is left and followed again.
 */
export function planFollow(
  registrations: readonly Pick<RegisteredSuperCluster, 'name' | 'state' | 'client'>[],
  followed: ReadonlyMap<string, KubeClient>,
): FollowPlan {
  const want = new Map<string, KubeClient>();
  for (const r of registrations) if (r.client && r.state !== 'deregistered') want.set(r.name, r.client);
  const leave = [...followed].filter(([n, c]) => want.get(n) !== c).map(([n]) => n);
  const follow = [...want].filter(([n, c]) => followed.get(n) !== c).map(([n]) => n);
  return { leave: leave.sort(), follow: follow.sort() };
}

/** PodFeed is the part of SuperPodAddresses RegisteredPods drives. */
export interface PodFeed {
  follow(name: string, informer: SharedInformer<KubeObject>): Promise<void>;
  unfollow(name: string): Promise<void>;
}

/**
 * RegisteredPods keeps the fence of confined control planes (core/dev/local/netconfine.ts, fed by SuperPodAddresses)
 * following the Pods of the super clusters registered at run time, as planFollow says, one change at a time.
 */
export class RegisteredPods {
  private readonly followed = new Map<string, KubeClient>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly feed: PodFeed,
    /** the informer of a super cluster's Pods that the syncers made (shared: no second watch) */
    private readonly podsOf: (client: KubeClient) => SharedInformer<KubeObject>,
  ) {}

  /** apply brings the followed super clusters in line with the registrations; calls are applied in order. */
  apply(registrations: readonly RegisteredSuperCluster[]): Promise<void> {
    const list = [...registrations];
    this.chain = this.chain
      .then(() => this.step(list))
      .catch((err: unknown) => log.error({ err }, 'following the Pods of registered super clusters failed'));
    return this.chain;
  }

  /** stop leaves every registered super cluster (a leadership term's registry ends). */
  stop(): Promise<void> {
    return this.apply([]);
  }

  private async step(list: RegisteredSuperCluster[]): Promise<void> {
    const plan = planFollow(list, this.followed);
    for (const name of plan.leave) {
      this.followed.delete(name);
      await this.feed.unfollow(name);
    }
    for (const name of plan.follow) {
      const client = list.find((x) => x.name === name)!.client!;
      this.followed.set(name, client);
      await this.feed.follow(name, this.podsOf(client));
    }
  }
}
