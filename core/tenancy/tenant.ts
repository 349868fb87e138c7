import { childLogger } from '../log.ts';
import { rootNamespace, type TenantIdentity } from '../names/names.ts';
import type {
  CopiedMetadataView,
  EndpointsPolicyView,
  IngressesPolicyView,
  NetworkPolicyView,
  NodesPolicyView,
  PodsPolicyView,
  QuotaPolicyView,
  RuntimeClassesPolicyView,
  ServicesPolicyView,
  TenantView,
} from '../../plugins/sdk/src/contract.ts';
import type { ByteRate, CreateRate } from '../api/tenantpolicy.ts';
import { TENANT_DEFAULTS } from './defaults.ts';

const registryLog = childLogger({ controller: 'tenant-registry' });

/** POD_SECURITY_LEVELS are the Pod Security admission levels a tenant's super namespaces may be labelled with. */
export const POD_SECURITY_LEVELS = ['privileged', 'baseline', 'restricted'] as const;
/** PodSecurityLevel is one of POD_SECURITY_LEVELS. */
export type PodSecurityLevel = (typeof POD_SECURITY_LEVELS)[number];

/** Tenant is one tenant control plane as the syncer and the vn-agent see it. */
export interface Tenant extends TenantIdentity {
  /** uid of the VirtualCluster object */
  vcUid: string;
  /** admin kubeconfig of the tenant control plane (YAML text); empty where no process talks to it (the vn-agent) */
  kubeconfig: string;
  /** fair-queue weight (positive integer) */
  weight: number;
  /** cluster domain used in DNS search paths */
  clusterDomain: string;
  /** Pod Security admission level written on the tenant's super namespaces */
  podSecurityLevel: PodSecurityLevel;
  /** plugins enabled for this tenant beyond the defaults (opt-in ones) and disabled for it */
  plugins?: { enable?: string[]; disable?: string[] };
  /** opaque per-tenant settings for plugins, e.g. `{ sandbox: { runtimeClassName: "kata" } }` */
  pluginConfig?: Record<string, unknown>;
  /** where Pods in the super reach this tenant's apiserver (host and port), for their service account tokens */
  apiserverEndpoint?: { host: string; port: number };
  /** where the tenant's DNS server reads its Services (the local provisioner's read-only DNS view), when not the apiserver */
  dnsApiEndpoint?: { host: string; port: number };
  /** the pods section of the tenant's effective TenantPolicy; absent, the pods plugin's built-in defaults */
  pods?: PodsPolicyView;
  /** the runtimeClasses section of the tenant's effective TenantPolicy; absent, the runtimeclasses plugin's defaults */
  runtimeClasses?: RuntimeClassesPolicyView;
  /** the nodes section of the tenant's effective TenantPolicy (which super nodes it sees); absent, withPods */
  nodes?: NodesPolicyView;
  /** the label and annotation allow-lists of copies to the super; a list left out takes the SDK's default */
  copiedMetadata?: CopiedMetadataView;
  /** the network section of the tenant's effective TenantPolicy; absent, the built-in defaults */
  network?: NetworkPolicyView;
  /** the services, ingresses and endpoints sections of the tenant's effective TenantPolicy; absent, built-in defaults */
  services?: ServicesPolicyView;
  ingresses?: IngressesPolicyView;
  endpoints?: EndpointsPolicyView;
  /** the quota section of the tenant's effective TenantPolicy; absent (static tenants), no quota objects or caps */
  quota?: QuotaPolicyView;
  /** superCluster is the VirtualCluster's spec.superCluster: the namespace scheduler places it only there */
  superCluster?: string;
  /** how fast the syncer creates the tenant's super Pods (its TenantPolicy's pods.createRate); absent, the syncer's */
  podCreateRate?: CreateRate;
  /** how fast the syncer writes the tenant's objects into the super cluster (its TenantPolicy's quota.byteRate); absent, the syncer's */
  byteRate?: ByteRate;
}

