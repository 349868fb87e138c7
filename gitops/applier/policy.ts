import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { checkPolicies, formatViolations, type TenantPolicy } from '../../core/tenancy/policy.ts';
import { subjectOf } from '../../core/tenancy/grants.ts';
import type { ApplyPlan } from './applier.ts';
import { describeRef, type DesiredObject, type DocumentError } from './objects.ts';

/** NamespaceLabels are the labels of the namespaces a plan writes into, as read from the meta cluster. */
export type NamespaceLabels = ReadonlyMap<string, Readonly<Record<string, string>>>;

/**
 * asVirtualCluster is what the policy check reads of a plan object: a VirtualCluster as it is, and a
 * VirtualClusterControlPlane as the VirtualCluster the Cluster API provider will write for it (spec.virtualCluster,
 * with the ClusterVersion it names; one it leaves to the provider is picked among the granted ones). That VirtualCluster
 * carries no GitSource label, so only its namespace is its subject. `field` maps a VirtualCluster field back to the
 * control plane's.
 */
function asVirtualCluster(
  o: DesiredObject,
): { vc: VirtualCluster; field: (f: string) => string; gitSource: boolean } | undefined {
  if (o.ref.kind === 'VirtualCluster') return { vc: o.object as VirtualCluster, field: (f) => f, gitSource: true };
  if (o.ref.kind !== 'VirtualClusterControlPlane') return undefined;
  const spec = (o.object as { spec?: { virtualCluster?: object; clusterVersionName?: string } }).spec ?? {};
  const vc = {
    metadata: { namespace: o.ref.namespace },
    spec: {
      ...(spec.virtualCluster ?? {}),
      ...(spec.clusterVersionName !== undefined && { clusterVersionName: spec.clusterVersionName }),
    },
  } as VirtualCluster;
  const field = (f: string) => (f === 'spec.clusterVersionName' ? f : f.replace(/^spec\./, 'spec.virtualCluster.'));
  return { vc, field, gitSource: false };
}

/**
 * policyErrors checks every VirtualCluster of a plan, and the one each VirtualClusterControlPlane stands for, against
 * the TenantPolicies, as the VirtualCluster controller will: one error per field asked beyond the policy or without a
 * grant (the subject is the object's namespace, with its labels where known, and for a VirtualCluster the GitSource
 * its source label names), naming the file, the object and the field. The manager's plugin defaults are not known
 * here; the controller checks those.
 */
export function policyErrors(
  objects: readonly DesiredObject[],
  policies: readonly TenantPolicy[],
  labels?: NamespaceLabels,
): DocumentError[] {
  const out: DocumentError[] = [];
  for (const o of objects) {
    const as = asVirtualCluster(o);
    if (!as) continue;
    const nsLabels = labels?.get(o.ref.namespace ?? '');
    const subject = as.gitSource
      ? subjectOf(as.vc, nsLabels)
      : subjectOf({ metadata: { namespace: o.ref.namespace } }, nsLabels);
    const r = checkPolicies(as.vc, policies, {}, subject);
    if (!('violations' in r)) continue;
    const object = describeRef(o.ref);
    for (const x of r.violations) {
      const v = { ...x, field: as.field(x.field) };
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
export function withPolicies(
  plan: ApplyPlan,
  policies: readonly TenantPolicy[] | undefined,
  labels?: NamespaceLabels,
): ApplyPlan {
  if (!policies) return plan;
  const errors = policyErrors(plan.apply, policies, labels);
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

/**
 * readNamespaceLabels reads the labels of the namespaces the plan's VirtualClusters are in; a namespace that cannot be
 * read is left out, so that a selector grant does not match it.
 */
export async function readNamespaceLabels(
  client: KubeClient,
  objects: readonly DesiredObject[],
): Promise<NamespaceLabels> {
  return readNamespaceLabelsOf(
    client,
    objects.flatMap((o) =>
      (o.ref.kind === 'VirtualCluster' || o.ref.kind === 'VirtualClusterControlPlane') && o.ref.namespace
        ? [o.ref.namespace]
        : [],
    ),
  );
}

/** readNamespaceLabelsOf reads the labels of the named namespaces, leaving out those that cannot be read. */
export async function readNamespaceLabelsOf(
  client: KubeClient,
  namespaces: readonly string[],
): Promise<NamespaceLabels> {
  const out = new Map<string, Record<string, string>>();
  for (const name of new Set(namespaces.filter(Boolean))) {
    const ns = await client.getOrNull<KubeObject>(R.namespaces, undefined, name).catch(() => null);
    if (ns) out.set(name, ns.metadata?.labels ?? {});
  }
  return out;
}

/** readTenantPolicies lists the TenantPolicies, or undefined when the client may not read them. */
export async function readTenantPolicies(client: KubeClient): Promise<TenantPolicy[] | undefined> {
  try {
    return (await client.list<TenantPolicy>(R.tenantpolicies)).items;
  } catch {
    return undefined;
  }
}

/** PolicyImpact is what a proposed set of TenantPolicies would do to one existing tenant. */
export interface PolicyImpact {
  tenant: string;
  /** newly: refused under the proposed policies but admitted today; still: refused today and under the proposal. */
  change: 'newly-refused' | 'still-refused' | 'now-admitted';
  violations: string[];
}

/**
 * simulatePolicies checks every existing VirtualCluster against the live TenantPolicies and against the live ones with
 * the proposed ones put in their place (by name; a new name is added), so that a policy change shows before it merges
 * which tenants it would refuse. Tenants admitted both ways are left out of the answer.
 */
export function simulatePolicies(
  tenants: readonly VirtualCluster[],
  live: readonly TenantPolicy[],
  proposed: readonly TenantPolicy[],
  labels?: NamespaceLabels,
): PolicyImpact[] {
  const names = new Set(proposed.map((p) => p.metadata?.name));
  const after = [...live.filter((p) => !names.has(p.metadata?.name)), ...proposed];
  const refusals = (vc: VirtualCluster, policies: readonly TenantPolicy[]) => {
    const r = checkPolicies(vc, policies, {}, subjectOf(vc, labels?.get(vc.metadata?.namespace ?? '')));
    return 'violations' in r ? r.violations.map((v) => `${v.field}: ${v.message}`) : [];
  };
  const out: PolicyImpact[] = [];
  for (const vc of tenants) {
    const tenant = `${vc.metadata?.namespace ?? ''}/${vc.metadata?.name ?? '?'}`;
    const before = refusals(vc, live);
    const now = refusals(vc, after);
    if (now.length) out.push({ tenant, change: before.length ? 'still-refused' : 'newly-refused', violations: now });
    else if (before.length) out.push({ tenant, change: 'now-admitted', violations: before });
  }
  return out;
}
