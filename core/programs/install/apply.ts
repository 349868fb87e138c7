import type { KubeClient, KubeObject, Resource } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { InstallError, MANAGED_SELECTOR, FIELD_MANAGER, objectRef } from './render.ts';

/**
 * ResourceMapper finds the REST resource of a kind by discovery (as kubectl's RESTMapper does), one request per
 * group version, so that every kind deploy/ renders is applied and listed without a table kept by hand.
 */
export class ResourceMapper {
  private readonly byGroupVersion = new Map<string, Promise<Map<string, Resource>>>();

  constructor(private readonly c: KubeClient) {}

  /** resourceFor is the resource of apiVersion/kind; an InstallError when the cluster does not serve it. */
  async resourceFor(apiVersion: string, kind: string): Promise<Resource> {
    const r = (await this.groupVersion(apiVersion)).get(kind);
    if (!r) throw new InstallError(`the cluster serves no ${kind} in ${apiVersion}`);
    return r;
  }

  /**
   * resourceOrNull is resourceFor, or null when the group version (404) or kind is not served. Any other failure (an
   * unreachable cluster, a refused credential) is thrown: read as "not served", it made `vc uninstall` against the
   * wrong cluster report success having deleted nothing.
   */
  async resourceOrNull(apiVersion: string, kind: string): Promise<Resource | null> {
    try {
      return await this.resourceFor(apiVersion, kind);
    } catch (e) {
      if (e instanceof InstallError || isNotFound(e)) return null;
      throw e;
    }
  }

  private groupVersion(apiVersion: string): Promise<Map<string, Resource>> {
    let p = this.byGroupVersion.get(apiVersion);
    if (!p) {
      const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
      const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
      p = this.c
        .request<{ resources: Array<{ name: string; kind: string; namespaced: boolean }> }>('GET', path)
        .then(
          (l) =>
            new Map(
              l.resources
                .filter((r) => !r.name.includes('/'))
                .map((r) => [
                  r.kind,
                  { group: group!, version: version!, resource: r.name, kind: r.kind, namespaced: r.namespaced },
                ]),
            ),
        );
      // A failed discovery is not cached: the next call asks again (a CRD applied a moment ago).
      p.catch(() => this.byGroupVersion.delete(apiVersion));
      this.byGroupVersion.set(apiVersion, p);
    }
    return p;
  }
}

/**
 * PRUNABLE_KINDS are the kinds `vc install` looks for objects of its own in when pruning and uninstalling: every kind
 * deploy/ and its components render, and the vn-agent's prerequisites (Secret, ConfigMap, CertificateSigningRequest).
 * CustomResourceDefinitions are not pruned (deleting one deletes every object of it); `vc uninstall --crds` removes
 * them.
 */
export const PRUNABLE_KINDS: ReadonlyArray<{ apiVersion: string; kind: string }> = [
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
  { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding' },
  { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest' },
  { apiVersion: 'v1', kind: 'Namespace' },
];

/** CRD_KIND is the kind prune leaves alone and `vc uninstall --crds` removes. */
export const CRD_KIND = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' } as const;

/**
 * pruneSet is what a re-run deletes: the live objects carrying the install label that are neither in the new render
 * nor kept (the prerequisites this run made), never a CustomResourceDefinition, in PRUNABLE_KINDS order (workloads
 * first, namespaces last). It reads nothing but its arguments.
 */
export function pruneSet(
  live: readonly KubeObject[],
  rendered: readonly KubeObject[],
  keep: readonly KubeObject[] = [],
): KubeObject[] {
  const wanted = new Set([...rendered, ...keep].map(objectRef));
  const order = (o: KubeObject) => PRUNABLE_KINDS.findIndex((k) => k.kind === o.kind);
  return live
    .filter((o) => o.kind !== CRD_KIND.kind && !wanted.has(objectRef(o)) && !o.metadata?.deletionTimestamp)
    .sort((a, b) => order(a) - order(b));
}

/** listManaged lists every object of `kinds` that carries the install label, cluster-wide. */
export async function listManaged(
  c: KubeClient,
  mapper: ResourceMapper,
  kinds: ReadonlyArray<{ apiVersion: string; kind: string }>,
): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const k of kinds) {
    const r = await mapper.resourceOrNull(k.apiVersion, k.kind);
    if (!r) continue;
    const items = (await c.list(r, { labelSelector: MANAGED_SELECTOR })).items;
    out.push(...items.map((o) => ({ ...o, apiVersion: k.apiVersion, kind: k.kind })));
  }
  return out;
}

