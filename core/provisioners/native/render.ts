import { createHash } from 'node:crypto';
import type { KubeObject, Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { ANN, IDENTITY, LABEL } from '../../names/names.ts';
import { firstServiceIP, renderKubeconfig } from '../../pki/pki.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import { rootNamespaceObject } from '../../tenancy/namespace.ts';
import type { ControlPlanePKI, ControlPlanePKIOptions } from '../../pki/pki.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';
import type { ApiServerExpose } from '../../api/virtualcluster.ts';
import { exposeSettings, type ExposeSettings } from './expose.ts';
import { apiserverFlags, controllerManagerFlags, flagList, pkiPaths, TENANT_CONTROLLERS } from './flags.ts';

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
  };
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
      /** size of the data volume; default `1Gi` */
      storageSize?: string;
    };
    apiServer?: {
      image?: string;
      replicas?: number;
      extraArgs?: Record<string, string>;
      /** type of the `apiserver` Service; default ClusterIP */
      serviceType?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
    };
    controllerManager?: { image?: string; replicas?: number; extraArgs?: Record<string, string> };
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
}

/** NativeServiceIPs are the ClusterIPs of a tenant control plane's Services. */
export interface NativeServiceIPs {
  apiserver?: string;
  etcd?: string;
}

/** NATIVE_DEFAULTS are the values of ClusterVersion fields left out; a VirtualCluster's are TENANT_DEFAULTS. */
export const NATIVE_DEFAULTS = {
  etcdImage: 'registry.k8s.io/etcd:3.6.6-0',
  etcdStorageSize: '1Gi',
  /** the super cluster's DNS domain, in which `apiserver.<root>.svc.<domain>` resolves */
  superClusterDomain: 'cluster.local',
} as const;

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

const PATHS = pkiPaths(`${KUBE_DIR}/pki`, { kubeconfig: `${KUBE_DIR}/controller-manager.kubeconfig` });
/** KUBELET_CA_FILE is where the apiserver finds NativeInput.kubeletCA. */
const KUBELET_CA_FILE = `${KUBE_DIR}/pki/kubelet-ca.crt`;

