import { Counter, Gauge } from 'prom-client';
import type { Artifact } from '../artifact.ts';
import { ApiError, isConflict, type KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { childLogger, type Logger } from '../../core/log.ts';
import { IDENTITY } from '../../core/names/names.ts';
import { registry } from '../../core/metrics/registry.ts';
import { planDiff } from './diff.ts';
import { readNamespaceLabels, readTenantPolicies, withPolicies } from './policy.ts';
import type { GitSourceStatus } from './gitsource.ts';
import { SAFETY_DEFAULTS } from './gitsource.ts';
import {
  CONFIRM_DELETION_ANNOTATION,
  SOURCE_LABEL,
  TENANT_KINDS,
  describeRef,
  objectKey,
  renderDesired,
  sourceLabelValue,
  type DesiredObject,
  type DocumentError,
  type InventoryEntry,
  type ObjectRef,
  type GitSourceRef,
  type Rendered,
} from './objects.ts';
import { checkOwner, checkScope, scopeOf, type LiveOwner, type SourceScope } from './scope.ts';
import { computeStatus, type Stop } from './status.ts';

/** PlanOptions are the GitSource settings a plan depends on. */
export interface PlanOptions {
  /** delete what left the repository; default true. When false, such objects are left alone and forgotten. */
  prune?: boolean;
  /** deletion limits; missing values take SAFETY_DEFAULTS */
  safety?: { maxDeletes?: number; maxDeletePercent?: number };
  /** the GitSource's CONFIRM_DELETION_ANNOTATION value, if any */
  confirmation?: string;
  /**
   * what the source may write (see scope.ts); without it the plan checks content only, as `vc validate` does. The
   * Applier always sets it.
   */
  scope?: SourceScope;
  /**
   * the owners of the desired objects that exist, by objectKey (null: the object does not exist); an object not in
   * the map is not checked. The Applier reads them before planning.
   */
  owners?: ReadonlyMap<string, LiveOwner | null>;
}

/** ReconcileOptions add what the status needs to PlanOptions. */
export interface ReconcileOptions extends PlanOptions {
  /** metadata.generation of the GitSource */
  generation?: number;
  /** clock of the condition transition times; default the system clock */
  now?: () => Date;
}

/** SafetyVerdict is the deletion-limit check of a plan; only VirtualClusters count. */
export interface SafetyVerdict {
  allowed: boolean;
  /** VirtualClusters the plan would delete */
  deletes: number;
  /** VirtualClusters in the inventory */
  total: number;
  maxDeletes: number;
  maxDeletePercent: number;
  /** `namespace/name` of the VirtualClusters the plan would delete */
  names: string[];
  /** true when the limits are exceeded but the confirmation annotation names this revision */
  confirmed: boolean;
}

/** ApplyPlan is what one reconcile of an artifact would do, computed without any I/O. */
export interface ApplyPlan {
  source: GitSourceRef;
  revision: string;
  digest: string;
  /** valid objects in apply order (ClusterVersions first) */
  apply: DesiredObject[];
  /** inventory entries the artifact no longer names, in deletion order (VirtualClusters first) */
  prune: InventoryEntry[];
  /** the inventory the plan starts from */
  previous: InventoryEntry[];
  errors: DocumentError[];
  pruneEnabled: boolean;
  safety: SafetyVerdict;
  /** why nothing will be pruned (the objects of `apply` are applied all the same) */
  pruneBlocked?: Stop;
  /** the confirmation annotation value that allows this plan's deletions, when one is needed and matches */
  confirmation?: string;
  /**
   * the resourceVersion at which each existing object's owner was checked, by objectKey: the apply sends it as a
   * precondition, so an object that changed hands between the check and the write is not overwritten
   */
  checkedVersions?: ReadonlyMap<string, string>;
}

/** AppliedObject is one object server-side applied. */
export interface AppliedObject {
  ref: ObjectRef;
  uid: string;
  file: string;
}

/** ApplyFailure is one object the apiserver did not accept. */
export interface ApplyFailure {
  ref: ObjectRef;
  file: string;
  message: string;
  code?: number;
}

/** PruneFailure is one inventory entry whose delete failed; it stays in the inventory. */
export interface PruneFailure {
  entry: InventoryEntry;
  message: string;
}

/** ApplyResult is what apply did. */
export interface ApplyResult {
  applied: AppliedObject[];
  applyFailures: ApplyFailure[];
  /** entries deleted by this run */
  pruned: InventoryEntry[];
  /** entries dropped from the inventory without a delete: already gone, or replaced by an object with another uid */
  gone: InventoryEntry[];
  pruneFailures: PruneFailure[];
  /** entries forgotten without a delete because pruning is off */
  orphaned: InventoryEntry[];
  /**
   * entries forgotten without a delete because they are not this source's to delete: outside its scope, or the live
   * object does not carry its label (an inventory in status is not proof of ownership: whoever writes status wrote it)
   */
  foreign: InventoryEntry[];
  /** the inventory after this run: everything applied, plus what could not be pruned */
  inventory: InventoryEntry[];
  /** the first step that failed; absent when every step succeeded */
  stop?: Stop;
  /** set when a confirmation allowed the deletions of this run */
  confirmationUsed?: string;
  durationMs: number;
}

/** ApplyReport is what one Applier.reconcile did, and the status to write for it. */
export interface ApplyReport {
  status: GitSourceStatus;
  plan: ApplyPlan | undefined;
  result: ApplyResult;
}

/** DriftReport tells how the live objects depart from an artifact. */
export interface DriftReport {
  /** desired objects that do not exist */
  missing: Array<ObjectRef & { file: string }>;
  /** desired objects whose live fields differ (JSON pointers), or whose uid is not the inventory's (`/metadata/uid`) */
  changed: Array<{ object: ObjectRef & { file: string }; fields: string[] }>;
  /** inventory entries the artifact no longer names that still exist: the next reconcile prunes them */
  extra: ObjectRef[];
  /** problems of the artifact: the objects they concern are not compared */
  errors: DocumentError[];
}

/** ApplierOptions configure an Applier. */
export interface ApplierOptions {
  /** client of the cluster holding the GitSource and its tenants */
  client: KubeClient;
  source: GitSourceRef;
  /** what the source may write; default scopeOf(source): its own namespace, no cluster-scoped kind, no adoption */
  scope?: SourceScope;
  logger?: Logger;
}

/** applierMetrics are the applier's metrics on the shared registry, labelled by source `<namespace>/<name>`. */
export const applierMetrics = {
  applies: new Counter({
    name: 'vc_gitops_applied_objects_total',
    help: 'Objects server-side applied from a GitSource.',
    labelNames: ['source'],
    registers: [registry],
  }),
  prunes: new Counter({
    name: 'vc_gitops_pruned_objects_total',
    help: 'Objects deleted because they left a GitSource.',
    labelNames: ['source'],
    registers: [registry],
  }),
  failures: new Counter({
    name: 'vc_gitops_reconcile_failures_total',
    help: 'Reconciles of a GitSource that stopped early, by reason.',
    labelNames: ['source', 'reason'],
    registers: [registry],
  }),
  lastDuration: new Gauge({
    name: 'vc_gitops_last_apply_duration_seconds',
    help: 'How long the last apply (applies and prunes) of a GitSource took.',
    labelNames: ['source'],
    registers: [registry],
  }),
};

const MAX_LISTED = 20;

function listNames(names: readonly string[]): string {
  const shown = names.slice(0, MAX_LISTED).join(', ');
  return names.length > MAX_LISTED ? `${shown} and ${names.length - MAX_LISTED} more` : shown;
}

const order = (kind: string): number => TENANT_KINDS[kind]?.order ?? Number.MAX_SAFE_INTEGER;
const byApplyOrder = (a: ObjectRef, b: ObjectRef): number =>
  order(a.kind) - order(b.kind) || objectKey(a).localeCompare(objectKey(b));
const byPruneOrder = (a: ObjectRef, b: ObjectRef): number =>
  order(b.kind) - order(a.kind) || objectKey(a).localeCompare(objectKey(b));

function safetyVerdict(
  prune: readonly InventoryEntry[],
  inventory: readonly InventoryEntry[],
  revision: string,
  o: PlanOptions,
): SafetyVerdict {
  const isVC = (e: InventoryEntry) => e.kind === 'VirtualCluster';
  const names = prune.filter(isVC).map((e) => `${e.namespace}/${e.name}`);
  const deletes = names.length;
  const total = inventory.filter(isVC).length;
  const maxDeletes = o.safety?.maxDeletes ?? SAFETY_DEFAULTS.maxDeletes;
  const maxDeletePercent = o.safety?.maxDeletePercent ?? SAFETY_DEFAULTS.maxDeletePercent;
  const within = deletes <= maxDeletes && deletes * 100 <= maxDeletePercent * total;
  const confirmed = !within && o.confirmation === revision;
  return { allowed: within || confirmed, deletes, total, maxDeletes, maxDeletePercent, names, confirmed };
}

function errorLines(errors: readonly DocumentError[]): string {
  return errors.map((e) => e.message).join('\n');
}

/**
 * planApply is Applier.plan as a function: what reconciling an artifact over an inventory would do. Valid objects are
 * always applied, so one tenant's bad definition does not hold back the others. Pruning, though, is blocked for the
 * whole revision (pruneBlocked) when a file failed to parse (ParseFailed), a document was refused (ValidationFailed),
 * the path holds no document (EmptyPath) or the deletions exceed the limits (DeletionLimitExceeded). The last two
 * give way to the confirmation annotation when it names exactly this revision.
 */
/** liveOwner is what a live object says about its owner, and the version it says it at. */
function liveOwner(live: KubeObject): LiveOwner {
  const label = live.metadata?.labels?.[SOURCE_LABEL];
  const rv = live.metadata?.resourceVersion;
  return { ...(label !== undefined && { source: label }), ...(rv && { resourceVersion: rv }) };
}

/** checkedVersionsOf maps each planned object whose live owner was read to the resourceVersion it was read at. */
function checkedVersionsOf(
  objects: readonly DesiredObject[],
  owners: ReadonlyMap<string, LiveOwner | null> | undefined,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const d of objects) {
    const rv = owners?.get(d.key)?.resourceVersion;
    if (rv) out.set(d.key, rv);
  }
  return out;
}

