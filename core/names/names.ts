import { createHash } from 'node:crypto';
import type { KubeObject, ObjectMeta } from '../kube/client.ts';

/**
 * This module owns tenant-to-super names and provenance: the root namespace of a tenant, the super namespace of
 * each tenant namespace, the 63-character rule, the ownership annotations every super object carries, the reserved
 * metadata prefixes, every other `tenancy.x-k8s.io/*` label, annotation and finalizer the core and GitOps write, and
 * the identity (field manager, managed-by value, event source) of each writer. Nothing else in the core builds these
 * strings; a plugin derives its own keys from PREFIX.
 */

import type { Naming } from '../../plugins/sdk/src/contract.ts';
import { PREFIX, PUBLIC_LABEL, stripDown } from '../../plugins/sdk/src/meta.ts';

/** PREFIX, stripDown and pickUp are the reserved-metadata rules; the plugin SDK defines them for plugins too. */
export { PREFIX, pickUp, stripDown } from '../../plugins/sdk/src/meta.ts';

/** ANN names the ownership annotations written on every super object. */
export const ANN = {
  /** the tenant's cluster key (its root namespace) */
  cluster: `${PREFIX}/cluster`,
  /** namespace of the tenant object */
  namespace: `${PREFIX}/namespace`,
  /** name of the tenant object */
  name: `${PREFIX}/name`,
  /** uid of the tenant object: every write and delete checks it */
  uid: `${PREFIX}/uid`,
  /** on a root namespace: the VirtualCluster it belongs to */
  vcName: `${PREFIX}/vcname`,
  vcNamespace: `${PREFIX}/vcnamespace`,
  vcUid: `${PREFIX}/vcuid`,
  /** the cluster IP the tenant's own apiserver gave a Service, kept on the super Service */
  tenantClusterIP: `${PREFIX}/clusterIP`,
  /** the super's cluster IP, shown to the tenant on its Service */
  superClusterIP: `transparency.${PREFIX}/clusterIP`,
  /** on a service-account token Secret the syncer writes: when its token expires */
  tokenExpires: `${PREFIX}/token-expires`,
  /** on a service-account token Secret the syncer writes: when the syncer means to mint its tokens again */
  tokenRefresh: `${PREFIX}/token-refresh`,
  /** on the native provisioner's PKI Secret: a hash of the options the PKI was generated with */
  pkiOptionsHash: `${PREFIX}/pki-options-hash`,
  /** on a native control-plane pod template: a hash of the certificates and flags its Pods run with */
  configHash: `${PREFIX}/config-hash`,
  /** on the native kubelet-client Secret: the SHA-256 fingerprint of its certificate */
  kubeletClientFingerprint: `${PREFIX}/fingerprint-sha256`,
  /** on a GitSource: the one revision allowed to delete beyond its safety limits */
  confirmDeletion: `${PREFIX}/confirm-deletion`,
  /** on a GitSource: the one revision allowed although it does not descend from the last applied one */
  allowRevision: `${PREFIX}/allow-revision`,
  /** on a super ResourceQuota or LimitRange the syncer keeps: a hash of the spec it last applied */
  specHash: `${PREFIX}/spec-hash`,
} as const;

/** LABEL names the labels written on every super object. */
export const LABEL = {
  managedBy: `${PREFIX}/managed-by`,
  cluster: `${PREFIX}/cluster`,
  /** set by a super-cluster admin on objects (StorageClass, PriorityClass, CRD) tenants may see */
  public: PUBLIC_LABEL,
  /** tells the etcd, apiserver and controller-manager Pods of a native tenant control plane apart */
  component: `${PREFIX}/component`,
  /** on every object a GitSource applied: that GitSource */
  gitSource: `${PREFIX}/gitsource`,
} as const;

/** VC_FINALIZER guards a VirtualCluster until its control plane and super namespaces are gone. */
export const VC_FINALIZER = `${PREFIX}/virtualcluster`;

/**
 * IDENTITY names each writer of the project. The value is its server-side apply field manager, the managed-by
 * label it puts on what it creates, and the source of its events.
 */
export const IDENTITY = {
  /** the syncer: super objects it copies from tenants */
  syncer: 'vc-syncer',
  /** the syncer's service-account token Secrets */
  syncerToken: 'vc-syncer-token',
  /** the VirtualCluster controller and the provisioners: root namespaces, control planes, kubeconfig Secrets */
  manager: 'vc-manager',
  /** the manager applying the GitSources its configuration declares */
  managerConfig: 'vc-manager-config',
  /** the GitSource controller and its applier */
  gitops: 'vc-gitops',
} as const;

/** MANAGER is IDENTITY.syncer: the managed-by value and field manager of every write the syncer makes. */
export const MANAGER = IDENTITY.syncer;

/** MAX_NAME is the longest DNS-1123 label, which namespace names must be. */
export const MAX_NAME = 63;

/** HASH_LEN is how many hex characters of sha256 identify a tenant or replace the cut part of a long name (64 bits). */
const HASH_LEN = 16;

/** ROOT_PREFIX starts every root namespace, so that the tenant's hash sits at a fixed position. */
const ROOT_PREFIX = 'vc-';

/**
 * ROOT_MAX is the longest root namespace: it leaves 22 characters for `-<tenant namespace>` before a super namespace
 * name has to be cut.
 */