/** FILE_SOURCES maps every file under KUBE_DIR to the Secret key it is projected from. */
const FILE_SOURCES: Readonly<Record<string, { secret: string; key: string }>> = {
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

function etcdPeerHost(rootNamespace: string): string {
  return `etcd-0.etcd.${rootNamespace}.svc`;
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

/**
 * renderNative renders a tenant control plane as objects for the super cluster, all in the root namespace: the
 * Namespace; Secrets with the PKI and the admin and controller-manager kubeconfigs (server apiserverURL); etcd
 * (StatefulSet with a data volume, claimed or on the host, the Services of renderNativeServices, a NetworkPolicy
 * admitting only the apiserver to its client port); kube-apiserver (StatefulSet and Service `apiserver`) and kube-controller-manager (StatefulSet), with the
 * flags of apiserverFlags and controllerManagerFlags. Every Pod gets the platform's placement and the hostAliases of
 * the known Service IPs. Each pod template carries ANN.configHash, so new
 * certificates or flags roll its StatefulSet. Namespace first, then Secrets, then the rest: an order to apply in.
 */
export function renderNative(input: NativeInput): KubeObject[] {
  const { vc, clusterVersion: cv, rootNamespace: root } = input;
  const s = vc.spec;
  const serviceCidr = s.serviceCidr ?? TENANT_DEFAULTS.serviceCidr;
  const secrets = renderSecrets(input);
  const secretData = new Map(secrets.map((x) => [x.metadata!.name!, x.data as Record<string, string>]));
  const apiserverReplicas = cv.spec.apiServer?.replicas ?? 1;
  const kcmReplicas = cv.spec.controllerManager?.replicas ?? 1;

  const apiserverArgs = apiserverFlags({
    paths: PATHS,
    etcdServers: etcdURL(root),
    etcdPrefix: '/registry',
    bindAddress: '0.0.0.0',
    advertiseAddress: '$(POD_IP)',
    securePort: NATIVE_PORTS.apiserver,
    serviceCidr,
    clusterDomain: s.clusterDomain ?? TENANT_DEFAULTS.clusterDomain,
    extraArgs: {
      ...cv.spec.apiServer?.extraArgs,
      ...s.apiServer?.extraArgs,
      // the platform's, after the tenant's (the allow-list refuses the flag from a VirtualCluster or ClusterVersion)
      ...(input.kubeletCA && { 'kubelet-certificate-authority': KUBELET_CA_FILE }),
    },
  });
  const kcmArgs = controllerManagerFlags({
    paths: PATHS,
    bindAddress: '0.0.0.0',
    securePort: NATIVE_PORTS.controllerManager,
    clusterName: root,
    serviceCidr,
    controllers: TENANT_CONTROLLERS,
    leaderElect: kcmReplicas > 1,
    extraArgs: { ...cv.spec.controllerManager?.extraArgs, ...s.controllerManager?.extraArgs },
  });
  // The policy's storage quota of the tenant's etcd (quota.etcdBytes); a ClusterVersion flag of the platform wins.
  const quota: Record<string, string> =
    input.etcdBytes === undefined ? {} : { 'quota-backend-bytes': String(input.etcdBytes) };
  const etcdArgs = etcdFlags(root, { ...quota, ...cv.spec.etcd?.extraArgs });

  const [etcdService, etcdClientService, apiserverService] = renderNativeServices(
    cv,
    root,
    exposeSettings(s.apiServer?.expose, cv.spec.apiServer?.serviceType),
  );
  const pod: PodParts = {
    hostAliases: hostAliases(root, input.serviceIPs),
    placement: input.placement,
  };
  const k8sImage = (name: string): string => `registry.k8s.io/${name}:${cv.spec.kubernetesVersion}`;
  const httpsProbe = (path: string, port: number) => ({ httpGet: { path, port, scheme: 'HTTPS' } });
  const httpProbe = (path: string, port: number) => ({ httpGet: { path, port, scheme: 'HTTP' } });

  return [
    rootNamespaceObject(vc.metadata ?? {}, root),
    ...secrets,
    etcdService,
    etcdClientService,
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: objectMeta(root, 'etcd', 'etcd'),
      spec: {
        podSelector: { matchLabels: selector(root, 'etcd') },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [{ podSelector: { matchLabels: selector(root, 'apiserver') } }],
            ports: [{ protocol: 'TCP', port: NATIVE_PORTS.etcdClient }],
          },
          {
            from: [{ podSelector: { matchLabels: selector(root, 'etcd') } }],
            ports: [{ protocol: 'TCP', port: NATIVE_PORTS.etcdPeer }],
          },
          { ports: [{ protocol: 'TCP', port: NATIVE_PORTS.etcdMetrics }] },
        ],
      },
    },
    statefulSet(root, 'etcd', {
      ...pod,
      replicas: 1,
      serviceName: 'etcd',
      files: new Map(),
      args: etcdArgs,
      container: {
        image: etcdImage(cv),
        command: ['etcd'],
        ports: [
          { name: 'client', containerPort: NATIVE_PORTS.etcdClient },
          { name: 'peer', containerPort: NATIVE_PORTS.etcdPeer },
          { name: 'metrics', containerPort: NATIVE_PORTS.etcdMetrics },
        ],
        volumeMounts: [{ name: 'data', mountPath: '/var/lib/etcd' }],
        resources: { requests: { cpu: '100m', memory: '100Mi' } },
        readinessProbe: { ...httpProbe('/readyz', NATIVE_PORTS.etcdMetrics), periodSeconds: 5, failureThreshold: 3 },
        livenessProbe: { ...httpProbe('/livez', NATIVE_PORTS.etcdMetrics), periodSeconds: 10, failureThreshold: 8 },
        startupProbe: { ...httpProbe('/readyz', NATIVE_PORTS.etcdMetrics), periodSeconds: 5, failureThreshold: 24 },
      },
      ...(input.etcdHostPath
        ? { volumes: [{ name: 'data', hostPath: { path: input.etcdHostPath, type: 'DirectoryOrCreate' } }] }
        : {
            volumeClaimTemplates: [
              {
                apiVersion: 'v1',
                kind: 'PersistentVolumeClaim',
                metadata: { name: 'data' },
                spec: {
                  accessModes: ['ReadWriteOnce'],
                  resources: { requests: { storage: cv.spec.etcd?.storageSize ?? NATIVE_DEFAULTS.etcdStorageSize } },
                },
              },
            ],
          }),
    }),
    apiserverService,
    statefulSet(root, 'apiserver', {
      ...pod,
      replicas: apiserverReplicas,
      serviceName: 'apiserver',
      files: projectedFiles(apiserverArgs, secretData),
      args: apiserverArgs,
      container: {
        image: cv.spec.apiServer?.image ?? k8sImage('kube-apiserver'),
        command: ['kube-apiserver'],
        env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
        ports: [{ name: 'https', containerPort: NATIVE_PORTS.apiserver }],
        resources: { requests: { cpu: '250m' } },
        readinessProbe: { ...httpsProbe('/readyz', NATIVE_PORTS.apiserver), periodSeconds: 5, failureThreshold: 3 },
        livenessProbe: { ...httpsProbe('/livez', NATIVE_PORTS.apiserver), periodSeconds: 10, failureThreshold: 8 },
        startupProbe: { ...httpsProbe('/livez', NATIVE_PORTS.apiserver), periodSeconds: 5, failureThreshold: 48 },
        securityContext: { capabilities: { drop: ['ALL'] } },
      },
    }),
    statefulSet(root, 'controller-manager', {
      ...pod,
      replicas: kcmReplicas,
      serviceName: 'controller-manager',
      files: projectedFiles(kcmArgs, secretData),
      args: kcmArgs,
      container: {
        image: cv.spec.controllerManager?.image ?? k8sImage('kube-controller-manager'),
        command: ['kube-controller-manager'],
        ports: [{ name: 'https', containerPort: NATIVE_PORTS.controllerManager }],
        resources: { requests: { cpu: '200m' } },
        readinessProbe: {
          ...httpsProbe('/healthz', NATIVE_PORTS.controllerManager),
          periodSeconds: 10,
          failureThreshold: 3,
        },
        livenessProbe: {
          ...httpsProbe('/healthz', NATIVE_PORTS.controllerManager),
          periodSeconds: 10,
          failureThreshold: 8,
        },
        startupProbe: {
          ...httpsProbe('/healthz', NATIVE_PORTS.controllerManager),
          periodSeconds: 5,
          failureThreshold: 48,
        },
        securityContext: { capabilities: { drop: ['ALL'] } },
      },
    }),
  ];
}