export function planApply(
  artifact: Artifact,
  inventory: readonly InventoryEntry[],
  source: GitSourceRef,
  o: PlanOptions = {},
): ApplyPlan {
  const rendered = restrictToScope(renderDesired(artifact, source), artifact, source, o);
  const pruneEnabled = o.prune ?? true;
  const prune = inventory.filter((e) => !rendered.named.has(objectKey(e))).sort(byPruneOrder);
  const safety = safetyVerdict(prune, inventory, artifact.revision, o);
  const plan: ApplyPlan = {
    source,
    revision: artifact.revision,
    digest: artifact.digest,
    apply: rendered.objects,
    prune,
    previous: [...inventory],
    errors: rendered.errors,
    pruneEnabled,
    safety,
  };
  const checked = checkedVersionsOf(rendered.objects, o.owners);
  if (checked.size) plan.checkedVersions = checked;
  const parse = rendered.errors.filter((e) => e.reason === 'ParseFailed');
  const invalid = rendered.errors.filter((e) => e.reason === 'ValidationFailed');
  const outOfScope = rendered.errors.filter((e) => e.reason === 'OutOfScope');
  const notOwned = rendered.errors.filter((e) => e.reason === 'NotOwned');
  const nothingPruned = 'nothing is pruned until every file of the path is valid';
  const confirmedHere = o.confirmation === artifact.revision;
  if (parse.length) {
    plan.pruneBlocked = {
      reason: 'ParseFailed',
      stalled: true,
      message: `Revision ${artifact.revision}: ${parse.length} file(s) cannot be parsed, ${nothingPruned}:\n${errorLines(rendered.errors)}`,
    };
  } else if (outOfScope.length || notOwned.length) {
    const refused = [...outOfScope, ...notOwned];
    plan.pruneBlocked = {
      reason: outOfScope.length ? 'OutOfScope' : 'NotOwned',
      stalled: true,
      message:
        `Revision ${artifact.revision}: ${refused.length} object(s) refused, outside what the platform allows this GitSource; ` +
        `nothing is pruned, the allowed objects are applied:\n${errorLines([...refused, ...invalid])}`,
    };
  } else if (invalid.length) {
    plan.pruneBlocked = {
      reason: 'ValidationFailed',
      stalled: true,
      message:
        `Revision ${artifact.revision}: ${invalid.length} problem(s) in tenant definitions, ${nothingPruned}; ` +
        `the valid objects are applied:\n${errorLines(invalid)}`,
    };
  } else if (artifact.documents.length === 0 && !confirmedHere) {
    plan.pruneBlocked = {
      reason: 'EmptyPath',
      stalled: true,
      message:
        `Revision ${artifact.revision}: path ${JSON.stringify(artifact.path)} holds no objects; nothing is ` +
        `pruned (${prune.length} object(s) would be). If that is meant, annotate the GitSource with ` +
        `${CONFIRM_DELETION_ANNOTATION}=${artifact.revision}`,
    };
  } else if (pruneEnabled && !safety.allowed) {
    const wrong = o.confirmation
      ? ` (${CONFIRM_DELETION_ANNOTATION} names revision ${o.confirmation}, not this one)`
      : '';
    plan.pruneBlocked = {
      reason: 'DeletionLimitExceeded',
      stalled: true,
      message:
        `Revision ${artifact.revision} would delete ${safety.deletes} of ${safety.total} VirtualClusters, over the limits ` +
        `(at most ${safety.maxDeletes} and ${safety.maxDeletePercent}%): ${listNames(safety.names)}. Nothing was deleted. ` +
        `To allow exactly this, annotate the GitSource with ${CONFIRM_DELETION_ANNOTATION}=${artifact.revision}${wrong}`,
    };
  }
  if (pruneEnabled && confirmedHere && (safety.confirmed || artifact.documents.length === 0) && !plan.pruneBlocked)
    plan.confirmation = o.confirmation;
  return plan;
}

