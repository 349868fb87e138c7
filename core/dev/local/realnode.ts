/**
 * A real node on this host: containerd, the kubelet, kube-proxy and kube-router as processes, its PKI, pod network,
 * records and cleanup. Its configuration files are rendered in nodeconfig.ts and its CRI calls made in cri.ts; the
 * names of both are re-exported here for existing importers (about 30 of this file's lines).
 *
 * Over 500 lines, on purpose: RealNode is one lifecycle (start containerd, kubelet, kube-proxy, kube-router in
 * order; stop and clean up in reverse) whose steps share the node's fields. Host checks are in nodehost.ts, sweeping in
 * nodesweep.ts, configuration in nodeconfig.ts, CRI in cri.ts. It is the developer environment's, never production's.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fromPackageRoot } from '../../paths.ts';
import { renderKubeconfig } from '../../pki/pki.ts';
import { NodeCertificates, type NodeCertificateSettings, type NodeClient } from './nodecerts.ts';
import type { ConditionInput } from '../../controller/status.ts';
import { R } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/client.ts';
import { kubeRouterPath } from '../../toolchain/netpol.ts';
import {
  NODE_IMAGES,
  cniBinDir,
  isNodeToolchainComplete,
  nodeBinaryPath,
  nodeImageArchive,
  nodeToolchainDir,
  type NodeImage,
} from '../../toolchain/node.ts';
import type { LocalControlPlane } from './controlplane.ts';
import {
  ANTISPOOF_PLUGIN,
  antispoofPluginDir,
  antispoofTable,
  antispoofTableScript,
  clusterIPTable,
  antispoofWrapper,
} from './antispoof.ts';
import {
  HOST_PATHS_OUTSIDE,
  SYSCTLS,
  cgroupMounts,
  cmdlineOf,
  allPids,
  realNodePreflight,
  run,
  writeNodeRecord,
  type NodeRecord,
  type RealNodePreflight,
} from './nodehost.ts';
import { sweepNode } from './nodesweep.ts';
import { createNodeNetns, inNetns, nodeNetnsNames, uplinkOf } from './nodenetns.ts';
import { TcpForwarder } from './forwarder.ts';
import { freePorts, ManagedProcess, waitFor } from './process.ts';
import { writeRegistryHosts, type NodeRegistry } from './noderegistry.ts';
import { describeOwner, hostLockHeld, hostLockOwner, type HostLockOwner } from './hostlock.ts';
import { protoString, criCall, criListSandboxes } from './cri.ts';
import {
  type RealNodeConfigInput,
  shimSocketDir,
  containerdSocket,
  containerdConfig,
  runscConfig,
  cniConfig,
  kubeletConfig,
  kubeProxyConfig,
  KUBE_ROUTER_USER,
  kubeRouterArgs,
  KUBE_ROUTER_RBAC,
  nodeNetworkNames,
  gatewayOf,
  REAL_NODE_LABEL,
} from './nodeconfig.ts';

export { protoString, protoFields, criCall, type CriSandbox, criSandboxes, criListSandboxes } from './cri.ts';
export {
  type RealNodeConfigInput,
  MAX_SHIM_SOCKET_DIR,
  shimSocketDir,
  containerdSocket,
  containerdConfig,
  runscConfig,
  cniConfig,
  kubeletConfig,
  kubeProxyConfig,
  KUBE_ROUTER_USER,
  kubeRouterArgs,
  KUBE_ROUTER_RBAC,
  nodeNetworkNames,
  gatewayOf,
  REAL_NODE_LABEL,
  REAL_NODE_TAINT,
} from './nodeconfig.ts';

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
  /**
   * untainted registers the node without the real-node taint: for a super cluster whose only node it is, where every
   * Pod placed there (a tenant's DNS copy included) must run on it
   */
  untainted?: boolean;
  /**
   * netns runs the node in a network namespace of its own (nodenetns.ts): its bridge, Pods and kube-proxy's rules
   * apart from the host's and from other namespaced nodes', so nodes of several super clusters share one host
   */
  netns?: boolean;
  /**
   * where a namespaced node reaches the super apiserver: a host address of an uplink (default its own, where it then
   * starts the relay to the apiserver on loopback; further nodes of a super cluster name the first one's)
   */
  apiserverHost?: string;
  /** lifetime and renewal of the node's client certificates (kubelet, kube-proxy, kube-router; nodecerts.ts) */
  certificates?: NodeCertificateSettings;
  /**
   * clusterIPs (default true) runs the node's tenant cluster IP translation (`vc cluster-ips`) as a process of the
   * node; false where an installed vn-agent DaemonSet runs it on the node instead
   */
  clusterIPs?: boolean;
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
    // 10.214.<third>.0/30 is the uplink of a namespaced node with this Pod CIDR (nodenetns.ts)
    if (!routes.includes(`10.213.${third}.`) && !routes.includes(`10.214.${third}.`)) return `10.213.${third}.0/24`;
  }
  throw new Error('real node: no free /24 in 10.213.0.0/16 for the Pod CIDR');
}

