import { checkNodeCertificateSettings, type NodeCertificateSettings } from './nodecerts.ts';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalEtcd } from './etcd.ts';
import { LocalControlPlane, type ControlPlaneOptions } from './controlplane.ts';
import { freePorts, type StopOptions } from './process.ts';
import { choosePodCidr, gatewayOf, RealNode, realNodePreflightHere } from './realnode.ts';
import { TcpForwarder } from './forwarder.ts';
import { uplinkOf } from './nodenetns.ts';
import { publishApiserverEndpoint } from '../../kube/apiendpoint.ts';
import { acquireHostLock, type HostLock } from './hostlock.ts';
import type { NodeRegistry } from './noderegistry.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';

/** SuperClusterOptions configure the local super cluster. */
export interface SuperClusterOptions {
  /** directory for all state: etcd data, PKI, kubeconfigs, logs */
  stateDir: string;
  /** number of kwok nodes (default 3) */
  nodes?: number;
  /** cluster name and etcd prefix (default `super`) */
  name?: string;
  /** restart crashed components */
  restart?: boolean;
  /**
   * scheduler (default true) runs kube-scheduler; a meta cluster apart, which runs no Pod, has none (real nodes and
   * kwok nodes still need it)
   */
  scheduler?: boolean;
  /** number of real nodes (kubelet + containerd on this host, see core/dev/local/realnode.ts; default 0) */
  realNodes?: number;
  /**
   * how long to wait for another set of real nodes on this host to stop (core/dev/local/hostlock.ts; default 0: fail at
   * once naming it)
   */
  realNodeLockWaitMs?: number;
  /** registries the real nodes' containerd pulls from (core/dev/local/noderegistry.ts) */
  registries?: readonly NodeRegistry[];
  /**
   * kube-apiserver flags by name added to the first super cluster's (an audit policy and log, say); NodeRestriction
   * stays enabled unless these name `enable-admission-plugins` themselves
   */
  apiserverExtraArgs?: ExtraArgs;
  /** netnsRealNodes runs the real nodes each in a network namespace of its own (core/dev/local/nodenetns.ts) */
  netnsRealNodes?: boolean;
  /**
   * lifetime and renewal of the real nodes' client certificates (core/dev/local/nodecerts.ts; default 365 days,
   * renewed at two thirds)
   */
  realNodeCertificates?: NodeCertificateSettings;
  /**
   * realNodeClusterIPs (default true) runs each real node's tenant cluster IP translation as a process of the node;
   * false where an installed vn-agent DaemonSet runs it (its cluster-ips container)
   */
  realNodeClusterIPs?: boolean;
}

/**
 * LocalSuperCluster is one etcd plus a full control plane (apiserver, controller-manager, scheduler, kwok nodes)
 * on loopback. Further control planes (tenant apiservers) share its etcd under their own prefix.
 */
export class LocalSuperCluster {
  private readonly extra: LocalControlPlane[] = [];
  /** the etcds of control planes added with ownEtcd, stopped after them */
  private readonly extraEtcds: LocalEtcd[] = [];
  /** realNodes are the real nodes started with the super cluster. */
  readonly realNodes: RealNode[] = [];
  private hostLock?: HostLock;
  /** the real nodes' certificate settings (SuperClusterOptions.realNodeCertificates) */
  private nodeCertificates?: NodeCertificateSettings;
  private nodeClusterIPs = true;
  /** the relays of each apiserver's advertised address on its first real node's bridge to its loopback port */
  private readonly apiserverRelays: TcpForwarder[] = [];

  private constructor(
    readonly stateDir: string,
    readonly etcd: LocalEtcd,
    readonly cluster: LocalControlPlane,
    /** registries are the OCI registries every real node of this system pulls from */
    readonly registries: readonly NodeRegistry[] = [],
  ) {}

