import { childLogger } from '../log.ts';
import type { CacheReader, Effect, PluginContext, ResourcePlugin, TenantView } from '../plugins/contract.ts';
import { pluginErrorOf, reportPluginError } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import { syncerMetrics } from './metrics.ts';
import { superLocation, type ObjectName, type Plan } from './plan.ts';
import { makeKey, type Router } from './routing.ts';
import type { TenantSession } from '../sessions/tenants.ts';

const log = childLogger({ controller: 'syncer' });

/** PatrolSession is the part of a tenant session a patrol pass reads. */
export type PatrolSession = Pick<TenantSession, 'tenant' | 'view' | 'cache' | 'ready'>;

/** PatrolOptions are what a patrol pass reads and where it sends the drift it finds. */
export interface PatrolOptions {
  sessions: readonly PatrolSession[];
  host: PluginHost;
  superCache: CacheReader;
  router: Pick<Router, 'routeOf'>;
  plan(key: string): Plan | undefined;
  enqueue(key: string): void;
  /**
   * signature names the versions of the two objects a key's plan reads (its tenant object and its super
   * counterpart), so that a key whose objects did not change since a plan that found nothing is not planned again.
   * Without it (or without memo) every key is planned.
   */
  signature?(key: string): string;
  memo?: PatrolMemo;
}

/**
 * signatureOf is the resourceVersions of the two objects a key's plan starts from, its tenant object and its super
 * counterpart, read from the caches in ctx ('' for one that is missing).
 */
export function signatureOf(p: ResourcePlugin, ctx: PluginContext, k: ObjectName): string {
  const r = p.manifest.resource!;
  const loc = superLocation(p, ctx, k);
  const t = ctx.tenantCache.get(r, k.namespace || undefined, k.name)?.metadata?.resourceVersion ?? '';
  const s = ctx.superCache.get(r, loc.namespace, loc.name)?.metadata?.resourceVersion ?? '';
  return `${t}/${s}`;
}

/** PATROL_FULL_EVERY is how many passes may go by before a key whose objects did not change is planned again anyway. */
export const PATROL_FULL_EVERY = 60;

/** PatrolMemo remembers, per tenant session, the keys whose last plan found nothing, with their objects' versions. */
export class PatrolMemo {
  private readonly bySession = new WeakMap<
    PatrolSession,
    { view: string; byPlugin: Map<string, Map<string, MemoEntry>> }
  >();
  private pass = 0;
  private spread = 0;

  /** constructor takes the number of passes after which an unchanged key is planned again (PATROL_FULL_EVERY). */
  constructor(private readonly fullEvery = PATROL_FULL_EVERY) {}

  /** begin starts a pass. */
  begin(): void {
    this.pass++;
  }

  /**
   * keysOf returns the remembered keys of one plugin in a session; a session's are forgotten when its settings
   * changed (they change what plans say).
   */
  keysOf(s: PatrolSession, plugin: string): Map<string, MemoEntry> {
    const view = viewSignature(s.view);
    let m = this.bySession.get(s);
    if (!m || m.view !== view) this.bySession.set(s, (m = { view, byPlugin: new Map() }));
    let keys = m.byPlugin.get(plugin);
    if (!keys) m.byPlugin.set(plugin, (keys = new Map()));
    return keys;
  }

  /** fresh tells a key whose objects are as they were when its plan last found nothing, and not due a full plan. */
  fresh(e: MemoEntry | undefined, sig: string): boolean {
    return !!e && e.sig === sig && e.due > this.pass;
  }

  /**
   * entry is what to remember of a key whose plan found nothing. The next full plan of an unchanged key is spread
   * over the next fullEvery passes, so a pass never plans every key at once again.
   */
  entry(sig: string): MemoEntry {
    this.spread = (this.spread + 1) % this.fullEvery;
    return { sig, due: this.pass + this.fullEvery + this.spread };
  }
}

/** MemoEntry is one remembered key: its objects' versions and the pass at which it is planned in full again. */
export interface MemoEntry {
  sig: string;
  due: number;
}

const viewSignature = (v: TenantView): string => JSON.stringify(v);

/** repairs tells the effects that mend drift by themselves: a bind the tenant Pod lacks, a tenant object to delete. */
const repairs = (e: Effect): boolean => e.type === 'bind' || e.type === 'deleteTenant';

/**
 * patrol compares both sides for every served tenant: every key of a tenant or super object of each enabled plugin
 * whose plan writes (a step, a bind, a delete of the tenant object) is requeued. It returns the number of keys
 * requeued. A key whose plan throws (a plugin that fails on that object) is reported and skipped; the pass goes on
 * with the other keys and tenants. With a memo, a key whose two objects have the versions they had when its plan last
 * found nothing is skipped (any change on either side, a deletion included, changes them), except that each key is
 * planned in full at least every memo.fullEvery passes, for what its plan reads beyond its own two objects, and a key
 * whose plan skipped is planned on every pass.
 */
export function patrol(o: PatrolOptions): number {
  let fixes = 0;
  const memo = o.signature && o.memo;
  memo?.begin();
  const ready = o.sessions.filter((s) => s.ready);
  for (const p of o.host.resourcePlugins()) {
    const r = p.manifest.resource!;
    const plugin = p.manifest.name;
    // Each side's list is read once per plugin; super objects are routed to the keys of their tenants.
    const keysOf = new Map<string, Set<string>>();
    for (const s of ready) {
      if (!o.host.enabledFor(s.view, plugin)) continue;
      const keys = new Set<string>();
      keysOf.set(s.tenant.key, keys);
      for (const obj of s.cache.list(r))
        keys.add(makeKey(s.tenant.key, plugin, obj.metadata?.namespace ?? '', obj.metadata?.name ?? ''));
    }
    if (!keysOf.size) continue;
    for (const obj of o.superCache.list(r))
      for (const k of o.router.routeOf(p, obj))
        keysOf.get(k.tenant)?.add(makeKey(k.tenant, plugin, k.namespace, k.name));
    for (const s of ready) {
      const keys = keysOf.get(s.tenant.key);
      if (!keys) continue;
      const known = memo ? memo.keysOf(s, plugin) : undefined;
      for (const key of keys) {
        let planned: Plan | undefined;
        let sig: string | undefined;
        try {
          if (memo && known) {
            sig = o.signature!(key);
            if (memo.fresh(known.get(key), sig)) continue;
            known.delete(key);
          }
          planned = o.plan(key);
        } catch (err) {
          // The key's own reconcile reports it to the tenant and retries it with backoff: patrol only counts it.
          const failed = pluginErrorOf(err);
          if (failed) reportPluginError(failed, s.tenant.key, { key, patrol: true });
          else log.error({ key, err }, 'patrol could not plan a key; skipped');
          continue;
        }
        if (!planned?.steps.length && !planned?.effects.some(repairs)) {
          // A plan that skips waits on something beyond the key's two objects (an event on its Pod, a Pod on its
          // namespace): their versions would not tell when to plan it again, so it is not remembered.
          if (planned && !planned.skip && memo && known && sig !== undefined) known.set(key, memo.entry(sig));
          continue;
        }
        fixes++;
        syncerMetrics.patrol.inc({ tenant: s.tenant.key, plugin });
        o.enqueue(key);
      }
      // Keys whose objects are gone from both sides are not remembered any longer.
      if (known && known.size > keys.size) for (const key of known.keys()) if (!keys.has(key)) known.delete(key);
    }
  }
  if (fixes) log.info({ fixes }, 'patrol requeued drift');
  return fixes;
}