/**
 * renderNativeServices are the Services of a tenant control plane, which need no PKI: `etcd` (headless, it names
 * the member `etcd-0`), ETCD_CLIENT_SERVICE (a ClusterIP for etcd's client port) and `apiserver`, of the exposed
 * type (spec.apiServer.expose, else the ClusterVersion's serviceType, else ClusterIP) with the chosen node port if
 * any. The provisioner applies them first: their ClusterIPs go into the Pods' /etc/hosts and, when the manager
 * reaches the apiserver there, into the apiserver's certificate; the exposed addresses go there too.
 */
export function renderNativeServices(
  cv: ClusterVersion,
  root: string,
  expose: ExposeSettings = exposeSettings(undefined, cv.spec.apiServer?.serviceType),
): KubeObject[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: objectMeta(root, 'etcd', 'etcd'),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector: selector(root, 'etcd'),
        ports: [
          { name: 'client', port: NATIVE_PORTS.etcdClient, targetPort: NATIVE_PORTS.etcdClient },
          { name: 'peer', port: NATIVE_PORTS.etcdPeer, targetPort: NATIVE_PORTS.etcdPeer },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: objectMeta(root, ETCD_CLIENT_SERVICE, 'etcd'),
      spec: {
        selector: selector(root, 'etcd'),
        ports: [{ name: 'client', port: NATIVE_PORTS.etcdClient, targetPort: NATIVE_PORTS.etcdClient }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: objectMeta(root, 'apiserver', 'apiserver'),
      spec: {
        type: expose.type,
        selector: selector(root, 'apiserver'),
        ports: [
          {
            name: 'https',
            port: NATIVE_PORTS.apiserver,
            targetPort: NATIVE_PORTS.apiserver,
            ...(expose.nodePort !== undefined && { nodePort: expose.nodePort }),
          },
        ],
      },
    },
  ];
}

/** hostAliases maps the in-cluster names the control plane dials to the ClusterIPs known so far. */
function hostAliases(root: string, ips: NativeServiceIPs = {}): Array<{ ip: string; hostnames: string[] }> {
  const out: Array<{ ip: string; hostnames: string[] }> = [];
  if (ips.etcd) out.push({ ip: ips.etcd, hostnames: [etcdPeerHost(root)] });
  if (ips.apiserver) out.push({ ip: ips.apiserver, hostnames: [apiserverHost(root)] });
  return out;
}

/**
 * etcdImage is spec.etcd.image, else the kubeadm-style tag of spec.etcd.version in registry.k8s.io (`v3.6.16` gives
 * `3.6.16-0`), else NATIVE_DEFAULTS.etcdImage.
 */
function etcdImage(cv: ClusterVersion): string {
  const e = cv.spec.etcd;
  if (e?.image) return e.image;
  if (!e?.version) return NATIVE_DEFAULTS.etcdImage;
  const tag = e.version.replace(/^v/, '');
  return `registry.k8s.io/etcd:${tag.includes('-') ? tag : `${tag}-0`}`;
}

/**
 * etcdFlags is the command line of the single etcd member `etcd-0`: plain HTTP on all Pod addresses (the
 * NetworkPolicy limits who connects), data in the volume, health on the metrics port.
 */
function etcdFlags(root: string, extraArgs: ExtraArgs = {}): string[] {
  const peer = `http://${etcdPeerHost(root)}:${NATIVE_PORTS.etcdPeer}`;
  return flagList(
    [
      ['name', 'etcd-0'],
      ['data-dir', '/var/lib/etcd/data'],
      ['listen-client-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdClient}`],
      ['advertise-client-urls', etcdURL(root)],
      ['listen-peer-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdPeer}`],
      ['initial-advertise-peer-urls', peer],
      ['initial-cluster', `etcd-0=${peer}`],
      ['initial-cluster-state', 'new'],
      ['initial-cluster-token', root],
      ['listen-metrics-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdMetrics}`],
    ],
    extraArgs,
  );
}

function renderSecrets({ vc, pki, rootNamespace: root, kubeletCA }: NativeInput): KubeObject[] {
  const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  const tls = (
    name: string,
    pair: { certPem: string; keyPem: string },
    annotations?: Record<string, string>,
  ): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...objectMeta(root, name), ...(annotations ? { annotations } : {}) },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem) },
  });
  const opaque = (name: string, data: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: objectMeta(root, name),
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  });
  const kubeconfig = (user: string, pair: { certPem: string; keyPem: string }): string =>
    renderKubeconfig({
      clusterName: vc.metadata?.name ?? root,
      server: apiserverURL(root),
      caPem: pki.ca.certPem,
      user,
      clientCertPem: pair.certPem,
      clientKeyPem: pair.keyPem,
    });
  return [
    tls(NATIVE_SECRETS.ca, pki.ca),
    tls(NATIVE_SECRETS.apiserver, pki.apiserver),
    tls(NATIVE_SECRETS.frontProxyCA, pki.frontProxyCA),
    tls(NATIVE_SECRETS.frontProxyClient, pki.frontProxyClient),
    opaque(NATIVE_SECRETS.serviceAccount, {
      'sa.key': pki.serviceAccount.privateKeyPem,
      'sa.pub': pki.serviceAccount.publicKeyPem,
    }),
    tls(NATIVE_SECRETS.kubeletClient, pki.kubeletClient, {
      [ANN.kubeletClientFingerprint]: pki.kubeletClientFingerprint,
    }),
    opaque(NATIVE_SECRETS.adminKubeconfig, { [ADMIN_KUBECONFIG_KEY]: kubeconfig('admin', pki.admin) }),
    opaque(NATIVE_SECRETS.controllerManagerKubeconfig, {
      'controller-manager-kubeconfig': kubeconfig('system:kube-controller-manager', pki.controllerManager),
    }),
    ...(kubeletCA ? [opaque(NATIVE_SECRETS.kubeletCA, { 'ca.crt': kubeletCA })] : []),
  ];
}