  /** LocalSuperCluster.start starts (or restarts, reusing its state) the super cluster and waits for it. */
  static async start(o: SuperClusterOptions): Promise<LocalSuperCluster> {
    // refused before anything starts
    if (o.realNodeCertificates) checkNodeCertificateSettings(o.realNodeCertificates, 'realNodeCertificates');
    mkdirSync(o.stateDir, { recursive: true });
    const etcdDir = join(o.stateDir, 'etcd');
    mkdirSync(etcdDir, { recursive: true });
    const portFile = join(etcdDir, 'ports.json');
    const [client, peer] = existsSync(portFile)
      ? (JSON.parse(readFileSync(portFile, 'utf8')) as number[])
      : await freePorts(2);
    writeFileSync(portFile, JSON.stringify([client, peer]) + '\n');
    const etcd = await LocalEtcd.start({ dir: etcdDir, clientPort: client, peerPort: peer, restart: o.restart });
    const name = o.name ?? 'super';
    try {
      const podCidr = await firstPodCidr(o.stateDir, name, o.realNodes ?? 0);
      const netns = o.netnsRealNodes ?? false;
      const cluster = await LocalControlPlane.start({
        name,
        dir: join(o.stateDir, 'clusters', name),
        etcd,
        scheduler: o.scheduler ?? true,
        kwokNodes: o.nodes ?? 3,
        restart: o.restart,
        // Authorization is Node,RBAC (core/provisioners/native/flags.ts): a node's credential (system:node:<node>, as
        // each vn-agent reads super Pods with) reads only its own node's Pods and Node. NodeRestriction confines what
        // such a credential may write to its own node as well.
        apiserverExtraArgs: { 'enable-admission-plugins': 'NodeRestriction', ...o.apiserverExtraArgs },
        ...advertisedOn(podCidr, netns),
      });
      const sc = new LocalSuperCluster(o.stateDir, etcd, cluster, o.registries);
      sc.nodeCertificates = o.realNodeCertificates;
      sc.nodeClusterIPs = o.realNodeClusterIPs ?? true;
      try {
        await sc.startRealNodes(cluster, o.realNodes ?? 0, o.realNodeLockWaitMs ?? 0, podCidr, false, netns);
      } catch (e) {
        await sc.stop();
        throw e;
      }
      return sc;
    } catch (e) {
      await etcd.stop();
      throw e;
    }
  }

  private async startRealNodes(
    cluster: LocalControlPlane,
    n: number,
    waitMs: number,
    firstCidr: string | undefined,
    untainted = false,
    netns = false,
  ): Promise<void> {
    if (n <= 0) return;
    // Nodes on the host's network share its KUBE-* chains: one super cluster's. Namespaced ones have their own.
    const shared = this.realNodes.find((r) => !r.opts.netns) ?? (netns ? undefined : this.realNodes[0]);
    if (shared)
      throw new Error(
        `real nodes for super cluster ${cluster.name}: ${shared.opts.cluster.name} already has real nodes on this ` +
          "host's network (kube-proxy owns the global KUBE-* chains); namespaced real nodes (--real-node-super " +
          'naming several super clusters) can sit on several',
      );
    const preflight = await realNodePreflightHere();
    this.hostLock ??= await acquireHostLock(this.stateDir, {
      waitMs,
      onWait: (owner) => process.stderr.write(`waiting for other real nodes on this host to stop (${owner})\n`),
    });
    let apiserverHost: string | undefined;
    for (let i = 0; i < n; i++) {
      const nodeName = `${cluster.name}-real-${i}`;
      const node = await RealNode.start({
        name: nodeName,
        dir: join(this.stateDir, 'nodes', nodeName),
        cluster,
        serviceCidr: cluster.opts.serviceCidr ?? '10.96.0.0/16',
        preflight,
        registries: this.registries,
        ...(this.nodeCertificates && { certificates: this.nodeCertificates }),
        ...(!this.nodeClusterIPs && { clusterIPs: false }),
        ...(i === 0 && firstCidr && { podCidr: firstCidr }),
        ...(untainted && { untainted }),
        ...(netns && { netns, ...(apiserverHost && { apiserverHost }) }),
      });
      this.realNodes.push(node);
      apiserverHost ??= node.hostAddress;
    }
    // The apiserver advertises the first node's bridge gateway (advertisedOn) and listens on loopback: relay the one
    // to the other, so the `kubernetes` Service's endpoint is an address every Pod on the real nodes reaches.
    // A namespaced first node relays its uplink's host address itself (its kubelet needs it before it registers).
    const first = this.realNodes.find((r) => r.opts.cluster === cluster)!;
    const port = cluster.ports.apiserver;
    if (!netns)
      this.apiserverRelays.push(
        await TcpForwarder.start({ host: first.nodeIP, port, target: { host: '127.0.0.1', port } }),
      );
    await publishApiserverEndpoint(await cluster.client(), first.hostAddress, port);
  }

  /** realNodesOf are the real nodes registered with one of this system's super clusters. */
  realNodesOf(cluster: LocalControlPlane): RealNode[] {
    return this.realNodes.filter((n) => n.opts.cluster === cluster);
  }

