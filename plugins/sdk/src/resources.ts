import type { Resource } from './kube.ts';

const core = (resource: string, kind: string, namespaced = true): Resource => ({
  group: '',
  version: 'v1',
  resource,
  kind,
  namespaced,
});
const grp = (group: string, version: string, resource: string, kind: string, namespaced = true): Resource => ({
  group,
  version,
  resource,
  kind,
  namespaced,
});

/**
 * R describes the Kubernetes API resources that plugins and the core read, watch and write, by plural name: where
 * each lives (group, version) and what kind it serves. A plugin names a resource as `R.pods` in its manifest, its
 * `reads`, `watches` and `indexes`, and when it reads a cache. Resources of its own (a CRD) it describes itself.
 */
export const R = {
  namespaces: core('namespaces', 'Namespace', false),
  nodes: core('nodes', 'Node', false),
  pods: core('pods', 'Pod'),
  services: core('services', 'Service'),
  endpoints: core('endpoints', 'Endpoints'),
  endpointslices: grp('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice'),
  configmaps: core('configmaps', 'ConfigMap'),
  secrets: core('secrets', 'Secret'),
  serviceaccounts: core('serviceaccounts', 'ServiceAccount'),
  events: core('events', 'Event'),
  persistentvolumeclaims: core('persistentvolumeclaims', 'PersistentVolumeClaim'),
  persistentvolumes: core('persistentvolumes', 'PersistentVolume', false),
  resourcequotas: core('resourcequotas', 'ResourceQuota'),
  limitranges: core('limitranges', 'LimitRange'),
  storageclasses: grp('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  priorityclasses: grp('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', false),
  ingresses: grp('networking.k8s.io', 'v1', 'ingresses', 'Ingress'),
  networkpolicies: grp('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy'),
  deployments: grp('apps', 'v1', 'deployments', 'Deployment'),
  statefulsets: grp('apps', 'v1', 'statefulsets', 'StatefulSet'),
  daemonsets: grp('apps', 'v1', 'daemonsets', 'DaemonSet'),
  replicasets: grp('apps', 'v1', 'replicasets', 'ReplicaSet'),
  leases: grp('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  runtimeclasses: grp('node.k8s.io', 'v1', 'runtimeclasses', 'RuntimeClass', false),
  crds: grp('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  clusterroles: grp('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterrolebindings: grp('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  roles: grp('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  rolebindings: grp('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  validatingadmissionpolicies: grp(
    'admissionregistration.k8s.io',
    'v1',
    'validatingadmissionpolicies',
    'ValidatingAdmissionPolicy',
    false,
  ),
  validatingadmissionpolicybindings: grp(
    'admissionregistration.k8s.io',
    'v1',
    'validatingadmissionpolicybindings',
    'ValidatingAdmissionPolicyBinding',
    false,
  ),
} as const satisfies Record<string, Resource>;
