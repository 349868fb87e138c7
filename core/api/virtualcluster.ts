import type { KubeObject } from '../../plugins/sdk/src/kube.ts';
import type { VirtualClusterSpec, VirtualClusterStatus } from './generated.ts';

export type { VirtualClusterSpec, VirtualClusterStatus } from './generated.ts';

/** PHASES are the phases of a VirtualCluster. */
export const PHASES = ['Pending', 'Provisioning', 'Running', 'Degraded', 'Updating', 'Error', 'Deleting'] as const;
/** Phase is one of PHASES. */
export type Phase = (typeof PHASES)[number];

/** PROVISIONERS name the ways a tenant control plane can be made. */
export const PROVISIONERS = ['local', 'native', 'import'] as const;
/** ProvisionerType is one of PROVISIONERS. */
export type ProvisionerType = (typeof PROVISIONERS)[number];

/** EXPOSE_TYPES are the Service types a tenant apiserver can be exposed with (spec.apiServer.expose.type). */
export const EXPOSE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer'] as const;
/** ExposeType is one of EXPOSE_TYPES. */
export type ExposeType = (typeof EXPOSE_TYPES)[number];

/** ApiServerExpose is spec.apiServer.expose: how the tenant apiserver is reached from outside the super cluster. */
export type ApiServerExpose = NonNullable<NonNullable<VirtualClusterSpec['apiServer']>['expose']>;

/** VirtualCluster is one tenant control plane's definition; its spec and status are generated from the schema. */
export interface VirtualCluster extends KubeObject {
  spec: VirtualClusterSpec;
  status?: VirtualClusterStatus;
}

/** kubeconfigSecretName is the Secret (in the VirtualCluster's namespace) holding the tenant's admin kubeconfig. */
export const kubeconfigSecretName = (vcName: string): string => `${vcName}-kubeconfig`;

/**
 * tenantCAConfigMapName is the ConfigMap (in the VirtualCluster's namespace) holding the tenant CA certificate under
 * TENANT_CA_KEY: public data the vn-agent needs to check the kubelet client certificate of the tenant apiserver,
 * published so that the agent reads no Secret.
 */
export const tenantCAConfigMapName = (vcName: string): string => `${vcName}-tenant-ca`;

/** TENANT_CA_KEY is the key of the CA bundle (PEM) in the tenant CA ConfigMap. */
export const TENANT_CA_KEY = 'ca.crt';

/**
 * SERVING_PHASES are the phases of a tenant whose control plane was provisioned and is kept: Running, Degraded (a
 * component fails its health check and is being restarted) and Updating. Its syncing, its vn-agent routes and its
 * count against the namespace cap go on through all three.
 */
export const SERVING_PHASES: ReadonlySet<string> = new Set<Phase>(['Running', 'Degraded', 'Updating']);
