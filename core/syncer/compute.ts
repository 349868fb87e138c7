import type { KubeObject, Resource } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { provenanceOf } from '../names/names.ts';
import type { ComputeQuotaView, PluginContext } from '../plugins/contract.ts';
import { formatMilli, type Milli, parseQuantity, QuantityError } from '../scheduler/quantity.ts';

/**
 * The tenant's compute quota (TenantPolicy spec.quota.compute): a ResourceQuota holds in one namespace, and a tenant
 * makes as many super namespaces as it has namespaces, so the syncer adds up what all the tenant's Pods and claims in
 * the super cluster hold before it copies one more. Pods are counted as the super ResourceQuota counts them (those not
 * Succeeded or Failed; requests as the scheduler sums them), with a container without a cpu or memory request counted
 * at the policy's default, so Pods without requests are bounded too. Creates still on their way into the super cache
 * count (PendingCreates keeps their usage), so parallel workers cannot overshoot together.
 */

/** Usage is what one object holds of each compute resource, in milli-units (pods: 1000 per Pod). */
export type Usage = Record<string, Milli>;

/** COMPUTE_RETRY_MS is how soon an object refused for the compute quota is planned again (other Pods may have ended). */
export const COMPUTE_RETRY_MS = 15_000;

interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}
interface ContainerLike {
  resources?: Resources;
  restartPolicy?: string;
}
interface PodLike extends KubeObject {
  spec?: {
    containers?: ContainerLike[];
    initContainers?: ContainerLike[];
    overhead?: Record<string, string>;
    resources?: Resources;
  };
  status?: { phase?: string };
}

const q = (v: string | undefined): Milli => {
  if (v === undefined) return 0n;
  try {
    return parseQuantity(v);
  } catch (e) {
    // The tenant apiserver validated the quantity; an unreadable one counts as nothing rather than stopping the sync.
    if (e instanceof QuantityError) return 0n;
    throw e;
  }
};

const DEFAULTED = ['cpu', 'memory'];
const COUNTED = ['cpu', 'memory', 'ephemeral-storage'];

/** containerUsage is one container's requests and limits, a cpu or memory request defaulted as the policy says. */
function containerUsage(c: ContainerLike, defaults: Readonly<Record<string, string>>): Usage {
  const out: Usage = {};
  const req = c.resources?.requests ?? {};
  const lim = c.resources?.limits ?? {};
  for (const r of COUNTED) {
    // Kubernetes defaults a missing request to the limit; the tenant apiserver did it already, this covers the rest.
    const request = req[r] ?? lim[r] ?? (DEFAULTED.includes(r) ? defaults[r] : undefined);
    if (request !== undefined) out[`requests.${r}`] = q(request);
    if (lim[r] !== undefined) out[`limits.${r}`] = q(lim[r]);
  }
  return out;
}

const add = (a: Usage, b: Usage): Usage => {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0n) + v;
  return out;
};

/** POD_LEVEL are the resources a Pod-level `spec.resources` may set (Kubernetes' PodLevelResources). */
const POD_LEVEL = ['cpu', 'memory'];

/**
 * podLevel puts a Pod-level `spec.resources` over the containers' sum: the scheduler and the kubelet reserve the
 * Pod-level figure for a resource it names (a request defaulting to the limit), which validation keeps at least the
 * containers' sum; the larger of the two counts, so neither a Pod-level figure nor containers without requests count
 * for less than the super cluster holds for them.
 */
function podLevel(sum: Usage, r: Resources | undefined): Usage {
  const out = { ...sum };
  for (const res of POD_LEVEL) {
    const request = r?.requests?.[res] ?? r?.limits?.[res];
    if (request !== undefined) out[`requests.${res}`] = max(q(request), out[`requests.${res}`] ?? 0n);
    const limit = r?.limits?.[res];
    if (limit !== undefined) out[`limits.${res}`] = max(q(limit), out[`limits.${res}`] ?? 0n);
  }
  return out;
}

const max = (a: Milli, b: Milli): Milli => (a > b ? a : b);

/**
 * podUsage is what a Pod holds against the compute quota: one Pod, and for each resource the sum over its containers
 * and sidecars (init containers that keep running), at least the largest other init container, or the Pod-level
 * figure when it is larger (podLevel), plus the overhead.
 */