/**
 * TenantSettings are the per-tenant choices a VirtualCluster's spec, a static manager-configuration entry and a
 * vn-agent tenant entry share; every one left out takes its value from TENANT_DEFAULTS.
 */
export interface TenantSettings {
  weight?: number;
  clusterDomain?: string;
  podSecurityLevel?: PodSecurityLevel;
  opaqueMetaPrefixes?: readonly string[];
  transparentMetaPrefixes?: readonly string[];
  plugins?: { enable?: string[]; disable?: string[] };
  pluginConfig?: Record<string, unknown>;
  pods?: PodsPolicyView;
  runtimeClasses?: RuntimeClassesPolicyView;
  nodes?: NodesPolicyView;
  copiedMetadata?: CopiedMetadataView;
  network?: NetworkPolicyView;
  services?: ServicesPolicyView;
  ingresses?: IngressesPolicyView;
  endpoints?: EndpointsPolicyView;
  quota?: QuotaPolicyView;
  superCluster?: string;
  podCreateRate?: CreateRate;
  byteRate?: ByteRate;
}

/** TenantSource is everything tenantFrom builds a Tenant from. */
export interface TenantSource {
  vcNamespace: string;
  vcName: string;
  vcUid: string;
  /** the cluster key; default rootNamespace(vcNamespace, vcName, vcUid) */
  key?: string;
  /** a VirtualCluster's spec, a static tenant entry, or the few settings the vn-agent knows */
  settings?: TenantSettings;
  kubeconfig?: string;
  apiserverEndpoint?: { host: string; port: number };
  dnsApiEndpoint?: { host: string; port: number };
}

/**
 * tenantFrom builds a Tenant, the one place where a tenant's settings meet their defaults: the VirtualCluster
 * controller builds Running tenants with it, the manager its static tenants, the vn-agent the tenants of its
 * directory, and tests their fixtures.
 */
export function tenantFrom(s: TenantSource): Tenant {
  const o = s.settings ?? {};
  const t: Tenant = {
    key: s.key ?? rootNamespace(s.vcNamespace, s.vcName, s.vcUid),
    vcName: s.vcName,
    vcNamespace: s.vcNamespace,
    vcUid: s.vcUid,
    kubeconfig: s.kubeconfig ?? '',
    weight: o.weight ?? TENANT_DEFAULTS.weight,
    clusterDomain: o.clusterDomain ?? TENANT_DEFAULTS.clusterDomain,
    podSecurityLevel: o.podSecurityLevel ?? TENANT_DEFAULTS.podSecurityLevel,
    opaqueMetaPrefixes: [...(o.opaqueMetaPrefixes ?? [])],
    transparentMetaPrefixes: [...(o.transparentMetaPrefixes ?? [])],
  };
  if (o.plugins) t.plugins = o.plugins;
  if (o.pluginConfig) t.pluginConfig = o.pluginConfig;
  if (s.apiserverEndpoint) t.apiserverEndpoint = s.apiserverEndpoint;
  if (s.dnsApiEndpoint) t.dnsApiEndpoint = s.dnsApiEndpoint;
  if (o.pods) t.pods = o.pods;
  if (o.runtimeClasses) t.runtimeClasses = o.runtimeClasses;
  if (o.nodes) t.nodes = o.nodes;
  if (o.copiedMetadata) t.copiedMetadata = o.copiedMetadata;
  if (o.network) t.network = o.network;
  if (o.services) t.services = o.services;
  if (o.ingresses) t.ingresses = o.ingresses;
  if (o.endpoints) t.endpoints = o.endpoints;
  if (o.quota) t.quota = o.quota;
  if (o.superCluster) t.superCluster = o.superCluster;
  if (o.podCreateRate) t.podCreateRate = { perSecond: o.podCreateRate.perSecond, burst: o.podCreateRate.burst };
  if (o.byteRate) t.byteRate = { perSecond: o.byteRate.perSecond, burst: o.byteRate.burst };
  return t;
}

