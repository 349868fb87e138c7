import type { Container } from '@virtualcluster-ts/plugin-sdk/pods';

/** RESIZABLE are the resources in-place resize changes on a running container. */
const RESIZABLE = ['cpu', 'memory'] as const;

type Resources = { requests?: Record<string, unknown>; limits?: Record<string, unknown>; [k: string]: unknown };

/**
 * resizeContainers carries a tenant's in-place resize down: for each super container, the CPU and memory requests and
 * limits its tenant container sets, where they differ. A value the tenant does not set is left as the super Pod has
 * it (a super LimitRange may have filled it in at creation, and removing it would be a resize the super refuses), so
 * only what the tenant asked for moves. The core writes the change through the super Pod's resize subresource
 * (core/syncer/plan.ts splitPodPatch). Returns whether anything changed.
 */
export function resizeContainers(supers: Container[] | undefined, tenants: Container[] | undefined): boolean {
  let changed = false;
  for (const c of supers ?? []) {
    const t = tenants?.find((x) => x.name === c.name);
    const want = t?.resources as Resources | undefined;
    if (!want) continue;
    const have = ((c.resources as Resources | undefined) ?? {}) as Resources;
    let next = have;
    for (const kind of ['requests', 'limits'] as const) {
      for (const r of RESIZABLE) {
        const v = want[kind]?.[r];
        if (v === undefined || v === have[kind]?.[r]) continue;
        next = { ...next, [kind]: { ...next[kind], [r]: v } };
        changed = true;
      }
    }
    if (next !== have) c.resources = next;
  }
  return changed;
}
