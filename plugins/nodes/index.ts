import { R } from '../../core/kube/resources.ts';
import { PREFIX, provenanceOf } from '../../core/names/names.ts';
import type { Pod } from '../pods/types.ts';
import {
  clone,
  type Decision,
  type KubeObject,
  PLUGIN_API_VERSION,
  pluginConfigOf,
  type PluginContext,
  type ResourcePlugin,
  VN_AGENT_PORT,
} from '../sdk/src/index.ts';

/** VNODE_LABEL marks a tenant Node as a vNode the syncer mirrors from a super node. */
export const VNODE_LABEL = `${PREFIX}/vnode`;
/** EMPTY_SINCE_ANN records on a vNode when the tenant's last Pod left it (ISO time). */
export const EMPTY_SINCE_ANN = `${PREFIX}/empty-since`;
/** DEFAULT_VN_AGENT_PORT is the vn-agent port a vNode advertises as its kubelet endpoint. */
export const DEFAULT_VN_AGENT_PORT = VN_AGENT_PORT;
/** PODS_BY_NODE is the super index of Pods by node name that route() reads: the tenants with Pods on a node. */
export const PODS_BY_NODE = 'nodes/pods-by-node';
/** DEFAULT_GRACE_SECONDS is how long an empty vNode is kept before it is deleted. */
export const DEFAULT_GRACE_SECONDS = 120;

/** NodeAddress is one entry of status.addresses. */
export interface NodeAddress {
  type: string;
  address: string;
}

/** Node is a core/v1 Node as the nodes plugin sees it. */
export interface Node extends KubeObject {
  spec?: { taints?: Array<Record<string, unknown>>; [field: string]: unknown };
  status?: {
    conditions?: Array<Record<string, unknown>>;
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    nodeInfo?: Record<string, string>;
    addresses?: NodeAddress[];
    daemonEndpoints?: { kubeletEndpoint?: { Port: number } };
    [field: string]: unknown;
  };
}

/**
 * CONFIG_SCHEMA is the JSON Schema of `pluginConfig.nodes`: where the tenant apiserver reaches the vn-agent, and
 * how long an empty vNode is kept.
 */
export const CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    vnAgent: {
      description:
        'where the tenant apiserver reaches the vn-agent on each node (default: the node InternalIP, port 10550)',
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string', minLength: 1 },
        port: { type: 'integer', minimum: 1, maximum: 65535 },
      },
    },
    gracePeriodSeconds: {
      description: 'how long an empty vNode is kept before it is deleted',
      type: 'number',
      minimum: 0,
    },
  },
};

/** VnAgentConfig is `pluginConfig.nodes.vnAgent` of a tenant: where the tenant apiserver reaches the vn-agent. */
export interface VnAgentConfig {
  host?: string;
  port: number;
}

/**
 * vnAgentConfig reads `pluginConfig.nodes.vnAgent` of a tenant, ignoring fields of the wrong type. A top-level
 * `pluginConfig.vnAgent` (the shape of 0.1 manager defaults) is still read when `nodes.vnAgent` is absent.
 */
export function vnAgentConfig(ctx: Pick<PluginContext, 'tenant'>): VnAgentConfig {
  const own = pluginConfigOf(ctx, 'nodes')?.vnAgent;
  const raw = (own ?? ctx.tenant.pluginConfig?.vnAgent) as { host?: unknown; port?: unknown } | undefined;
  const out: VnAgentConfig = { port: typeof raw?.port === 'number' ? raw.port : DEFAULT_VN_AGENT_PORT };
  if (typeof raw?.host === 'string' && raw.host) out.host = raw.host;
  return out;
}

/** graceSeconds reads `pluginConfig.nodes.gracePeriodSeconds` of a tenant (default DEFAULT_GRACE_SECONDS). */
export function graceSeconds(ctx: Pick<PluginContext, 'tenant'>): number {
  const g = (ctx.tenant.pluginConfig?.nodes as { gracePeriodSeconds?: unknown } | undefined)?.gracePeriodSeconds;
  return typeof g === 'number' && g >= 0 ? g : DEFAULT_GRACE_SECONDS;
}

