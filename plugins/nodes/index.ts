import {
  clone,
  type Decision,
  type KubeObject,
  LABEL,
  MANAGER,
  PLUGIN_API_VERSION,
  pluginConfigOf,
  type PluginContext,
  PREFIX,
  provenanceOf,
  R,
  type ResourcePlugin,
  superNodeName,
  VN_AGENT_PORT,
  vNodeName,
} from '@virtualcluster-ts/plugin-sdk';
import {
  mayPlaceOn,
  nodeTotals,
  nodesView,
  type Node,
  type Pod,
  shownForPlacement,
  type Taint,
  tenantHasPodOn,
  tolerates,
} from '@virtualcluster-ts/plugin-sdk/pods';

/** VNODE_LABEL marks a tenant Node as a vNode the syncer mirrors from a super node. */
export const VNODE_LABEL = `${PREFIX}/vnode`;
/**
 * EMPTY_SINCE_ANN records on a vNode when the tenant's last Pod left it (ISO time). It is written once the vNode has
 * stayed empty for the settle time (emptySettleSeconds), with the time it emptied: a restart or a new leader reads it.
 */
export const EMPTY_SINCE_ANN = `${PREFIX}/empty-since`;
/** DEFAULT_VN_AGENT_PORT is the vn-agent port a vNode advertises as its kubelet endpoint. */
export const DEFAULT_VN_AGENT_PORT = VN_AGENT_PORT;
/** PODS_BY_NODE is the super index of Pods by node name that route() reads: the tenants with Pods on a node. */
export const PODS_BY_NODE = 'nodes/pods-by-node';
/** DEFAULT_GRACE_SECONDS is how long an empty vNode is kept before it is deleted. */
export const DEFAULT_GRACE_SECONDS = 120;
/**
 * DEFAULT_SETTLE_SECONDS is how long a vNode stays empty before its empty-since mark is written: a node whose last Pod
 * is replaced sooner (a one-replica Deployment rolling, a Job's next Pod) gets no write at all.
 */
export const DEFAULT_SETTLE_SECONDS = 15;

/** Shared is what naming a vNode needs: this syncer's super cluster, and whether others serve the same tenants. */
type Shared = Pick<PluginContext, 'superCluster' | 'sharedTenants'>;

/** qualifier is the super cluster that qualifies vNode names: set only when several super clusters serve a tenant. */
export const qualifier = (ctx: Shared): string | undefined => (ctx.sharedTenants ? ctx.superCluster : undefined);

/** Node and NodeAddress are the SDK's Node shapes, which the pods plugin's node pins read too. */
export type { Node, NodeAddress } from '@virtualcluster-ts/plugin-sdk/pods';

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
        superClusters: {
          description:
            'per super cluster (by name), where the vn-agent of that super cluster is reached, when it differs ' +
            '(several super clusters on one machine); a super cluster not listed takes host and port above',
          type: 'object',
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            properties: {
              host: { type: 'string', minLength: 1 },
              port: { type: 'integer', minimum: 1, maximum: 65535 },
            },
          },
        },
      },
    },
    gracePeriodSeconds: {
      description: 'how long an empty vNode is kept before it is deleted',
      type: 'number',
      minimum: 0,
    },
    emptySettleSeconds: {
      description:
        'how long a vNode stays empty before the syncer writes its empty-since mark (with the time it emptied; the ' +
        'grace period still counts from then); a vNode a Pod returns to sooner is not written at all. A syncer ' +
        'restarted or newly leading within that time counts the grace period from when it first sees the node empty',
      type: 'number',
      minimum: 0,
    },
    extraLabels: {
      description:
        'super node labels a vNode shows beyond the built-in allow-list: exact keys, or prefixes ending in "/" ' +
        '(set it in the manager defaultPluginConfig so that a tenant cannot widen it)',
      type: 'array',
      items: { type: 'string', minLength: 1 },
    },
  },
};

/**
 * VNODE_LABELS are the super node labels every vNode keeps: what tenant nodeSelectors, topology spread and
 * DaemonSets key on (hostname, os, arch, zone, region, instance type). Others (node roles, pools, the platform's
 * own keys) describe the super cluster, not the tenant's view of it, and are dropped.
 */
export const VNODE_LABELS: readonly string[] = [
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
];

/**
 * VNODE_CONDITIONS are the node conditions a vNode shows: Ready only. Memory, disk and PID pressure measure the load
 * of every tenant's Pods on the machine, so another tenant's activity could be read from them; the super scheduler,
 * not the tenant, acts on them.
 */
export const VNODE_CONDITIONS: readonly string[] = ['Ready'];

/** PRESSURE_TAINTS are the taints the node lifecycle controller sets for the pressure conditions a vNode hides. */
export const PRESSURE_TAINTS: readonly string[] = [
  'node.kubernetes.io/memory-pressure',
  'node.kubernetes.io/disk-pressure',
  'node.kubernetes.io/pid-pressure',
];