export const ROOT_MAX = 40;

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
 * rootNamespace is a tenant's cluster key: `vc-<16 hex of sha256(vc uid)>-<vc-namespace>-<vc-name>`, cut to ROOT_MAX
 * characters (no trailing dash). The hash sits at a fixed position (characters 3 to 18), so the first 19 characters
 * of a root name the VirtualCluster's uid, to 64 bits, whatever its namespace and name are: two VirtualClusters get
 * two different roots, and no root is built from characters another tenant chose.
 */
export function rootNamespace(vcNamespace: string, vcName: string, vcUid: string): string {
  return `${ROOT_PREFIX}${sha256hex(vcUid).slice(0, HASH_LEN)}-${vcNamespace}-${vcName}`
    .slice(0, ROOT_MAX)
    .replace(/-+$/, '');
}

/**
 * superNamespace maps a tenant namespace to its super namespace: `<root>-<ns>`, fitted to 63 by fitName. The mapping
 * (tenant, namespace) -> super namespace is one-to-one up to a 64-bit hash collision. Two different tenants: their
 * roots differ in the 16 hex characters at the fixed position 3..18 (see rootNamespace), which `-<ns>` never moves
 * and fitName never cuts (it keeps the first 46 characters), so the super names differ too whether cut or not. One
 * tenant, two namespaces: `<root>-<ns>` differ after the same root, and fitName is one-to-one. A super namespace is
 * never a root either: roots have at most ROOT_MAX (40) characters, `<root>-<ns>` is longer than its own root, and
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

/** Provenance is what a super object records about the tenant object it came from. */
export interface Provenance {
  cluster: string;
  namespace: string;
  name: string;
  uid: string;
}

/** provenanceOf reads the ownership annotations of a super object, or null when the syncer did not write it. */
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

/** TenantIdentity is what the naming rules need to know about one tenant. */
export interface TenantIdentity {
  /** cluster key = root namespace */
  key: string;
  vcName: string;
  vcNamespace: string;
  /** uid of the VirtualCluster, stamped on every super object next to the key */
  vcUid?: string;
  /** prefixes of tenant labels/annotations that must not reach the super cluster */
  opaqueMetaPrefixes?: readonly string[];
  /** prefixes of super labels/annotations that are copied up to the tenant */
  transparentMetaPrefixes?: readonly string[];
}

/** stampOwnership writes the ownership annotations and labels of a tenant object onto its super counterpart. */
export function stampOwnership(superObj: KubeObject, tenant: TenantIdentity, tenantObj: KubeObject): void {
  const m = (superObj.metadata ??= {});
  const tm = tenantObj.metadata ?? {};
  m.annotations = {
    ...m.annotations,
    [ANN.cluster]: tenant.key,
    [ANN.namespace]: tm.namespace ?? '',
    [ANN.name]: tm.name ?? '',
    [ANN.uid]: tm.uid ?? '',
    [ANN.vcName]: tenant.vcName,
    [ANN.vcNamespace]: tenant.vcNamespace,
    ...(tenant.vcUid !== undefined && { [ANN.vcUid]: tenant.vcUid }),
  };
  m.labels = { ...m.labels, [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key };
}

/** ownedBy reports whether superObj was written for exactly this tenant object (cluster and uid both match). */
export function ownedBy(superObj: KubeObject | undefined, tenant: TenantIdentity, tenantObj: KubeObject): boolean {
  const p = provenanceOf(superObj);
  return !!p && p.cluster === tenant.key && p.uid === (tenantObj.metadata?.uid ?? '');
}

/** cleanMeta returns the metadata fields of a tenant object that may be copied to a new super object. */
export function cleanMeta(
  tm: ObjectMeta,
  tenant: TenantIdentity,
  superNs: string | undefined,
  name = tm.name,
): ObjectMeta {
  const out: ObjectMeta = { name };
  if (superNs !== undefined) out.namespace = superNs;
  const labels = stripDown(tm.labels, tenant.opaqueMetaPrefixes);
  const annotations = stripDown(tm.annotations, tenant.opaqueMetaPrefixes);
  if (labels) out.labels = labels;
  if (annotations) out.annotations = annotations;
  return out;
}

/**
 * namespaceOwnedBy reports whether a super namespace was written by the syncer for exactly this tenant's namespace
 * `tenantNamespace`: its provenance names the tenant's key and the tenant namespace, and its VirtualCluster uid
 * annotation is the tenant's. Only then may the syncer create objects in it.
 */
export function namespaceOwnedBy(
  superNs: KubeObject | undefined,
  tenant: TenantIdentity,
  tenantNamespace: string,
): boolean {
  const p = provenanceOf(superNs);
  return (
    !!p &&
    p.cluster === tenant.key &&
    p.namespace === '' &&
    p.name === tenantNamespace &&
    superNs?.metadata?.annotations?.[ANN.vcUid] === (tenant.vcUid ?? '')
  );
}

/** Naming is the tenant-bound view of these rules that plugins receive (defined by the plugin contract). */
export type { Naming } from '../../plugins/sdk/src/contract.ts';

/**
 * NamespaceOwnerLookup reads the provenance of a super namespace (from a cache of super namespaces); undefined means
 * the namespace is not known to it.
 */
export type NamespaceOwnerLookup = (superNamespace: string) => Provenance | null | undefined;

/**
 * tenantNaming is the one Naming of a tenant, used by the syncer, the vn-agent and the plugin test kit alike.
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
