/**
 * The shape of a native tenant control plane in the super cluster: the objects it reads, its defaults, ports, Secret
 * names and files under KUBE_DIR, the in-cluster names of its Services, and the PKI options that follow from them.
 */
import type { KubeObject, Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { firstServiceIP } from '../../pki/pki.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import type { ControlPlanePKI, ControlPlanePKIOptions } from '../../pki/pki.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import type { ApiServerExpose } from '../../api/virtualcluster.ts';
import { pkiPaths } from './flags.ts';
import type { VnAgentAddress } from './egress.ts';

/** VirtualCluster is the part of a tenancy.x-k8s.io VirtualCluster the native provisioner reads. */
export interface VirtualCluster extends KubeObject {
  spec: {
    /** the tenant's cluster DNS domain; default TENANT_DEFAULTS.clusterDomain */
    clusterDomain?: string;
    clusterVersionName?: string;
    /** lifetime of the tenant's certificates; default TENANT_DEFAULTS.pkiExpireDays */
    pkiExpireDays?: number;
    /** the tenant's service CIDR; default TENANT_DEFAULTS.serviceCidr */
    serviceCidr?: string;
    apiServer?: { extraArgs?: Record<string, string>; expose?: ApiServerExpose };
    controllerManager?: { extraArgs?: Record<string, string> };
    /** etcd members and apiserver instances (1, 3 or 5); default 1 */
    controlPlane?: { replicas?: number };
  };
}

/** ComputeResources are a container's cpu and memory quantities. */
export interface ComputeResources {
  cpu?: string;
  memory?: string;
}

/** ContainerResources are a container's requests and limits, as a ClusterVersion gives them per component. */
export interface ContainerResources {
  requests?: ComputeResources;
  limits?: ComputeResources;
}

/** ClusterVersion is the part of a tenancy.x-k8s.io ClusterVersion the native provisioner reads. */
export interface ClusterVersion extends KubeObject {
  spec: {
    /** tag of the default kube-apiserver and kube-controller-manager images, e.g. `v1.36.3` */
    kubernetesVersion: string;
    etcd?: {
      image?: string;
      /** etcd version, e.g. `v3.6.16`: the image is then `registry.k8s.io/etcd:3.6.16-0` unless image is set */
      version?: string;
      extraArgs?: Record<string, string>;
      resources?: ContainerResources;
      /** size of the data volume; default `1Gi` */
      storageSize?: string;
      /** GOMEMLIMIT of the container, a quantity */
      goMemoryLimit?: string;
      /** GOGC of the container */
      goGCPercent?: number;
    };
    apiServer?: {
      image?: string;
      replicas?: number;
      extraArgs?: Record<string, string>;
      resources?: ContainerResources;
      /** type of the `apiserver` Service; default ClusterIP */
      serviceType?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
      /** GOMEMLIMIT of the container, a quantity */
      goMemoryLimit?: string;
      /** GOGC of the container */
      goGCPercent?: number;
    };
    controllerManager?: {
      image?: string;
      replicas?: number;
      extraArgs?: Record<string, string>;
      resources?: ContainerResources;
      /** GOMEMLIMIT of the container, a quantity */
      goMemoryLimit?: string;
      /** GOGC of the container */
      goGCPercent?: number;
    };
  };
}

/** NativeInput is what renderNative renders a tenant control plane from. */
export interface NativeInput {
  vc: VirtualCluster;
  clusterVersion: ClusterVersion;
  /** made by generateControlPlanePKI(nativePKIOptions(vc, rootNamespace)) */
  pki: ControlPlanePKI;
  rootNamespace: string;
  /**
   * ClusterIPs of the `apiserver` and `etcd-client` Services once allocated: every control-plane Pod then maps the
   * in-cluster names it uses (apiserverHost, the etcd member's name) to them in /etc/hosts, so the control plane
   * works on a super cluster without cluster DNS (the local super cluster has none)
   */
  serviceIPs?: NativeServiceIPs;
  /** the platform's placement of the control-plane Pods (node selector entries and tolerations added) */
  placement?: ForcedPlacementView;
  /** a host directory for etcd's data (a hostPath volume) instead of a volume claim */
  etcdHostPath?: string;
  /**
   * the CA (PEM) the apiserver verifies its kubelets' serving certificates against (--kubelet-certificate-authority):
   * every vNode's kubelet is the vn-agent, so the CA of the vn-agent's serving certificate; absent, not verified
   */
  kubeletCA?: string;
  /** --quota-backend-bytes of the tenant's etcd (the policy's quota.etcdBytes); a ClusterVersion's etcd flag wins */
  etcdBytes?: number;
  /** the vn-agents the vNodes name (the apiserver's egress allows them); default VN_AGENT_PORT on every node */
  vnAgents?: readonly VnAgentAddress[];
  /**
   * the super cluster's own addresses (its apiserver's endpoints, its nodes' addresses): the apiserver's egress allows
   * none of them, even outside the super-internal ranges
   */
  platformAddresses?: readonly string[];
}

/** NativeServiceIPs are the ClusterIPs of a tenant control plane's Services. */
export interface NativeServiceIPs {
  apiserver?: string;
  etcd?: string;
  /** the ClusterIPs of the per-member Services `etcd-<i>` of an etcd of several members, by member */
  etcdMembers?: string[];
}

/** NATIVE_DEFAULTS are the values of ClusterVersion fields left out; a VirtualCluster's are TENANT_DEFAULTS. */
export const NATIVE_DEFAULTS = {
  etcdImage: 'registry.k8s.io/etcd:3.6.6-0',
  etcdStorageSize: '1Gi',
  /** the super cluster's DNS domain, in which `apiserver.<root>.svc.<domain>` resolves */
  superClusterDomain: 'cluster.local',
  /**
   * the resources of each component's container where the ClusterVersion gives none. Requests: the resident memory of
   * an idle native tenant on the real node (test/realnode/native.it.test.ts prints it: etcd 41-44 MB, kube-apiserver
   * 250-263 MB, kube-controller-manager 78-94 MB) rounded up, and the CPU requests the provisioner always had. Memory
   * limits: four times the request, so a tenant's control plane cannot take a node's memory, except etcd's, which
   * maps its whole database into memory: its storage quota (the policy's quota.etcdBytes) and 256 MiB
   * (etcdMemoryLimit). No CPU limit: a throttled apiserver or etcd misses its deadlines and leases, which is worse
   * than sharing a busy node.
   */
  resources: {
    etcd: { requests: { cpu: '100m', memory: '64Mi' } },
    apiserver: { requests: { cpu: '250m', memory: '320Mi' }, limits: { memory: '1280Mi' } },
    'controller-manager': { requests: { cpu: '200m', memory: '128Mi' }, limits: { memory: '512Mi' } },
  },
} as const;

/** etcdMemoryLimit is the default memory limit of an etcd member whose storage quota is etcdBytes (default 2 GiB). */
export function etcdMemoryLimit(etcdBytes = 2 * 1024 ** 3): string {
  return `${Math.ceil(etcdBytes / 1024 ** 2) + 256}Mi`;
}

/** NATIVE_REPLICAS are the member counts spec.controlPlane.replicas may name (an even etcd adds no tolerance). */
export const NATIVE_REPLICAS = [1, 3, 5] as const;

/** NATIVE_PORTS are the container ports of the tenant control plane. */
export const NATIVE_PORTS = {
  apiserver: 6443,
  controllerManager: 10257,
  etcdClient: 2379,
  etcdPeer: 2380,
  etcdMetrics: 2381,
} as const;

/** ETCD_CLIENT_SERVICE is the ClusterIP Service of etcd's client port (the headless `etcd` names the member). */
export const ETCD_CLIENT_SERVICE = 'etcd-client';

/** NATIVE_SECRETS names the Secrets renderNative puts in the root namespace. */
export const NATIVE_SECRETS = {
  ca: 'root-ca',
  apiserver: 'apiserver-tls',
  frontProxyCA: 'front-proxy-ca',
  frontProxyClient: 'front-proxy-client',
  serviceAccount: 'serviceaccount-key',
  kubeletClient: 'kubelet-client',
  adminKubeconfig: 'admin-kubeconfig',
  controllerManagerKubeconfig: 'controller-manager-kubeconfig',
  kubeletCA: 'kubelet-ca',
} as const;

/** ADMIN_KUBECONFIG_KEY is the data key of the admin kubeconfig in its Secret. */
export const ADMIN_KUBECONFIG_KEY = 'admin-kubeconfig';

/** KUBE_DIR is where every control-plane Pod finds its Secrets: certificates under `pki/`, kubeconfigs at the top. */
export const KUBE_DIR = '/etc/kubernetes';

/** PATHS are the PKI files under KUBE_DIR/pki and the controller manager's kubeconfig, as the Pods see them. */
export const PATHS = pkiPaths(`${KUBE_DIR}/pki`, { kubeconfig: `${KUBE_DIR}/controller-manager.kubeconfig` });
/** KUBELET_CA_FILE is where the apiserver finds NativeInput.kubeletCA. */
export const KUBELET_CA_FILE = `${KUBE_DIR}/pki/kubelet-ca.crt`;

/** FILE_SOURCES maps every file under KUBE_DIR to the Secret key it is projected from. */
export const FILE_SOURCES: Readonly<Record<string, { secret: string; key: string }>> = {
  [PATHS.caFile]: { secret: NATIVE_SECRETS.ca, key: 'tls.crt' },
  [PATHS.caKey]: { secret: NATIVE_SECRETS.ca, key: 'tls.key' },
  [PATHS.apiserverCert]: { secret: NATIVE_SECRETS.apiserver, key: 'tls.crt' },
  [PATHS.apiserverKey]: { secret: NATIVE_SECRETS.apiserver, key: 'tls.key' },
  [PATHS.saPub]: { secret: NATIVE_SECRETS.serviceAccount, key: 'sa.pub' },
  [PATHS.saKey]: { secret: NATIVE_SECRETS.serviceAccount, key: 'sa.key' },
  [PATHS.frontProxyCa]: { secret: NATIVE_SECRETS.frontProxyCA, key: 'tls.crt' },
  [PATHS.frontProxyClientCert]: { secret: NATIVE_SECRETS.frontProxyClient, key: 'tls.crt' },
  [PATHS.frontProxyClientKey]: { secret: NATIVE_SECRETS.frontProxyClient, key: 'tls.key' },
  [PATHS.kubeletClientCert]: { secret: NATIVE_SECRETS.kubeletClient, key: 'tls.crt' },
  [PATHS.kubeletClientKey]: { secret: NATIVE_SECRETS.kubeletClient, key: 'tls.key' },
  [PATHS.kubeconfig]: { secret: NATIVE_SECRETS.controllerManagerKubeconfig, key: 'controller-manager-kubeconfig' },
  [KUBELET_CA_FILE]: { secret: NATIVE_SECRETS.kubeletCA, key: 'ca.crt' },
};

/** NETWORK_POLICIES is the API resource of the NetworkPolicy renderNative makes for etcd. */
export const NETWORK_POLICIES: Resource = {
  group: 'networking.k8s.io',
  version: 'v1',
  resource: 'networkpolicies',
  kind: 'NetworkPolicy',
  namespaced: true,
};

/** resourceFor is the API resource of an object renderNative returns, for KubeClient.apply. */
export function resourceFor(obj: KubeObject): Resource {
  const r = [R.namespaces, R.secrets, R.services, R.statefulsets, NETWORK_POLICIES].find(
    (x) => x.kind === obj.kind && (x.group ? `${x.group}/${x.version}` : x.version) === obj.apiVersion,
  );
  if (!r) throw new Error(`renderNative does not make ${obj.apiVersion} ${obj.kind}`);
  return r;
}

/** apiserverHost is the in-cluster DNS name of a tenant's apiserver Service. */
export function apiserverHost(rootNamespace: string): string {
  return `apiserver.${rootNamespace}.svc`;
}

/** apiserverURL is the in-cluster URL of a tenant's apiserver, the server of the rendered kubeconfigs. */
export function apiserverURL(rootNamespace: string): string {
  return `https://${apiserverHost(rootNamespace)}:${NATIVE_PORTS.apiserver}`;
}

/** etcdURL is the client URL of a tenant's etcd, as its apiserver reaches it. */
export function etcdURL(rootNamespace: string): string {
  return `http://${etcdPeerHost(rootNamespace)}:${NATIVE_PORTS.etcdClient}`;
}

/** etcdPeerHost is the in-cluster name of etcd member `etcd-<member>` (default the first), through the headless `etcd` Service. */
export function etcdPeerHost(rootNamespace: string, member = 0): string {
  return `etcd-${member}.etcd.${rootNamespace}.svc`;
}

/** etcdMemberURLs are the client URLs of every member of a tenant's etcd of `members` members. */
export function etcdMemberURLs(rootNamespace: string, members: number): string[] {
  return Array.from(
    { length: members },
    (_, i) => `http://${etcdPeerHost(rootNamespace, i)}:${NATIVE_PORTS.etcdClient}`,
  );
}

/** etcdMemberService is the name of the ClusterIP Service of one member of an etcd of several members. */
export function etcdMemberService(member: number): string {
  return `etcd-${member}`;
}

/**
 * controlPlaneCounts are the instances of each component: etcd members and apiservers from spec.controlPlane.replicas
 * (the apiservers default to the ClusterVersion's apiServer.replicas), controller managers from the ClusterVersion,
 * else two (with leader election) when there are several members, else one.
 */
export function controlPlaneCounts(
  vc: VirtualCluster,
  cv: ClusterVersion,
): { etcd: number; apiserver: number; controllerManager: number } {
  const replicas = vc.spec.controlPlane?.replicas;
  const etcd = replicas ?? 1;
  return {
    etcd,
    apiserver: replicas ?? cv.spec.apiServer?.replicas ?? 1,
    controllerManager: cv.spec.controllerManager?.replicas ?? (etcd > 1 ? 2 : 1),
  };
}

/**
 * nativePKIOptions are the generateControlPlanePKI options of a tenant control plane in the super cluster: its
 * apiserver serves the `apiserver` Service names of the root namespace (up to `.svc.<superClusterDomain>`) besides
 * the tenant's own `kubernetes.default` names and the first IP of its service CIDR, and apiserverIPs (the Service's
 * ClusterIP when the manager reaches the apiserver there).
 */
export function nativePKIOptions(
  vc: VirtualCluster,
  rootNamespace: string,
  superClusterDomain: string = NATIVE_DEFAULTS.superClusterDomain,
  apiserverIPs: readonly string[] = [],
): ControlPlanePKIOptions {
  const s = vc.spec;
  return {
    clusterName: rootNamespace,
    apiserverDnsNames: [
      'apiserver',
      `apiserver.${rootNamespace}`,
      apiserverHost(rootNamespace),
      `${apiserverHost(rootNamespace)}.${superClusterDomain}`,
    ],
    apiserverIPs: [...apiserverIPs],
    serviceIP: firstServiceIP(s.serviceCidr ?? TENANT_DEFAULTS.serviceCidr),
    validityDays: s.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
    clusterDomain: s.clusterDomain ?? TENANT_DEFAULTS.clusterDomain,
  };
}