/**
 * VNODE_NODE_INFO are the fields of status.nodeInfo a vNode shows: what `kubectl get nodes` prints and what
 * workloads select on. Machine and boot identity, kernel, OS image and container runtime versions identify the
 * machine and its patch level and are dropped.
 */
export const VNODE_NODE_INFO: readonly string[] = ['kubeletVersion', 'operatingSystem', 'architecture'];

/** VnAgentConfig is `pluginConfig.nodes.vnAgent` of a tenant: where the tenant apiserver reaches the vn-agent. */
export interface VnAgentConfig {
  host?: string;
  port: number;
}

type RawAgent = { host?: unknown; port?: unknown; superClusters?: unknown } | undefined;

/**
 * vnAgentConfig reads `pluginConfig.nodes.vnAgent` of a tenant, ignoring fields of the wrong type. A top-level
 * `pluginConfig.vnAgent` (the shape of 0.1 manager defaults) is still read when `nodes.vnAgent` is absent. With
 * several super clusters, `vnAgent.superClusters.<name>` of the syncer's super cluster overrides host and port: each
 * super cluster's vNodes point at the vn-agent of that super cluster.
 */
export function vnAgentConfig(ctx: Pick<PluginContext, 'tenant' | 'superCluster'>): VnAgentConfig {
  const own = pluginConfigOf(ctx, 'nodes')?.vnAgent;
  const raw = (own ?? ctx.tenant.pluginConfig?.vnAgent) as RawAgent;
  const perSuper = raw?.superClusters;
  const over: RawAgent =
    ctx.superCluster !== undefined && typeof perSuper === 'object' && perSuper !== null
      ? (Object.entries(perSuper).find(([name]) => name === ctx.superCluster)?.[1] as RawAgent)
      : undefined;
  const pick = (k: 'host' | 'port') => (over && over[k] !== undefined ? over[k] : raw?.[k]);
  const port = pick('port');
  const host = pick('host');
  const out: VnAgentConfig = { port: typeof port === 'number' ? port : DEFAULT_VN_AGENT_PORT };
  if (typeof host === 'string' && host) out.host = host;
  return out;
}

/** graceSeconds reads `pluginConfig.nodes.gracePeriodSeconds` of a tenant (default DEFAULT_GRACE_SECONDS). */
export function graceSeconds(ctx: Pick<PluginContext, 'tenant'>): number {
  const g = (ctx.tenant.pluginConfig?.nodes as { gracePeriodSeconds?: unknown } | undefined)?.gracePeriodSeconds;
  return typeof g === 'number' && g >= 0 ? g : DEFAULT_GRACE_SECONDS;
}

/** settleSeconds reads `pluginConfig.nodes.emptySettleSeconds` of a tenant (default DEFAULT_SETTLE_SECONDS). */
export function settleSeconds(ctx: Pick<PluginContext, 'tenant'>): number {
  const s = (pluginConfigOf(ctx, 'nodes') as { emptySettleSeconds?: unknown } | undefined)?.emptySettleSeconds;
  return typeof s === 'number' && s >= 0 ? s : DEFAULT_SETTLE_SECONDS;
}

/**
 * emptyDecision keeps an empty vNode (`desired`, what it is to show meanwhile) through the grace period, then deletes
 * it. The empty-since mark is written only once the node has stayed empty for the settle time, with the time it
 * emptied: until then that time is the syncer's note on the key (`ctx.remembered`), so a node a Pod returns to within
 * the settle time costs no write. Without a note (a restart, a new leader) the node counts as emptied now.
 */
function emptyDecision(
  vNode: Node,
  desired: Node,
  ctx: Pick<PluginContext, 'tenant' | 'now' | 'remembered'>,
): Decision<Node> {
  const now = ctx.now.getTime();
  const graceMs = graceSeconds(ctx) * 1000;
  const marked = Date.parse(vNode.metadata?.annotations?.[EMPTY_SINCE_ANN] ?? '');
  if (!Number.isNaN(marked)) {
    const left = marked + graceMs - now;
    return left <= 0 ? { object: null } : { object: desired, requeueAfterMs: left };
  }
  const noted = Date.parse(ctx.remembered ?? '');
  const since = Number.isNaN(noted) ? now : noted;
  const left = since + graceMs - now;
  if (left <= 0) return { object: null };
  const at = new Date(since).toISOString();
  const settling = since + settleSeconds(ctx) * 1000 - now;
  if (settling > 0) return { object: desired, requeueAfterMs: Math.min(settling, left), remember: at };
  desired.metadata = { ...desired.metadata, annotations: { ...desired.metadata?.annotations, [EMPTY_SINCE_ANN]: at } };
  return { object: desired, requeueAfterMs: left };
}