/** mirror writes onto `vNode` what a vNode shows of its super node. */
function mirror(superNode: Node, vNode: Node, ctx: Pick<PluginContext, 'tenant'>): Node {
  const name = superNode.metadata?.name ?? '';
  const agent = vnAgentConfig(ctx);
  const host = agent.host ?? superNode.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  const meta = (vNode.metadata ??= {});
  meta.name = name;
  meta.labels = { ...clone(superNode.metadata?.labels), [VNODE_LABEL]: 'true' };
  const spec = (vNode.spec ??= {});
  if (superNode.spec?.taints) spec.taints = clone(superNode.spec.taints);
  else delete spec.taints;
  const src: Record<string, unknown> = superNode.status ?? {};
  const status = (vNode.status ??= {});
  const dst: Record<string, unknown> = status;
  for (const f of ['conditions', 'capacity', 'allocatable', 'nodeInfo']) {
    if (src[f] === undefined) delete dst[f];
    else dst[f] = clone(src[f]);
  }
  status.addresses = [...(host ? [{ type: 'InternalIP', address: host }] : []), { type: 'Hostname', address: name }];
  status.daemonEndpoints = { kubeletEndpoint: { Port: agent.port } };
  return vNode;
}

/** buildVNode returns a new vNode for a super node; beforeBind hands it to the core right before a bind. */
export function buildVNode(superNode: Node, ctx: Pick<PluginContext, 'tenant'>): Node {
  return mirror(superNode, { apiVersion: 'v1', kind: 'Node', metadata: {} }, ctx);
}

const nodeOf = (pod: KubeObject): string[] => {
  const node = (pod as Pod).spec?.nodeName;
  return node ? [node] : [];
};

/** tenantHasPodOn reports whether the tenant has a Pod on the node, bound in the tenant or running in the super. */
function tenantHasPodOn(node: string, ctx: PluginContext): boolean {
  if (ctx.tenantCache.list<Pod>(R.pods).some((p) => p.spec?.nodeName === node)) return true;
  return ctx.superCache
    .list<Pod>(R.pods)
    .some((p) => p.spec?.nodeName === node && provenanceOf(p)?.cluster === ctx.tenant.key);
}

/**
 * nodesPlugin keeps vNodes: the tenant's view of the super nodes its Pods run on, with the kubelet endpoint pointing
 * at the vn-agent. A vNode the tenant no longer has Pods on is marked empty and deleted after a grace period.
 */
export const nodesPlugin: ResourcePlugin<Node> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'nodes',
    version: '0.1.0',
    description: 'vNodes: tenant mirrors of the super nodes running its Pods, served by the vn-agent',
    resource: { ...R.nodes },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
    configSchema: CONFIG_SCHEMA,
  },

  indexes: [{ name: PODS_BY_NODE, resource: R.pods, values: (pod) => nodeOf(pod) }],

  // A Pod bound to or leaving a node, on either side, decides whether the tenant keeps that node's vNode.
  watches: [
    { resource: R.pods, side: 'tenant', map: (pod) => nodeOf(pod).map((name) => ({ namespace: '', name })) },
    {
      resource: R.pods,
      side: 'super',
      map: (pod) => {
        const tenant = provenanceOf(pod)?.cluster;
        return tenant ? nodeOf(pod).map((name) => ({ tenant, namespace: '', name })) : [];
      },
    },
  ],

  route(superNode, rctx) {
    const name = superNode.metadata?.name ?? '';
    return rctx.tenantsBy(PODS_BY_NODE, name).map((tenant) => ({ tenant, namespace: '', name }));
  },

  // A tenant Pod can only be bound to a node the tenant has: build the vNode from the super node when it is missing.
  beforeBind(bind, ctx) {
    if (ctx.tenantCache.get(R.nodes, undefined, bind.node)) return undefined;
    const superNode = ctx.superCache.get<Node>(R.nodes, undefined, bind.node);
    return superNode ? buildVNode(superNode, ctx) : undefined;
  },

  toTenant(superNode, vNode, ctx): Decision<Node> {
    if (!superNode) return { object: null };
    const name = superNode.metadata?.name ?? '';
    if (tenantHasPodOn(name, ctx)) {
      const desired = vNode ? mirror(superNode, clone(vNode), ctx) : buildVNode(superNode, ctx);
      const ann = desired.metadata?.annotations;
      if (ann?.[EMPTY_SINCE_ANN] !== undefined) {
        delete ann[EMPTY_SINCE_ANN];
        if (!Object.keys(ann).length) delete desired.metadata!.annotations;
      }
      return { object: desired };
    }
    if (!vNode) return { object: null };
    const graceMs = graceSeconds(ctx) * 1000;
    const desired = mirror(superNode, clone(vNode), ctx);
    const since = Date.parse(vNode.metadata?.annotations?.[EMPTY_SINCE_ANN] ?? '');
    if (Number.isNaN(since)) {
      desired.metadata!.annotations = { ...desired.metadata!.annotations, [EMPTY_SINCE_ANN]: ctx.now.toISOString() };
      return { object: desired, requeueAfterMs: graceMs };
    }
    const left = since + graceMs - ctx.now.getTime();
    return left <= 0 ? { object: null } : { object: desired, requeueAfterMs: left };
  },
};

export default nodesPlugin;