export function podUsage(pod: PodLike, defaults: Readonly<Record<string, string>>): Usage {
  const spec = pod.spec ?? {};
  const sidecars = (spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
  let sum: Usage = {};
  for (const c of [...(spec.containers ?? []), ...sidecars]) sum = add(sum, containerUsage(c, defaults));
  for (const c of spec.initContainers ?? []) {
    if (c.restartPolicy === 'Always') continue;
    for (const [k, v] of Object.entries(containerUsage(c, defaults))) if (v > (sum[k] ?? 0n)) sum[k] = v;
  }
  const overhead: Usage = {};
  for (const [r, v] of Object.entries(spec.overhead ?? {})) if (COUNTED.includes(r)) overhead[`requests.${r}`] = q(v);
  return add(add(podLevel(sum, spec.resources), overhead), { pods: 1000n });
}

/** claimUsage is what a PersistentVolumeClaim holds against the compute quota: its requested storage. */
export function claimUsage(claim: KubeObject): Usage {
  const spec = (claim as { spec?: { resources?: Resources } }).spec;
  return { 'requests.storage': q(spec?.resources?.requests?.storage) };
}

const ended = (o: PodLike): boolean => o.status?.phase === 'Succeeded' || o.status?.phase === 'Failed';

/**
 * usageOf is what an object of `resource` (Pods, PersistentVolumeClaims) holds against the compute quota, or undefined
 * for a kind it does not count.
 */
export function usageOf(resource: string, o: KubeObject, compute: ComputeQuotaView): Usage | undefined {
  if (resource === R.pods.resource) return ended(o) ? {} : podUsage(o, compute.defaultRequests);
  if (resource === R.persistentvolumeclaims.resource) return claimUsage(o);
  return undefined;
}

/** PendingUsage lists the usage of the creates of one tenant and resource still on their way into the super cache. */
export interface PendingUsage {
  pendingUsage(tenant: string, resource: string): ReadonlyArray<{ key: string; usage: Usage }>;
}

/** ComputeCheck is what checkCompute needs to know about one write into the super cluster. */
export interface ComputeCheck {
  ctx: PluginContext;
  resource: Resource;
  tenantObj: KubeObject;
  /** the desired super object */
  desired: KubeObject;
  /** the current super object (an update), or undefined (a create) */
  superObj: KubeObject | undefined;
  pending?: Partial<PendingUsage>;
}

/**
 * checkCompute returns why a write would take the tenant over its compute quota, or undefined. Only what grows is
 * checked (a create, a claim asking for more storage): an object already in the super cluster is never removed, and
 * a tenant over a lowered quota keeps what it has.
 */
export function checkCompute(c: ComputeCheck): string | undefined {
  const compute = c.ctx.tenant.quota?.compute;
  const r = c.resource.resource;
  if (!compute || !Object.keys(compute.hard).length) return undefined;
  const want = usageOf(r, c.desired, compute);
  if (!want) return undefined;
  const before = c.superObj ? (usageOf(r, c.superObj, compute) ?? {}) : {};
  const growing = Object.keys(want).filter((k) => want[k]! > (before[k] ?? 0n) && compute.hard[k] !== undefined);
  if (!growing.length) return undefined;
  const key = c.ctx.tenant.key;
  const self = `${c.tenantObj.metadata?.namespace ?? ''}/${c.tenantObj.metadata?.name ?? ''}`;
  const seen = new Set<string>([self]);
  let held: Usage = {};
  for (const o of c.ctx.superCache.list(c.resource)) {
    const p = provenanceOf(o);
    if (p?.cluster !== key) continue;
    const id = `${p.namespace}/${p.name}`;
    if (seen.has(id)) continue;
    seen.add(id);
    held = add(held, usageOf(r, o, compute) ?? {});
  }
  for (const p of c.pending?.pendingUsage?.(key, r) ?? []) {
    if (seen.has(p.key)) continue;
    seen.add(p.key);
    held = add(held, p.usage);
  }
  for (const k of growing) {
    const hard = q(compute.hard[k]);
    const total = (held[k] ?? 0n) + want[k]!;
    if (total > hard) {
      const what = k === R.pods.resource ? `${total / 1000n} Pods` : `${formatMilli(total)} of ${k}`;
      return (
        `the tenant's ${r} would hold ${what} in all its namespaces, over its compute quota of ` +
        `${compute.hard[k]} (TenantPolicy quota.compute.hard["${k}"])`
      );
    }
  }
  return undefined;
}
