import type { KubeObject, ObjectReference, Resource } from './kube.ts';
import type { NodeCall, NodeCallVerdict } from './nodecalls.ts';

/**
 * The plugin contract. A plugin is a pure transform: it receives cloned objects and read-only views of the caches
 * and returns what it wants (a desired object, a skip with a reason, declarative effects). The core owns every read,
 * write, diff, retry, event and metric, and decides which direction function runs.
 *
 * Over 500 lines, on purpose: this is the published contract, almost all interfaces and their doc comments, read by
 * plugin authors in one place; helpers, object shapes, names and the Pod helpers are separate modules of the SDK.
 */

/** PLUGIN_API_GROUP is the API group of the plugin contract; a manifest's apiVersion is `<group>/v<major>`. */
export const PLUGIN_API_GROUP = 'plugins.tenancy.x-k8s.io';
/** PLUGIN_API_VERSION is the contract version this SDK describes; plugins built on it declare it in their manifest. */
export const PLUGIN_API_VERSION = `${PLUGIN_API_GROUP}/v1`;

/** PROCESSES are the processes a plugin can run in. */
export const PROCESSES = ['manager', 'vn-agent'] as const;
/** PluginProcess is one of PROCESSES. */
export type PluginProcess = (typeof PROCESSES)[number];

/** DIRECTIONS: `down` tenant->super, `up` super->tenant, `both` down plus status up, `mutator` edits another plugin's output. */
export const DIRECTIONS = ['down', 'up', 'both', 'mutator'] as const;
/** Direction is one of DIRECTIONS. */
export type Direction = (typeof DIRECTIONS)[number];

/** PluginManifest describes a plugin; it is validated against schemas/plugin.schema.json when the plugin loads. */
export interface PluginManifest {
  /** the contract version the plugin was written for, PLUGIN_API_VERSION; the host refuses an unknown major version */
  apiVersion: string;
  name: string;
  version: string;
  description?: string;
  /** the resource this plugin owns (absent for mutators) */
  resource?: { group: string; version: string; resource: string; kind: string; namespaced: boolean };
  direction: Direction;
  sourceOfTruth: 'tenant' | 'super';
  processes: PluginProcess[];
  /** for mutators: the plugin whose desired objects this one edits */
  mutates?: string;
  /** opt-in plugins run only when the configuration or the tenant enables them */
  optIn?: boolean;
  /** the key of this plugin's entry in `pluginConfig` (default: its name) */
  configKey?: string;
  /**
   * the JSON Schema (draft 2020-12) of this plugin's entry in `pluginConfig` (`pluginConfig.<configKey>`); the host
   * validates the manager's defaults when the plugin loads and each VirtualCluster's value when it is admitted
   */
  configSchema?: Record<string, unknown>;
  /** the permissions the manager needs in the super cluster for this plugin's resource, beyond the shipped ClusterRole */
  rbac?: PolicyRule[];
}

/** PolicyRule is one rbac.authorization.k8s.io/v1 PolicyRule a plugin needs granted to the manager. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** CacheReader is a read-only view of an informer cache. Objects returned must not be mutated. */
export interface CacheReader {
  get<T extends KubeObject = KubeObject>(r: Resource, namespace: string | undefined, name: string): T | undefined;
  list<T extends KubeObject = KubeObject>(r: Resource, namespace?: string): T[];
}

/** Naming is the tenant-bound view of the core's naming rules that plugins receive. */
export interface Naming {
  /** super namespace of a tenant namespace */
  superNamespace(tenantNamespace: string): string;
  /** tenant namespace of a super namespace of this tenant, if it is one */
  tenantNamespace(superNamespace: string): string | undefined;
}

/** PluginContext is everything a plugin may consult while transforming one object. */
export interface PluginContext {
  tenant: TenantView;
  names: Naming;
  tenantCache: CacheReader;
  superCache: CacheReader;
  /** the time of this reconcile */
  now: Date;
  /** the note the plugin's last decision on this key asked the core to keep (Decision.remember), if any */
  remembered?: string;
  /** the name of the super cluster this syncer serves (absent: the manager's single, unnamed one) */
  superCluster?: string;
  /**
   * sharedTenants is true when other super clusters' syncers serve the same tenants (several super clusters, each
   * syncing what the scheduler placed there): names of what flows up from this super cluster must not collide with
   * theirs (vNodes are named `<superCluster>.<node>`, core/names vNodeName).
   */
  sharedTenants?: boolean;
}

