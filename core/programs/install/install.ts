import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { VIRTUAL_CLUSTER_PROBE, waitAdmissionConfigured } from '../../kube/admission.ts';
import { R } from '../../kube/resources.ts';
import {
  applyObjects,
  CRD_KIND,
  deleteObjects,
  listManaged,
  PRUNABLE_KINDS,
  pruneSet,
  ResourceMapper,
  waitRollouts,
  type AppliedObject,
} from './apply.ts';
import { formatPreflight, gatherFacts, preflightLines, type PreflightFacts, type PreflightLine } from './preflight.ts';
import { InstallError, objectRef, renderInstall, type InstallSettings, type Rendered } from './render.ts';
import { withKubeletPkiDir, withManagerConfig } from './overrides.ts';
import { withPullSecret, withPullSecretRef } from './pullsecret.ts';
import { applyKubeletCA, ensureKubeletClientCert, prerequisiteObjects } from './vnagent.ts';

/** InstallOptions are the settings of one `vc install` run against a cluster. */
export interface InstallOptions {
  settings: InstallSettings;
  kubeletCAFile?: string;
  /**
   * the `.dockerconfigjson` of the image registry's credentials (pullCredentials): written as a pull Secret in each
   * installed namespace and named by the manager's and vn-agent's Pods
   */
  pullConfig?: string;
  /** a pull Secret the platform creates in each installed namespace, named by the Pods instead of pullConfig's */
  pullSecretRef?: string;
  /** the manager's configuration file's text (readManagerConfig), instead of the base's */
  managerConfig?: string;
  /** the nodes' kubelet credential directory for the vn-agent, instead of /var/lib/kubelet/pki */
  kubeletPkiDir?: string;
  /** wait for every Deployment and DaemonSet to roll out (default true) */
  wait?: boolean;
  timeoutMs?: number;
  /** where progress lines go (one line each) */
  out: (line: string) => void;
  /** deploy/ and kubectl, for tests; default this package's deploy/ and the kubectl findKubectl finds */
  render?: { deployDir?: string; kubectl?: string };
}

/** InstallResult is what an install run did, object by object. */
export interface InstallResult {
  preflight: PreflightLine[];
  rendered: Rendered;
  applied: AppliedObject[];
  prerequisites: string[];
  pruned: string[];
}

/**
 * runPreflight gathers the facts, prints one line per requirement and throws an InstallError when a required one
 * fails (after printing all of them, with their fixes).
 */
export async function runPreflight(
  c: KubeClient,
  o: Pick<InstallOptions, 'settings' | 'kubeletCAFile' | 'out'>,
): Promise<{ lines: PreflightLine[]; facts: PreflightFacts }> {
  const facts = await gatherFacts(c, o.settings.components, { kubeletCAFile: o.kubeletCAFile });
  const lines = preflightLines(facts, o.settings.components);
  for (const l of formatPreflight(lines).split('\n')) o.out(l);
  const failed = lines.filter((l) => !l.ok && l.fatal);
  if (failed.length)
    throw new InstallError(
      `preflight: ${failed.length} requirement${failed.length > 1 ? 's' : ''} not met (see above)`,
    );
  return { lines, facts };
}

/**
 * install is `vc install` against a cluster: preflight, render deploy/ once with the settings, server-side apply of
 * every object in kustomize's order (namespaces and CRDs first), the vn-agent's prerequisites right after its
 * namespace, prune of objects with the install label the render no longer has, then each rollout and a summary of
 * what runs where.
 */
