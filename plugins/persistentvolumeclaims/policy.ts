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
 * the super cluster's default.
 */
export function checkClaim(
  spec: { storageClassName?: string; selector?: unknown } | undefined,
  ctx: Pick<PluginContext, 'superCache'>,
): ClaimRefusal | undefined {
  const binds = 'would bind volumes made beforehand in the super cluster, other tenants\u2019 included';
  if (spec?.storageClassName === '')
    return {
      field: 'spec.storageClassName',
      message: `spec.storageClassName "": a claim without a class ${binds}; name a StorageClass, or none for the default`,
    };
  if (spec?.selector !== undefined && spec.selector !== null)
    return { field: 'spec.selector', message: `spec.selector: a claim selecting volumes by label ${binds}` };
  const name = spec?.storageClassName;
  if (name === undefined || name === null) return undefined;
  const sc = ctx.superCache.get(R.storageclasses, undefined, name);
  if (sc && isPublic(sc)) return undefined;
  return {
    field: 'spec.storageClassName',
    message:
      `spec.storageClassName "${name}" is not a StorageClass the super cluster shares with tenants (the tenant ` +
      `sees those as its StorageClasses)`,
  };
}