/** ObjectRef points at one object for an event or an effect: an ObjectReference whose kind and name are known. */
export type ObjectRef = Required<Pick<ObjectReference, 'apiVersion' | 'kind' | 'name'>> &
  Pick<ObjectReference, 'namespace' | 'uid'>;

/** Effect is a side effect a plugin asks the core to carry out, declaratively. */
export type Effect =
  | {
      type: 'event';
      side: 'tenant' | 'super';
      regarding: ObjectRef;
      eventType: 'Normal' | 'Warning';
      reason: string;
      message: string;
    }
  /** bind the tenant Pod to the node `node`; plugins implementing beforeBind create that node first */
  | BindEffect
  /**
   * delete the tenant object (a Pod whose super Pod is gone while the tenant Pod is terminating: no kubelet finalizes
   * it); `status`, when given, is applied to its status first (the terminal phase a kubelet would have written, which
   * controllers holding finalizers on it wait for)
   */
  | {
      type: 'deleteTenant';
      namespace: string;
      name: string;
      uid: string;
      gracePeriodSeconds?: number;
      status?: Record<string, unknown>;
    }
  /** keep a super Secret holding a token minted by the tenant apiserver for this Pod's service account */
  | {
      type: 'serviceAccountToken';
      namespace: string;
      pod: string;
      podUid: string;
      serviceAccount: string;
      secretName: string;
      audiences?: string[];
      /** the tokens to keep, one Secret key each; absent, one token under `token` for `audiences` */
      tokens?: ServiceAccountTokenKey[];
      /**
       * true: `secretName` is shared by every Pod of the namespace with this ServiceAccount and these tokens; its
       * tokens are bound to the ServiceAccount only (not to a Pod), and the core deletes it once no super Pod reads it
       */
      shared?: boolean;
    }
  /** keep the token-less ServiceAccount super Pods run under in the super namespace of tenant namespace `namespace` */
  | { type: 'superServiceAccount'; namespace: string; name: string }
  /**
   * keep a NetworkPolicy that no tenant object is the source of (the tenant isolation policy) in the super namespace of
   * tenant namespace `namespace`: the core sets its namespace and its managed-by and tenant labels
   */
  | { type: 'superNetworkPolicy'; namespace: string; policy: KubeObject }
  /**
   * keep the tenant's ResourceQuota and LimitRange (QUOTA_OBJECT_NAME) in the super namespace of tenant namespace
   * `namespace` as given; null: the syncer's own one is deleted. The core sets their namespace and labels.
   */
  | { type: 'superQuota'; namespace: string; resourceQuota: KubeObject | null; limitRange: KubeObject | null }
  /** set a condition on the status of the tenant object `namespace/name` of the plugin's resource (server-side apply) */
  | { type: 'tenantCondition'; namespace: string; name: string; uid: string; condition: TenantCondition };

/** TenantCondition is a status condition the syncer sets on a tenant object, such as why a Pod is not synced. */
export interface TenantCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** ServiceAccountTokenKey is one token of a serviceAccountToken effect: a projected serviceAccountToken source. */
export interface ServiceAccountTokenKey {
  /** the key of the super Secret that holds it */
  key: string;
  audiences?: string[];
  /** the lifetime the Pod asked for; the tenant apiserver may shorten or lengthen it */
  expirationSeconds?: number;
}

/** Decision is what a transform returns. */
export interface Decision<T extends KubeObject = KubeObject> {
  /** the desired object; null means "must not exist" (the core deletes what exists, after the uid check) */
  object: T | null;
  /** set when the object is deliberately not synced; the core records the reason */
  skip?: { reason: string; message: string };
  effects?: Effect[];
  /** ask to be called again after this many milliseconds (grace periods) */
  requeueAfterMs?: number;
  /**
   * a short note the core keeps in its memory for this key and hands back as `ctx.remembered` on the key's next
   * decision; absent, the note is dropped. toTenant of a plugin whose source of truth is the super cluster
   * (direction `up`) gets and keeps one, and so does toSuper while the super object does not exist yet (a create: a
   * plugin may try another choice after a create the super cluster refused). The note is gone after a restart, on a new leadership term and when the
   * tenant is no longer served: what a plugin decides from it must stay right without it, at worst later.
   */
  remember?: string;
}

