/**
 * The configuration of a real node, as pure renderers: containerd (and gVisor's runsc), the CNI bridge, the kubelet,
 * kube-proxy and kube-router, and the names of the node's bridge, network and cgroup root.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { NODE_IMAGES } from '../../toolchain/node.ts';
import { ANTISPOOF_PLUGIN, antispoofPluginDir } from './antispoof.ts';
import { registryConfigDir } from './noderegistry.ts';
import { NODE_PORT_RANGE } from './ports.ts';

/** REAL_NODE_LABEL marks a real node (kubelet + containerd on this host); kwok's nodes carry `type=kwok` instead. */
export const REAL_NODE_LABEL = 'vc.tenancy.x-k8s.io/real-node';

/**
 * REAL_NODE_TAINT keeps Pods off a real node unless they tolerate it: the images a real node has are only those of
 * the node toolchain (NODE_IMAGES), so Pods written for simulated nodes would fail to pull there.
 */
export const REAL_NODE_TAINT = { key: REAL_NODE_LABEL, value: 'true', effect: 'NoSchedule' } as const;

/** RealNodeConfigInput is what the pure renderers of a real node's configuration files need. */
export interface RealNodeConfigInput {
  name: string;
  dir: string;
  binDir: string;
  cniDir: string;
  podCidr: string;
  serviceCidr: string;
  nodeIP: string;
  bridge: string;
  network: string;
  cgroupRoot: string;
  cgroup: 'v1' | 'v2';
  capSysResource: boolean;
  /** the toolchain has runsc and containerd-shim-runsc-v1: register the `runsc` handler */
  runsc: boolean;
  kubeletPort: number;
  kubeletHealthzPort: number;
  proxyHealthzPort: number;
  proxyMetricsPort: number;
  /** kube-router, the NetworkPolicy enforcer (core/toolchain/netpol.ts), when built; without it nothing enforces */
  kubeRouter?: string;
  kubeRouterHealthPort?: number;
  /** untainted registers the node without REAL_NODE_TAINT (a super cluster whose only node it is); default tainted */
  untainted?: boolean;
}

/** MAX_SHIM_SOCKET_DIR is containerd 2.4's limit on `socket_dir` on Linux (a shim socket path must fit sun_path). */
/**
 * TEST_HANDLER is the runtime handler upstream's RuntimeClass conformance specs name (its
 * PreconfiguredRuntimeClassHandler): a real node registers it as runc, as kind does; a policy must still allow it.
 */
export const TEST_HANDLER = 'test-handler';

export const MAX_SHIM_SOCKET_DIR = 42;

/**
 * shimSocketDir is where the node's containerd tells its runc shims to put their sockets: `<dir>/s` when that is short
 * enough for containerd, else `/run/vc-s-<hash of dir>`, so that no two nodes share containerd's global
 * /run/containerd/s. (gVisor's shim ignores the setting and still uses /run/containerd/s.)
 */
export function shimSocketDir(dir: string): string {
  const inside = join(dir, 's');
  if (inside.length <= MAX_SHIM_SOCKET_DIR) return inside;
  return `/run/vc-s-${createHash('sha256').update(dir).digest('hex').slice(0, 8)}`;
}

/** containerdSocket is where a node's containerd listens. */
export function containerdSocket(dir: string): string {
  return join(dir, 'containerd.sock');
}

/**
 * containerdConfig renders containerd's config (version 4): root, state and sockets under the node directory, no
 * host config imports, the overlayfs snapshotter, the pinned sandbox image, runc from the toolchain with its state
 * under the node directory, runc shim sockets in shimSocketDir, netns mounts under containerd's state, NRI disabled,
 * restrict_oom_score_adj where this process may not lower oom_score_adj, and a `runsc` handler (gVisor, systrap platform) when the toolchain has it.
 * Registry host configuration is read from the node's own certs.d (core/dev/local/noderegistry.ts), never the host's.
 */
