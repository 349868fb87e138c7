/**
 * Well-known names that more than one plugin (or a plugin and the core) must agree on. Each is defined here once.
 */

/** ROOT_CA_CONFIGMAP is the ConfigMap every apiserver publishes in every namespace with its cluster CA. */
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';

/** TENANT_ROOT_CA_CONFIGMAP is the super name of the tenant's ROOT_CA_CONFIGMAP (the super keeps its own). */
export const TENANT_ROOT_CA_CONFIGMAP = 'tenant-kube-root-ca.crt';

/** superConfigMapName maps a tenant ConfigMap name to its super name; Pods referring to ConfigMaps use it too. */
export function superConfigMapName(name: string): string {
  return name === ROOT_CA_CONFIGMAP ? TENANT_ROOT_CA_CONFIGMAP : name;
}

/** SERVICE_ACCOUNT_TOKEN is the Secret type the token controller fills with a token of its own cluster. */
export const SERVICE_ACCOUNT_TOKEN = 'kubernetes.io/service-account-token';

/**
 * SUPER_POD_SERVICE_ACCOUNT is the ServiceAccount every super Pod runs under, whatever the tenant Pod names: the
 * syncer keeps it in each super namespace without token automounting and binds it to nothing, so a super Pod holds no
 * super credential. A tenant ServiceAccount of this name is not synced.
 */
export const SUPER_POD_SERVICE_ACCOUNT = 'vc-tenant-pod';

/** VN_AGENT_PORT is the vn-agent's default port, which a vNode advertises as its kubelet endpoint. */
export const VN_AGENT_PORT = 10550;

/**
 * KUBELET_PATHS are the kubelet endpoints the vn-agent serves, with the shape of the path after `/<kind>/`:
 * how many segments it has (namespace, pod, optional uid, container) and where the optional pod uid sits.
 */
export const KUBELET_PATHS = {
  containerLogs: { min: 3, max: 3 },
  exec: { min: 3, max: 4, uidAt: 2 },
  attach: { min: 3, max: 4, uidAt: 2 },
  portForward: { min: 2, max: 3, uidAt: 2 },
  run: { min: 3, max: 4, uidAt: 2 },
} as const satisfies Record<string, { min: number; max: number; uidAt?: number }>;

/** KubeletKind is one of KUBELET_PATHS' keys. */
export type KubeletKind = keyof typeof KUBELET_PATHS;

/** KUBELET_KINDS lists KUBELET_PATHS' keys; every other kubelet path is refused. */
export const KUBELET_KINDS = Object.keys(KUBELET_PATHS) as KubeletKind[];

/**
 * TENANT_ISOLATION_POLICY is the NetworkPolicy the syncer keeps in every super namespace of a tenant: it admits
 * traffic from the tenant's own namespaces only and lets Pods reach their tenant, DNS, their apiserver and addresses
 * outside SUPER_INTERNAL_CIDRS. A tenant NetworkPolicy of this name is not synced.
 */
export const TENANT_ISOLATION_POLICY = 'vc-tenant-isolation';

/**
 * SUPER_INTERNAL_CIDRS are the address ranges a tenant Pod reaches only through the rules of TENANT_ISOLATION_POLICY
 * (its own tenant, DNS, its apiserver): private, shared, link-local (cloud metadata) and loopback ranges, where the
 * super cluster's Pods, Services, nodes and control plane live. Tenant egress ipBlocks are clipped to leave them out.
 */
export const SUPER_INTERNAL_CIDRS = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '169.254.0.0/16',
  '127.0.0.0/8',
  'fc00::/7',
  'fe80::/10',
] as const;

/**
 * QUOTA_OBJECT_NAME is the name of the ResourceQuota and of the LimitRange the syncer keeps in every super namespace of
 * a tenant whose policy has a quota section.
 */
export const QUOTA_OBJECT_NAME = 'vc-tenant-quota';

/** QUOTA_EXCEEDED is the reason of the Warning event on a tenant object the syncer does not copy because of a cap. */
export const QUOTA_EXCEEDED = 'QuotaExceeded';

/** SERVICE_NAME_LABEL names the Service an EndpointSlice belongs to (what kube-proxy and CoreDNS select on). */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
