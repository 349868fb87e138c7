import type { SnapshotMeta } from './catalog.ts';

/**
 * BACKUP_REQUEST_ANNOTATION, on a VirtualCluster, asks the manager for one backup action (JSON BackupAction). The
 * `vc backup` and `vc restore` commands write it; anyone who may edit the VirtualCluster may ask, as for any change of
 * the tenant. The manager owns the store and its credentials, so the CLI never touches them.
 */
export const BACKUP_REQUEST_ANNOTATION = 'backup.tenancy.x-k8s.io/request';
/** BACKUP_RESULT_ANNOTATION is the manager's answer to the last request it handled (JSON BackupResult). */
export const BACKUP_RESULT_ANNOTATION = 'backup.tenancy.x-k8s.io/result';
/** CATALOG_KEY is the key of the catalog ConfigMap that holds the tenant's snapshots (JSON CatalogEntry[]). */
export const CATALOG_KEY = 'snapshots.json';

/** BACKUP_ACTIONS are what a request may ask. */
export const BACKUP_ACTIONS = ['create', 'delete', 'restore'] as const;

/** BackupAction is one request: a token the answer repeats, what to do, and on which snapshot. */
export interface BackupAction {
  token: string;
  action: (typeof BACKUP_ACTIONS)[number];
  /** the snapshot to delete or restore */
  snapshot?: string;
  /** restore: the VirtualCluster (in the same namespace) whose snapshot it is; default this one */
  from?: string;
}

/** BackupResult is the manager's answer to the request with the same token. */
export interface BackupResult {
  token: string;
  ok: boolean;
  message: string;
  /** the snapshot made, deleted or restored */
  snapshot?: string;
  at: string;
}

/**
 * CatalogEntry is a snapshot as the catalog ConfigMap lists it: its whole metadata, spec included, so that a tenant
 * deleted since can be made again from it (`vc restore --as`).
 */
export type CatalogEntry = SnapshotMeta;

/**
 * catalogName is the name of the ConfigMap, next to the VirtualCluster, that lists its snapshots. It has no owner
 * reference: it outlives the VirtualCluster as the snapshots do.
 */
export function catalogName(vcName: string): string {
  return `vc-backups-${vcName}`;
}

/**
 * pendingAction reads a VirtualCluster's request: undefined when there is none or it has been answered, the action,
 * or a string saying what is wrong with it (naming the annotation and the field).
 */
export function pendingAction(
  annotations: Readonly<Record<string, string>> | undefined,
): BackupAction | string | undefined {
  const raw = annotations?.[BACKUP_REQUEST_ANNOTATION];
  if (raw === undefined) return undefined;
  const answered = parseJson<BackupResult>(annotations?.[BACKUP_RESULT_ANNOTATION]);
  // An answered request, even an invalid one (answered under the token it had, or none), is not asked again.
  if (answered !== undefined && answered.token === requestToken(annotations)) return undefined;
  let req: Partial<BackupAction> | undefined;
  try {
    req = JSON.parse(raw) as Partial<BackupAction>;
  } catch {
    return `annotation ${BACKUP_REQUEST_ANNOTATION}: not JSON`;
  }
  if (typeof req !== 'object' || req === null) return `annotation ${BACKUP_REQUEST_ANNOTATION}: not a JSON object`;
  if (typeof req.token !== 'string' || !req.token) return `annotation ${BACKUP_REQUEST_ANNOTATION}: token is missing`;
  if (!BACKUP_ACTIONS.includes(req.action as BackupAction['action']))
    return `annotation ${BACKUP_REQUEST_ANNOTATION}: action must be one of ${BACKUP_ACTIONS.join(', ')}`;
  if (req.action !== 'create' && (typeof req.snapshot !== 'string' || !req.snapshot))
    return `annotation ${BACKUP_REQUEST_ANNOTATION}: snapshot is missing for ${req.action}`;
  if (req.from !== undefined && (typeof req.from !== 'string' || req.action !== 'restore'))
    return `annotation ${BACKUP_REQUEST_ANNOTATION}: from is the name of a VirtualCluster, for restore only`;
  return req as BackupAction;
}

/** requestToken is the token of the request in the annotations, even an invalid one's, so an answer can name it. */
export function requestToken(annotations: Readonly<Record<string, string>> | undefined): string {
  const t = parseJson<{ token?: unknown } | null>(annotations?.[BACKUP_REQUEST_ANNOTATION])?.token;
  return typeof t === 'string' ? t : '';
}

function parseJson<T>(s: string | undefined): T | undefined {
  if (s === undefined) return undefined;
  try {
    return JSON.parse(s) as T;
  } catch {
    return undefined;
  }
}
