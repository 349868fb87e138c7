import type { ComponentMaximum, ControlPlaneMaxResources } from '../../tenancy/policy.ts';
import { ProvisionRefused } from '../provisioner.ts';
import type { ClusterVersion, ComputeResources } from './layout.ts';
import { containerResources, memoryBytes, type NativeComponent } from './parts.ts';

/**
 * This module bounds a native tenant's control-plane containers by its TenantPolicy (spec.controlPlane.maxResources):
 * every request and limit of etcd, kube-apiserver and kube-controller-manager, as the ClusterVersion gives it or the
 * provisioner's default fills it in (containerResources), must be at most the policy's maximum for that component.
 * The provisioner judges it before it applies anything, so a refused tenant is not started and a running one keeps
 * running as it was.
 */

/** RESOURCES_OVER_POLICY is the reason of a ClusterVersion whose control-plane resources exceed the tenant's policy. */
export const RESOURCES_OVER_POLICY = 'ControlPlaneResourcesOverPolicy';

/** BOUNDED are the policy's (and ClusterVersion's) component fields, each with the component it sizes. */
const BOUNDED = [
  ['etcd', 'etcd'],
  ['apiServer', 'apiserver'],
  ['controllerManager', 'controller-manager'],
] as const satisfies ReadonlyArray<readonly [keyof ControlPlaneMaxResources, NativeComponent]>;

/** cpuMillis reads a CPU quantity of the schemas' form (`2`, `1.5`, `250m`) in thousandths of a core. */
export function cpuMillis(quantity: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(m?)$/.exec(quantity);
  if (!m) throw new Error(`CPU quantity ${quantity} is not of the form 250m or 2`);
  return m[2] ? Number(m[1]) : Number(m[1]) * 1000;
}

const amount = (resource: keyof ComputeResources, quantity: string) =>
  resource === 'cpu' ? cpuMillis(quantity) : memoryBytes(quantity);

/**
 * resourcesOverPolicy lists, one message each, the requests and limits of the ClusterVersion's components (named
 * cvName; undefined: the provisioner's default ClusterVersion) that exceed `bound`, each naming the ClusterVersion's
 * field, its value (and whether it is the provisioner's default) and the policy's field. etcdBytes is the tenant's etcd
 * storage quota, on which etcd's default memory limit depends. Empty when all fit.
 */
export function resourcesOverPolicy(
  spec: ClusterVersion['spec'],
  cvName: string | undefined,
  bound: { policyName: string; max: ControlPlaneMaxResources },
  etcdBytes?: number,
): string[] {
  const out: string[] = [];
  for (const [field, component] of BOUNDED) {
    const max: ComponentMaximum | undefined = bound.max[field];
    if (!max) continue;
    const given = spec[field]?.resources;
    const effective = containerResources(component, given, etcdBytes);
    for (const kind of ['requests', 'limits'] as const)
      for (const resource of ['cpu', 'memory'] as const) {
        const value = effective[kind][resource];
        const most = max[resource];
        if (value === undefined || most === undefined || amount(resource, value) <= amount(resource, most)) continue;
        const path = `spec.${field}.resources.${kind}.${resource}`;
        const where = cvName ? `ClusterVersion ${cvName} ${path}` : `${path} of the default ClusterVersion`;
        const what = given?.[kind]?.[resource] === undefined ? `${value} (the native provisioner's default)` : value;
        out.push(
          `${where}: ${what} is more than the ${most} TenantPolicy "${bound.policyName}" allows ` +
            `(controlPlane.maxResources.${field}.${resource})`,
        );
      }
  }
  return out;
}

/**
 * judgeResources refuses (ProvisionRefused: nothing is applied, Pods that run keep running) a ClusterVersion whose
 * control-plane resources exceed the tenant's policy (resourcesOverPolicy); without a bound there is nothing to judge.
 */
export function judgeResources(
  cv: Pick<ClusterVersion, 'spec'>,
  cvName: string | undefined,
  bound: { policyName: string; max: ControlPlaneMaxResources } | undefined,
  etcdBytes?: number,
): void {
  if (!bound) return;
  const over = resourcesOverPolicy(cv.spec, cvName, bound, etcdBytes);
  if (over.length) throw new ProvisionRefused(RESOURCES_OVER_POLICY, over.join('; '));
}

/**
 * withPolicyLimits is the ClusterVersion the provisioner renders a tenant with under its policy's maximum (judged by
 * judgeResources first): a CPU or memory limit the policy bounds for a component, and that neither the ClusterVersion
 * nor the provisioner's default sets, becomes the policy's maximum. A container without a limit may use the whole
 * node, more than any bound; the provisioner's default has no CPU limit, so without this a policy's `cpu` bounded
 * only requests. Without a bound the ClusterVersion is answered as it is.
 */
export function withPolicyLimits(
  cv: ClusterVersion,
  max: ControlPlaneMaxResources | undefined,
  etcdBytes?: number,
): ClusterVersion {
  if (!max) return cv;
  const out = structuredClone(cv);
  for (const [field, component] of BOUNDED) {
    const most = max[field];
    if (!most) continue;
    const effective = containerResources(component, cv.spec[field]?.resources, etcdBytes);
    for (const resource of ['cpu', 'memory'] as const) {
      const bound = most[resource];
      if (bound === undefined || effective.limits[resource] !== undefined) continue;
      const spec = (out.spec[field] ??= {});
      const resources = (spec.resources ??= {});
      resources.limits = { ...resources.limits, [resource]: bound };
    }
  }
  return out;
}