/** AppliedObject is one object of an install run and what the apply did to it. */
export interface AppliedObject {
  ref: string;
  action: 'created' | 'configured' | 'unchanged';
  object: KubeObject;
}

/**
 * applyObjects server-side-applies the rendered objects in their order with field manager vc-install (forcing
 * ownership of the fields it sets), and tells for each whether it was created, changed or left as it was (the
 * resourceVersion before and after).
 */
export async function applyObjects(
  c: KubeClient,
  mapper: ResourceMapper,
  objects: readonly KubeObject[],
): Promise<AppliedObject[]> {
  const out: AppliedObject[] = [];
  for (const o of objects) {
    const r = await mapper.resourceFor(o.apiVersion!, o.kind!);
    const ns = r.namespaced ? o.metadata?.namespace : undefined;
    const before = await c.getOrNull(r, ns, o.metadata!.name!);
    const after = await c.apply(r, o, FIELD_MANAGER, { force: true });
    const action = !before
      ? 'created'
      : before.metadata?.resourceVersion === after.metadata?.resourceVersion
        ? 'unchanged'
        : 'configured';
    out.push({ ref: objectRef(o), action, object: after });
  }
  return out;
}

/** deleteObjects deletes the objects in their order, background propagation; it returns those it deleted. */
export async function deleteObjects(
  c: KubeClient,
  mapper: ResourceMapper,
  objects: readonly KubeObject[],
): Promise<string[]> {
  const out: string[] = [];
  for (const o of objects) {
    const r = await mapper.resourceFor(o.apiVersion!, o.kind!);
    const gone = await c.delete(r, r.namespaced ? o.metadata?.namespace : undefined, o.metadata!.name!, {
      uid: o.metadata?.uid,
      propagationPolicy: 'Background',
    });
    if (gone) out.push(objectRef(o));
  }
  return out;
}

interface Workload extends KubeObject {
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
  };
}

/**
 * rolloutState says whether a Deployment or DaemonSet runs its current template everywhere it should, and a short
 * `available/desired` text. It reads nothing but the object.
 */
export function rolloutState(w: Workload): { done: boolean; text: string } {
  const s = w.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (w.metadata?.generation ?? 1);
  if (w.kind === 'DaemonSet') {
    const want = s.desiredNumberScheduled ?? 0;
    const done = observed && (s.updatedNumberScheduled ?? 0) === want && (s.numberAvailable ?? 0) === want;
    return { done, text: `${s.numberAvailable ?? 0}/${want} nodes available` };
  }
  const want = w.spec?.replicas ?? 1;
  const done =
    observed && (s.updatedReplicas ?? 0) === want && (s.availableReplicas ?? 0) === want && (s.replicas ?? 0) === want;
  return { done, text: `${s.availableReplicas ?? 0}/${want} replicas available` };
}

/** waitRollouts polls each Deployment and DaemonSet of the render until rolled out, a line each as it completes. */
export async function waitRollouts(
  c: KubeClient,
  mapper: ResourceMapper,
  objects: readonly KubeObject[],
  o: { timeoutMs: number; progress: (line: string) => void },
): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  for (const w of objects.filter((x) => x.kind === 'Deployment' || x.kind === 'DaemonSet')) {
    const r = await mapper.resourceFor(w.apiVersion!, w.kind!);
    const ref = `${w.kind} ${w.metadata!.namespace}/${w.metadata!.name}`;
    for (;;) {
      const live = await c.get<Workload>(r, w.metadata!.namespace, w.metadata!.name!);
      const state = rolloutState(live);
      if (state.done) {
        o.progress(`rolled out: ${ref} (${state.text})`);
        break;
      }
      if (Date.now() > deadline)
        throw new InstallError(
          `${ref} not rolled out within ${Math.round(o.timeoutMs / 1000)}s (${state.text}): ` +
            `kubectl -n ${w.metadata!.namespace} describe ${w.kind!.toLowerCase()} ${w.metadata!.name}`,
        );
      await new Promise((res) => setTimeout(res, 1000));
    }
  }
}