/**
 * restrictToScope moves the objects a source may not write (scope.ts: namespace, cluster-scoped kind, an existing
 * object that is not its own) from `objects` to `errors`, naming file, object and field. Their keys stay named, so
 * nothing in the inventory is pruned because of them.
 */
function restrictToScope(rendered: Rendered, artifact: Artifact, source: GitSourceRef, o: PlanOptions): Rendered {
  const scope = o.scope;
  if (!scope) return rendered;
  const perFile = new Map<string, number>();
  for (const d of artifact.documents) perFile.set(d.file, (perFile.get(d.file) ?? 0) + 1);
  const objects: DesiredObject[] = [];
  const errors: DocumentError[] = [...rendered.errors];
  for (const d of rendered.objects) {
    const several = (perFile.get(d.file) ?? 0) > 1;
    const at = several ? `${d.file} (document ${d.index + 1})` : d.file;
    const object = describeRef(d.ref);
    const index = several ? d.index : undefined;
    const violation = checkScope(d.ref, d.resource.namespaced, source, scope);
    if (violation) {
      const message = `${at}: ${object}: ${violation.pointer} ${violation.message}`;
      errors.push({ reason: 'OutOfScope', file: d.file, index, object, pointer: violation.pointer, message });
      continue;
    }
    const owner = o.owners?.get(d.key);
    const notOwn = owner === undefined ? undefined : checkOwner(d.ref, owner, source, scope);
    if (notOwn) {
      errors.push({
        reason: 'NotOwned',
        file: d.file,
        index,
        object,
        pointer: '/metadata/name',
        message: `${at}: ${notOwn}`,
      });
      continue;
    }
    objects.push(d);
  }
  return { objects, errors, named: rendered.named };
}

