import type { TenantPolicySpec } from '../api/generated.ts';
import type { ExposeType, VirtualCluster } from '../api/virtualcluster.ts';
import type { PolicyViolation } from './policy.ts';

/** ExposePolicy is spec.controlPlane.expose of a TenantPolicy: what a VirtualCluster may ask for in spec.apiServer.expose. */
export type ExposePolicy = NonNullable<NonNullable<TenantPolicySpec['controlPlane']>['expose']>;

/**
 * exposeViolations checks spec.apiServer.expose against the policy's controlPlane.expose: a Service type beyond
 * ClusterIP that allowedTypes does not list, extra certificate names without extraNames, a chosen node port without
 * fixedNodePort. A VirtualCluster that asks for nothing asks for ClusterIP, which every policy allows. defaults stand for what the policy leaves out.
 */
export function exposeViolations(
  expose: NonNullable<VirtualCluster['spec']['apiServer']>['expose'],
  policy: ExposePolicy | undefined,
  quoted: string,
  defaults: { allowedTypes: readonly ExposeType[]; extraNames: boolean; fixedNodePort: boolean },
): PolicyViolation[] {
  const out: PolicyViolation[] = [];
  if (!expose) return out;
  const allowed: readonly ExposeType[] = policy?.allowedTypes ?? defaults.allowedTypes;
  if (expose.type && expose.type !== 'ClusterIP' && !allowed.includes(expose.type)) {
    const listed = [...new Set(['ClusterIP', ...allowed])].join(', ');
    out.push({
      field: 'spec.apiServer.expose.type',
      message: `Service type ${expose.type} is not allowed under ${quoted} (controlPlane.expose.allowedTypes: ${listed})`,
    });
  }
  if (!(policy?.extraNames ?? defaults.extraNames))
    for (const key of ['extraDNSNames', 'extraIPs'] as const)
      if (expose[key]?.length)
        out.push({
          field: `spec.apiServer.expose.${key}`,
          message: `extra serving certificate names are not allowed under ${quoted} (controlPlane.expose.extraNames)`,
        });
  if (expose.nodePort !== undefined && !(policy?.fixedNodePort ?? defaults.fixedNodePort))
    out.push({
      field: 'spec.apiServer.expose.nodePort',
      message: `choosing the node port ${expose.nodePort} is not allowed under ${quoted} (controlPlane.expose.fixedNodePort)`,
    });
  return out;
}
