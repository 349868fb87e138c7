import { R as KUBE } from '@virtualcluster-ts/plugin-sdk';
import type { Resource } from './client.ts';

const tenancy = (resource: string, kind: string, namespaced: boolean): Resource => ({
  group: 'tenancy.x-k8s.io',
  version: 'v1alpha1',
  resource,
  kind,
  namespaced,
});

/**
 * R lists the resources the core touches: the Kubernetes ones the plugin SDK describes for plugins and the core alike
 * (its R, one table), and the project's own custom resources, which only the core reads and writes.
 */
export const R = {
  ...KUBE,
  virtualclusters: tenancy('virtualclusters', 'VirtualCluster', true),
  clusterversions: tenancy('clusterversions', 'ClusterVersion', false),
  tenantpolicies: tenancy('tenantpolicies', 'TenantPolicy', false),
} as const satisfies Record<string, Resource>;