/**
 * tenantView is what plugins see of a tenant: identity and settings, copied field by field so that the kubeconfig
 * (a credential) and the queue weight never reach a plugin. The view is frozen.
 */
export function tenantView(t: Tenant): TenantView {
  const v: TenantView = {
    key: t.key,
    vcName: t.vcName,
    vcNamespace: t.vcNamespace,
    vcUid: t.vcUid,
    clusterDomain: t.clusterDomain,
    podSecurityLevel: t.podSecurityLevel,
    ...(t.opaqueMetaPrefixes && { opaqueMetaPrefixes: t.opaqueMetaPrefixes }),
    ...(t.transparentMetaPrefixes && { transparentMetaPrefixes: t.transparentMetaPrefixes }),
    ...(t.plugins && { plugins: t.plugins }),
    ...(t.pluginConfig && { pluginConfig: t.pluginConfig }),
    ...(t.apiserverEndpoint && { apiserverEndpoint: t.apiserverEndpoint }),
    ...(t.dnsApiEndpoint && { dnsApiEndpoint: t.dnsApiEndpoint }),
    ...(t.pods && { pods: t.pods }),
    ...(t.runtimeClasses && { runtimeClasses: t.runtimeClasses }),
    ...(t.nodes && { nodes: t.nodes }),
    ...(t.copiedMetadata && { copiedMetadata: t.copiedMetadata }),
    ...(t.network && { network: t.network }),
    ...(t.services && { services: t.services }),
    ...(t.ingresses && { ingresses: t.ingresses }),
    ...(t.endpoints && { endpoints: t.endpoints }),
    ...(t.quota && { quota: t.quota }),
  };
  return Object.freeze(v);
}

/** TenantEvent is a change in the set of tenants a registry reports. */
export type TenantEvent = { type: 'upsert'; tenant: Tenant } | { type: 'remove'; key: string };

/**
 * TenantRegistry tells the syncer which tenants exist. subscribe replays the current tenants as upserts, then
 * reports changes; it returns an unsubscribe function.
 */
export interface TenantRegistry {
  subscribe(fn: (e: TenantEvent) => void): () => void;
}

/**
 * MutableTenantRegistry is the tenant set that its owners change while it runs: the manager seeds it with the
 * configuration's static tenants and the VirtualCluster controller upserts a tenant when its control plane serves
 * and removes it when it stops. Every subscriber sees each change.
 */
export class MutableTenantRegistry implements TenantRegistry {
  private readonly tenants = new Map<string, Tenant>();
  private readonly subs = new Set<(e: TenantEvent) => void>();

  constructor(tenants: Tenant[] = []) {
    for (const t of tenants) this.tenants.set(t.key, t);
  }

  subscribe(fn: (e: TenantEvent) => void): () => void {
    this.subs.add(fn);
    for (const t of this.tenants.values()) notify(fn, { type: 'upsert', tenant: t });
    return () => this.subs.delete(fn);
  }

  /** list returns the tenants now in the set. */
  list(): Tenant[] {
    return [...this.tenants.values()];
  }

  /** upsert adds or changes a tenant. */
  upsert(t: Tenant): void {
    this.tenants.set(t.key, t);
    for (const s of this.subs) notify(s, { type: 'upsert', tenant: t });
  }

  /** remove removes a tenant. */
  remove(key: string): void {
    this.tenants.delete(key);
    for (const s of this.subs) notify(s, { type: 'remove', key });
  }
}

/** notify calls one subscriber; one that throws is logged, and the other subscribers and the caller go on. */
function notify(fn: (e: TenantEvent) => void, e: TenantEvent): void {
  try {
    fn(e);
  } catch (err) {
    registryLog.error({ tenant: e.type === 'upsert' ? e.tenant.key : e.key, op: e.type, err }, 'subscriber threw');
  }
}
