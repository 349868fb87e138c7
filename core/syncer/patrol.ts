import { childLogger } from '../log.ts';
import type { CacheReader, Effect } from '../plugins/contract.ts';
import { pluginErrorOf, reportPluginError } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import { syncerMetrics } from './metrics.ts';
import type { Plan } from './plan.ts';
import { makeKey, type Router } from './routing.ts';
import type { TenantSession } from './tenants.ts';

const log = childLogger({ controller: 'syncer' });

/** PatrolOptions are what a patrol pass reads and where it sends the drift it finds. */
export interface PatrolOptions {
  sessions: readonly TenantSession[];
  host: PluginHost;
  superCache: CacheReader;
  router: Router;
  plan(key: string): Plan | undefined;
  enqueue(key: string): void;
}

/** repairs tells the effects that mend drift by themselves: a bind the tenant Pod lacks, a tenant object to delete. */
const repairs = (e: Effect): boolean => e.type === 'bind' || e.type === 'deleteTenant';

/**
 * patrol compares both sides for every served tenant: every key of a tenant or super object of each enabled plugin
 * whose plan writes (a step, a bind, a delete of the tenant object) is requeued. It returns the number of keys requeued. A key whose plan throws (a plugin that
 * fails on that object) is reported and skipped; the pass goes on with the other keys and tenants.
 */
export function patrol(o: PatrolOptions): number {
  let fixes = 0;
  for (const s of o.sessions) {
    if (!s.ready) continue;
    for (const p of o.host.resourcePlugins()) {
      if (!o.host.enabledFor(s.view, p.manifest.name)) continue;
      const keys = new Set<string>();
      const r = p.manifest.resource!;
      for (const obj of s.cache.list(r))
        keys.add(makeKey(s.tenant.key, p.manifest.name, obj.metadata?.namespace ?? '', obj.metadata?.name ?? ''));
      for (const obj of o.superCache.list(r)) {
        for (const k of o.router.routeOf(p, obj))
          if (k.tenant === s.tenant.key) keys.add(makeKey(k.tenant, p.manifest.name, k.namespace, k.name));
      }
      for (const key of keys) {
        let planned: Plan | undefined;
        try {
          planned = o.plan(key);
        } catch (err) {
          // The key's own reconcile reports it to the tenant and retries it with backoff: patrol only counts it.
          const failed = pluginErrorOf(err);
          if (failed) reportPluginError(failed, s.tenant.key, { key, patrol: true });
          else log.error({ key, err }, 'patrol could not plan a key; skipped');
          continue;
        }
        if (!planned?.steps.length && !planned?.effects.some(repairs)) continue;
        fixes++;
        syncerMetrics.patrol.inc({ tenant: s.tenant.key, plugin: p.manifest.name });
        o.enqueue(key);
      }
    }
  }
  if (fixes) log.info({ fixes }, 'patrol requeued drift');
  return fixes;
}
