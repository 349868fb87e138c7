import { clone, type PluginContext } from '@virtualcluster-ts/plugin-sdk';
import {
  type Container,
  type Pod,
  POD_POLICY_VIOLATION,
  type PodRefusal,
  type PodSpec,
} from '@virtualcluster-ts/plugin-sdk/pods';
import { checkPodFields } from './fields.ts';
import { checkImages } from './images.ts';
import { checkPodSecurity } from './podsecurity.ts';

/** ContainerStatus is the part of a container status the pods plugin writes for a refused ephemeral container. */
export interface ContainerStatus {
  name: string;
  state?: { terminated?: { exitCode: number; reason?: string; message?: string }; [state: string]: unknown };
  [field: string]: unknown;
}

/**
 * REFUSED_EXIT_CODE is the exit code of a refused ephemeral container's terminated state: 126, a shell's "found but
 * not run".
 */
export const REFUSED_EXIT_CODE = 126;

/** one is a spec of the tenant Pod's security context and one ephemeral container, for the container checks. */
const one = (tspec: PodSpec, c: Container): PodSpec => ({
  containers: [],
  ...(tspec.securityContext !== undefined && { securityContext: tspec.securityContext }),
  ephemeralContainers: [c],
});

/** at moves a refusal of `spec.ephemeralContainers[0]` (one's) to the container's index in the tenant Pod. */
const at = (r: PodRefusal, i: number): PodRefusal => {
  const move = (s: string) => s.replaceAll('spec.ephemeralContainers[0]', `spec.ephemeralContainers[${i}]`);
  return { ...r, field: move(r.field), message: move(r.message) };
};

/**
 * ephemeralRefusals checks each ephemeral container of a tenant Pod that its super Pod does not run yet as a
 * container at creation is checked: the field allow-list, the image policy and the tenant's Pod Security level (a
 * `kubectl debug --profile=sysadmin` container is privileged, refused below level privileged). Host namespaces, host
 * ports and volumes are the Pod's, checked at its creation; an ephemeral container cannot add them. Returns the
 * refusal of each container refused, by name.
 */
export function ephemeralRefusals(
  tspec: PodSpec | undefined,
  superSpec: PodSpec | undefined,
  ctx: Pick<PluginContext, 'tenant'>,
): Map<string, PodRefusal> {
  const out = new Map<string, PodRefusal>();
  const running = new Set((superSpec?.ephemeralContainers ?? []).map((c) => c.name));
  for (const [i, c] of (tspec?.ephemeralContainers ?? []).entries()) {
    if (running.has(c.name)) continue;
    const spec = one(tspec!, c);
    const r =
      checkPodFields(spec) ?? checkImages(spec, ctx.tenant) ?? checkPodSecurity(spec, ctx.tenant.podSecurityLevel);
    if (r) out.set(c.name, at(r, i));
  }
  return out;
}

/**
 * addEphemeralContainers appends to a super Pod spec the tenant's ephemeral containers it does not run yet and that
 * ephemeralRefusals lets through, each made ready for the super cluster by `translate` (the same steps a container
 * takes at the Pod's creation). Ephemeral containers are only ever added (Kubernetes allows neither a change nor a
 * removal), so those already there are left as they are. The core writes them through the super Pod's
 * ephemeralcontainers subresource (core/syncer/plan.ts splitSubresources). Returns the names added.
 */
export function addEphemeralContainers(
  superSpec: PodSpec,
  tspec: PodSpec | undefined,
  refused: ReadonlyMap<string, PodRefusal>,
  translate: (spec: PodSpec) => void,
): string[] {
  const running = new Set((superSpec.ephemeralContainers ?? []).map((c) => c.name));
  const added = (tspec?.ephemeralContainers ?? []).filter((c) => !running.has(c.name) && !refused.has(c.name));
  if (!added.length) return [];
  // translated as the containers of a spec of their own, so that steps written for containers reach them
  const spec: PodSpec = { containers: clone(added) };
  translate(spec);
  superSpec.ephemeralContainers = [...(superSpec.ephemeralContainers ?? []), ...spec.containers];
  return added.map((c) => c.name);
}

/** refusedStatus is the status a refused ephemeral container shows the tenant: terminated, with the reason. */
export const refusedStatus = (name: string, r: PodRefusal): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  image: '',
  imageID: '',
  state: { terminated: { exitCode: REFUSED_EXIT_CODE, reason: POD_POLICY_VIOLATION, message: r.message } },
});

/** shownRefused tells whether the tenant Pod already shows ephemeral container `name` as refused. */
export function shownRefused(tenantPod: Pod, name: string): boolean {
  const s = (tenantPod.status?.ephemeralContainerStatuses as ContainerStatus[] | undefined)?.find(
    (x) => x.name === name,
  );
  return s?.state?.terminated?.reason === POD_POLICY_VIOLATION;
}

/**
 * withRefusedStatuses adds to a tenant Pod status (copied from the super Pod's) the status of each refused ephemeral
 * container, which the super Pod never runs and so never reports: `kubectl debug` stops waiting on it and says why.
 */
export function withRefusedStatuses(
  statuses: ContainerStatus[] | undefined,
  refused: ReadonlyMap<string, PodRefusal>,
): ContainerStatus[] | undefined {
  if (!refused.size) return statuses;
  const have = new Set((statuses ?? []).map((s) => s.name));
  const extra = [...refused].filter(([n]) => !have.has(n)).map(([n, r]) => refusedStatus(n, r));
  return [...(statuses ?? []), ...extra];
}