const STALLING_CODES = new Set([400, 403, 422]);

/** Run is the state the steps of one apply share. */
interface Run {
  plan: ApplyPlan;
  inventory: Map<string, InventoryEntry>;
  result: ApplyResult;
}

type Step = (run: Run) => Promise<Stop | undefined>;

/**
 * Applier applies the artifacts of one GitSource: server-side apply of every valid tenant definition under the field
 * manager `vc-gitops`, then pruning of what left the repository, within the deletion limits. It keeps no state between
 * calls: the inventory comes from the GitSource status, and each reconcile works on the artifact it is given (the
 * newest), so an older revision is never retried behind it. Callers serialize reconciles of one GitSource.
 */
export class Applier {
  private readonly client: KubeClient;
  /** source is the GitSource this applier works for. */
  readonly source: GitSourceRef;
  private readonly log: Logger;
  private readonly sourceLabel: string;
  /** scope is what this source may write. */
  readonly scope: SourceScope;

  constructor(o: ApplierOptions) {
    this.client = o.client;
    this.source = o.source;
    this.scope = o.scope ?? scopeOf(o.source);
    this.sourceLabel = `${o.source.namespace}/${o.source.name}`;
    this.log = o.logger ?? childLogger({ controller: 'gitops-applier', source: this.sourceLabel });
  }

