import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { join } from 'node:path';
import { issueCert, issueNodeCert, renderKubeconfig } from '../pki/pki.ts';
import { R } from '../kube/resources.ts';
import type { KubeObject } from '../kube/client.ts';
import { kubeRouterPath } from '../toolchain/netpol.ts';
import {
  NODE_IMAGES,
  cniBinDir,
  isNodeToolchainComplete,
  nodeBinaryPath,
  nodeImageArchive,
  nodeToolchainDir,
  type NodeImage,
} from '../toolchain/node.ts';
import type { LocalControlPlane } from './controlplane.ts';
import {
  HOST_PATHS_OUTSIDE,
  SYSCTLS,
  cgroupMounts,
  cmdlineOf,
  allPids,
  realNodePreflight,
  run,
  sweepNode,
  writeNodeRecord,
  type NodeRecord,
  type RealNodePreflight,
} from './nodehost.ts';
import { freePorts, ManagedProcess, waitFor } from './process.ts';
import { registryConfigDir, writeRegistryHosts, type NodeRegistry } from './noderegistry.ts';
import { describeOwner, hostLockHeld, hostLockOwner, type HostLockOwner } from './hostlock.ts';

/** REAL_NODE_LABEL marks a real node (kubelet + containerd on this host); kwok's nodes carry `type=kwok` instead. */
export const REAL_NODE_LABEL = 'vc.tenancy.x-k8s.io/real-node';

/**
 * REAL_NODE_TAINT keeps Pods off a real node unless they tolerate it: the images a real node has are only those of
 * the node toolchain (NODE_IMAGES), so Pods written for simulated nodes would fail to pull there.
 */
export const REAL_NODE_TAINT = { key: REAL_NODE_LABEL, value: 'true', effect: 'NoSchedule' } as const;

/** MIN_INOTIFY_INSTANCES is the per-user inotify instance limit a real node raises the host's to, if lower. */
const MIN_INOTIFY_INSTANCES = 1024;

/** RealNodeOptions configure one real node of a local super cluster. */
export interface RealNodeOptions {
  /** Node name, e.g. `super-real-0` */
  name: string;
  /** the node's state directory: every file, mount and socket of the node is below it */
  dir: string;
  /** the super cluster the kubelet registers with */
  cluster: LocalControlPlane;
  /** the super cluster's Service CIDR (kube-proxy) */
  serviceCidr: string;
  /** the node's Pod CIDR (a /24 on its own bridge); chosen free when absent */
  podCidr?: string;
  /** the preflight result (decides cgroup v1 and oom_score_adj settings) */
  preflight: RealNodePreflight;
  /** registries containerd pulls from over HTTPS trusting their CA (certs.d under the node directory) */
  registries?: readonly NodeRegistry[];
}

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
}

/** MAX_SHIM_SOCKET_DIR is containerd 2.4's limit on `socket_dir` on Linux (a shim socket path must fit sun_path). */
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
 * Registry host configuration is read from the node's own certs.d (core/local/noderegistry.ts), never the host's.
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
  ];
  if (c.runsc)
    lines.push(
      `[${runtime}.containerd.runtimes.runsc]`,
      "  runtime_type = 'io.containerd.runsc.v1'",
      `[${runtime}.containerd.runtimes.runsc.options]`,
      "  TypeUrl = 'io.containerd.runsc.v1.options'",
      `  ConfigPath = ${q(join(c.dir, 'runsc.toml'))}`,
    );
  lines.push(`[${runtime}.cni]`, `  bin_dirs = [${q(c.cniDir)}]`, `  conf_dir = ${q(join(c.dir, 'cni/net.d'))}`, '');
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
 * with host-local addresses from the Pod CIDR (state under the node directory), and portmap.
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
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: c.podCidr, gateway: c.nodeIP }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(c.dir, 'cni/ipam'),
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/**
 * kubeletConfig renders the KubeletConfiguration: serving with the super CA's certificate on the node IP, client
 * certificates required (x509 against the super CA, anonymous off) and webhook authentication and authorization (the
 * super apiserver's TokenReview and SubjectAccessReview decide), the cgroupfs driver under its own cgroup root,
 * failCgroupV1 false on a cgroup v1 host, Pod logs under the node directory, the real-node taint, and no eviction or
 * image GC for disk usage (the toolchain's images cannot be pulled again).
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
    tlsCertFile: join(c.dir, 'pki/kubelet.crt'),
    tlsPrivateKeyFile: join(c.dir, 'pki/kubelet.key'),
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
    registerWithTaints: [REAL_NODE_TAINT],
    evictionHard: { 'nodefs.available': '0%', 'nodefs.inodesFree': '0%', 'imagefs.available': '0%' },
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
 * loopback's port of the node.
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

/**
 * choosePodCidr picks a free /24 in 10.213.0.0/16 for the node in dir (the same one across restarts while it is free):
 * its first address becomes the bridge gateway and the node IP.
 */