export async function install(c: KubeClient, o: InstallOptions): Promise<InstallResult> {
  const s = o.settings;
  const { lines: preflight, facts } = await runPreflight(c, o);
  const vnAgent = s.components.includes('vn-agent');
  const plain = await renderInstall(s, o.render);
  const rendered = { ...plain, objects: customize(plain.objects, o) };
  const mapper = new ResourceMapper(c);
  const first = rendered.objects.filter((x) => x.kind === 'Namespace' || x.kind === CRD_KIND.kind);
  const rest = rendered.objects.filter((x) => !first.includes(x));
  const applied = await applyObjects(c, mapper, first);

  const prerequisites: string[] = [];
  if (vnAgent) {
    prerequisites.push(await ensureKubeletClientCert(c, { version: s.version }));
    const ca = facts.kubeletCA;
    if (ca.source === 'none') throw new InstallError(`kubelet CA: ${ca.detail}`);
    await applyKubeletCA(c, ca.pem, s.version);
    prerequisites.push(
      `kubelet CA from ${ca.source === 'flag' ? ca.file : 'the cluster CA'} in ConfigMap vc-vn-agent/vc-vn-agent-kubelet-ca`,
    );
    for (const p of prerequisites) o.out(p);
  }

  applied.push(...(await applyObjects(c, mapper, rest)));
  const counts = { created: 0, configured: 0, unchanged: 0 };
  for (const a of applied) {
    counts[a.action]++;
    if (a.action !== 'unchanged') o.out(`${a.action}: ${a.ref}`);
  }
  o.out(
    `applied ${applied.length} objects: ${counts.created} created, ${counts.configured} configured, ${counts.unchanged} unchanged`,
  );

  const live = await listManaged(c, mapper, PRUNABLE_KINDS);
  const stale = pruneSet(live, rendered.objects, vnAgent ? prerequisiteObjects() : []);
  const pruned = await deleteObjects(c, mapper, stale);
  for (const p of pruned) o.out(`pruned: ${p}`);

  if (o.wait !== false) {
    await waitRollouts(c, mapper, rendered.objects, { timeoutMs: o.timeoutMs ?? 300_000, progress: o.out });
    // deploy/policy takes TenantPolicies (a CRD just installed) as parameters; until the apiserver maps them, every
    // VirtualCluster write is refused with "failed to configure policy".
    await waitAdmissionConfigured(c, R.virtualclusters, VIRTUAL_CLUSTER_PROBE, { timeoutMs: o.timeoutMs ?? 300_000 });
    o.out('admission policies for VirtualClusters evaluate');
  }
  for (const l of await whereItRuns(c, rendered.objects)) o.out(l);
  o.out('');
  o.out('Create a first tenant (a native control plane in namespace tenants, its template and the TenantPolicies):');
  o.out('  kubectl apply -k deploy/samples');
  o.out('  npx vc get tenants/team-a && npx vc kubeconfig tenants/team-a > team-a.kubeconfig');
  return { preflight, rendered, applied, prerequisites, pruned };
}

/**
 * customize applies the settings a platform would otherwise overlay on the render: the pull Secret (written, or only
 * named), the manager's configuration, the nodes' kubelet credential directory. Pure.
 */
export function customize(
  objects: readonly KubeObject[],
  o: Pick<InstallOptions, 'pullConfig' | 'pullSecretRef' | 'managerConfig' | 'kubeletPkiDir'>,
): KubeObject[] {
  let out = [...objects];
  if (o.pullConfig) out = withPullSecret(out, o.pullConfig);
  if (o.pullSecretRef) out = withPullSecretRef(out, o.pullSecretRef);
  if (o.managerConfig) out = withManagerConfig(out, o.managerConfig);
  if (o.kubeletPkiDir) out = withKubeletPkiDir(out, o.kubeletPkiDir);
  return out;
}

const isWorkload = (x: KubeObject): boolean => x.kind === 'Deployment' || x.kind === 'DaemonSet';
const POD_RESOURCE = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true };

/** podsOf lists the Pods a Deployment or DaemonSet selects by its matchLabels (none when it has no matchLabels). */
async function podsOf(c: KubeClient, w: KubeObject) {
  const sel = (w as { spec?: { selector?: { matchLabels?: Record<string, string> } } }).spec?.selector?.matchLabels;
  if (!sel || !Object.keys(sel).length) return [];
  const labelSelector = Object.entries(sel)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return (
    await c.list<KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } }>(POD_RESOURCE, {
      namespace: w.metadata!.namespace,
      labelSelector,
    })
  ).items;
}

/** whereItRuns is a line per Deployment and DaemonSet: its Pods' nodes and readiness. */
async function whereItRuns(c: KubeClient, objects: readonly KubeObject[]): Promise<string[]> {
  const out: string[] = [];
  for (const w of objects.filter(isWorkload)) {
    const items = await podsOf(c, w);
    const where = items.map(
      (p) => `${p.metadata!.name} on ${p.spec?.nodeName ?? '(unscheduled)'} (${p.status?.phase})`,
    );
    out.push(`${w.kind} ${w.metadata!.namespace}/${w.metadata!.name}: ${where.join(', ') || 'no Pods'}`);
  }
  return out;
}

