import type { KubeObject, Resource } from '../kube/client.ts';
import type { Tenant } from '../syncer/tenant.ts';

/**
 * The plugin contract. A plugin is a pure transform: it receives cloned objects and read-only views of the caches
 * and returns what it wants (a desired object, a skip with a reason, declarative effects). The core owns every read,
 * write, diff, retry, event and metric, and decides which direction function runs.
 */

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
}

/** CacheReader is a read-only view of an informer cache. Objects returned must not be mutated. */
export interface CacheReader {
  get<T extends KubeObject = KubeObject>(r: Resource, namespace: string | undefined, name: string): T | undefined;
  list<T extends KubeObject = KubeObject>(r: Resource, namespace?: string): T[];
}

/** Naming is the tenant-bound view of the names module. */
export interface Naming {
  /** super namespace of a tenant namespace */
  superNamespace(tenantNamespace: string): string;
  /** tenant namespace of a super namespace of this tenant, if it is one */
  tenantNamespace(superNamespace: string): string | undefined;
}

/** PluginContext is everything a plugin may consult while transforming one object. */
export interface PluginContext {
  tenant: Readonly<Tenant>;
  names: Naming;
  tenantCache: CacheReader;
  superCache: CacheReader;
  /** the time of this reconcile */
  now: Date;
}

/** ObjectRef points at one object for an event or an effect. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** Effect is a side effect a plugin asks the core to carry out, declaratively. */
export type Effect =
  | { type: 'event'; side: 'tenant' | 'super'; regarding: ObjectRef; eventType: 'Normal' | 'Warning'; reason: string; message: string }
  /** bind the tenant Pod to the vNode `node` (the core ensures the vNode exists first) */
  | { type: 'bind'; namespace: string; name: string; uid: string; node: string }
  /** delete the tenant object (a Pod whose super Pod is gone while the tenant Pod is terminating: no kubelet finalizes it) */
  | { type: 'deleteTenant'; namespace: string; name: string; uid: string; gracePeriodSeconds?: number }
  /** keep a super Secret holding a token minted by the tenant apiserver for this Pod's service account */
  | { type: 'serviceAccountToken'; namespace: string; pod: string; podUid: string; serviceAccount: string; secretName: string; audiences?: string[] };

/** Decision is what a transform returns. */
export interface Decision<T extends KubeObject = KubeObject> {
  /** the desired object; null means "must not exist" (the core deletes what exists, after the uid check) */
  object: T | null;
  /** set when the object is deliberately not synced; the core records the reason */
  skip?: { reason: string; message: string };
  effects?: Effect[];
  /** ask to be called again after this many milliseconds (grace periods) */
  requeueAfterMs?: number;
}

/** TenantKey names an object on the tenant side (namespace empty for cluster-scoped objects). */
export interface TenantKey {
  tenant: string;
  namespace: string;
  name: string;
}

/** RouteContext lets an up plugin map a super object to the tenants that must hear about it. */
export interface RouteContext {
  tenants: ReadonlyArray<Readonly<Tenant>>;
  superCache: CacheReader;
  /** tenant keys whose Pods run on this super node */
  tenantsOnNode(node: string): string[];
  /** the tenant and tenant namespace of a super namespace, if a tenant owns it */
  tenantOfNamespace(superNamespace: string): { tenant: string; namespace: string } | undefined;
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
  superName?(tenantNamespace: string, tenantName: string, ctx: Pick<PluginContext, 'names' | 'tenant'>): { namespace?: string; name: string };
}

/** MutatorPlugin edits the desired object of another plugin before the core diffs it. */
export interface MutatorPlugin<T extends KubeObject = KubeObject> {
  manifest: PluginManifest;
  mutate(desired: T, tenantObj: T, ctx: PluginContext): Decision<T>;
}

/** VnAgentPlugin is the vn-agent capability: translate a kubelet request path from tenant names to super names. */
export interface VnAgentCapability {
  translateKubeletPath?(path: string, ctx: { names: Naming; tenant: Readonly<Tenant> }): string | null;
}

/** Plugin is anything the host can load. */
export type Plugin = (ResourcePlugin | MutatorPlugin) & Partial<VnAgentCapability>;

/** isMutator tells mutators from resource plugins. */
export function isMutator(p: Plugin): p is MutatorPlugin & Partial<VnAgentCapability> {
  return p.manifest.direction === 'mutator';
}

/** hasVnAgent tells whether a plugin has the vn-agent capability. */
export function hasVnAgent(p: Plugin): p is Plugin & Required<VnAgentCapability> {
  return typeof (p as VnAgentCapability).translateKubeletPath === 'function';
}