/** TenantKey names an object on the tenant side (namespace empty for cluster-scoped objects). */
export interface TenantKey {
  tenant: string;
  namespace: string;
  name: string;
}

/** RouteContext lets an up plugin map a super object to the tenants that must hear about it. */
export interface RouteContext {
  tenants: readonly TenantView[];
  superCache: CacheReader;
  /** tenant keys owning super objects whose index `index` (declared in some plugin's `indexes`) has this value */
  tenantsBy(index: string, value: string): string[];
  /** the tenant and tenant namespace of a super namespace, if a tenant owns it */
  tenantOfNamespace(superNamespace: string): { tenant: string; namespace: string } | undefined;
  /** the super cluster of the syncer routing, as PluginContext.superCluster */
  superCluster?: string;
  /** as PluginContext.sharedTenants */
  sharedTenants?: boolean;
}

/**
 * ResourcePlugin owns one resource type. Down plugins implement toSuper, up plugins toTenant; `both` plugins
 * implement both (toTenant then carries status and other super-assigned fields back).
 */
export interface ResourcePlugin<T extends KubeObject = KubeObject> {
  manifest: PluginManifest;
  /**
   * toSuper returns the desired super object for a tenant object. `superObj` is the current super object when it
   * exists; build on it (it is a clone) so fields the super apiserver defaulted are kept and the diff stays small.
   */
  toSuper?(tenantObj: T, superObj: T | undefined, ctx: PluginContext): Decision<T>;
  /**
   * toTenant returns the desired tenant object for a super object. For `both` plugins `tenantObj` exists and only
   * status-like fields should change; for `up` plugins it may be undefined (create) and null means delete.
   */
  toTenant?(superObj: T | undefined, tenantObj: T | undefined, ctx: PluginContext): Decision<T>;
  /** route maps a super object to tenant keys (up plugins; default: the ownership annotations). */
  route?(superObj: T, ctx: RouteContext): TenantKey[];
  /** superName maps a tenant object's name to the super name (default: the same name; namespaces override). */
  superName?(
    tenantNamespace: string,
    tenantName: string,
    ctx: Pick<PluginContext, 'names' | 'tenant' | 'superCluster' | 'sharedTenants'>,
  ): { namespace?: string; name: string };
  /** reads lists the caches of other resources this plugin consults (see CacheNeed). */
  reads?: readonly CacheNeed[];
  /** watches lists the events of other resources that requeue this plugin's objects (see Watch). */
  watches?: readonly Watch[];
  /** indexes lists the super-side indexes this plugin's route() asks about through RouteContext.tenantsBy. */
  indexes?: readonly SuperIndex[];
  /**
   * beforeBind returns an object of this plugin's resource that must exist in the tenant before the core carries
   * out a bind effect (the nodes plugin returns the vNode), or undefined when nothing is missing. The core asks every
   * plugin enabled for the tenant that implements it, creates what they return, then binds.
   */
  beforeBind?(bind: BindEffect, ctx: PluginContext): T | undefined;
}

/**
 * MutatorPlugin edits the desired object of another plugin before the core diffs it. The mutators of one plugin form
 * a chain in a defined order: built-in plugins in registry order, then third-party plugins in load order. Each sees
 * the previous one's output; a skip or a null object stops the chain; a mutator not enabled for the tenant is passed
 * over and the chain goes on.
 */
export interface MutatorPlugin<T extends KubeObject = KubeObject> {
  manifest: PluginManifest;
  mutate(desired: T, tenantObj: T, ctx: PluginContext): Decision<T>;
  /** reads lists the caches this mutator consults beyond the mutated plugin's own resource. */
  reads?: readonly CacheNeed[];
}

/**
 * VnAgentCapability is what a plugin may do in the vn-agent, the hooks that concern node calls. They run only in a
 * host loaded for the vn-agent process, for tenants the plugin is enabled for, in load order (built-ins first).
 */