  /** kubeconfigPath is the super cluster's admin kubeconfig. */
  get kubeconfigPath(): string {
    return this.cluster.kubeconfigPath;
  }

  /**
   * addControlPlane starts another apiserver + controller-manager on the shared etcd under the prefix `/<name>`:
   * an independent Kubernetes control plane (a tenant's, in later stages). With ownEtcd it gets an etcd of its own
   * instead, as the local provisioner gives every tenant: its writes then never queue behind the super cluster's or
   * another tenant's in one etcd.
   */
  async addControlPlane(
    name: string,
    o: Partial<Omit<ControlPlaneOptions, 'name' | 'etcd'>> & { ownEtcd?: boolean } = {},
  ): Promise<LocalControlPlane> {
    const { ownEtcd, ...opts } = o;
    const dir = join(this.stateDir, 'clusters', name);
    const etcd = ownEtcd ? await LocalEtcd.start({ dir: join(dir, 'etcd'), name: `${name}/etcd` }) : undefined;
    if (etcd) this.extraEtcds.push(etcd);
    const cp = await LocalControlPlane.start({ dir, ...opts, name, etcd: etcd ?? this.etcd });
    this.extra.push(cp);
    return cp;
  }

  /**
   * addSuperCluster starts another super cluster on the shared etcd under the prefix `/<name>`: its own apiserver,
   * controller-manager, scheduler and kwok nodes (named `<name>-node-<i>`, so distinct from every other super
   * cluster's), with the same admission as the first. realNodes > 0 puts this host's one set of real nodes (named
   * `<name>-real-<i>`) on it instead of on the first, which must then have none; untaintedRealNodes registers them
   * without the real-node taint (for a super cluster without kwok nodes, where every Pod placed must run on them).
   */
  async addSuperCluster(
    name: string,
    o: {
      nodes?: number;
      restart?: boolean;
      realNodes?: number;
      realNodeLockWaitMs?: number;
      untaintedRealNodes?: boolean;
      netnsRealNodes?: boolean;
    } = {},
  ): Promise<LocalControlPlane> {
    const podCidr = await firstPodCidr(this.stateDir, name, o.realNodes ?? 0);
    const cp = await this.addControlPlane(name, {
      scheduler: true,
      kwokNodes: o.nodes ?? 3,
      restart: o.restart,
      apiserverExtraArgs: { 'enable-admission-plugins': 'NodeRestriction' },
      ...advertisedOn(podCidr, o.netnsRealNodes),
    });
    await this.startRealNodes(
      cp,
      o.realNodes ?? 0,
      o.realNodeLockWaitMs ?? 0,
      podCidr,
      o.untaintedRealNodes,
      o.netnsRealNodes,
    );
    return cp;
  }

  /**
   * stop stops the real nodes (removing what they left on the host), every control plane it started, then etcd.
   * `discard` (the state directory is removed next) kills the control planes and etcds at once; real nodes still
   * stop in order, since what they leave on the host outlives the state directory.
   */
  async stop(o: StopOptions = {}): Promise<void> {
    for (const f of this.apiserverRelays.splice(0)) await f.stop();
    for (const n of this.realNodes.splice(0)) await n.stop();
    await this.hostLock?.release();
    this.hostLock = undefined;
    await Promise.all(this.extra.map((c) => c.stop(o)));
    await Promise.all(this.extraEtcds.splice(0).map((e) => e.stop(o)));
    await this.cluster.stop(o);
    await this.etcd.stop(o);
  }
}

/**
 * firstPodCidr chooses the Pod CIDR of a super cluster's first real node before its control plane starts (its gateway
 * is what the apiserver advertises); undefined without real nodes.
 */
async function firstPodCidr(stateDir: string, cluster: string, realNodes: number): Promise<string | undefined> {
  return realNodes > 0 ? choosePodCidr(join(stateDir, 'nodes', `${cluster}-real-0`)) : undefined;
}

/**
 * advertisedOn are the control plane options that make a Pod CIDR's gateway the apiserver's advertised address (the
 * `kubernetes` Service's endpoint) and a name in its serving certificate; none without real nodes.
 */
function advertisedOn(
  podCidr: string | undefined,
  netns = false,
): { advertiseAddress?: string; apiserverIPs?: string[] } {
  if (!podCidr) return {};
  // a namespaced node's Pods reach the host at its uplink's host end (nodenetns.ts), where the node relays
  const gw = netns ? uplinkOf(podCidr).hostAddress : gatewayOf(podCidr);
  return { advertiseAddress: gw, apiserverIPs: [gw] };
}
