import type { Naming } from '@virtualcluster-ts/plugin-sdk';
import type { Container, PodSpec, Volume } from '@virtualcluster-ts/plugin-sdk/pods';

/** NET_RAW is the capability the super Pod's containers lose unless they add it (raw sockets forge packets). */
export const NET_RAW = 'NET_RAW';

interface Capabilities {
  add?: string[];
  drop?: string[];
}

const runContainers = (spec: PodSpec): Container[] => [...spec.containers, ...(spec.initContainers ?? [])];

/**
 * dropNetRaw adds NET_RAW to capabilities.drop of every container that neither adds it (which only Pod Security
 * level privileged lets through) nor already drops it or ALL: container runtimes grant it by default, and with it a
 * container forges packets on the node's network.
 */
export function dropNetRaw(spec: PodSpec): void {
  for (const c of runContainers(spec)) {
    const sc = (c.securityContext ??= {}) as { capabilities?: Capabilities };
    const caps = (sc.capabilities ??= {});
    const has = (list: string[] | undefined, cap: string) => !!list?.includes(cap);
    if (has(caps.add, NET_RAW) || has(caps.add, 'ALL') || has(caps.drop, NET_RAW) || has(caps.drop, 'ALL')) continue;
    caps.drop = [...(caps.drop ?? []), NET_RAW];
  }
}

/**
 * pullPolicyFor is the pull policy of an image in a super Pod: a node's image cache must not serve one tenant's
 * private image to another tenant's Pod, so every pull is checked (Always), except for the images the platform itself
 * loaded into its nodes, which no tenant owns.
 */
export const pullPolicyFor = (image: string | undefined, preloaded: ReadonlySet<string>): 'Always' | 'IfNotPresent' =>
  preloaded.has(image ?? '') ? 'IfNotPresent' : 'Always';

/** setPullPolicies sets pullPolicyFor on every container and every image volume of a super Pod spec. */
export function setPullPolicies(spec: PodSpec, preloaded: ReadonlySet<string>): void {
  for (const c of runContainers(spec)) c.imagePullPolicy = pullPolicyFor(c.image, preloaded);
  for (const v of spec.volumes ?? []) {
    const image = v.image as { reference?: string; pullPolicy?: string } | undefined;
    if (image) image.pullPolicy = pullPolicyFor(image.reference, preloaded);
  }
}

/**
 * ephemeralClaimName is the name of the claim Kubernetes makes for a generic ephemeral volume: `<pod>-<volume>`.
 */
export const ephemeralClaimName = (podName: string, volumeName: string): string => `${podName}-${volumeName}`;

/**
 * claimEphemeralVolumes turns each generic ephemeral volume of a super Pod into a persistentVolumeClaim volume of the
 * claim the tenant's own controller makes from its template (`<pod>-<volume>`), which reaches the super cluster as
 * every tenant claim does: storage class, caps, names and the syncer's provenance. The super cluster then never makes
 * a claim from a template the tenant wrote, with the labels and annotations the tenant put in it.
 */
export function claimEphemeralVolumes(spec: PodSpec, podName: string): void {
  if (!spec.volumes) return;
  spec.volumes = spec.volumes.map((v): Volume => {
    if (v.ephemeral === undefined) return v;
    const readOnly = (v.ephemeral as { readOnly?: boolean } | null)?.readOnly;
    const claim = { claimName: ephemeralClaimName(podName, v.name), ...(readOnly && { readOnly: true }) };
    return { name: v.name, persistentVolumeClaim: claim };
  });
}

interface PodAffinityTerm {
  namespaces?: string[];
}

interface PodAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
  preferredDuringSchedulingIgnoredDuringExecution?: Array<{ podAffinityTerm?: PodAffinityTerm }>;
}

/**
 * confineAffinityNamespaces rewrites the namespaces of every Pod affinity and anti-affinity term to the tenant's super
 * namespaces, so that a term reaches only the tenant's own Pods (a namespaceSelector, which would reach every
 * namespace of the super cluster, is refused by checkPodFields).
 */
export function confineAffinityNamespaces(spec: PodSpec, names: Pick<Naming, 'superNamespace'>): void {
  const affinity = spec.affinity as { podAffinity?: PodAffinity; podAntiAffinity?: PodAffinity } | undefined;
  for (const a of [affinity?.podAffinity, affinity?.podAntiAffinity]) {
    const terms = [
      ...(a?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
      ...(a?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((p) => p.podAffinityTerm),
    ];
    for (const t of terms) if (t?.namespaces) t.namespaces = t.namespaces.map((ns) => names.superNamespace(ns));
  }
}