/** UninstallOptions are the settings of one `vc uninstall` run. */
export interface UninstallOptions {
  /** also delete the CustomResourceDefinitions (and with them every object of theirs) */
  crds?: boolean;
  /** delete every VirtualCluster first and wait for them to go, instead of refusing */
  deleteTenants?: boolean;
  timeoutMs?: number;
  out: (line: string) => void;
}

const VC_KIND = { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster' } as const;
const GITSOURCE_KIND = { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'GitSource' } as const;

/**
 * uninstall removes what `vc install` applied (the objects with its label) and nothing else: it refuses while
 * VirtualClusters exist unless told to delete them (then deletes the GitSources that would apply them again, deletes
 * them and waits until they are gone, which needs the manager still running to remove their control planes), and
 * leaves the CRDs unless `crds`. The Deployments and DaemonSets go first, the rest (their RBAC among it) once their Pods
 * have stopped. It waits for the namespaces (and CRDs) it deleted to be gone. Each wait ends with a line of how long it
 * took, and says every half minute what it still waits for and why (holdingUp), so a slow uninstall names its wait.
 */
export async function uninstall(c: KubeClient, o: UninstallOptions): Promise<string[]> {
  const mapper = new ResourceMapper(c);
  const timeoutMs = o.timeoutMs ?? 300_000;
  const vcs = await mapper.resourceOrNull(VC_KIND.apiVersion, VC_KIND.kind);
  if (vcs) {
    const tenants = (await c.list(vcs)).items;
    const names = tenants.map((v) => `${v.metadata!.namespace}/${v.metadata!.name}`);
    if (tenants.length && !o.deleteTenants)
      throw new InstallError(
        `${tenants.length} VirtualCluster${tenants.length > 1 ? 's' : ''} still exist (${names.join(', ')}): delete them ` +
          'first, or pass --delete-tenants to delete them (and their control planes) now',
      );
    // A GitSource would apply its tenants again while they are deleted: the sources go first, and are waited for
    // (the manager takes their finalizer off once no reconcile of theirs is applying). With --crds they go now too,
    // while the manager still runs: deleted with their CRD after it, their finalizer would hold the CRD for good.
    const sources =
      tenants.length || o.crds ? await mapper.resourceOrNull(GITSOURCE_KIND.apiVersion, GITSOURCE_KIND.kind) : null;
    const doomedSources = sources ? (await c.list(sources)).items : [];
    for (const g of doomedSources) {
      await c.delete(sources!, g.metadata!.namespace, g.metadata!.name!, { uid: g.metadata!.uid });
      o.out(`deleting GitSource ${g.metadata!.namespace}/${g.metadata!.name} (it would apply its tenants again)`);
    }
    if (doomedSources.length)
      await until(
        { timeoutMs, what: 'the GitSources to be deleted', hint: 'is the manager running?', out: o.out },
        async () => (await c.list(sources!)).items.map((g) => holdingUp({ ...g, ...GITSOURCE_KIND })),
      );
    for (const v of tenants) {
      await c.delete(vcs, v.metadata!.namespace, v.metadata!.name!, { uid: v.metadata!.uid });
      o.out(`deleting VirtualCluster ${v.metadata!.namespace}/${v.metadata!.name}`);
    }
    if (tenants.length)
      await until(
        { timeoutMs, what: 'the VirtualClusters to be deleted', hint: 'is the manager running?', out: o.out },
        async () => (await c.list(vcs)).items.map((v) => holdingUp({ ...v, ...VC_KIND })),
      );
  }
  const kinds = [...PRUNABLE_KINDS, ...(o.crds ? [CRD_KIND] : [])];
  const live = await listManaged(c, mapper, kinds);
  const order = (x: KubeObject) => kinds.findIndex((k) => k.kind === x.kind);
  const doomed = live.filter((x) => o.crds || x.kind !== CRD_KIND.kind).sort((a, b) => order(a) - order(b));
  // The workloads go first, and the rest only once their Pods have stopped: a manager or agent still in its grace
  // period (releasing its Lease, ending its watches) would otherwise find its RBAC gone and be refused.
  const workloads = doomed.filter(isWorkload);
  const deleted = await deleteObjects(c, mapper, workloads);
  for (const d of deleted) o.out(`deleted: ${d}`);
  if (workloads.length) {
    o.out(`waiting for the Pods of ${workloads.map(objectRef).join(', ')} to stop`);
    await until(
      { timeoutMs, what: `the Pods of ${workloads.map(objectRef).join(', ')} to stop`, out: o.out },
      async () =>
        (await Promise.all(workloads.map((w) => podsOf(c, w))))
          .flat()
          .map((p) => holdingUp({ ...p, apiVersion: 'v1', kind: 'Pod' })),
    );
  }
  const rest = await deleteObjects(
    c,
    mapper,
    doomed.filter((x) => !isWorkload(x)),
  );
  for (const d of rest) o.out(`deleted: ${d}`);
  deleted.push(...rest);
  const waitFor = doomed.filter((x) => x.kind === 'Namespace' || x.kind === CRD_KIND.kind);
  if (waitFor.length)
    await until({ timeoutMs, what: `${waitFor.map(objectRef).join(', ')} to be gone`, out: o.out }, async () => {
      const left: string[] = [];
      for (const x of waitFor) {
        const r = await mapper.resourceFor(x.apiVersion!, x.kind!);
        const now = await c.getOrNull(r, undefined, x.metadata!.name!);
        if (now) left.push(holdingUp({ ...now, apiVersion: x.apiVersion, kind: x.kind }));
      }
      return left;
    });
  if (!o.crds) o.out('kept the CustomResourceDefinitions (vc uninstall --crds removes them and every object of them)');
  return deleted;
}

/** PROGRESS_MS is how often a wait of uninstall says what it is still waiting for. */
const PROGRESS_MS = 30_000;

/**
 * HOLDING_CONDITIONS are the conditions that say why a deleted object is not gone yet while they hold: the namespace
 * controller's (content it could not list or delete, content or finalizers remaining) and a CustomResourceDefinition's
 * Terminating (its objects being deleted).
 */
const HOLDING_CONDITIONS = new Set([
  'NamespaceDeletionDiscoveryFailure',
  'NamespaceDeletionGroupVersionParsingFailure',
  'NamespaceDeletionContentFailure',
  'NamespaceContentRemaining',
  'NamespaceFinalizersRemaining',
  'Terminating',
]);

/** Holding is what holdingUp reads of an object: its phase and message, its conditions and finalizers. */
type Holding = KubeObject & {
  status?: {
    phase?: string;
    message?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
  };
};

/**
 * holdingUp names an object uninstall is still waiting for, with what its status says keeps it: its phase (and
 * message), the conditions of HOLDING_CONDITIONS that hold, and its finalizers.
 */
export function holdingUp(x: Holding): string {
  const why: string[] = [];
  const s = x.status;
  if (s?.phase) why.push(`phase ${s.phase}${s.message ? ` (${s.message})` : ''}`);
  for (const c of s?.conditions ?? [])
    if (c.status === 'True' && c.type && HOLDING_CONDITIONS.has(c.type))
      why.push(`${c.type}: ${c.message || c.reason || 'no message'}`);
  if (x.metadata?.finalizers?.length) why.push(`finalizers ${x.metadata.finalizers.join(', ')}`);
  return why.length ? `${objectRef(x)} (${why.join('; ')})` : objectRef(x);
}

/**
 * until polls `pending` each second until it lists nothing, then says how long it waited, so that a slow uninstall's
 * output names the wait that took the time; every PROGRESS_MS it says what is still there and why (holdingUp), and
 * past timeoutMs it gives up with that.
 */
async function until(
  o: {
    timeoutMs: number;
    what: string;
    out: (line: string) => void;
    /** a question added to what is still there, pointing at the likely cause */
    hint?: string;
  },
  pending: () => Promise<string[]>,
): Promise<void> {
  const start = Date.now();
  let said = start;
  const secs = (ms: number) => Math.round(ms / 1000);
  const still = (left: string[]) => `${left.join(', ')}${o.hint ? ` (${o.hint})` : ''}`;
  for (;;) {
    const left = await pending();
    const now = Date.now();
    if (!left.length) {
      o.out(`waited ${secs(now - start)} s for ${o.what}`);
      return;
    }
    if (now - start > o.timeoutMs)
      throw new InstallError(`gave up after ${secs(o.timeoutMs)}s waiting for ${o.what}: ${still(left)}`);
    if (now - said >= PROGRESS_MS) {
      said = now;
      o.out(`still waiting for ${o.what} after ${secs(now - start)} s: ${still(left)}`);
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
}
