/**
 * The applier's plan: what reconciling an artifact over an inventory would do — which objects to apply, which to
 * prune, what the deletion limits say and what the scope refuses — computed without any I/O.
 */
import type { Artifact } from '../artifact.ts';
import { SAFETY_DEFAULTS } from './gitsource.ts';
import {
  CONFIRM_DELETION_ANNOTATION,
  TENANT_KINDS,
  describeRef,
  objectKey,
  renderDesired,
  type DesiredObject,
  type DocumentError,
  type InventoryEntry,
  type ObjectRef,
  type GitSourceRef,
  type Rendered,
} from './objects.ts';
import { checkOwner, checkScope, type LiveOwner, type SourceScope } from './scope.ts';
import type { Stop } from './status.ts';

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

const MAX_LISTED = 20;

function listNames(names: readonly string[]): string {
  const shown = names.slice(0, MAX_LISTED).join(', ');
  return names.length > MAX_LISTED ? `${shown} and ${names.length - MAX_LISTED} more` : shown;
}

const order = (kind: string): number => TENANT_KINDS[kind]?.order ?? Number.MAX_SAFE_INTEGER;
export const byApplyOrder = (a: ObjectRef, b: ObjectRef): number =>
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

/**
 * planApply is Applier.plan as a function: what reconciling an artifact over an inventory would do. Valid objects are
 * always applied, so one tenant's bad definition does not hold back the others. Pruning, though, is blocked for the
 * whole revision (pruneBlocked) when a file failed to parse (ParseFailed), a document was refused (ValidationFailed),
 * the path holds no document (EmptyPath) or the deletions exceed the limits (DeletionLimitExceeded). The last two
 * give way to the confirmation annotation when it names exactly this revision.
 */
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
