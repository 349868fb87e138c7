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
  /** the Cluster API control-plane provider kind */
  virtualclustercontrolplanes: {
    group: 'controlplane.tenancy.x-k8s.io',
    version: 'v1alpha1',
    resource: 'virtualclustercontrolplanes',
    kind: 'VirtualClusterControlPlane',
    namespaced: true,
  },
  /** the Cluster API infrastructure-cluster provider kind */
  virtualclusterinfraclusters: {
    group: 'infrastructure.tenancy.x-k8s.io',
    version: 'v1alpha1',
    resource: 'virtualclusterinfraclusters',
    kind: 'VirtualClusterInfraCluster',
    namespaced: true,
  },
  /** Cluster API's Cluster at the version its controllers store (v1beta2), for tenants made through Cluster API */
  capiclusters: {
    group: 'cluster.x-k8s.io',
    version: 'v1beta2',
    resource: 'clusters',
    kind: 'Cluster',
    namespaced: true,
  },
} as const satisfies Record<string, Resource>;