export interface VnAgentCapability {
  /** translateKubeletPath rewrites a kubelet request path from tenant names to super names (null: not this plugin's) */
  translateKubeletPath?(path: string, ctx: { names: Naming; tenant: TenantView }): string | null;
  /**
   * filterNodeCall is a request filter: it sees every admitted call (Pod calls and usage) and refuses it or rewrites
   * its query; each filter sees the query the one before it left. A refusal is the tenant's 403 with the reason.
   */
  filterNodeCall?(call: NodeCall, ctx: { tenant: TenantView }): NodeCallVerdict;
  /**
   * filterNodeOutput is a response filter over the text the kubelet answers, before the tenant gets it: container
   * logs line by line (each with its line end; follow streams too) and the usage endpoints' whole answer, after the
   * agent kept only the tenant's own Pods. exec, attach and port-forward streams are not shown to it.
   */
  filterNodeOutput?(call: NodeCall, text: string, ctx: { tenant: TenantView }): string;
}

/** Plugin is anything the host can load. */
export type Plugin = (ResourcePlugin | MutatorPlugin) & Partial<VnAgentCapability>;

/** isMutator tells mutators from resource plugins. */
export function isMutator(p: Plugin): p is MutatorPlugin & Partial<VnAgentCapability> {
  return p.manifest.direction === 'mutator';
}

/** hasVnAgent tells whether a plugin translates kubelet paths (the vn-agent capability it started with). */
export function hasVnAgent(p: Plugin): p is Plugin & Required<Pick<VnAgentCapability, 'translateKubeletPath'>> {
  return typeof (p as VnAgentCapability).translateKubeletPath === 'function';
}

/** hasNodeHooks tells whether a plugin filters node calls or their output in the vn-agent. */
export function hasNodeHooks(p: Plugin): boolean {
  const c = p as VnAgentCapability;
  return typeof c.filterNodeCall === 'function' || typeof c.filterNodeOutput === 'function';
}

// ---- Contract v1: the tenant as plugins see it, and the dependencies a plugin declares -------------------------

/**
 * TenantView is the read-only view of one tenant that plugins receive: identity and settings, never a credential
 * (no kubeconfig) and nothing that only the core needs (no queue weight).
 */
export interface TenantView {
  /** cluster key = root namespace */
  readonly key: string;
  readonly vcName: string;
  readonly vcNamespace: string;
  /** uid of the VirtualCluster object */
  readonly vcUid: string;
  /** cluster domain used in DNS search paths */
  readonly clusterDomain: string;
  /** Pod Security admission level written on the tenant's super namespaces */
  readonly podSecurityLevel: 'privileged' | 'baseline' | 'restricted';
  /** prefixes of tenant labels/annotations that must not reach the super cluster */
  readonly opaqueMetaPrefixes?: readonly string[];
  /** prefixes of super labels/annotations that are copied up to the tenant */
  readonly transparentMetaPrefixes?: readonly string[];
  /** plugins enabled for this tenant beyond the defaults (opt-in ones) and disabled for it */
  readonly plugins?: { readonly enable?: readonly string[]; readonly disable?: readonly string[] };
  /** per-tenant settings for plugins, by plugin or setting name */
  readonly pluginConfig?: Readonly<Record<string, unknown>>;
  /** where Pods in the super reach this tenant's apiserver */
  readonly apiserverEndpoint?: { readonly host: string; readonly port: number };
  /** where the tenant's DNS server reads its Services, when that is not the apiserver (a read-only view) */
  readonly dnsApiEndpoint?: { readonly host: string; readonly port: number };
  /** the pods section of the tenant's effective TenantPolicy; absent, the built-in defaults apply */
  readonly pods?: PodsPolicyView;
  /** the quota section of the tenant's effective TenantPolicy; absent (a static tenant), no quota and no caps */
  readonly quota?: QuotaPolicyView;
  /** the runtimeClasses section of the tenant's effective TenantPolicy; absent, the built-in defaults apply */
  readonly runtimeClasses?: RuntimeClassesPolicyView;
  /** the nodes section of the tenant's effective TenantPolicy; absent, the built-in defaults apply (withPods) */
  readonly nodes?: NodesPolicyView;
  /** which tenant label and annotation keys reach super objects; a list left out takes DEFAULT_COPIED_METADATA's */
  readonly copiedMetadata?: CopiedMetadataView;
  /** the network section of the tenant's effective TenantPolicy; absent, the built-in defaults apply */
  readonly network?: NetworkPolicyView;
  /** the services section of the tenant's effective TenantPolicy; absent, the built-in defaults apply */
  readonly services?: ServicesPolicyView;
  /** the ingresses section of the tenant's effective TenantPolicy; absent, the built-in defaults apply */
  readonly ingresses?: IngressesPolicyView;
  /** the endpoints section of the tenant's effective TenantPolicy; absent, the built-in defaults apply */
  readonly endpoints?: EndpointsPolicyView;
}