  /** plan computes, without I/O, what reconciling the artifact over the inventory would do, within the scope; see planApply. */
  plan(artifact: Artifact, inventory: readonly InventoryEntry[], options: PlanOptions = {}): ApplyPlan {
    return planApply(artifact, inventory, this.source, { ...options, scope: this.scope });
  }

  /**
   * owners reads who owns each desired object of an artifact that already exists, so the plan can refuse to force an
   * apply over an object that is not this source's (checkOwner). Only the live label counts, never the inventory in
   * status: whoever can write status could name another's object there. Objects outside the scope are not read.
   */
  async owners(artifact: Artifact): Promise<Map<string, LiveOwner | null>> {
    const out = new Map<string, LiveOwner | null>();
    for (const d of renderDesired(artifact, this.source).objects) {
      if (checkScope(d.ref, d.resource.namespaced, this.source, this.scope)) continue;
      const live = await this.client.getOrNull<KubeObject>(d.resource, d.ref.namespace, d.ref.name);
      out.set(d.key, live ? liveOwner(live) : null);
    }
    return out;
  }

  /**
   * apply carries a plan out, in steps that stop at the first failure: apply every valid object (each one is tried,
   * then any failure stops the run with ApplyFailed), stop if pruning is blocked, then delete the pruned entries with
   * a uid precondition (a failure keeps the entry in the inventory; an object already gone or replaced is dropped).
   */
  async apply(plan: ApplyPlan): Promise<ApplyResult> {
    const started = performance.now();
    const run: Run = {
      plan,
      inventory: new Map(plan.previous.map((e) => [objectKey(e), e])),
      result: {
        applied: [],
        applyFailures: [],
        pruned: [],
        gone: [],
        pruneFailures: [],
        orphaned: [],
        foreign: [],
        inventory: [],
        durationMs: 0,
      },
    };
    const steps: Step[] = [(r) => this.applyObjects(r), async (r) => r.plan.pruneBlocked, (r) => this.pruneObjects(r)];
    for (const step of steps) {
      const stop = await step(run);
      if (stop) {
        run.result.stop = stop;
        break;
      }
    }
    const r = run.result;
    r.inventory = [...run.inventory.values()].sort(byApplyOrder);
    r.durationMs = performance.now() - started;
    applierMetrics.lastDuration.set({ source: this.sourceLabel }, r.durationMs / 1000);
    return r;
  }

  /**
   * applyChecked force-applies one desired object. When its owner was checked at a resourceVersion, that version is
   * the apply's precondition: if the object changed in between (a status write, or someone relabelling it), the owner
   * is read and checked again and the apply retried at the new version, at most three times, so a write never lands
   * on an object whose owner was not checked at the version written over.
   */
  private async applyChecked(d: DesiredObject, checkedAt: string | undefined): Promise<KubeObject> {
    let rv = checkedAt;
    for (let attempt = 1; ; attempt++) {
      const body = rv ? { ...d.object, metadata: { ...d.object.metadata, resourceVersion: rv } } : d.object;
      try {
        return await this.client.apply<KubeObject>(d.resource, body, IDENTITY.gitops, { force: true });
      } catch (e) {
        if (!rv || !(e instanceof ApiError) || e.code !== 409 || attempt >= 3) throw e;
        const live = await this.client.getOrNull<KubeObject>(d.resource, d.ref.namespace, d.ref.name);
        if (!live) throw e;
        const owner = liveOwner(live);
        const notOwn = checkOwner(d.ref, owner, this.source, this.scope);
        if (notOwn) throw new Error(notOwn);
        rv = owner.resourceVersion;
      }
    }
  }