/** RealNodeTimings are measured while the node starts. */
export interface RealNodeTimings {
  /** from the start of containerd to the Node being Ready */
  readyMs: number;
}

/** antispoofWrapperHere is the vc-antispoof wrapper for this build: dist/'s JavaScript, or the sources through tsx. */
function antispoofWrapperHere(): string {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./antispoofcni.${fromSources ? 'ts' : 'js'}`, import.meta.url));
  const loader = fromSources ? pathToFileURL(fromPackageRoot('node_modules/tsx/dist/loader.mjs')).href : undefined;
  return antispoofWrapper(process.execPath, entry, loader);
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
  /** the node's translation of tenant cluster IPs for tenant Pods (`vc cluster-ips`, core/vnagent/clusterips.ts) */
  readonly clusterIPs?: ManagedProcess;
  /** the NetworkPolicy enforcer, when the netpol toolchain is built */
  readonly kubeRouter?: ManagedProcess;
  timings: RealNodeTimings = { readyMs: 0 };
  /** lastSweep is what stop had to remove from the host (one line each), for reports and tests. */
  lastSweep: string[] = [];
  /** a namespaced node's relay from its uplink's host address to the super apiserver on loopback */
  private apiserverRelay?: TcpForwarder;
  /** the components' client certificates, renewed while the node runs */
  readonly certificates: NodeCertificates;

  private constructor(
    readonly opts: RealNodeOptions,
    readonly cfg: RealNodeConfigInput,
    readonly record: NodeRecord,
  ) {
    const d = opts.dir;
    const log = (n: string) => join(d, 'logs', `${n}.log`);
    const env = { PATH: `${cfg.binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
    // a namespaced node's components run in its namespace (inNetns): containerd and so the CNI plugins, kubelet (its
    // node IP, probes and the apiserver's connections to it), kube-proxy and kube-router (their rules)
    this.certificates = new NodeCertificates({
      node: opts.name,
      dir: d,
      ca: opts.cluster.ca,
      settings: opts.certificates,
      clients: ['kubelet', 'kube-proxy', ...(cfg.kubeRouter ? (['kube-router'] as const) : [])],
      serving: { ipAddresses: [cfg.nodeIP, '127.0.0.1'] },
      report: (c) => this.reportCertificates(c),
    });
    const here = (command: string, args: string[]) =>
      record.netns ? inNetns(record.netns.netns, command, args) : { command, args };
    this.containerd = new ManagedProcess({
      name: `${opts.name}/containerd`,
      ...here(join(cfg.binDir, 'containerd'), ['--config', join(d, 'containerd/config.toml')]),
      logFile: log('containerd'),
      env,
    });
    this.kubelet = new ManagedProcess({
      name: `${opts.name}/kubelet`,
      ...here(join(cfg.binDir, 'kubelet'), [
        `--config=${join(d, 'kubelet-config.json')}`,
        `--kubeconfig=${join(d, 'kubelet.kubeconfig')}`,
        `--root-dir=${join(d, 'kubelet')}`,
        `--cert-dir=${join(d, 'pki')}`,
        `--hostname-override=${opts.name}`,
        `--node-ip=${cfg.nodeIP}`,
        `--node-labels=${REAL_NODE_LABEL}=true`,
        '--v=2',
      ]),
      logFile: log('kubelet'),
      env,
    });
    this.kubeProxy = new ManagedProcess({
      name: `${opts.name}/kube-proxy`,
      ...here(join(cfg.binDir, 'kube-proxy'), [`--config=${join(d, 'kube-proxy-config.json')}`, '--v=2']),
      logFile: log('kube-proxy'),
      env,
    });
    if (opts.clusterIPs !== false)
      this.clusterIPs = new ManagedProcess({
        name: `${opts.name}/cluster-ips`,
        ...here(process.execPath, [
          fromPackageRoot('core/programs/cli/vc.mjs'),
          'cluster-ips',
          `--node=${opts.name}`,
          `--kubeconfig=${join(d, 'kubelet.kubeconfig')}`,
          `--table=${clusterIPTable(cfg.network)}`,
        ]),
        logFile: log('cluster-ips'),
        // from the sources while this runs from them (dist/ may be older than what is being edited)
        env: { ...env, ...(import.meta.url.endsWith('.ts') ? { VC_FROM_SOURCE: '1' } : {}) },
      });
    if (cfg.kubeRouter)
      this.kubeRouter = new ManagedProcess({
        name: `${opts.name}/kube-router`,
        ...here(cfg.kubeRouter, kubeRouterArgs(cfg)),
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

  /**
   * hostAddress is where the node's components and Pods reach this host: the node IP itself on the host's network,
   * the host's end of the uplink for a namespaced node
   */
  get hostAddress(): string {
    return this.record.netns ? uplinkOf(this.cfg.podCidr).hostAddress : this.cfg.nodeIP;
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
      ...(o.untainted && { untainted: true }),
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
      ...(o.netns && { netns: nodeNetnsNames(o.dir) }),
    };
    writeNodeRecord(record);
    const node = new RealNode(o, cfg, record);
    try {
      await node.prepare();
      await node.startComponents();
      node.certificates.start();
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
    await this.certificates.issue();
    const secret = { mode: 0o600 };
    const ns = this.record.netns;
    // In its namespace the node reaches the apiserver (on the host's loopback) through a relay on the uplink's host end.
    const apiHost = this.opts.apiserverHost ?? this.hostAddress;
    const port = cluster.ports.apiserver;
    if (ns) {
      await createNodeNetns(ns, c.podCidr);
      if (apiHost === this.hostAddress)
        this.apiserverRelay = await TcpForwarder.start({ host: apiHost, port, target: { host: '127.0.0.1', port } });
    }
    const server = ns ? `https://${apiHost}:${port}` : cluster.server;
    // one-shot host commands that act on the node's network run in its namespace too
    const net = (command: string, args: string[], o?: { input: string }) => {
      const x = ns ? inNetns(ns.netns, command, args) : { command, args };
      return run(x.command, x.args, o);
    };
    writeFileSync(join(dir, 'pki/ca.crt'), ca.certPem);
    // Each component's client credential is one file (certificate and key) its kubeconfig names by path, so that a
    // renewal (this.certificates) is read again without a restart. The kubelet's is where a kubelet with certificate
    // rotation keeps it (its --cert-dir): an in-cluster vn-agent reads super Pods with it (vc install
    // --kubelet-pki-dir <dir>/pki).
    const kc = (user: string, component: NodeClient['name']) =>
      renderKubeconfig({
        clusterName: cluster.name,
        server,
        caPem: ca.certPem,
        user,
        clientCredentialFile: this.certificates.path(component),
      });
    writeFileSync(join(dir, 'kubelet.kubeconfig'), kc(`system:node:${name}`, 'kubelet'), secret);
    writeFileSync(join(dir, 'kube-proxy.kubeconfig'), kc('system:kube-proxy', 'kube-proxy'), secret);
    if (c.kubeRouter) writeFileSync(join(dir, 'kube-router.kubeconfig'), kc(KUBE_ROUTER_USER, 'kube-router'), secret);
    writeFileSync(join(dir, 'containerd/config.toml'), containerdConfig(c));
    writeRegistryHosts(dir, this.opts.registries ?? [], `real node ${name}`);
    if (c.runsc) writeFileSync(join(dir, 'runsc.toml'), runscConfig(c));
    writeFileSync(join(dir, 'cni/net.d/10-vc.conflist'), JSON.stringify(cniConfig(c), null, 2));
    // the CNI chain's vc-antispoof (antispoof.ts): its executable, and its table before the first Pod's network
    const plugin = join(antispoofPluginDir(dir), ANTISPOOF_PLUGIN);
    mkdirSync(antispoofPluginDir(dir), { recursive: true });
    writeFileSync(plugin, antispoofWrapperHere());
    chmodSync(plugin, 0o755);
    await net('nft', ['-f', '-'], { input: antispoofTableScript(antispoofTable(c.network)) });
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
    await net('ip', ['link', 'add', c.bridge, 'type', 'bridge']);
    await net('ip', ['addr', 'add', `${c.nodeIP}/24`, 'dev', c.bridge]);
    await net('ip', ['link', 'set', c.bridge, 'up']);
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
    if (this.clusterIPs) {
      this.clusterIPs.start();
      this.recordPid('cluster-ips', this.clusterIPs);
    }
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

  /**
   * reportCertificates writes the CertificatesValid condition of the node's client certificates on its Node, next to
   * the kubelet's own conditions (a strategic merge of one condition by type, as node-problem-detector writes its own);
   * its transition time moves only when its status does.
   */
  private async reportCertificates(c: ConditionInput): Promise<void> {
    const client = await this.opts.cluster.client();
    const now = new Date().toISOString();
    const node = await client.get<
      KubeObject & { status?: { conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }> } }
    >(R.nodes, undefined, this.name);
    const before = node.status?.conditions?.find((x) => x.type === c.type);
    const lastTransitionTime =
      before?.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : now;
    await client.patch(
      R.nodes,
      undefined,
      this.name,
      { status: { conditions: [{ ...c, lastHeartbeatTime: now, lastTransitionTime }] } },
      'strategic',
      { subresource: 'status' },
    );
  }

  /** processes lists the node's own components. */
  processes(): ManagedProcess[] {
    return [
      this.kubelet,
      this.kubeProxy,
      ...(this.clusterIPs ? [this.clusterIPs] : []),
      ...(this.kubeRouter ? [this.kubeRouter] : []),
      this.containerd,
    ];
  }

  /**
   * stop stops kubelet (so nothing recreates a sandbox), then stops and removes every Pod sandbox through CRI while
   * containerd still runs (CNI DEL with its cached result removes each Pod's network), stops kube-proxy and
   * containerd, deletes the Node, and sweeps the host (sweepNode). It returns what the sweep had to remove.
   */
  async stop(): Promise<string[]> {
    const notes: string[] = [];
    await this.certificates.stop();
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
    await Promise.all([
      this.kubeProxy.stop(),
      this.clusterIPs?.stop(),
      this.kubeRouter?.stop(),
      this.containerd.stop(),
    ]);
    await this.apiserverRelay?.stop();
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