export function containerdConfig(c: RealNodeConfigInput): string {
  const q = (s: string) => `'${s}'`;
  const sock = containerdSocket(c.dir);
  const runtime = "plugins.'io.containerd.cri.v1.runtime'";
  const lines = [
    'version = 4',
    `root = ${q(join(c.dir, 'containerd/root'))}`,
    `state = ${q(join(c.dir, 'containerd/state'))}`,
    'imports = []',
    'oom_score = 0',
    '',
    "[plugins.'io.containerd.server.v1.grpc']",
    `  address = ${q(sock)}`,
    "[plugins.'io.containerd.server.v1.ttrpc']",
    `  address = ${q(`${sock}.ttrpc`)}`,
    "[plugins.'io.containerd.internal.v1.opt']",
    `  path = ${q(join(c.dir, 'containerd/opt'))}`,
    "[plugins.'io.containerd.image-verifier.v1.bindir']",
    `  bin_dir = ${q(join(c.dir, 'containerd/image-verifier'))}`,
    "[plugins.'io.containerd.shim.v1.manager']",
    `  socket_dir = ${q(shimSocketDir(c.dir))}`,
    "[plugins.'io.containerd.nri.v1.nri']",
    '  disable = true',
    `  socket_path = ${q(join(c.dir, 'nri.sock'))}`,
    "[plugins.'io.containerd.cri.v1.images']",
    "  snapshotter = 'overlayfs'",
    "[plugins.'io.containerd.cri.v1.images'.pinned_images]",
    `  sandbox = ${q(NODE_IMAGES.pause)}`,
    "[plugins.'io.containerd.cri.v1.images'.registry]",
    `  config_path = ${q(registryConfigDir(c.dir))}`,
    `[${runtime}]`,
    `  restrict_oom_score_adj = ${!c.capSysResource}`,
    '  netns_mounts_under_state_dir = true',
    '  cdi_spec_dirs = []',
    `[${runtime}.containerd]`,
    "  default_runtime_name = 'runc'",
    `[${runtime}.containerd.runtimes.runc]`,
    "  runtime_type = 'io.containerd.runc.v2'",
    `[${runtime}.containerd.runtimes.runc.options]`,
    `  BinaryName = ${q(join(c.binDir, 'runc'))}`,
    `  Root = ${q(join(c.dir, 'runc'))}`,
    '  SystemdCgroup = false',
    // The handler upstream's RuntimeClass specs expect preconfigured (as kind configures it): runc under another name.
    `[${runtime}.containerd.runtimes.${TEST_HANDLER}]`,
    "  runtime_type = 'io.containerd.runc.v2'",
    `[${runtime}.containerd.runtimes.${TEST_HANDLER}.options]`,
    `  BinaryName = ${q(join(c.binDir, 'runc'))}`,
    `  Root = ${q(join(c.dir, 'runc'))}`,
    '  SystemdCgroup = false',
  ];
  if (c.runsc)
    lines.push(
      `[${runtime}.containerd.runtimes.runsc]`,
      "  runtime_type = 'io.containerd.runsc.v1'",
      `[${runtime}.containerd.runtimes.runsc.options]`,
      "  TypeUrl = 'io.containerd.runsc.v1.options'",
      `  ConfigPath = ${q(join(c.dir, 'runsc.toml'))}`,
    );
  lines.push(
    `[${runtime}.cni]`,
    `  bin_dirs = [${q(c.cniDir)}, ${q(antispoofPluginDir(c.dir))}]`,
    `  conf_dir = ${q(join(c.dir, 'cni/net.d'))}`,
    '',
  );
  return lines.join('\n');
}

/** runscConfig renders the gVisor shim's options: runsc from the toolchain, its state under the node directory. */
export function runscConfig(c: RealNodeConfigInput): string {
  return [
    `binary_name = '${join(c.binDir, 'runsc')}'`,
    `root = '${join(c.dir, 'runsc')}'`,
    '[runsc_config]',
    "  platform = 'systrap'",
    '',
  ].join('\n');
}

/**
 * cniConfig renders the node's CNI network: a bridge of its own (gateway = the node IP, masquerade through iptables)
 * with host-local addresses from the Pod CIDR (state under the node directory), then `vc-antispoof`, then portmap.
 * `macspoofchk` has the bridge drop every frame from a Pod's veth whose source MAC is not the Pod's own, and
 * vc-antispoof (core/dev/local/antispoof.ts) every frame from it that is not IPv4 from the Pod's own address or ARP
 * from the Pod's own MAC and address: no Pod, whatever capabilities a policy grants it, speaks as another on the link.
 */
export function cniConfig(c: RealNodeConfigInput): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: c.network,
    plugins: [
      {
        type: 'bridge',
        bridge: c.bridge,
        isGateway: true,
        ipMasq: true,
        ipMasqBackend: 'iptables',
        hairpinMode: true,
        macspoofchk: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: c.podCidr, gateway: c.nodeIP }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(c.dir, 'cni/ipam'),
        },
      },
      { type: ANTISPOOF_PLUGIN, bridge: c.bridge },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/**
 * NODE_EVICTION is the real node's evictionHard: a tenant filling the node's disk (emptyDir, container logs, writable
 * layers) has its Pods evicted before the disk is full for everyone. The image filesystem's own signal stays off: its
 * reclaim would delete images the toolchain built, which no registry serves.
 */
export const NODE_EVICTION = { 'nodefs.available': '5%', 'nodefs.inodesFree': '5%', 'imagefs.available': '0%' };

/**
 * KUBELET_SERVING_FILE is the kubelet's serving certificate and key, in one PEM below the node directory, named as both
 * its tlsCertFile and tlsPrivateKeyFile (Go reads the certificate blocks of the one and the key block of the other).
 */
export const KUBELET_SERVING_FILE = 'pki/kubelet-serving.pem';