/** ProjectedFile is one file of KUBE_DIR in a Pod: where it comes from and (base64) what it holds. */
interface ProjectedFile {
  secret: string;
  key: string;
  data: string;
}

/**
 * projectedFiles finds the files under KUBE_DIR a command line names and the Secret key each comes from; a flag
 * naming a file no Secret provides is an error here rather than a crash loop in the super cluster.
 */
function projectedFiles(
  args: readonly string[],
  secretData: ReadonlyMap<string, Record<string, string>>,
): Map<string, ProjectedFile> {
  const files = new Map<string, ProjectedFile>();
  for (const arg of args) {
    const v = arg.slice(arg.indexOf('=') + 1);
    if (!v.startsWith(`${KUBE_DIR}/`)) continue;
    const src = FILE_SOURCES[v];
    if (!src) throw new Error(`${arg}: no Secret provides ${v}`);
    files.set(v, { ...src, data: secretData.get(src.secret)![src.key]! });
  }
  return files;
}

/** PodParts are what every control-plane Pod of a tenant shares. */
interface PodParts {
  hostAliases: Array<{ ip: string; hostnames: string[] }>;
  placement?: ForcedPlacementView;
}

interface StatefulSetParts extends PodParts {
  replicas: number;
  serviceName: string;
  files: ReadonlyMap<string, ProjectedFile>;
  args: string[];
  container: Record<string, unknown> & { image: string };
  volumeClaimTemplates?: KubeObject[];
  /** volumes of the Pod besides the projected Secrets */
  volumes?: Array<Record<string, unknown>>;
}

