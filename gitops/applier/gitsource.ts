import type { GitSourceSpec as GeneratedSpec } from '../../core/api/generated.ts';
import type { Condition } from '../../core/controller/status.ts';
import type { KubeObject, ObjectMeta, Resource } from '../../core/kube/client.ts';
import type { ReconcileOptions } from './applier.ts';
import type { InventoryEntry } from './objects.ts';
import { CONFIRM_DELETION_ANNOTATION } from './objects.ts';

/** GITSOURCES is the API resource of GitSource objects (schemas/gitsource.schema.json). */
export const GITSOURCES: Resource = {
  group: 'tenancy.x-k8s.io',
  version: 'v1alpha1',
  resource: 'gitsources',
  kind: 'GitSource',
  namespaced: true,
};

/**
 * GITSOURCE_FINALIZER keeps a deleted GitSource until its controller has stopped applying it: a reconcile in flight
 * when the source is deleted would otherwise make again a tenant deleted right after it. The source's objects stay.
 */
export const GITSOURCE_FINALIZER = 'tenancy.x-k8s.io/gitsource';

/** SAFETY_DEFAULTS are the deletion limits of a GitSource without spec.safety, as in its schema. */
export const SAFETY_DEFAULTS = { maxDeletes: 3, maxDeletePercent: 25 } as const;

/** SecretRef names a Secret in the GitSource's namespace. */
export interface SecretRef {
  name: string;
}

/** GitSourceSpec is spec of a GitSource; see the schema for every field's meaning. */
export interface GitSourceSpec {
  url: string;
  ref: { branch?: string; tag?: string; semver?: string; commit?: string };
  path?: string;
  interval?: string;
  timeout?: string;
  secretRef?: SecretRef;
  verify?: { mode: 'head'; secretRef: SecretRef };
  suspend?: boolean;
  prune?: boolean;
  safety?: { maxDeletes?: number; maxDeletePercent?: number };
  webhook?: { kind: 'github' | 'gitlab' | 'generic'; secretRef: SecretRef };
  dependsOn?: Array<{ name: string; namespace?: string }>;
  healthTimeout?: string;
  notifications?: GeneratedSpec['notifications'];
}

/** RECONCILE_ANNOTATION asks for a fetch and apply now; status.lastHandledReconcileAt reports the value handled. */
export const RECONCILE_ANNOTATION = 'tenancy.x-k8s.io/reconcile-requested-at';

/** InventoryStatus is an inventory entry as status reports it: with the object's health when last checked. */
export interface InventoryStatus extends InventoryEntry {
  health?: 'Healthy' | 'Progressing' | 'Failed' | 'Unknown';
  message?: string;
}

/** GitSourceStatus is status of a GitSource. */
export interface GitSourceStatus {
  conditions?: Condition[];
  observedGeneration?: number;
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  /**
   * lastHandledConfirmation reports the manager's record (gitops/record.ts); null, in a status write, removes a value
   * the record does not hold
   */
  lastHandledConfirmation?: string | null;
  lastHandledReconcileAt?: string;
  artifact?: { revision: string; digest: string };
  inventory?: InventoryStatus[];
}

/** GitSourceRef names a GitSource. */
export type { GitSourceRef } from './objects.ts';

/** GitSource is a namespaced tenancy.x-k8s.io/v1alpha1 GitSource. */
export interface GitSource extends KubeObject {
  metadata: ObjectMeta & { name: string; namespace: string };
  spec: GitSourceSpec;
  status?: GitSourceStatus;
}

/** reconcileOptionsFor reads a GitSource's pruning switch, deletion limits, confirmation and generation. */
export function reconcileOptionsFor(gs: GitSource): ReconcileOptions {
  const o: ReconcileOptions = {
    prune: gs.spec.prune ?? true,
    safety: {
      maxDeletes: gs.spec.safety?.maxDeletes ?? SAFETY_DEFAULTS.maxDeletes,
      maxDeletePercent: gs.spec.safety?.maxDeletePercent ?? SAFETY_DEFAULTS.maxDeletePercent,
    },
  };
  const confirmation = gs.metadata.annotations?.[CONFIRM_DELETION_ANNOTATION];
  if (confirmation) o.confirmation = confirmation;
  if (gs.metadata.generation !== undefined) o.generation = gs.metadata.generation;
  return o;
}