/** extraLabels reads `pluginConfig.nodes.extraLabels` of a tenant: more label keys or prefixes a vNode shows. */
function extraLabels(ctx: Pick<PluginContext, 'tenant'>): string[] {
  const raw = (pluginConfigOf(ctx, 'nodes') as { extraLabels?: unknown } | undefined)?.extraLabels;
  return Array.isArray(raw) ? raw.filter((k): k is string => typeof k === 'string' && k !== '') : [];
}

/** vNodeLabels keeps the allowed labels of a super node. */
function vNodeLabels(labels: Record<string, string> | undefined, extra: readonly string[]): Record<string, string> {
  const allowed = (k: string) =>
    VNODE_LABELS.includes(k) || extra.some((e) => (e.endsWith('/') ? k.startsWith(e) : k === e));
  return Object.fromEntries(Object.entries(labels ?? {}).filter(([k]) => allowed(k)));
}

/**
 * vNodeInfo keeps the allowed fields of a super node's nodeInfo. The apiserver writes every string field of
 * NodeSystemInfo even when empty, so a hidden string field is written as '' (what the tenant apiserver stores for it
 * anyway: no diff on every pass); hidden fields of other types are left out.
 */
function vNodeInfo(
  src: Record<string, unknown> | undefined,
  had: Record<string, unknown> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of new Set([...Object.keys(src ?? {}), ...Object.keys(had ?? {})])) {
    const v = src?.[k] ?? had?.[k];
    if (typeof v !== 'string') continue;
    out[k] = VNODE_NODE_INFO.includes(k) ? String(src?.[k] ?? '') : '';
  }
  return out;
}

/**
 * mirror writes onto `vNode` what a vNode shows of its super node, and nothing else:
 * - capacity and allocatable of the node (the machine's size is what a tenant sizes its Pods against; its quota is
 *   its share, and a per-node share is not defined), unless the tenant's policy withholds node totals (nodes.totals);
 * - the Ready condition, and the taints but those of the pressure conditions (VNODE_CONDITIONS) and those the
 *   tenant's forced tolerations (pods.forced) tolerate;
 * - kubelet version, OS and architecture (VNODE_NODE_INFO);
 * - labels through an allow-list (VNODE_LABELS and `extraLabels`), none of the super node's annotations;
 * - as addresses the vn-agent's (InternalIP) and the node name (Hostname), as kubelet endpoint the vn-agent's port.
 * Images, attached and in-use volumes (other tenants'), machine identity, podCIDR and providerID are never copied.
 */
function mirror(superNode: Node, vNode: Node, ctx: Pick<PluginContext, 'tenant'> & Shared): Node {
  const name = vNodeName(superNode.metadata?.name ?? '', qualifier(ctx));
  const agent = vnAgentConfig(ctx);
  const host = agent.host ?? superNode.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
  const meta = (vNode.metadata ??= {});
  meta.name = name;
  meta.labels = { ...vNodeLabels(superNode.metadata?.labels, extraLabels(ctx)), [VNODE_LABEL]: 'true' };
  const spec = (vNode.spec ??= {});
  // A taint every Pod of the tenant tolerates (the policy forces the toleration) does not exist for its Pods; shown,
  // it would make the tenant's own controllers and tools (DaemonSets, "schedulable node" checks) skip the node.
  const forced = ctx.tenant.pods?.forced?.tolerations ?? [];
  const taints = (superNode.spec?.taints ?? []).filter(
    (t) => !PRESSURE_TAINTS.includes(String(t.key)) && !forced.some((f) => tolerates(f, t as Taint)),
  );
  if (taints.length) spec.taints = clone(taints);
  else delete spec.taints;
  const src = superNode.status ?? {};
  const status: NonNullable<Node['status']> = {};
  const conditions = (src.conditions ?? []).filter((c) => VNODE_CONDITIONS.includes(String(c.type)));
  if (conditions.length) status.conditions = clone(conditions);
  if (nodeTotals(ctx.tenant) === 'scaled') {
    if (src.capacity) status.capacity = clone(src.capacity);
    if (src.allocatable) status.allocatable = clone(src.allocatable);
  }
  const info = vNodeInfo(src.nodeInfo, vNode.status?.nodeInfo);
  if (Object.keys(info).length) status.nodeInfo = info;
  status.addresses = [...(host ? [{ type: 'InternalIP', address: host }] : []), { type: 'Hostname', address: name }];
  status.daemonEndpoints = { kubeletEndpoint: { Port: agent.port } };
  vNode.status = status;
  return vNode;
}

/** buildVNode returns a new vNode for a super node; beforeBind hands it to the core right before a bind. */
export function buildVNode(superNode: Node, ctx: Pick<PluginContext, 'tenant'> & Shared): Node {
  return mirror(superNode, { apiVersion: 'v1', kind: 'Node', metadata: {} }, ctx);
}

