import { isPublic, type PluginContext, R } from '@virtualcluster-ts/plugin-sdk';

/** CLAIM_POLICY_VIOLATION is the skip and event reason of a tenant claim that would bind what is not the tenant's. */
export const CLAIM_POLICY_VIOLATION = 'ClaimPolicyViolation';

/** ClaimRefusal names the field of a tenant claim that is refused, and why. */
export interface ClaimRefusal {
  field: string;
  message: string;
}

/**
 * checkClaim refuses a new tenant claim that could bind a volume the platform did not provision for it: an empty
 * storageClassName or a selector (both bind volumes made beforehand in the super cluster, another tenant's released
 * ones or the platform's included), and a storageClassName that is not a StorageClass the super cluster shares with
 * tenants (labelled public; a class name without a StorageClass only binds such volumes). A claim naming no class gets
 * the super cluster's default class only if that is shared (sharedDefaultClass, which the syncer then names in the
 * super claim); without one it is refused: the super's DefaultStorageClass admission would give it a class the
 * platform keeps to itself, and with no default at all the super's volume controller binds a claim without a class
 * to classless volumes made beforehand, exactly as an empty class.
 */
export function checkClaim(
  spec: { storageClassName?: string; selector?: unknown } | undefined,
  ctx: Pick<PluginContext, 'superCache'>,
): ClaimRefusal | undefined {
  const binds = 'would bind volumes made beforehand in the super cluster, other tenants\u2019 included';
  if (spec?.storageClassName === '')
    return {
      field: 'spec.storageClassName',
      message: `spec.storageClassName "": a claim without a class ${binds}; name a StorageClass, or none for the default the super shares`,
    };
  if (spec?.selector !== undefined && spec.selector !== null)
    return { field: 'spec.selector', message: `spec.selector: a claim selecting volumes by label ${binds}` };
  const name = spec?.storageClassName;
  if (name === undefined || name === null) {
    if (sharedDefaultClass(ctx) !== undefined) return undefined;
    return {
      field: 'spec.storageClassName',
      message:
        `spec.storageClassName is not set and the super cluster has no default StorageClass it shares with tenants: ` +
        `a claim without a class ${binds}; name one of the tenant's StorageClasses`,
    };
  }
  const sc = ctx.superCache.get(R.storageclasses, undefined, name);
  if (sc && isPublic(sc)) return undefined;
  return {
    field: 'spec.storageClassName',
    message:
      `spec.storageClassName "${name}" is not a StorageClass the super cluster shares with tenants (the tenant ` +
      `sees those as its StorageClasses)`,
  };
}

/** DEFAULT_CLASS_ANNOTATIONS mark a StorageClass as the cluster's default (GA and beta keys, as admission reads them). */
const DEFAULT_CLASS_ANNOTATIONS = [
  'storageclass.kubernetes.io/is-default-class',
  'storageclass.beta.kubernetes.io/is-default-class',
] as const;

/**
 * sharedDefaultClass names the StorageClass a tenant claim without a class gets in the super cluster: a default class
 * (by its annotation) the super shares with tenants (labelled public), the newest if several, as the super's own
 * admission chooses among defaults; undefined when there is none.
 */
export function sharedDefaultClass(ctx: Pick<PluginContext, 'superCache'>): string | undefined {
  const defaults = ctx.superCache
    .list(R.storageclasses)
    .filter((sc) => isPublic(sc) && DEFAULT_CLASS_ANNOTATIONS.some((k) => sc.metadata?.annotations?.[k] === 'true'))
    .sort(
      (x, y) =>
        (y.metadata?.creationTimestamp ?? '').localeCompare(x.metadata?.creationTimestamp ?? '') ||
        (x.metadata?.name ?? '').localeCompare(y.metadata?.name ?? ''),
    );
  return defaults[0]?.metadata?.name;
}