/** RuntimeClassesPolicyView is what the tenant's policy decides for RuntimeClasses, as plugins read it. */
export interface RuntimeClassesPolicyView {
  /** handlers the tenant's own RuntimeClasses may name */
  readonly handlers?: readonly string[];
  /** the super RuntimeClass every tenant Pod runs in; a Pod cannot leave it for a class with another handler */
  readonly required?: string;
}

/** NODES_VIEWS are the vNode views a policy chooses from: nodes with the tenant's Pods, or every node it may use. */
export const NODES_VIEWS = ['withPods', 'schedulable'] as const;
/** NodesView is one of NODES_VIEWS. */
export type NodesView = (typeof NODES_VIEWS)[number];

/**
 * NODE_TOTALS are what a policy lets a tenant see of a node's own figures: `scaled`, the node's usage is the sum over
 * the tenant's own Pods and its vNode shows the node's capacity and allocatable; `withheld`, neither.
 */
export const NODE_TOTALS = ['scaled', 'withheld'] as const;
/** NodeTotals is one of NODE_TOTALS. */
export type NodeTotals = (typeof NODE_TOTALS)[number];

/** NodesPolicyView is what the tenant's policy decides for its vNodes, as plugins read it. */
export interface NodesPolicyView {
  /** withPods: vNodes only where the tenant has Pods; schedulable: also every Ready node its Pods may be placed on */
  readonly view?: NodesView;
  /** scaled: node usage summed over the tenant's Pods, capacity shown; withheld: neither (absent, scaled) */
  readonly totals?: NodeTotals;
}

/**
 * CopiedMetadataView lists, as key patterns, the tenant label and annotation keys copied to super objects: an
 * allow-list, since super-side NetworkPolicies, admission webhooks and platform add-ons key on labels and
 * annotations. In a pattern `*` matches any run of characters without `/`: `*` alone is every key without a prefix,
 * `app.kubernetes.io/*` every key under that prefix. Keys under the project's prefix are never copied.
 */
export interface CopiedMetadataView {
  /** labels of namespaced objects (Pods, Services, ConfigMaps, ...) */
  readonly labels?: readonly string[];
  /** annotations of namespaced objects */
  readonly annotations?: readonly string[];
  /** labels of Namespaces */
  readonly namespaceLabels?: readonly string[];
  /** annotations of Namespaces */
  readonly namespaceAnnotations?: readonly string[];
}

/** NetworkPolicyView is what the tenant's policy decides for its network isolation, as plugins read it. */
export interface NetworkPolicyView {
  /** address ranges of the super cluster tenant Pods reach only through the tenant isolation policy */
  readonly internalCIDRs?: readonly string[];
}

/** TolerationRule is one toleration a policy allows: a key (absent: only the empty key) and an effect (absent: any). */
export interface TolerationRule {
  readonly key?: string;
  readonly effect?: string;
}

