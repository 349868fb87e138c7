/**
 * The naming and ownership rules plugins share with the core: how a tenant's names map to super names (the
 * 63-character rule, super namespaces, tenant-unique names of cluster-scoped objects, vNode names), and the ownership
 * annotations and labels the core writes on every super object it creates, with provenanceOf to read them back.
 */

import { createHash } from 'node:crypto';
import type { Naming } from './contract.ts';
import type { KubeObject } from './kube.ts';
import { PREFIX, PUBLIC_LABEL } from './meta.ts';

/**
 * ANN names the annotations the core writes on super objects: the ownership annotations (which tenant object a super
 * object was made from) and the Service cluster IPs the services plugin shows on each side.
 */
export const ANN = {
  /** the tenant's cluster key (its root namespace) */
  cluster: `${PREFIX}/cluster`,
  /** namespace of the tenant object */
  namespace: `${PREFIX}/namespace`,
  /** name of the tenant object */
  name: `${PREFIX}/name`,
  /** uid of the tenant object: every write and delete checks it */
  uid: `${PREFIX}/uid`,
  /** on a root namespace and every super object: the VirtualCluster it belongs to */
  vcName: `${PREFIX}/vcname`,
  vcNamespace: `${PREFIX}/vcnamespace`,
  vcUid: `${PREFIX}/vcuid`,
  /** the cluster IP the tenant's own apiserver gave a Service, kept on the super Service */
  tenantClusterIP: `${PREFIX}/clusterIP`,
  /** the super's cluster IP, shown to the tenant on its Service */
  superClusterIP: `transparency.${PREFIX}/clusterIP`,
} as const;

/**
 * superClusterIPOn is the annotation that shows a tenant Service the cluster IP of its copy on super cluster
 * `superCluster`, written instead of ANN.superClusterIP when several super clusters serve the tenant (each has its own
 * copy and its own IP, and one annotation written by each would flip between them). A super cluster name is a DNS
 * label; with more than 53 characters the key would not be a valid annotation, and none is written.
 */
export function superClusterIPOn(superCluster: string): string | undefined {
  return superCluster.length <= 53 ? `${ANN.superClusterIP}.${superCluster}` : undefined;
}

/**
 * readyEndpointsOn is the annotation that shows a tenant Service the ready addresses of its copy on super cluster
 * `superCluster` (what that super cluster's EndpointSlices for the copy list as ready, comma-separated, sorted, at most
 * MAX_RECORDED_ENDPOINTS; empty when none is ready). The syncer of that super cluster writes it when several super
 * clusters serve the tenant; the tenant DNS view of a super cluster whose own copy has none reads those of the super
 * clusters its Pods reach. Like superClusterIPOn, no key for a name over 53 characters.
 */
export function readyEndpointsOn(superCluster: string): string | undefined {
  return superCluster.length <= 53 ? `transparency.${PREFIX}/endpoints.${superCluster}` : undefined;
}

/** MAX_RECORDED_ENDPOINTS bounds the addresses readyEndpointsOn records (the smallest, as strings, are kept). */
export const MAX_RECORDED_ENDPOINTS = 64;

/** LABEL names the labels the core writes on super objects, and the one a super-cluster admin sets. */
export const LABEL = {
  /** MANAGER on every object the syncer writes */
  managedBy: `${PREFIX}/managed-by`,
  /** the tenant's cluster key, on every super object of the tenant */
  cluster: `${PREFIX}/cluster`,
  /** set by a super-cluster admin on objects (StorageClass, PriorityClass, CRD) tenants may see */
  public: PUBLIC_LABEL,
} as const;

/** MANAGER is the syncer's identity: its server-side apply field manager and the managed-by value of what it writes. */
export const MANAGER = 'vc-syncer';

/** Provenance is what a super object records about the tenant object it came from. */
export interface Provenance {
  cluster: string;
  namespace: string;
  name: string;
  uid: string;
}

/**
 * provenanceOf reads the ownership annotations of a super object, or null when the syncer did not write it (it lacks
 * the managed-by label or the cluster annotation). A plugin checks it before it trusts a super object as a tenant's.
 */
export function provenanceOf(o: KubeObject | undefined): Provenance | null {
  const a = o?.metadata?.annotations;
  const l = o?.metadata?.labels;
  if (!a || l?.[LABEL.managedBy] !== MANAGER || !a[ANN.cluster]) return null;
  return {
    cluster: a[ANN.cluster]!,
    namespace: a[ANN.namespace] ?? '',
    name: a[ANN.name] ?? '',
    uid: a[ANN.uid] ?? '',
  };
}

/** MAX_NAME is the longest DNS-1123 label, which namespace names must be. */
export const MAX_NAME = 63;

/** HASH_LEN is how many hex characters of sha256 replace the cut part of a long name (64 bits). */
const HASH_LEN = 16;

const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** HASHED_TAIL matches the end of a name fitName cut and hashed. */
const HASHED_TAIL = new RegExp(`-[0-9a-f]{${HASH_LEN}}$`);

/** looksHashed reports a name ending in `-<16 hex>`: the shape of every name fitName cut. */
const looksHashed = (name: string): boolean => HASHED_TAIL.test(name);