  private async applyObjects(run: Run): Promise<Stop | undefined> {
    const { plan, result } = run;
    for (const d of plan.apply) {
      try {
        const live = await this.applyChecked(d, plan.checkedVersions?.get(d.key));
        const uid = live.metadata?.uid ?? '';
        run.inventory.set(d.key, { ...d.ref, uid });
        result.applied.push({ ref: d.ref, uid, file: d.file });
        applierMetrics.applies.inc({ source: this.sourceLabel });
      } catch (e) {
        const failure: ApplyFailure = { ref: d.ref, file: d.file, message: e instanceof Error ? e.message : String(e) };
        if (e instanceof ApiError) failure.code = e.code;
        result.applyFailures.push(failure);
        this.log.warn({ object: describeRef(d.ref), file: d.file, err: failure.message }, 'apply failed');
      }
    }
    const failed = result.applyFailures;
    if (!failed.length) return undefined;
    const lines = failed.map((f) => `${f.file}: ${describeRef(f.ref)}: ${f.message}`).join('\n');
    return {
      reason: 'ApplyFailed',
      stalled: failed.every((f) => f.code !== undefined && STALLING_CODES.has(f.code)),
      message: `Revision ${plan.revision}: ${failed.length} of ${plan.apply.length} objects were not applied, nothing is pruned:\n${lines}`,
    };
  }

  private async pruneObjects(run: Run): Promise<Stop | undefined> {
    const { plan, result } = run;
    if (!plan.pruneEnabled) {
      for (const e of plan.prune) {
        run.inventory.delete(objectKey(e));
        result.orphaned.push(e);
      }
      return undefined;
    }
    if (plan.confirmation) result.confirmationUsed = plan.confirmation;
    for (const e of plan.prune) {
      const kind = TENANT_KINDS[e.kind];
      if (!kind) {
        result.pruneFailures.push({ entry: e, message: `kind ${e.kind} is not a tenant kind; delete it by hand` });
        continue;
      }
      try {
        const live = await this.client.getOrNull<KubeObject>(kind.resource, e.namespace, e.name);
        if (!live || live.metadata?.uid !== e.uid) {
          result.gone.push(e);
          run.inventory.delete(objectKey(e));
          continue;
        }
        const owner = live.metadata?.labels?.[SOURCE_LABEL];
        if (
          checkScope(e, kind.resource.namespaced, this.source, this.scope) ||
          owner !== sourceLabelValue(this.source)
        ) {
          result.foreign.push(e);
          run.inventory.delete(objectKey(e));
          this.log.warn(
            { object: describeRef(e), owner: owner ?? '' },
            'inventory entry is not this source’s: forgotten, not deleted',
          );
          continue;
        }
        const deleted = await this.client.delete(kind.resource, e.namespace, e.name, { uid: e.uid });
        (deleted ? result.pruned : result.gone).push(e);
        if (deleted) applierMetrics.prunes.inc({ source: this.sourceLabel });
        run.inventory.delete(objectKey(e));
      } catch (err) {
        if (isConflict(err)) {
          result.gone.push(e);
          run.inventory.delete(objectKey(e));
          continue;
        }
        result.pruneFailures.push({ entry: e, message: err instanceof Error ? err.message : String(err) });
        this.log.warn({ object: describeRef(e), err: String(err) }, 'prune failed');
      }
    }
    const failed = result.pruneFailures;
    if (!failed.length) return undefined;
    return {
      reason: 'PruneFailed',
      stalled: false,
      message:
        `Revision ${plan.revision}: ${failed.length} of ${plan.prune.length} deletions failed and are ` +
        `retried:\n${failed.map((f) => `${describeRef(f.entry)}: ${f.message}`).join('\n')}`,
    };
  }