/** PodsPolicyView is what the tenant's policy decides for its Pods, as plugins read it. */
export interface PodsPolicyView {
  /** priority class names tenant Pods may name besides none at all; names starting `system-` are always refused */
  readonly priorityClasses?: readonly string[];
  /** tolerations tenant Pods may carry */
  readonly tolerations?: readonly TolerationRule[];
  /** schedulers tenant Pods may name */
  readonly schedulerNames?: readonly string[];
  /** whether tenant containers may ask for host ports */
  readonly hostPorts?: boolean;
  /** whether tenant Pods may use host namespaces and hostPath volumes (the tenant's level must be privileged too) */
  readonly hostAccess?: boolean;
  /** volume types the kubelet mounts against arbitrary servers (nfs, iscsi, rbd, cephfs, flexVolume, gitRepo) allowed */
  readonly volumeTypes?: readonly string[];
  /** node label keys tenant nodeSelectors and node affinity may use; `prefix*` matches every key with that prefix */
  readonly nodeLabelKeys?: readonly string[];
  /** placement the platform forces onto every super Pod of the tenant */
  readonly forced?: ForcedPlacementView;
  /**
   * images every node holds from the platform (public, imported with the node, never pulled; the policy's
   * pods.preloadedImages and the manager's tenantDefaults.pods.preloadedImages together): containers naming one of them
   * exactly keep IfNotPresent; every other image is pulled Always, so a node's cache never serves one tenant's private
   * image to another
   */
  readonly preloadedImages?: readonly string[];
  /**
   * the image of the init container that gives a Pod with a subdomain the tenant's names in /etc/hosts (the manager's
   * tenantDefaults.pods.etcHostsImage: an image every node holds, with `sh` and `sed`); absent, such a Pod's /etc/hosts
   * names its super namespace
   */
  readonly etcHostsImage?: string;
  /**
   * registry hosts tenant images may name at all: `host` or `host:port`, `*.example.com` every host under it, `*` every
   * host; an image without a registry host is from docker.io
   */
  readonly registries?: readonly string[];
  /**
   * registry hosts (`host` or `host:port`, as image references write them) tenant images may name although they lie
   * inside the platform: the node itself, the internal ranges, single-label names; every other such host is refused
   */
  readonly internalRegistries?: readonly string[];
  /**
   * how the service account token of the admission's kube-api-access volume is minted: `shared`, one Secret per
   * namespace, ServiceAccount and token request, its token bound to the ServiceAccount; `perPod`, one Secret per Pod,
   * its token bound to the tenant Pod (revoked when the Pod is deleted). Other projected tokens are always per Pod.
   */
  readonly serviceAccountTokens?: ServiceAccountTokenMode;
  /** most Pods of the tenant not ended on one super node; absent, no share */
  readonly maxPodsPerNode?: number;
  /**
   * longest spec.terminationGracePeriodSeconds a tenant Pod may ask for: a deleted Pod, and every Pod of a deleted
   * tenant, may run this long after the deletion
   */
  readonly maxTerminationGracePeriodSeconds?: number;
}

/** SERVICE_ACCOUNT_TOKEN_MODES are the values of PodsPolicyView.serviceAccountTokens. */
export const SERVICE_ACCOUNT_TOKEN_MODES = ['shared', 'perPod'] as const;
/** ServiceAccountTokenMode is one of SERVICE_ACCOUNT_TOKEN_MODES. */
export type ServiceAccountTokenMode = (typeof SERVICE_ACCOUNT_TOKEN_MODES)[number];

/**
 * ForcedPlacementView is what the platform adds to every super Pod of a tenant: node selector entries (a tenant Pod
 * selecting another value for one of these keys is refused) and tolerations (added to the Pod's own).
 */
export interface ForcedPlacementView {
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly ForcedToleration[];
}

/** ForcedToleration is a core/v1 Toleration the platform adds to every super Pod of a tenant. */
export interface ForcedToleration {
  readonly key?: string;
  readonly operator?: 'Exists' | 'Equal';
  readonly value?: string;
  readonly effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  readonly tolerationSeconds?: number;
}

/** ServiceTypeRule says whether tenant Services may have one type (NodePort, LoadBalancer) and how many at most. */
export interface ServiceTypeRule {
  readonly allowed?: boolean;
  /** the most Services of this type the tenant may have across all its namespaces */
  readonly max?: number;
  /** the most ports one Service of this type may have: each takes a node port on every node */
  readonly maxPorts?: number;
  /**
   * the super copy asks for the node ports the tenant's own apiserver gave the Service (tried once when the copy is
   * created; refused, the super cluster's are taken and shown to the tenant)
   */
  readonly keepTenantPorts?: boolean;
}

/** ServicesPolicyView is what the tenant's policy decides for its Services. */
export interface ServicesPolicyView {
  readonly nodePort?: ServiceTypeRule;
  readonly loadBalancer?: LoadBalancerRule;
}

/** LoadBalancerRule is the rule for LoadBalancer Services: a ServiceTypeRule and the classes they may name. */
export interface LoadBalancerRule extends ServiceTypeRule {
  /** load balancer classes tenant Services may name in spec.loadBalancerClass (one naming none gets the super's default) */
  readonly classes?: readonly string[];
}

/** IngressesPolicyView is what the tenant's policy decides for its Ingresses. */
export interface IngressesPolicyView {
  /** hosts tenant Ingresses may serve: `a.example.com` that host, `*.example.com` every host under example.com */
  readonly hosts?: readonly string[];
  /** ingress classes tenant Ingresses may name (an Ingress naming none gets the super's default class) */
  readonly classes?: readonly string[];
  /** annotation key patterns copied to the super Ingress (instead of copiedMetadata.annotations); snippets never */
  readonly annotations?: readonly string[];
}