/**
 * kubeletConfig renders the KubeletConfiguration: serving with the super CA's certificate on the node IP, client
 * certificates required (x509 against the super CA, anonymous off) and webhook authentication and authorization (the
 * super apiserver's TokenReview and SubjectAccessReview decide), the cgroupfs driver under its own cgroup root,
 * failCgroupV1 false on a cgroup v1 host, Pod logs under the node directory, the real-node taint (unless untainted), disk eviction on
 * (NODE_EVICTION) and no image GC by usage (the toolchain's images cannot be pulled again).
 */
export function kubeletConfig(c: RealNodeConfigInput): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    ...(c.cgroup === 'v1' ? { failCgroupV1: false } : {}),
    cgroupDriver: 'cgroupfs',
    cgroupRoot: c.cgroupRoot,
    containerRuntimeEndpoint: `unix://${containerdSocket(c.dir)}`,
    address: c.nodeIP,
    port: c.kubeletPort,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: c.kubeletHealthzPort,
    // one file with certificate and key, so that a renewal (nodecerts.ts) replaces both in one rename
    tlsCertFile: join(c.dir, KUBELET_SERVING_FILE),
    tlsPrivateKeyFile: join(c.dir, KUBELET_SERVING_FILE),
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: join(c.dir, 'pki/ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    failSwapOn: false,
    resolvConf: '/etc/resolv.conf',
    podLogsDir: join(c.dir, 'pod-logs'),
    clusterDomain: 'cluster.local',
    registerWithTaints: c.untainted ? [] : [REAL_NODE_TAINT],
    evictionHard: NODE_EVICTION,
    imageGCHighThresholdPercent: 100,
    serializeImagePulls: false,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    maxPods: 110,
  };
}

/** kubeProxyConfig renders kube-proxy's configuration: iptables mode, the node's Pod CIDR, ports on loopback. */
export function kubeProxyConfig(c: RealNodeConfigInput): Record<string, unknown> {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig: join(c.dir, 'kube-proxy.kubeconfig') },
    hostnameOverride: c.name,
    clusterCIDR: c.podCidr,
    bindAddress: c.nodeIP,
    healthzBindAddress: `127.0.0.1:${c.proxyHealthzPort}`,
    metricsBindAddress: `127.0.0.1:${c.proxyMetricsPort}`,
    // 0 leaves the host's conntrack sysctls as they are
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    // no NodePorts on 127.0.0.1, so kube-proxy leaves net.ipv4.conf.all.route_localnet alone
    iptables: { localhostNodePorts: false },
  };
}

/** KUBE_ROUTER_USER is the identity kube-router watches the super cluster with (RBAC: KUBE_ROUTER_RBAC). */
export const KUBE_ROUTER_USER = 'system:kube-router';

/**
 * kubeRouterArgs renders kube-router's flags for firewall-only mode: NetworkPolicies of the Pods on this node become
 * iptables rules and ipsets; no routing, no service proxy (kube-proxy's), no CNI config; metrics off, health on
 * loopback's port of the node. Its NodePort range is the super apiserver's (NODE_PORT_RANGE): kube-router lets every
 * Pod reach a local address at a port in it, ahead of the Pod's egress policy, so nothing of ours listens there.
 */
export function kubeRouterArgs(c: RealNodeConfigInput): string[] {
  return [
    '--run-firewall=true',
    '--run-router=false',
    '--run-service-proxy=false',
    '--run-loadbalancer=false',
    '--enable-cni=false',
    '--enable-ipv4=true',
    '--enable-ipv6=false',
    `--kubeconfig=${join(c.dir, 'kube-router.kubeconfig')}`,
    `--hostname-override=${c.name}`,
    `--service-cluster-ip-range=${c.serviceCidr}`,
    `--service-node-port-range=${NODE_PORT_RANGE.join('-')}`,
    `--health-port=${c.kubeRouterHealthPort ?? 0}`,
    '--metrics-port=0',
    '--v=1',
  ];
}

/** KUBE_ROUTER_RBAC is the ClusterRole and binding that let KUBE_ROUTER_USER read what its firewall needs. */
export const KUBE_ROUTER_RBAC = [
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'vc:kube-router' },
    rules: [
      {
        apiGroups: [''],
        resources: ['pods', 'namespaces', 'nodes', 'services', 'endpoints'],
        verbs: ['get', 'list', 'watch'],
      },
      { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
    ],
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'vc:kube-router' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'vc:kube-router' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: KUBE_ROUTER_USER }],
  },
] as const;

/** nodeNetworkNames derives a node's bridge (<= 15 characters) and CNI network name from its directory. */
export function nodeNetworkNames(dir: string): { bridge: string; network: string; cgroupRoot: string } {
  const h = createHash('sha256').update(dir).digest('hex').slice(0, 8);
  return { bridge: `vcbr${h}`, network: `vc-${h}`, cgroupRoot: `/vc-${h}` };
}

/** gatewayOf is the first host address of an IPv4 /24 (the bridge's and so the node's IP). */
export function gatewayOf(podCidr: string): string {
  const [ip] = podCidr.split('/');
  const o = ip!.split('.');
  return `${o[0]}.${o[1]}.${o[2]}.1`;
}
