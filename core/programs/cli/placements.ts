// Where the namespace scheduler placed each tenant, as `vc get -o wide` shows it. The scheduler publishes it in its
// state ConfigMap (core/scheduler/state.ts); this reads it without trusting its shape.

import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import type { TenantPlacements } from '../../scheduler/state.ts';

/** SCHEDULER_STATE_NAMESPACES are where the scheduler publishes: vc-system when deployed, kube-system under vc up. */
export const SCHEDULER_STATE_NAMESPACES = ['vc-system', 'kube-system'] as const;

/** readSchedulerState returns the data of the scheduler's state ConfigMap, from the first namespace that holds one. */
export async function readSchedulerState(
  meta: KubeClient,
  name: string,
  namespaces: readonly string[] = SCHEDULER_STATE_NAMESPACES,
): Promise<Record<string, string> | undefined> {
  for (const ns of namespaces) {
    const cm = await meta.getOrNull<KubeObject & { data?: Record<string, string> }>(R.configmaps, ns, name);
    if (cm) return cm.data ?? {};
  }
  return undefined;
}

/**
 * stateSections returns, from every data key of the state ConfigMap that holds a JSON object, its member `section`
 * where that is an object; keys that do not parse and sections of another shape are skipped.
 */
export function stateSections(
  data: Readonly<Record<string, string>> | undefined,
  section: string,
): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const text of Object.values(data ?? {})) {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      continue;
    }
    const v = (doc as Record<string, unknown> | null)?.[section];
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) out.push(v as Record<string, unknown>);
  }
  return out;
}

function counts(v: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
  for (const [k, n] of Object.entries(v as Record<string, unknown>))
    if (typeof n === 'number' && Number.isInteger(n) && n > 0) out[k] = n;
  return out;
}

/**
 * parseTenantPlacements reads the tenants' placements (root namespace -> per super cluster counts) from the state
 * ConfigMap's data; anything malformed is left out, never an error: `vc get` must work without a scheduler.
 */
export function parseTenantPlacements(
  data: Readonly<Record<string, string>> | undefined,
): Map<string, TenantPlacements> {
  const out = new Map<string, TenantPlacements>();
  for (const tenants of stateSections(data, 'tenants')) {
    for (const [root, t] of Object.entries(tenants)) {
      if (typeof t !== 'object' || t === null) continue;
      const { namespaces, slices } = t as { namespaces?: unknown; slices?: unknown };
      out.set(root, { namespaces: counts(namespaces), slices: counts(slices) });
    }
  }
  return out;
}

/**
 * formatTenantPlacements is one tenant's PLACEMENTS cell: `r1=3ns,r2=1ns/2sl` (namespaces with a placement on each
 * super cluster, and the slices of its sliced namespaces there), sorted by super cluster; `-` when nothing is placed.
 */
export function formatTenantPlacements(t: TenantPlacements | undefined): string {
  if (!t) return '-';
  const names = [...new Set([...Object.keys(t.namespaces), ...Object.keys(t.slices)])].sort();
  if (!names.length) return '-';
  return names.map((n) => `${n}=${t.namespaces[n] ?? 0}ns${t.slices[n] ? `/${t.slices[n]}sl` : ''}`).join(',');
}
