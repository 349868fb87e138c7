import type { KubeClient, KubeObject } from '../kube/client.ts';
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
}

/**
 * InformerSuperView caches super Pods and Nodes with informers (only one node's when nodeName is given) and falls
 * back to a GET on a cache miss, so a Pod scheduled a moment ago is found before the watch delivers it.
 */
export class InformerSuperView implements SuperView {
  private readonly pods: Informer<SuperPod>;
  private readonly nodes: Informer<SuperNode>;

  constructor(private readonly o: InformerSuperViewOptions) {
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
  }

  ready(): true | string {
    if (!this.pods.hasSynced()) return 'super Pod cache not synced';
    if (!this.nodes.hasSynced()) return 'super Node cache not synced';
    return true;
  }

  async pod(namespace: string, name: string): Promise<SuperPod | undefined> {
    return (
      this.pods.get(`${namespace}/${name}`) ??
      (await this.o.client.getOrNull<SuperPod>(R.pods, namespace, name)) ??
      undefined
    );
  }

  async node(name: string): Promise<SuperNode | undefined> {
    return this.nodes.get(name) ?? (await this.o.client.getOrNull<SuperNode>(R.nodes, undefined, name)) ?? undefined;
  }
}
