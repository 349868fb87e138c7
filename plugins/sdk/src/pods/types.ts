import type { KubeObject } from '../kube.ts';

/** ConfigMapRef is any reference to a ConfigMap by name (volume source, projection, env and envFrom refs). */
export interface ConfigMapRef {
  name?: string;
  [field: string]: unknown;
}

/** EnvVar is one container environment variable. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: ConfigMapRef; [field: string]: unknown };
  [field: string]: unknown;
}

/** EnvFromSource imports a whole ConfigMap or Secret into the environment. */
export interface EnvFromSource {
  configMapRef?: ConfigMapRef;
  [field: string]: unknown;
}

/** Container is the part of a (init, ephemeral) container the pod plugins read and write. */
export interface Container {
  name: string;
  image?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  [field: string]: unknown;
}

/** VolumeProjection is one source of a projected volume. */
export interface VolumeProjection {
  configMap?: ConfigMapRef;
  serviceAccountToken?: { audience?: string; expirationSeconds?: number; path: string };
  [field: string]: unknown;
}

/** Volume is one Pod volume. */
export interface Volume {
  name: string;
  configMap?: ConfigMapRef;
  projected?: { sources?: VolumeProjection[]; defaultMode?: number; [field: string]: unknown };
  secret?: {
    secretName?: string;
    items?: Array<{ key: string; path: string }>;
    defaultMode?: number;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

/** PodDNSConfig is spec.dnsConfig. */
export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: Array<{ name: string; value?: string }>;
}

/** PodSpec is the part of a Pod spec the pod plugins read and write. */
export interface PodSpec {
  nodeName?: string;
  hostname?: string;
  subdomain?: string;
  hostNetwork?: boolean;
  dnsPolicy?: string;
  dnsConfig?: PodDNSConfig;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  activeDeadlineSeconds?: number;
  priority?: number;
  preemptionPolicy?: string;
  overhead?: Record<string, string>;
  runtimeClassName?: string;
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: Container[];
  volumes?: Volume[];
  schedulingGates?: Array<{ name: string }>;
  [field: string]: unknown;
}

/** PodStatus is a Pod status; the plugins copy it field by field. */
export interface PodStatus {
  phase?: string;
  conditions?: Array<{ type: string; status: string; [field: string]: unknown }>;
  [field: string]: unknown;
}

/** Pod is a core/v1 Pod as the pod plugins see it. */
export interface Pod extends KubeObject {
  spec?: PodSpec;
  status?: PodStatus;
}

/** NodeAddress is one entry of a Node's status.addresses. */
export interface NodeAddress {
  type: string;
  address: string;
}

/** Node is a core/v1 Node as far as plugins read and write it (vNodes mirror super nodes). */
export interface Node extends KubeObject {
  spec?: { taints?: Array<Record<string, unknown>>; unschedulable?: boolean; [field: string]: unknown };
  status?: {
    conditions?: Array<Record<string, unknown>>;
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    nodeInfo?: Record<string, unknown>;
    addresses?: NodeAddress[];
    daemonEndpoints?: { kubeletEndpoint?: { Port: number } };
    [field: string]: unknown;
  };
}
