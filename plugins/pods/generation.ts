import { PREFIX } from '@virtualcluster-ts/plugin-sdk';
import type { Pod, PodStatus } from '@virtualcluster-ts/plugin-sdk/pods';

/**
 * TENANT_GENERATION is the super Pod annotation holding the tenant Pod's metadata.generation that the super Pod was
 * last written from. The two apiservers count generations apart (a tenant change the syncer does not carry down, such
 * as a new toleration, moves only the tenant's), so the super kubelet's status.observedGeneration means nothing to
 * the tenant until it is mapped back through this.
 */
export const TENANT_GENERATION = `${PREFIX}/tenant-generation`;

/** generationAnnotation is the TENANT_GENERATION annotation for a super Pod written from tenantPod (none without one). */
export function generationAnnotation(tenantPod: Pod): Record<string, string> {
  const g = tenantPod.metadata?.generation;
  return g === undefined ? {} : { [TENANT_GENERATION]: String(g) };
}

/**
 * tenantObservedGeneration maps the super kubelet's observed generation to the tenant's: once the super Pod's
 * status.observedGeneration has reached its own metadata.generation, the kubelet has seen the spec written from the
 * tenant generation the super Pod records, and that is what the tenant Pod has been observed at. Undefined while the
 * super kubelet lags (or either side lacks the numbers): the tenant keeps what it had, never going back.
 */
export function tenantObservedGeneration(superPod: Pod): number | undefined {
  const raw = superPod.metadata?.annotations?.[TENANT_GENERATION];
  const recorded = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
  const superGen = superPod.metadata?.generation;
  const observed = num(superPod.status?.observedGeneration);
  if (recorded === undefined || superGen === undefined || observed === undefined || observed < superGen)
    return undefined;
  return recorded;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * mapObservedGenerations rewrites the generations in a status copied up from superPod (its observedGeneration and
 * each condition's) into the tenant's numbers. A condition the super kubelet set at the super Pod's current
 * generation takes the mapped one; one set at an older super generation keeps the tenant Pod's value of that
 * condition, or none, since which tenant generation it was is not known.
 */
export function mapObservedGenerations(status: PodStatus, superPod: Pod, tenantPod: Pod): PodStatus {
  const out: PodStatus = { ...status };
  const mapped = tenantObservedGeneration(superPod);
  const before = tenantPod.status;
  const had = num(before?.observedGeneration);
  if (mapped !== undefined) out.observedGeneration = Math.max(mapped, had ?? 0);
  else if (had !== undefined) out.observedGeneration = had;
  else delete out.observedGeneration;
  const superGen = superPod.metadata?.generation;
  if (out.conditions) {
    out.conditions = out.conditions.map((c) => {
      if (c.observedGeneration === undefined) return c;
      const { observedGeneration, ...rest } = c;
      if (mapped !== undefined && observedGeneration === superGen) return { ...rest, observedGeneration: mapped };
      const kept = num(before?.conditions?.find((t) => t.type === c.type)?.observedGeneration);
      return kept === undefined ? rest : { ...rest, observedGeneration: kept };
    });
  }
  return out;
}
