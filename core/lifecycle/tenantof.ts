import type { Provisioned } from '../provisioners/provisioner.ts';
import type { EffectiveSettings } from '../tenancy/policy.ts';
import { tenantFrom, type Tenant } from '../tenancy/tenant.ts';
import type { ProvisionerType, VirtualCluster } from '../api/virtualcluster.ts';

/**
 * withEffective is the VirtualCluster as the provisioner must see it: the spec's flags, weight, level and plugins
 * replaced by what the policy grants, so that nothing the policy refused reaches a command line, and the provisioner
 * `type` that runs it (the manager's default where the spec names none).
 */
export function withEffective(vc: VirtualCluster, e: EffectiveSettings, type: ProvisionerType): VirtualCluster {
  return {
    ...vc,
    spec: {
      ...vc.spec,
      provisioner: { ...vc.spec.provisioner, type },
      // expose passed the policy with the rest; the provisioner reads it from here
      apiServer: { ...vc.spec.apiServer, extraArgs: e.apiServerArgs },
      controllerManager: { extraArgs: e.controllerManagerArgs },
      weight: e.weight,
      podSecurityLevel: e.podSecurityLevel,
      plugins: e.plugins,
      pluginConfig: e.pluginConfig,
    },
  };
}

/**
 * tenantOfVirtualCluster is the syncer tenant of a Running VirtualCluster: its identity from metadata, its settings from
 * the spec under the effective policy, its credentials from the provisioner (or the kubeconfig Secret the manager
 * wrote). The manager's controller and a separate syncer process (MetaTenantRegistry) build tenants the same way.
 */
export function tenantOfVirtualCluster(
  vc: VirtualCluster,
  root: string,
  p: Pick<Provisioned, 'kubeconfig' | 'apiserverEndpoint' | 'dnsApiEndpoint'>,
  e: EffectiveSettings,
): Tenant {
  const m = vc.metadata!;
  return tenantFrom({
    key: root,
    vcName: m.name!,
    vcNamespace: m.namespace!,
    vcUid: m.uid!,
    kubeconfig: p.kubeconfig,
    apiserverEndpoint: p.apiserverEndpoint,
    dnsApiEndpoint: p.dnsApiEndpoint,
    settings: {
      ...vc.spec,
      weight: e.weight,
      podSecurityLevel: e.podSecurityLevel,
      plugins: e.plugins,
      pluginConfig: e.pluginConfig,
      pods: e.pods,
      runtimeClasses: e.runtimeClasses,
      nodes: e.nodes,
      copiedMetadata: e.copiedMetadata,
      network: e.network,
      services: e.services,
      ingresses: e.ingresses,
      endpoints: e.endpoints,
      quota: {
        resourceQuota: e.quota.resourceQuota,
        limitRange: e.quota.limitRange,
        objects: e.quota.objects,
        ...(e.quota.compute && { compute: e.quota.compute }),
      },
      podCreateRate: e.podCreateRate,
      byteRate: e.byteRate,
    },
  });
}