/**
 * fitName returns name unchanged when it has at most 63 characters and does not end in `-<16 hex>`; otherwise its
 * first 46 characters (without trailing dashes or dots, so a cut DNS subdomain stays one), a dash and 16 hex
 * characters of the sha256 of the whole name. It is one-to-one up to a 64-bit hash collision: names it keeps are
 * distinct because they are kept as they are; names it cuts are distinct because their hashes are; and a kept name
 * never equals a cut one, because every cut name ends in `-<16 hex>` and a name of that shape is always cut and hashed
 * itself, never kept.
 */
export function fitName(name: string): string {
  if (name.length <= MAX_NAME && !looksHashed(name)) return name;
  const keep = MAX_NAME - HASH_LEN - 1;
  return `${name.slice(0, keep).replace(/[-.]+$/, '')}-${sha256hex(name).slice(0, HASH_LEN)}`;
}

/**
 * vNodeName is the tenant's name for the super node `node` of super cluster `superCluster`: the node's own name when
 * one super cluster serves the tenant (`superCluster` undefined: the naming of a single super cluster, unchanged), else
 * `<superCluster>.<node>`, so nodes of the same name on two super clusters are two vNodes. Super cluster names are DNS
 * labels (no dot), so the first dot splits the two back (superNodeName).
 */
export function vNodeName(node: string, superCluster?: string): string {
  return superCluster === undefined ? node : `${superCluster}.${node}`;
}

/**
 * superNodeName is the super node behind a vNode of super cluster `superCluster` (see vNodeName), or undefined when
 * the vNode's name is not one of that super cluster's.
 */
export function superNodeName(vNode: string, superCluster?: string): string | undefined {
  if (superCluster === undefined) return vNode;
  const prefix = `${superCluster}.`;
  return vNode.startsWith(prefix) && vNode.length > prefix.length ? vNode.slice(prefix.length) : undefined;
}

/**
 * superNamespace maps a tenant namespace to its super namespace: `<root>-<ns>`, fitted to 63 by fitName. The mapping
 * (tenant, namespace) -> super namespace is one-to-one up to a 64-bit hash collision. Two different tenants: their
 * roots differ in the 16 hex characters at the fixed position 3..18 (see the core's rootNamespace), which `-<ns>`
 * never moves and fitName never cuts (it keeps the first 46 characters), so the super names differ too whether cut or
 * not. One tenant, two namespaces: `<root>-<ns>` differ after the same root, and fitName is one-to-one. A super
 * namespace is never a root either: roots have at most 40 characters, `<root>-<ns>` is longer than its own root, and
 * another tenant's names differ in the hash.
 */
export function superNamespace(root: string, tenantNamespace: string): string {
  return fitName(`${root}-${tenantNamespace}`);
}

/**
 * superClusterName maps the name of a cluster-scoped tenant object whose super copy is the tenant's own (a tenant
 * RuntimeClass) to its super name: `<root>-<name>`, fitted to 63 by fitName. It is one-to-one for the same reasons as
 * superNamespace: two tenants' names differ in the root's hash, which fitName never cuts, and one tenant's names
 * differ after the same root. No tenant can choose a name that lands on another tenant's, and platform objects
 * named without a root prefix are never reached either.
 */
export function superClusterName(root: string, tenantName: string): string {
  return fitName(`${root}-${tenantName}`);
}

/**
 * NamespaceOwnerLookup reads the provenance of a super namespace (from a cache of super namespaces); undefined means
 * the namespace is not known to it.
 */
export type NamespaceOwnerLookup = (superNamespace: string) => Provenance | null | undefined;

/**
 * tenantNaming is the one Naming of a tenant, used by the syncer, the vn-agent and plugin tests alike.
 * superNamespace is fitName arithmetic. tenantNamespace asks `lookup` first: a super namespace it knows maps back
 * through its ownership annotations (the only way a cut and hashed name maps back), and is this tenant's only if
 * they say so. A namespace the lookup does not know (or no lookup, as in the vn-agent) maps back by arithmetic,
 * except a 63-character name ending in a hash, which cannot be told apart from a cut one and maps to undefined.
 */
export function tenantNaming(tenantKey: string, lookup?: NamespaceOwnerLookup): Naming {
  const prefix = `${tenantKey}-`;
  return {
    superNamespace: (ns) => superNamespace(tenantKey, ns),
    tenantNamespace: (sns) => {
      const known = lookup?.(sns);
      if (known !== undefined) return known?.cluster === tenantKey ? known.name : undefined;
      if (!sns.startsWith(prefix) || looksHashed(sns)) return undefined;
      const ns = sns.slice(prefix.length);
      return ns && superNamespace(tenantKey, ns) === sns ? ns : undefined;
    },
  };
}

/** namespaceOwnerIn builds a NamespaceOwnerLookup over a function that reads a super namespace from a cache. */
export function namespaceOwnerIn(getNamespace: (name: string) => KubeObject | undefined): NamespaceOwnerLookup {
  return (sns) => {
    const ns = getNamespace(sns);
    return ns ? provenanceOf(ns) : undefined;
  };
}

/**
 * superViewServer is the server URL of the DNS view (core/provisioners/dnsview.ts) of one super cluster: the view's
 * URL with the path prefix `/super/<name>`, under which it shows each Service with that super cluster's copy's IP.
 */
export function superViewServer(server: string, superCluster: string): string {
  return `${server.replace(/\/+$/, '')}/super/${superCluster}`;
}
