import type { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { checkPolicies, formatViolations, type TenantPolicy } from '../../core/tenancy/policy.ts';
import type { ApplyPlan } from './applier.ts';
import { describeRef, type DesiredObject, type DocumentError } from './objects.ts';

/**
 * policyErrors checks every VirtualCluster of a plan against the TenantPolicies, as the VirtualCluster controller
 * will: one error per field asked beyond the policy, naming the file, the object and the field. The manager's plugin
 * defaults are not known here; the controller checks those.
 */
export function policyErrors(objects: readonly DesiredObject[], policies: readonly TenantPolicy[]): DocumentError[] {
  const out: DocumentError[] = [];
  for (const o of objects) {
    if (o.ref.kind !== 'VirtualCluster') continue;
    const r = checkPolicies(o.object as VirtualCluster, policies);
    if (!('violations' in r)) continue;
    const object = describeRef(o.ref);
    for (const v of r.violations) {
      out.push({
        reason: 'ValidationFailed',
        file: o.file,
        index: o.index,
        object,
        pointer: `/${v.field.replaceAll('.', '/')}`,
        message: formatViolations(`${o.file}: ${object}`, [v]),
      });
    }
  }
  return out;
}

/**
 * withPolicies is the plan with the VirtualClusters their policies refuse taken out of `apply` and reported as
 * errors, which blocks pruning as any invalid definition does; the live objects stay as they are. Without readable
 * policies (undefined) the plan is returned unchanged and the controller is the only check.
 */
export function withPolicies(plan: ApplyPlan, policies: readonly TenantPolicy[] | undefined): ApplyPlan {
  if (!policies) return plan;
  const errors = policyErrors(plan.apply, policies);
  if (!errors.length) return plan;
  const refused = new Set(errors.map((e) => `${e.file}#${e.object}`));
  const apply = plan.apply.filter((o) => !refused.has(`${o.file}#${describeRef(o.ref)}`));
  const message =
    `Revision ${plan.revision}: ${refused.size} tenant definition(s) ask for more than their TenantPolicy ` +
    `allows; nothing is pruned; the other objects are ` +
    `applied:\n${errors.map((e) => e.message).join('\n')}`;
  return {
    ...plan,
    apply,
    errors: [...plan.errors, ...errors],
    pruneBlocked: plan.pruneBlocked ?? { reason: 'ValidationFailed', stalled: true, message },
  };
}

/** readTenantPolicies lists the TenantPolicies, or undefined when the client may not read them. */
export async function readTenantPolicies(client: KubeClient): Promise<TenantPolicy[] | undefined> {
  try {
    return (await client.list<TenantPolicy>(R.tenantpolicies)).items;
  } catch {
    return undefined;
  }
}