const nodeOf = (pod: KubeObject): string[] => {
  const node = (pod as Pod).spec?.nodeName;
  return node ? [node] : [];
};

/**
 * nodesPlugin keeps vNodes: the tenant's view of the super nodes its Pods run on, with the kubelet endpoint pointing
 * at the vn-agent. A vNode the tenant no longer has Pods on is deleted after a grace period, and marked empty once it
 * has stayed empty for a settle time (emptyDecision). Under the policy's `schedulable` view (nodes.view) the tenant
 * also sees every Ready node its Pods may be placed on; a node its placement excludes is not shown, and a vNode of it
 * without the tenant's Pods is deleted at once.
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
  reads: [{ resource: R.runtimeclasses, side: 'super' }],

  // A Pod bound to or leaving a node, on either side, decides whether the tenant keeps that node's vNode.
  watches: [
    { resource: R.pods, side: 'tenant', map: (pod) => nodeOf(pod).map((name) => ({ namespace: '', name })) },
    {
      resource: R.pods,
      side: 'super',
      map: (pod, rctx) => {
        const tenant = provenanceOf(pod)?.cluster;
        return tenant
          ? nodeOf(pod).map((node) => ({ tenant, namespace: '', name: vNodeName(node, qualifier(rctx)) }))
          : [];
      },
    },
  ],

  // Tenants of the schedulable view hear of every node their Pods may be placed on, whatever its readiness; an update
  // routes the old version too, so a node leaving a tenant's placement reaches that tenant once more.
  route(superNode, rctx) {
    const name = superNode.metadata?.name ?? '';
    const placed = rctx.tenants
      .filter((t) => nodesView(t) === 'schedulable' && mayPlaceOn(superNode, t, rctx.superCache))
      .map((t) => t.key);
    return [...new Set([...rctx.tenantsBy(PODS_BY_NODE, name), ...placed])].map((tenant) => ({
      tenant,
      namespace: '',
      name: vNodeName(name, qualifier(rctx)),
    }));
  },

  // A vNode of another super cluster (or a Node the tenant named itself) has no super node here: '' names none.
  superName(_ns, name, ctx) {
    return { name: superNodeName(name, qualifier(ctx)) ?? '' };
  },

  // A tenant Pod can only be bound to a node the tenant has: build the vNode from the super node when it is missing.
  beforeBind(bind, ctx) {
    if (ctx.tenantCache.get(R.nodes, undefined, bind.node)) return undefined;
    const node = superNodeName(bind.node, qualifier(ctx));
    const superNode = node === undefined ? undefined : ctx.superCache.get<Node>(R.nodes, undefined, node);
    return superNode ? buildVNode(superNode, ctx) : undefined;
  },

  toTenant(superNode, vNode, ctx): Decision<Node> {
    if (!superNode) return { object: null };
    const name = superNode.metadata?.name ?? '';
    // A Node the syncer did not write is the tenant's own, even when named after a super node: adopted, it would get
    // the super node's data mirrored in (for the grace period under the withPods view), so it is never written.
    if (vNode && vNode.metadata?.labels?.[LABEL.managedBy] !== MANAGER)
      return {
        object: null,
        skip: { reason: 'NotOwned', message: `Node ${name} was not made by the syncer: it stays the tenant's` },
      };
    if (tenantHasPodOn(name, ctx) || shownForPlacement(superNode, ctx)) {
      const desired = vNode ? mirror(superNode, clone(vNode), ctx) : buildVNode(superNode, ctx);
      const ann = desired.metadata?.annotations;
      if (ann?.[EMPTY_SINCE_ANN] !== undefined) {
        delete ann[EMPTY_SINCE_ANN];
        if (!Object.keys(ann).length) delete desired.metadata!.annotations;
      }
      return { object: desired };
    }
    if (!vNode) return { object: null };
    // Under the schedulable view a node the tenant may not use is never shown, not even for a grace period (a Node
    // the tenant created under its name must not get its data mirrored in).
    if (nodesView(ctx.tenant) === 'schedulable' && !mayPlaceOn(superNode, ctx.tenant, ctx.superCache))
      return { object: null };
    // Under the withPods view an empty vNode keeps what it showed while the tenant had Pods there: refreshed from the
    // super node, a Node the tenant made with the syncer's labels forged would be shown that node's data for the
    // grace period. Under the schedulable view the node passed mayPlaceOn above, so the tenant may see it now.
    const desired = nodesView(ctx.tenant) === 'schedulable' ? mirror(superNode, clone(vNode), ctx) : clone(vNode);
    return emptyDecision(vNode, desired, ctx);
  },
};

export default nodesPlugin;
