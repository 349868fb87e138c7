import { applyPatch, type Operation } from 'rfc6902';
import type { KubeObject } from '../kube/client.ts';
import { sameStatus } from './diff.ts';
import type { Plan, Step } from './plan.ts';

/**
 * RECENT_WRITE_TTL_MS is how long a bind or status write of the syncer stands in for a tenant cache that has not shown
 * it yet. A tenant object's watch event usually comes within a second of the write; longer than that, a status changed
 * in the tenant by someone else to what the syncer wrote before is repaired by the next super change or the patrol.
 */
export const RECENT_WRITE_TTL_MS = 10_000;

interface Entry {
  /** the node the syncer bound the object to */
  node?: string;
  /** the status the syncer last wrote */
  status?: unknown;
  /** when the entry stops counting, on the clock `now` */
  until: number;
}

type StatusStep = Extract<Step, { op: 'patchTenantStatus' }>;

/**
 * RecentTenantWrites remembers, per tenant object (tenant and uid), the bind and the status the syncer wrote last, until
 * the tenant cache shows them or RECENT_WRITE_TTL_MS passes. A pass planned from a cache that has not caught up with
 * those writes would send them again: a second Binding (refused as already bound, but sent and counted) and a second
 * status equal to the first. `filter` drops those from the plan; anything else the pass plans is kept.
 */
export class RecentTenantWrites {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly ttlMs = RECENT_WRITE_TTL_MS,
  ) {}

  /** size is how many objects have a write remembered (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  /** bound records a Binding of the tenant object `uid` to `node` that the apiserver accepted. */
  bound(tenant: string, uid: string, node: string): void {
    this.put(tenant, uid, { node });
  }

  /** statusWritten records the status a patchTenantStatus step left on the tenant object `uid`. */
  statusWritten(tenant: string, uid: string, status: unknown): void {
    this.put(tenant, uid, { status });
  }

  /**
   * recordSteps records the status each patchTenantStatus step of a pass left, the steps having been written with
   * success: the status is the step applied to the object it was planned from.
   */
  recordSteps(tenant: string, planned: KubeObject | undefined, steps: readonly Step[] | undefined): void {
    const uid = planned?.metadata?.uid;
    if (!uid || !steps) return;
    for (const s of steps) {
      if (s.op !== 'patchTenantStatus') continue;
      const after = statusAfter(planned, s);
      if (after.ok) this.statusWritten(tenant, uid, after.status);
    }
  }

  /**
   * filter drops from a plan for the tenant object `cached` (as the tenant cache has it) the bind and the status
   * writes that repeat what the syncer wrote and the cache does not show yet. An entry the cache has caught up with,
   * or that is older than the TTL, is forgotten and the plan kept as it is.
   */
  filter(tenant: string, cached: KubeObject | undefined, plan: Plan): Plan {
    const uid = cached?.metadata?.uid;
    if (!uid) return plan;
    const k = `${tenant}/${uid}`;
    const e = this.entries.get(k);
    if (!e) return plan;
    const node = (cached as { spec?: { nodeName?: string } }).spec?.nodeName;
    const status = (cached as { status?: unknown }).status;
    const caughtUp =
      (e.node === undefined || node === e.node) && (e.status === undefined || sameStatus(status, e.status));
    if (e.until <= this.now() || caughtUp) {
      this.entries.delete(k);
      return plan;
    }
    const repeatsBind = (x: Plan['effects'][number]) =>
      x.type === 'bind' && !node && x.uid === uid && e.node !== undefined && x.node === e.node;
    const repeatsStatus = (s: Step) => {
      if (s.op !== 'patchTenantStatus' || e.status === undefined) return false;
      const after = statusAfter(cached, s);
      return after.ok && sameStatus(after.status, e.status);
    };
    const effects = plan.effects.filter((x) => !repeatsBind(x));
    const steps = plan.steps.filter((s) => !repeatsStatus(s));
    const afterEffects = plan.afterEffects?.filter((s) => !repeatsStatus(s));
    if (
      effects.length === plan.effects.length &&
      steps.length === plan.steps.length &&
      afterEffects?.length === plan.afterEffects?.length
    )
      return plan;
    return { ...plan, effects, steps, ...(afterEffects && { afterEffects }) };
  }

  private put(tenant: string, uid: string, add: Partial<Entry>): void {
    const k = `${tenant}/${uid}`;
    const old = this.entries.get(k);
    // Re-inserted at the end: the map stays in the order entries expire, so pruning stops at the first live one.
    this.entries.delete(k);
    this.entries.set(k, { ...old, ...add, until: this.now() + this.ttlMs });
    const now = this.now();
    for (const [key, v] of this.entries) {
      if (v.until > now) break;
      this.entries.delete(key);
    }
  }
}

/**
 * statusAfter is the status a patchTenantStatus step leaves on the object it was planned from (its preconditions,
 * `test` operations, checked against that object), or ok=false when the step does not apply to it.
 */
export function statusAfter(obj: KubeObject, step: StatusStep): { ok: true; status: unknown } | { ok: false } {
  const doc = structuredClone({ metadata: obj.metadata ?? {}, status: (obj as { status?: unknown }).status });
  const results = applyPatch(doc, step.ops as Operation[]);
  if (results.some((r) => r !== null)) return { ok: false };
  return { ok: true, status: doc.status };
}