export async function choosePodCidr(dir: string): Promise<string> {
  const routes = await run('ip', ['-4', 'route', 'show', 'table', 'all']);
  const start = createHash('sha256').update(dir).digest()[0]!;
  for (let i = 0; i < 250; i++) {
    const third = (start + i) % 250;
    const prefix = `10.213.${third}.`;
    if (!routes.includes(prefix)) return `10.213.${third}.0/24`;
  }
  throw new Error('real node: no free /24 in 10.213.0.0/16 for the Pod CIDR');
}

/** RealNodeTimings are measured while the node starts. */
export interface RealNodeTimings {
  /** from the start of containerd to the Node being Ready */
  readyMs: number;
}

/**
 * RealNode is a real Kubernetes node on this host, registered with a local super cluster: containerd (runc, optional
 * gVisor) with the toolchain's images, a CNI bridge network, a kubelet with the node's own certificate
 * (system:node:<name>, from the super CA) and kube-proxy in iptables mode. Everything it creates is recorded in
 * `<dir>/realnode.json` first, so that sweepNode can remove it even after this process was killed.
 */
export class RealNode {
  readonly containerd: ManagedProcess;
  readonly kubelet: ManagedProcess;
  readonly kubeProxy: ManagedProcess;
  /** the NetworkPolicy enforcer, when the netpol toolchain is built */
  readonly kubeRouter?: ManagedProcess;
  timings: RealNodeTimings = { readyMs: 0 };
  /** lastSweep is what stop had to remove from the host (one line each), for reports and tests. */
  lastSweep: string[] = [];

