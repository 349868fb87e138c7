/**
 * The applied record: what the no-rollback check relies on, kept where a status writer (S) cannot reach it. Status is
 * a subresource anyone with `gitsources/status` may write, so `status.lastAppliedRevision` is output only; the base a
 * new revision must descend from is read from a ConfigMap the manager writes next to the GitSource. That ConfigMap
 * carries the manager's managed-by label, which deploy/policy/manager-scope.yaml (vc-manager-owned-objects) lets
 * nobody but the manager create or update, and names its GitSource as controller owner, whose uid is checked on read
 * (a record left by an earlier GitSource of the same name does not count). The same record keeps the deletion
 * confirmation bookkeeping: the last value of the confirm-deletion annotation that allowed a deletion
 * (`status.lastHandledConfirmation` only reports it, and a value written there is overwritten, never carried on).
 *
 * The inventory used for prune stays in status: the applier never deletes on its word alone (it checks each object's
 * live GitSource label and forgets, with a PruneRefused event, what is not its own).
 */
import type { KubeObject } from '../core/kube/client.ts';
import { IDENTITY, LABEL } from '../core/names/names.ts';
import type { GitSource } from './applier/gitsource.ts';

/** RECORD_SUFFIX ends the name of a GitSource's record: `<gitsource>-gitops-record`, in the GitSource's namespace. */
export const RECORD_SUFFIX = '-gitops-record';

/** RECORD_REVISION_KEY is the record's data key holding the last applied revision. */
export const RECORD_REVISION_KEY = 'lastAppliedRevision';

/** RECORD_CONFIRMATION_KEY is the record's data key holding the last confirmation that allowed a deletion. */
export const RECORD_CONFIRMATION_KEY = 'lastHandledConfirmation';

/** recordName is the name of the record ConfigMap of the GitSource named `name`. */
export const recordName = (name: string): string => `${name}${RECORD_SUFFIX}`;

/** ConfigMapObject is the part of a ConfigMap the record uses. */
export type ConfigMapObject = KubeObject & { data?: Record<string, string> };

/**
 * AppliedRecord is what a read found: `present` (owned by this GitSource, possibly without a revision yet), `absent`
 * (no ConfigMap), or `foreign` (a ConfigMap of that name the manager did not write for this GitSource).
 */
export type AppliedRecord =
  { kind: 'present'; revision?: string; confirmation?: string } | { kind: 'absent' } | { kind: 'foreign'; why: string };

/** RecordData is what a record holds: the last applied revision and the last handled deletion confirmation. */
export interface RecordData {
  revision?: string;
  confirmation?: string;
}

/** ownsRecord tells whether a ConfigMap is this GitSource's record: the manager's label and this GitSource's uid. */
export function ownsRecord(cm: ConfigMapObject, gs: GitSource): boolean {
  const m = cm.metadata ?? {};
  if (m.labels?.[LABEL.managedBy] !== IDENTITY.manager) return false;
  return (m.ownerReferences ?? []).some(
    (r) => r.kind === 'GitSource' && r.controller === true && r.name === gs.metadata.name && r.uid === gs.metadata.uid,
  );
}

/** readRecord interprets the ConfigMap found under recordName (null when there is none). */
export function readRecord(cm: ConfigMapObject | null, gs: GitSource): AppliedRecord {
  if (!cm) return { kind: 'absent' };
  if (!ownsRecord(cm, gs)) {
    return {
      kind: 'foreign',
      why:
        `ConfigMap ${gs.metadata.namespace}/${recordName(gs.metadata.name)} is not the manager's record of ` +
        `this GitSource (label ${LABEL.managedBy}=${IDENTITY.manager} and owner GitSource uid ` +
        `${gs.metadata.uid ?? ''})`,
    };
  }
  const revision = cm.data?.[RECORD_REVISION_KEY];
  const confirmation = cm.data?.[RECORD_CONFIRMATION_KEY];
  return { kind: 'present', ...(revision ? { revision } : {}), ...(confirmation ? { confirmation } : {}) };
}

/** recordedData is what a read record holds (nothing for an absent or foreign one). */
export function recordedData(r: AppliedRecord): RecordData {
  if (r.kind !== 'present') return {};
  return {
    ...(r.revision ? { revision: r.revision } : {}),
    ...(r.confirmation ? { confirmation: r.confirmation } : {}),
  };
}

/** recordObject is the record ConfigMap of a GitSource holding `revision` (and the handled confirmation, if any). */
export function recordObject(gs: GitSource, revision: string | RecordData): ConfigMapObject {
  const d = typeof revision === 'string' ? { revision } : revision;
  const data: Record<string, string> = {};
  if (d.revision) data[RECORD_REVISION_KEY] = d.revision;
  if (d.confirmation) data[RECORD_CONFIRMATION_KEY] = d.confirmation;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: recordName(gs.metadata.name),
      namespace: gs.metadata.namespace,
      labels: { [LABEL.managedBy]: IDENTITY.manager },
      ownerReferences: [
        {
          apiVersion: gs.apiVersion ?? 'tenancy.x-k8s.io/v1alpha1',
          kind: 'GitSource',
          name: gs.metadata.name,
          uid: gs.metadata.uid ?? '',
          controller: true,
        },
      ],
    },
    data,
  };
}

/**
 * DescentBase is where the no-rollback check starts: `since` (the recorded revision; none on a first apply), or
 * `lost`, the reason the base is unknown, in which case only the revision the allow-revision annotation names is
 * applied (tenancy.x-k8s.io/allow-revision).
 */
export type DescentBase = { since?: string } | { lost: string };

/**
 * descentBase decides the base of the no-rollback check from the record and the revision status reports. A record
 * that holds a revision is the base, whatever status says. Without one, the GitSource counts as never applied only
 * when status reports no revision either; a status that reports one means the record was lost (deleted, or never
 * written by this version of the manager) and the status value cannot be trusted, so the check refuses every
 * revision until the GitSource is annotated with ALLOW_REVISION_ANNOTATION for the one to apply. `where` names the
 * record in messages.
 */
export function descentBase(record: AppliedRecord, statusRevision: string | undefined, where: string): DescentBase {
  if (record.kind === 'present' && record.revision) return { since: record.revision };
  if (record.kind === 'foreign') return { lost: record.why };
  if (!statusRevision) return {};
  return {
    lost: `status reports last applied ${statusRevision}, but the manager's record of it (ConfigMap ${where}) is missing and status alone is not trusted`,
  };
}