/** EndpointsPolicyView is what the tenant's policy decides for the Endpoints of its selectorless Services. */
export interface EndpointsPolicyView {
  /** CIDRs (IPv4 or IPv6) addresses may lie in besides the tenant's own Pod IPs */
  readonly allowedCIDRs?: readonly string[];
}

/** ObjectCaps are the per-tenant caps on one resource's objects in the super cluster; an absent cap is no cap. */
export interface ObjectCaps {
  /** most objects of the tenant */
  readonly count?: number;
  /** largest object, in bytes of its JSON as written to the super cluster */
  readonly maxBytes?: number;
  /** most bytes of all the tenant's objects of the resource */
  readonly totalBytes?: number;
}

/** LimitRangeItem is one core/v1 LimitRangeItem. */
export interface LimitRangeItem {
  readonly type: 'Container' | 'Pod' | 'PersistentVolumeClaim';
  readonly default?: Readonly<Record<string, string>>;
  readonly defaultRequest?: Readonly<Record<string, string>>;
  readonly max?: Readonly<Record<string, string>>;
  readonly min?: Readonly<Record<string, string>>;
  readonly maxLimitRequestRatio?: Readonly<Record<string, string>>;
}

/** QuotaPolicyView is what the tenant's policy decides for its quotas. */
export interface QuotaPolicyView {
  /** spec.hard of the ResourceQuota in every super namespace of the tenant (empty: none) */
  readonly resourceQuota: Readonly<Record<string, string>>;
  /** spec.limits of the LimitRange in every super namespace of the tenant (empty: none) */
  readonly limitRange: readonly LimitRangeItem[];
  /**
   * per-tenant caps by resource (the plugin's resource name), over all the tenant's super namespaces; the key `*`
   * holds for every resource not named
   */
  readonly objects: Readonly<Record<string, ObjectCaps>>;
  /** the tenant's compute quota over all its super namespaces; absent, none */
  readonly compute?: ComputeQuotaView;
}

/** ComputeQuotaView is a tenant's compute quota (TenantPolicy spec.quota.compute). */
export interface ComputeQuotaView {
  /** resource names (pods, requests.cpu, limits.memory, requests.storage, ...) to the most the tenant holds in all */
  readonly hard: Readonly<Record<string, string>>;
  /** what a container without a cpu or memory request counts as */
  readonly defaultRequests: Readonly<Record<string, string>>;
}

/** BindEffect asks the core to bind the tenant Pod `namespace/name` (uid checked) to the node `node`. */
export interface BindEffect {
  type: 'bind';
  namespace: string;
  name: string;
  uid: string;
  node: string;
}

/** SIDES are the two clusters a cache or an event comes from. */
export const SIDES = ['tenant', 'super'] as const;
/** Side is one of SIDES. */
export type Side = (typeof SIDES)[number];

/**
 * CacheNeed asks the core to keep an informer cache of `resource` on `side`, so ctx.tenantCache or ctx.superCache
 * can read it. The core watches exactly the resources plugins own, read or watch (plus super namespaces, which it
 * needs for naming). Super caches hold only objects the syncer manages, unless a plugin whose source of truth is
 * the super cluster owns the resource.
 */
export interface CacheNeed {
  resource: Resource;
  side: Side;
}

/**
 * Watch requeues this plugin's objects when an object of another resource changes (vcluster's extra watches). It
 * implies the CacheNeed. On an update, map sees the old and the new version.
 * - side `tenant`: map returns the tenant namespace and name of this plugin's objects in the same tenant;
 * - side `super`: map returns full tenant keys (which tenant, which object), as route() does.
 */
export type Watch =
  | (CacheNeed & {
      side: 'tenant';
      map(obj: KubeObject, tenant: TenantView): Array<{ namespace: string; name: string }>;
    })
  | (CacheNeed & { side: 'super'; map(obj: KubeObject, ctx: RouteContext): TenantKey[] });

/**
 * SuperIndex asks the core to index the super objects of `resource` by the values `values` returns, remembering the
 * tenant that owns each object (its ownership annotations); RouteContext.tenantsBy(name, value) answers from it.
 * The nodes plugin indexes super Pods by node name to find the tenants with Pods on a node.
 */
export interface SuperIndex {
  name: string;
  resource: Resource;
  values(obj: KubeObject): string[];
}