  private constructor(
    readonly opts: RealNodeOptions,
    readonly cfg: RealNodeConfigInput,
    readonly record: NodeRecord,
  ) {
    const d = opts.dir;
    const log = (n: string) => join(d, 'logs', `${n}.log`);
    const env = { PATH: `${cfg.binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
    this.containerd = new ManagedProcess({
      name: `${opts.name}/containerd`,
      command: join(cfg.binDir, 'containerd'),
      args: ['--config', join(d, 'containerd/config.toml')],
      logFile: log('containerd'),
      env,
    });
    this.kubelet = new ManagedProcess({
      name: `${opts.name}/kubelet`,
      command: join(cfg.binDir, 'kubelet'),
      args: [
        `--config=${join(d, 'kubelet-config.json')}`,
        `--kubeconfig=${join(d, 'kubelet.kubeconfig')}`,
        `--root-dir=${join(d, 'kubelet')}`,
        `--cert-dir=${join(d, 'pki')}`,
        `--hostname-override=${opts.name}`,
        `--node-ip=${cfg.nodeIP}`,
        `--node-labels=${REAL_NODE_LABEL}=true`,
        '--v=2',
      ],
      logFile: log('kubelet'),
      env,
    });
    this.kubeProxy = new ManagedProcess({
      name: `${opts.name}/kube-proxy`,
      command: join(cfg.binDir, 'kube-proxy'),
      args: [`--config=${join(d, 'kube-proxy-config.json')}`, '--v=2'],
      logFile: log('kube-proxy'),
      env,
    });
    if (cfg.kubeRouter)
      this.kubeRouter = new ManagedProcess({
        name: `${opts.name}/kube-router`,
        command: cfg.kubeRouter,
        args: kubeRouterArgs(cfg),
        logFile: log('kube-router'),
        env,
      });
  }

  /** name is the Node name. */
  get name(): string {
    return this.opts.name;
  }

  /** nodeIP is the node's InternalIP: the gateway address of its bridge. */
  get nodeIP(): string {
    return this.cfg.nodeIP;
  }

  /** kubeletURL is the kubelet's HTTPS endpoint. */
  get kubeletURL(): string {
    return `https://${this.cfg.nodeIP}:${this.cfg.kubeletPort}`;
  }

  /**
   * RealNode.start removes what an earlier run in dir left (after a hard stop), records what it is about to create,
   * then starts containerd, imports the images, starts kubelet and kube-proxy, and waits for the Node to be Ready.
   * On failure everything it started is removed again.
   */
  static async start(o: RealNodeOptions): Promise<RealNode> {
    if (!o.preflight.ok) throw new Error(`real node ${o.name}: preflight failed: ${o.preflight.problems.join('; ')}`);
    const swept = await sweepNode(o.dir);
    if (swept.length)
      process.stderr.write(`real node ${o.name}: removed leftovers of an earlier run: ${swept.length}\n`);
    for (const sub of ['logs', 'pki', 'containerd', 'cni/net.d', 'cni/ipam', 'kubelet', 'pod-logs', 'runc'])
      mkdirSync(join(o.dir, sub), { recursive: true });
    const tc = nodeToolchainDir();
    const binDir = join(tc, 'bin');
    const names = nodeNetworkNames(o.dir);
    const podCidr = o.podCidr ?? (await choosePodCidr(o.dir));
    const [kubeletPort, kubeletHealthzPort, proxyHealthzPort, proxyMetricsPort, kubeRouterHealthPort] =
      await freePorts(5);
    const kubeRouter = kubeRouterPath();
    const cfg: RealNodeConfigInput = {
      name: o.name,
      dir: o.dir,
      binDir,
      cniDir: cniBinDir(tc),
      podCidr,
      serviceCidr: o.serviceCidr,
      nodeIP: gatewayOf(podCidr),
      ...names,
      cgroup: o.preflight.cgroup ?? 'v2',
      capSysResource: o.preflight.capSysResource,
      runsc: existsSync(join(binDir, 'runsc')) && existsSync(join(binDir, 'containerd-shim-runsc-v1')),
      kubeletPort: kubeletPort!,
      kubeletHealthzPort: kubeletHealthzPort!,
      proxyHealthzPort: proxyHealthzPort!,
      proxyMetricsPort: proxyMetricsPort!,
      ...(kubeRouter && { kubeRouter, kubeRouterHealthPort: kubeRouterHealthPort! }),
    };
    const sysctls: Record<string, string> = {};
    for (const f of SYSCTLS) if (existsSync(f)) sysctls[f] = readFileSync(f, 'utf8').trim();
    const record: NodeRecord = {
      name: o.name,
      dir: o.dir,
      network: names.network,
      bridge: names.bridge,
      podCidr,
      cgroupRoot: names.cgroupRoot,
      containerdSock: containerdSocket(o.dir),
      shimSocketDir: shimSocketDir(o.dir),
      sysctls,
      createdPaths: HOST_PATHS_OUTSIDE.filter((p) => !existsSync(p)),
      pids: {},
    };
    writeNodeRecord(record);
    const node = new RealNode(o, cfg, record);
    try {
      await node.prepare();
      await node.startComponents();
      return node;
    } catch (e) {
      await node.stop().catch(() => undefined);
      throw e;
    }
  }

  private async prepare(): Promise<void> {
    const { dir, cluster, name } = this.opts;
    const c = this.cfg;
    const ca = cluster.ca;
    const [client, serving, proxy, router] = await Promise.all([
      issueNodeCert(ca, name, 365),
      issueCert(ca, {
        commonName: name,
        dnsNames: [name],
        ipAddresses: [c.nodeIP, '127.0.0.1'],
        usages: ['server'],
        validityDays: 365,
      }),
      issueCert(ca, { commonName: 'system:kube-proxy', usages: ['client'], validityDays: 365 }),
      issueCert(ca, { commonName: KUBE_ROUTER_USER, usages: ['client'], validityDays: 365 }),
    ]);
    const secret = { mode: 0o600 };
    writeFileSync(join(dir, 'pki/ca.crt'), ca.certPem);
    writeFileSync(join(dir, 'pki/kubelet.crt'), serving.certPem);
    writeFileSync(join(dir, 'pki/kubelet.key'), serving.keyPem, secret);
    // the node's client credential where a kubelet with certificate rotation keeps it (its --cert-dir), certificate
    // and key in one file: an in-cluster vn-agent reads super Pods with it (vc install --kubelet-pki-dir <dir>/pki)
    writeFileSync(join(dir, 'pki/kubelet-client-current.pem'), client.certPem + client.keyPem, secret);
    const kc = (user: string, pair: { certPem: string; keyPem: string }) =>
      renderKubeconfig({
        clusterName: cluster.name,
        server: cluster.server,
        caPem: ca.certPem,
        user,
        clientCertPem: pair.certPem,
        clientKeyPem: pair.keyPem,
      });
    writeFileSync(join(dir, 'kubelet.kubeconfig'), kc(`system:node:${name}`, client), secret);
    writeFileSync(join(dir, 'kube-proxy.kubeconfig'), kc('system:kube-proxy', proxy), secret);
    writeFileSync(join(dir, 'kube-router.kubeconfig'), kc(KUBE_ROUTER_USER, router), secret);
    writeFileSync(join(dir, 'containerd/config.toml'), containerdConfig(c));
    writeRegistryHosts(dir, this.opts.registries ?? [], `real node ${name}`);
    if (c.runsc) writeFileSync(join(dir, 'runsc.toml'), runscConfig(c));
    writeFileSync(join(dir, 'cni/net.d/10-vc.conflist'), JSON.stringify(cniConfig(c), null, 2));
    writeFileSync(join(dir, 'kubelet-config.json'), JSON.stringify(kubeletConfig(c), null, 2));
    writeFileSync(join(dir, 'kube-proxy-config.json'), JSON.stringify(kubeProxyConfig(c), null, 2));

    // kubelet's cgroup root must exist; on cgroup v1 a new cpuset needs its cpus and mems before anything joins it
    for (const mnt of cgroupMounts()) {
      const base = join(mnt, c.cgroupRoot);
      try {
        mkdirSync(base, { recursive: true });
        for (const f of ['cpuset.cpus', 'cpuset.mems'])
          if (existsSync(join(base, f)) && !readFileSync(join(base, f), 'utf8').trim())
            writeFileSync(join(base, f), readFileSync(join(mnt, f), 'utf8'));
      } catch {
        /* a hierarchy that refuses children (e.g. an empty cgroup2 next to v1) is not one kubelet uses */
      }
    }
    // the bridge exists before kubelet so that the node IP (its gateway address) does
    await run('ip', ['link', 'add', c.bridge, 'type', 'bridge']);
    await run('ip', ['addr', 'add', `${c.nodeIP}/24`, 'dev', c.bridge]);
    await run('ip', ['link', 'set', c.bridge, 'up']);
    writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
    const inotify = '/proc/sys/fs/inotify/max_user_instances';
    if (existsSync(inotify) && Number(readFileSync(inotify, 'utf8')) < MIN_INOTIFY_INSTANCES)
      writeFileSync(inotify, String(MIN_INOTIFY_INSTANCES));
  }

  private async startComponents(): Promise<void> {
    const t0 = Date.now();
    this.containerd.start();
    this.recordPid('containerd', this.containerd);
    const sock = containerdSocket(this.opts.dir);
    const ctr = nodeBinaryPath('ctr');
    await waitFor(
      `${this.name} containerd`,
      async () => {
        await run(ctr, ['-a', sock, 'version'], { timeoutMs: 5000 });
        return true;
      },
      { timeoutMs: 30_000, process: this.containerd },
    );
    try {
      await criCall(sock, 'Version', Buffer.alloc(0));
    } catch (e) {
      throw new Error(
        `${this.name}: containerd runs without its CRI plugin (${e instanceof Error ? e.message : String(e)}); ` +
          `log ${this.containerd.spec.logFile}:\n${this.containerd.logTail()}`,
      );
    }
    // ctr imports one archive per call
    for (const image of Object.keys(NODE_IMAGES) as NodeImage[])
      await run(ctr, ['-a', sock, '-n', 'k8s.io', 'images', 'import', nodeImageArchive(image)], {
        timeoutMs: 120_000,
      });
    this.kubelet.start();
    this.recordPid('kubelet', this.kubelet);
    this.kubeProxy.start();
    this.recordPid('kube-proxy', this.kubeProxy);
    const client = await this.opts.cluster.client();
    await waitFor(
      `${this.name} Ready`,
      async () => {
        const n = await client.getOrNull<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(
          R.nodes,
          undefined,
          this.name,
        );
        return !!n?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');
      },
      { timeoutMs: 120_000, process: this.kubelet },
    );
    this.timings.readyMs = Date.now() - t0;
    // kube-router finds its Node at start, so it comes once the kubelet registered it
    if (this.kubeRouter) {
      for (const o of KUBE_ROUTER_RBAC) {
        const r = o.kind === 'ClusterRole' ? R.clusterroles : R.clusterrolebindings;
        if (!(await client.getOrNull(r, undefined, o.metadata.name)))
          await client.create(r, structuredClone(o) as unknown as KubeObject).catch((e: unknown) => {
            if (!String(e).includes('AlreadyExists')) throw e;
          });
      }
      this.kubeRouter.start();
      this.recordPid('kube-router', this.kubeRouter);
    }
  }

  private recordPid(component: string, p: ManagedProcess): void {
    if (p.pid) this.record.pids[component] = p.pid;
    writeNodeRecord(this.record);
  }

  /** shimPids are the containerd shims of this node (they are re-parented to PID 1, so found by containerd's socket). */
  shimPids(): number[] {
    const sock = containerdSocket(this.opts.dir);
    return allPids().filter((p) => {
      const cmd = cmdlineOf(p);
      return !!cmd?.[0]?.includes('containerd-shim') && cmd.includes(sock);
    });
  }

  /** rssBytes is the resident memory of each component, and of all shims together. */
  rssBytes(): Record<'kubelet' | 'containerd' | 'kube-proxy' | 'shims', number> {
    const shims = this.shimPids().reduce((s, p) => s + rssOf(p), 0);
    return {
      kubelet: this.kubelet.rssBytes(),
      containerd: this.containerd.rssBytes(),
      'kube-proxy': this.kubeProxy.rssBytes(),
      shims,
    };
  }

  /** processes lists the node's own components. */
  processes(): ManagedProcess[] {
    return [this.kubelet, this.kubeProxy, ...(this.kubeRouter ? [this.kubeRouter] : []), this.containerd];
  }

  /**
   * stop stops kubelet (so nothing recreates a sandbox), then stops and removes every Pod sandbox through CRI while
   * containerd still runs (CNI DEL with its cached result removes each Pod's network), stops kube-proxy and
   * containerd, deletes the Node, and sweeps the host (sweepNode). It returns what the sweep had to remove.
   */
  async stop(): Promise<string[]> {
    const notes: string[] = [];
    await this.kubelet.stop();
    if (this.containerd.pid) {
      try {
        const sock = containerdSocket(this.opts.dir);
        for (const id of await criListSandboxes(sock)) {
          await criCall(sock, 'StopPodSandbox', protoString(1, id));
          await criCall(sock, 'RemovePodSandbox', protoString(1, id));
        }
      } catch (e) {
        notes.push(`removing Pod sandboxes through CRI failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    await Promise.all([this.kubeProxy.stop(), this.kubeRouter?.stop(), this.containerd.stop()]);
    try {
      const client = await this.opts.cluster.client();
      await client.delete(R.nodes, undefined, this.name);
    } catch {
      /* the super cluster may be gone already */
    }
    this.lastSweep = [...notes, ...(await sweepNode(this.opts.dir))];
    return this.lastSweep;
  }
}

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** realNodePreflightHere runs realNodePreflight against the node toolchain this process would use. */
export function realNodePreflightHere(): Promise<RealNodePreflight> {
  const dir = nodeToolchainDir();
  return realNodePreflight(isNodeToolchainComplete(dir), dir);
}

/** protoString encodes one protobuf string field (wire type 2). */
export function protoString(field: number, s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([Buffer.from([(field << 3) | 2]), varint(b.length), b]);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** protoFields decodes the top-level fields of a protobuf message: number and raw bytes of each length-delimited one. */
export function protoFields(buf: Buffer): Array<{ field: number; bytes: Buffer }> {
  const out: Array<{ field: number; bytes: Buffer }> = [];
  let i = 0;
  const readVarint = (): number => {
    let n = 0;
    let mul = 1;
    for (;;) {
      const b = buf[i++]!;
      n += (b & 0x7f) * mul;
      if (!(b & 0x80)) return n;
      mul *= 128;
    }
  };
  while (i < buf.length) {
    const tag = readVarint();
    const wire = tag & 7;
    const field = Math.floor(tag / 8);
    if (wire === 0) readVarint();
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else if (wire === 2) {
      const len = readVarint();
      out.push({ field, bytes: buf.subarray(i, i + len) });
      i += len;
    } else throw new Error(`protobuf: unsupported wire type ${wire}`);
  }
  return out;
}

/** criCall makes one unary CRI RuntimeService call over containerd's socket (gRPC over h2c) and returns the reply. */
export async function criCall(sock: string, method: string, body: Buffer): Promise<Buffer> {
  const session = http2.connect('http://localhost', { createConnection: () => net.connect(sock) });
  try {
    return await new Promise<Buffer>((res, rej) => {
      session.on('error', rej);
      const req = session.request({
        ':method': 'POST',
        ':path': `/runtime.v1.RuntimeService/${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let message = '';
      req.on('response', (h) => {
        if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
        message = String(h['grpc-message'] ?? '');
      });
      req.on('trailers', (t) => {
        status = String(t['grpc-status'] ?? status);
        message = String(t['grpc-message'] ?? message);
      });
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', rej);
      req.on('end', () => {
        if (status !== '0')
          return rej(new Error(`CRI ${method}: grpc-status ${status} ${decodeURIComponent(message)}`));
        const all = Buffer.concat(chunks);
        res(all.length >= 5 ? all.subarray(5, 5 + all.readUInt32BE(1)) : Buffer.alloc(0));
      });
      const frame = Buffer.alloc(5 + body.length);
      frame.writeUInt32BE(body.length, 1);
      body.copy(frame, 5);
      req.end(frame);
    });
  } finally {
    session.close();
  }
}

/** CriSandbox is one Pod sandbox of a containerd: its id and the super Pod it runs (uid, namespace, name). */
export interface CriSandbox {
  id: string;
  uid: string;
  namespace: string;
  name: string;
}

/** criSandboxes lists every Pod sandbox of a containerd (CRI ListPodSandbox) with the Pod it belongs to. */
export async function criSandboxes(sock: string): Promise<CriSandbox[]> {
  const reply = await criCall(sock, 'ListPodSandbox', Buffer.alloc(0));
  const text = (fields: ReturnType<typeof protoFields>, n: number) =>
    fields.find((f) => f.field === n)?.bytes.toString('utf8') ?? '';
  return protoFields(reply)
    .filter((f) => f.field === 1)
    .map((item) => {
      const sandbox = protoFields(item.bytes);
      const meta = protoFields(sandbox.find((f) => f.field === 2)?.bytes ?? Buffer.alloc(0));
      return { id: text(sandbox, 1), name: text(meta, 1), uid: text(meta, 2), namespace: text(meta, 3) };
    })
    .filter((x) => x.id);
}

/** criListSandboxes lists the ids of every Pod sandbox of a containerd (CRI ListPodSandbox). */
export async function criListSandboxes(sock: string): Promise<string[]> {
  return (await criSandboxes(sock)).map((x) => x.id);
}

/** RealNodeChoice is how many real nodes `vc up` starts and the one line that says why. */
export interface RealNodeChoice {
  count: number;
  line: string;
}

/** RealNodeHost is what chooseRealNodes asks of this host; tests pass their own. */
export interface RealNodeHost {
  preflight: () => Promise<RealNodePreflight>;
  lockOwner: () => HostLockOwner | undefined;
  lockHeld: () => Promise<boolean>;
}

/**
 * chooseRealNodes decides how many real nodes to start: `requested` when given (an error naming every missing piece
 * when the host cannot run them), otherwise one when the preflight passes and none, with the reason, when it fails.
 */
export async function chooseRealNodes(
  requested?: number,
  host: RealNodeHost = { preflight: realNodePreflightHere, lockOwner: hostLockOwner, lockHeld: hostLockHeld },
): Promise<RealNodeChoice> {
  if (requested !== undefined && (!Number.isInteger(requested) || requested < 0))
    throw new Error(`--real-nodes: ${requested} is not a whole number >= 0`);
  if (requested === 0) return { count: 0, line: 'real nodes: none (--real-nodes 0); simulated (kwok) nodes only' };
  const p = await host.preflight();
  if (!p.ok) {
    if (requested !== undefined)
      throw new Error(`--real-nodes ${requested}: this host cannot run real nodes:\n  ${p.problems.join('\n  ')}`);
    return { count: 0, line: `real nodes: none, simulated (kwok) nodes only: ${p.problems.join('; ')}` };
  }
  const owner = host.lockOwner();
  if (owner && (await host.lockHeld())) {
    const why = `another set of real nodes runs on this host (${describeOwner(owner)})`;
    if (requested !== undefined)
      throw new Error(`--real-nodes ${requested}: ${why}; stop it first or use --real-nodes 0`);
    return { count: 0, line: `real nodes: none, simulated (kwok) nodes only: ${why}` };
  }
  const n = requested ?? 1;
  const adapt = p.capSysResource ? '' : ', restrict_oom_score_adj (no CAP_SYS_RESOURCE)';
  return {
    count: n,
    line: `real nodes: ${n} (kubelet, containerd, kube-proxy on this host; cgroup ${p.cgroup}${adapt})`,
  };
}

/**
 * sweepLeftoverNodes removes what real nodes under stateDir left on the host after a hard stop (their records in
 * `<node dir>/realnode.json`, up to four levels down) and returns one line per node that needed it.
 */
export async function sweepLeftoverNodes(stateDir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (d: string, depth: number): Promise<void> => {
    if (existsSync(join(d, 'realnode.json'))) {
      const done = await sweepNode(d);
      if (done.length) out.push(`${d}: removed ${done.length} leftovers (${done.slice(0, 3).join('; ')}...)`);
      return;
    }
    if (depth === 0) return;
    let entries: string[] = [];
    try {
      entries = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) await visit(join(d, e), depth - 1);
  };
  await visit(stateDir, 4);
  return out;
}