function statefulSet(root: string, component: string, p: StatefulSetParts): KubeObject {
  const sources = new Map<string, Array<{ key: string; path: string }>>();
  for (const [path, f] of [...p.files].sort(([a], [b]) => a.localeCompare(b))) {
    const items = sources.get(f.secret) ?? [];
    items.push({ key: f.key, path: path.slice(KUBE_DIR.length + 1) });
    sources.set(f.secret, items);
  }
  const hash = createHash('sha256')
    .update(
      JSON.stringify({
        args: p.args,
        files: [...p.files].map(([path, f]) => [path, f.data]).sort(([a], [b]) => a!.localeCompare(b!)),
      }),
    )
    .digest('hex')
    .slice(0, 32);
  const volumes = [
    ...(p.volumes ?? []),
    ...(sources.size === 0
      ? []
      : [
          {
            name: 'kubernetes',
            projected: {
              defaultMode: 0o400,
              sources: [...sources].map(([name, items]) => ({ secret: { name, items } })),
            },
          },
        ]),
  ];
  const { nodeSelector, tolerations } = p.placement ?? {};
  const mounts = sources.size === 0 ? [] : [{ name: 'kubernetes', mountPath: KUBE_DIR, readOnly: true }];
  const existingMounts = (p.container.volumeMounts as unknown[] | undefined) ?? [];
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: objectMeta(root, component, component),
    spec: {
      replicas: p.replicas,
      serviceName: p.serviceName,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: selector(root, component) },
      template: {
        metadata: { labels: selector(root, component), annotations: { [ANN.configHash]: hash } },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          ...(p.hostAliases.length ? { hostAliases: p.hostAliases } : {}),
          ...(nodeSelector && Object.keys(nodeSelector).length ? { nodeSelector: { ...nodeSelector } } : {}),
          ...(tolerations?.length ? { tolerations: tolerations.map((t) => ({ ...t })) } : {}),
          containers: [
            {
              name: component,
              ...p.container,
              args: p.args,
              volumeMounts: [...existingMounts, ...mounts],
              securityContext: {
                allowPrivilegeEscalation: false,
                ...(p.container.securityContext as object | undefined),
              },
            },
          ],
          volumes,
        },
      },
      ...(p.volumeClaimTemplates ? { volumeClaimTemplates: p.volumeClaimTemplates } : {}),
    },
  };
}

function selector(root: string, component: string): Record<string, string> {
  return { [LABEL.cluster]: root, [LABEL.component]: component };
}

function objectMeta(
  root: string,
  name: string,
  component?: string,
): { name: string; namespace: string; labels: Record<string, string> } {
  return {
    name,
    namespace: root,
    labels: {
      [LABEL.managedBy]: IDENTITY.manager,
      [LABEL.cluster]: root,
      ...(component ? { [LABEL.component]: component } : {}),
    },
  };
}
