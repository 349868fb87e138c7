import { Counter, Gauge } from 'prom-client';
import type { Artifact } from '../artifact.ts';
import { ApiError, isConflict, type KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { childLogger, type Logger } from '../../core/log.ts';
import { IDENTITY } from '../../core/names/names.ts';
import { registry } from '../../core/metrics/registry.ts';
import { planDiff } from './diff.ts';
import { readNamespaceLabels, readTenantPolicies, withPolicies } from './policy.ts';
import type { GitSourceStatus } from './gitsource.ts';
import {
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
} from './objects.ts';
import { checkOwner, checkScope, scopeOf, type LiveOwner, type SourceScope } from './scope.ts';
import { computeStatus, type Stop } from './status.ts';
import { byApplyOrder, planApply, type ApplyPlan, type PlanOptions } from './plan.ts';
import { exists, waveStop, type WaveHealth } from './waves.ts';

export { planApply, type ApplyPlan, type PlanOptions, type SafetyVerdict } from './plan.ts';
export type { WaveHealth } from './waves.ts';

/** ReconcileOptions add what the status needs to PlanOptions. */
export interface ReconcileOptions extends PlanOptions {
  /** metadata.generation of the GitSource */
  generation?: number;
  /** clock of the condition transition times; default the system clock */
  now?: () => Date;
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
  /**
   * judges whether an applied object of a wave lets the next wave go (gitops/health.ts objectHealth); default: it
   * exists. Only a revision with more than one wave asks.
   */
  health?: WaveHealth;
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

/** liveOwner is what a live object says about its owner, and the version it says it at. */
function liveOwner(live: KubeObject): LiveOwner {
  const label = live.metadata?.labels?.[SOURCE_LABEL];
  const rv = live.metadata?.resourceVersion;
  return { ...(label !== undefined && { source: label }), ...(rv && { resourceVersion: rv }) };
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
  private readonly health: WaveHealth;

  constructor(o: ApplierOptions) {
    this.client = o.client;
    this.source = o.source;
    this.scope = o.scope ?? scopeOf(o.source);
    this.health = o.health ?? exists;
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

  /**
   * applyObjects applies the plan wave by wave (APPLY_WAVE_ANNOTATION, ascending). Every object of a wave is tried;
   * a failure stops the run there (ApplyFailed). A later wave goes only once every object of the waves before it is
   * healthy; until then the run stops with WaveNotHealthy (stalled when one of them Failed), nothing of the later
   * waves is applied and nothing is pruned. The next reconcile (a status change of those objects brings it) goes on.
   */
  private async applyObjects(run: Run): Promise<Stop | undefined> {
    const { plan } = run;
    const waves = [...new Set(plan.apply.map((d) => d.wave))].sort((a, b) => a - b);
    for (const [i, wave] of waves.entries()) {
      const objects = plan.apply.filter((d) => d.wave === wave);
      for (const d of objects) await this.applyOne(run, d);
      const failed = run.result.applyFailures;
      if (failed.length) {
        const lines = failed.map((f) => `${f.file}: ${describeRef(f.ref)}: ${f.message}`).join('\n');
        return {
          reason: 'ApplyFailed',
          stalled: failed.every((f) => f.code !== undefined && STALLING_CODES.has(f.code)),
          message: `Revision ${plan.revision}: ${failed.length} of ${plan.apply.length} objects were not applied, nothing is pruned:\n${lines}`,
        };
      }
      if (i < waves.length - 1) {
        const stop = await waveStop(this.client, this.health, plan.revision, objects, wave, waves[i + 1]!);
        if (stop) return stop;
      }
    }
    return undefined;
  }

  private async applyOne(run: Run, d: DesiredObject): Promise<void> {
    try {
      const live = await this.applyChecked(d, run.plan.checkedVersions?.get(d.key));
      const uid = live.metadata?.uid ?? '';
      run.inventory.set(d.key, { ...d.ref, uid });
      run.result.applied.push({ ref: d.ref, uid, file: d.file });
      applierMetrics.applies.inc({ source: this.sourceLabel });
    } catch (e) {
      const failure: ApplyFailure = { ref: d.ref, file: d.file, message: e instanceof Error ? e.message : String(e) };
      if (e instanceof ApiError) failure.code = e.code;
      run.result.applyFailures.push(failure);
      this.log.warn({ object: describeRef(d.ref), file: d.file, err: failure.message }, 'apply failed');
    }
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