  /**
   * reconcile plans and applies an artifact over the inventory of the previous status and returns the new status,
   * computed once at the end whatever happened (an unexpected error counts as ApplyFailed, keeping the old inventory).
   */
  async reconcile(
    artifact: Artifact,
    previousStatus: GitSourceStatus | undefined,
    options: ReconcileOptions = {},
  ): Promise<ApplyReport> {
    const previous = previousStatus?.inventory ?? [];
    let plan: ApplyPlan | undefined;
    let result: ApplyResult;
    try {
      plan = this.plan(artifact, previous, { ...options, owners: await this.owners(artifact) });
      plan = withPolicies(
        plan,
        await readTenantPolicies(this.client),
        await readNamespaceLabels(this.client, plan.apply),
      );
      result = await this.apply(plan);
    } catch (e) {
      const message = `Revision ${artifact.revision}: ${e instanceof Error ? e.message : String(e)}`;
      result = {
        applied: [],
        applyFailures: [],
        pruned: [],
        gone: [],
        pruneFailures: [],
        orphaned: [],
        foreign: [],
        inventory: [...previous],
        durationMs: 0,
        stop: { reason: 'ApplyFailed', stalled: false, message },
      };
    }
    if (result.stop) applierMetrics.failures.inc({ source: this.sourceLabel, reason: result.stop.reason });
    const status = computeStatus({
      previous: previousStatus,
      revision: artifact.revision,
      digest: artifact.digest,
      inventory: result.inventory,
      stop: result.stop,
      generation: options.generation,
      confirmationUsed: result.confirmationUsed,
      now: (options.now ?? (() => new Date()))(),
    });
    this.log.info(
      {
        revision: artifact.revision,
        applied: result.applied.length,
        pruned: result.pruned.length,
        reason: result.stop?.reason ?? 'Succeeded',
      },
      'reconciled',
    );
    return { status, plan, result };
  }

  /**
   * detectDrift reads the live objects of an artifact and of an inventory and reports, without changing anything,
   * the desired objects that are missing, those that differ from the artifact in the fields an apply sets or the
   * manager `vc-gitops` owns (see differingFields) or have another uid than the inventory's, and the inventory
   * entries that still exist although the artifact no longer names them.
   */
  async detectDrift(artifact: Artifact, inventory: readonly InventoryEntry[] = []): Promise<DriftReport> {
    const rendered = renderDesired(artifact, this.source);
    const live: KubeObject[] = [];
    const seen = new Set<string>();
    const read = async (kind: string, ref: Pick<ObjectRef, 'namespace' | 'name'>): Promise<void> => {
      const k = objectKey({ kind, ...ref });
      const tk = TENANT_KINDS[kind];
      if (seen.has(k) || !tk) return;
      seen.add(k);
      const o = await this.client.getOrNull<KubeObject>(tk.resource, ref.namespace, ref.name);
      if (o) live.push({ ...o, kind, apiVersion: o.apiVersion ?? `${tk.resource.group}/${tk.resource.version}` });
    };
    for (const d of rendered.objects) await read(d.ref.kind, d.ref);
    for (const e of inventory) await read(e.kind, e);
    const diff = planDiff(artifact, live, this.source);
    const uids = new Map(inventory.map((e) => [objectKey(e), e.uid]));
    const liveUids = new Map(
      live.map((o) => [
        objectKey({ kind: o.kind!, namespace: o.metadata?.namespace, name: o.metadata?.name ?? '' }),
        o.metadata?.uid,
      ]),
    );
    const changed = new Map(diff.change.map((c) => [objectKey(c.object), c]));
    for (const d of rendered.objects) {
      const want = uids.get(d.key);
      const have = liveUids.get(d.key);
      if (!want || !have || want === have) continue;
      const c = changed.get(d.key) ?? { object: { ...d.ref, file: d.file }, fields: [] };
      c.fields = ['/metadata/uid', ...c.fields];
      changed.set(d.key, c);
    }
    const extra = diff.delete.filter((r) => uids.has(objectKey(r)));
    return {
      missing: diff.create,
      changed: [...changed.values()].sort((a, b) => byApplyOrder(a.object, b.object)),
      extra,
      errors: diff.errors,
    };
  }
}
