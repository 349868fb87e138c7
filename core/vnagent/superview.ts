import { ApiError, type KubeClient, type KubeObject } from '../kube/client.ts';
import { Informer } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';

/** SuperPod is the part of a super Pod the vn-agent reads. */
export interface SuperPod extends KubeObject {
  spec?: { nodeName?: string; [field: string]: unknown };
}

/** SuperNode is the part of a super Node the vn-agent reads. */
export interface SuperNode extends KubeObject {
  status?: {
    addresses?: Array<{ type: string; address: string }>;
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
    [field: string]: unknown;
  };
}

/** SuperView is the vn-agent's read-only view of super Pods and Nodes. */
export interface SuperView {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** ready reports whether the caches have synced, or why not. */
  ready(): true | string;
  pod(namespace: string, name: string): Promise<SuperPod | undefined>;
  node(name: string): Promise<SuperNode | undefined>;
  /** cachedPods lists the cached super Pods (of the nodes this view serves); the usage endpoints read them. */
  cachedPods(): SuperPod[];
}

/** ADDRESS_TYPES are the node address types tried for the kubelet, in order (as the apiserver's default). */
export const ADDRESS_TYPES = ['InternalIP', 'Hostname', 'ExternalIP'] as const;

/** kubeletEndpointOf returns the address and kubelet port a super Node advertises, or why it has none. */
export function kubeletEndpointOf(node: SuperNode): { host: string; port: number } | string {
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  if (!port) return `node ${node.metadata?.name} advertises no kubelet port`;
  for (const type of ADDRESS_TYPES) {
    const a = node.status?.addresses?.find((x) => x.type === type && x.address);
    if (a) return { host: a.address, port };
  }
  return `node ${node.metadata?.name} has no address`;
}

/** InformerSuperViewOptions configure InformerSuperView. */
export interface InformerSuperViewOptions {
  client: KubeClient;
  /** when set (a DaemonSet's own node), only this node's Pods and Node are cached; others are read on demand */
  nodeName?: string;
  /**
   * the client speaks for nodeName itself (user system:node:<nodeName>): the apiserver's Node authorizer lets it read
   * only Pods bound to that node and only that Node, so other Nodes are not asked for and a refused Pod read counts as
   * not found (the Pod is not this node's)
   */
  nodeScoped?: boolean;
  /** close the client when the view stops (a client made for this view alone) */
  closeClient?: boolean;
}

/**
 * InformerSuperView caches super Pods and Nodes with informers (only one node's when nodeName is given) and falls
 * back to a GET on a cache miss, so a Pod scheduled a moment ago is found before the watch delivers it. With a node's
 * own credential (nodeScoped) it sees exactly that node's Pods and Node.
 */
export class InformerSuperView implements SuperView {
  private readonly pods: Informer<SuperPod>;
  private readonly nodes: Informer<SuperNode>;

  constructor(private readonly o: InformerSuperViewOptions) {
    if (o.nodeScoped && !o.nodeName) throw new Error('InformerSuperView: nodeScoped needs nodeName');
    this.pods = new Informer<SuperPod>({
      client: o.client,
      resource: R.pods,
      fieldSelector: o.nodeName ? `spec.nodeName=${o.nodeName}` : undefined,
      name: 'vn-agent-pods',
    });
    this.nodes = new Informer<SuperNode>({
      client: o.client,
      resource: R.nodes,
      fieldSelector: o.nodeName ? `metadata.name=${o.nodeName}` : undefined,
      name: 'vn-agent-nodes',
    });
  }

  async start(): Promise<void> {
    this.pods.start();
    this.nodes.start();
    await Promise.all([this.pods.waitForSync(), this.nodes.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.pods.stop(), this.nodes.stop()]);
    if (this.o.closeClient) this.o.client.close();
  }

  ready(): true | string {
    if (!this.pods.hasSynced()) return 'super Pod cache not synced';
    if (!this.nodes.hasSynced()) return 'super Node cache not synced';
    return true;
  }

  /** cachedPod is a Pod from the cache only. */
  cachedPod(namespace: string, name: string): SuperPod | undefined {
    return this.pods.get(`${namespace}/${name}`);
  }

  cachedPods(): SuperPod[] {
    return this.pods.list();
  }

  async pod(namespace: string, name: string): Promise<SuperPod | undefined> {
    const cached = this.cachedPod(namespace, name);
    if (cached) return cached;
    try {
      return (await this.o.client.getOrNull<SuperPod>(R.pods, namespace, name)) ?? undefined;
    } catch (e) {
      if (this.o.nodeScoped && e instanceof ApiError && e.code === 403) return undefined;
      throw e;
    }
  }

  async node(name: string): Promise<SuperNode | undefined> {
    const cached = this.nodes.get(name);
    if (cached || (this.o.nodeScoped && name !== this.o.nodeName)) return cached;
    return (await this.o.client.getOrNull<SuperNode>(R.nodes, undefined, name)) ?? undefined;
  }

  /** nodeName is the node this view is limited to, if any. */
  get nodeName(): string | undefined {
    return this.o.nodeName;
  }
}

/**
 * NodesSuperView joins the node-scoped views of the nodes one agent process serves (the embedded default serves every
 * simulated node of this machine): a Pod is looked up in every cache first, then read with each node's credential,
 * which the apiserver answers only for the node the Pod is bound to.
 */
export class NodesSuperView implements SuperView {
  constructor(private readonly views: readonly InformerSuperView[]) {}

  async start(): Promise<void> {
    await Promise.all(this.views.map((v) => v.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.views.map((v) => v.stop()));
  }

  ready(): true | string {
    for (const v of this.views) {
      const r = v.ready();
      if (r !== true) return `node ${v.nodeName}: ${r}`;
    }
    return true;
  }

  cachedPods(): SuperPod[] {
    return this.views.flatMap((v) => v.cachedPods());
  }

  async pod(namespace: string, name: string): Promise<SuperPod | undefined> {
    for (const v of this.views) {
      const p = v.cachedPod(namespace, name);
      if (p) return p;
    }
    for (const v of this.views) {
      const p = await v.pod(namespace, name);
      if (p) return p;
    }
    return undefined;
  }

  async node(name: string): Promise<SuperNode | undefined> {
    return this.views.find((v) => v.nodeName === name)?.node(name);
  }
}
