import { createHash } from 'node:crypto';
import {
  ANN as OWNERSHIP_ANN,
  LABEL as OWNERSHIP_LABEL,
  MANAGER,
  PREFIX,
  provenanceOf,
} from '@virtualcluster-ts/plugin-sdk';
import type { KubeObject } from '../kube/client.ts';

/**
 * This module owns tenant-to-super names and provenance: the root namespace of a tenant, the ownership annotations
 * every super object carries, every other `tenancy.x-k8s.io/*` label, annotation and finalizer the core and GitOps
 * write, and the identity (field manager, managed-by value, event source) of each writer. The rules plugins need too
 * (the 63-character rule, super namespace and cluster-scoped names, vNode names, the ownership keys and provenanceOf,
 * the tenant's Naming) are the plugin SDK's and re-exported here, one copy for both; nothing else in the core builds
 * these strings, and a plugin derives its own keys from PREFIX.
 */

/** PREFIX, stripDown and pickUp are the reserved-metadata rules; the plugin SDK defines them for plugins too. */
export { PREFIX, pickUp, stripDown } from '@virtualcluster-ts/plugin-sdk';

/** The naming rules and ownership reader the plugin SDK defines for plugins and the core alike. */
export {
  fitName,
  MAX_NAME,
  MANAGER,
  namespaceOwnerIn,
  type NamespaceOwnerLookup,
  type Naming,
  type Provenance,
  provenanceOf,
  superClusterName,
  superNamespace,
  superNodeName,
  tenantNaming,
  vNodeName,
} from '@virtualcluster-ts/plugin-sdk';

/** ANN names the annotations the project writes: the SDK's ownership annotations and those only the core writes. */
export const ANN = {
  ...OWNERSHIP_ANN,
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
  /**
   * on an object in a GitSource's repository: its apply wave, an integer (default 0). Waves are applied in ascending
   * order, each only once everything of the waves before it is healthy
   */
  applyWave: `${PREFIX}/apply-wave`,
  /** on a GitSource: the one revision allowed although it does not descend from the last applied one */
  allowRevision: `${PREFIX}/allow-revision`,
  /** on a super ResourceQuota or LimitRange the syncer keeps: a hash of the spec it last applied */
  specHash: `${PREFIX}/spec-hash`,
  /** on a git credentials Secret: the comma-separated git hosts (host or host:port) its credentials are sent to */
  gitHosts: `${PREFIX}/git-hosts`,
  /**
   * on a VirtualCluster: when (RFC 3339) its sleep was asked for, by `vc sleep` or by the manager after spec.sleep's
   * idle time; the manager removes it when the tenant wakes
   */
  sleepRequested: `${PREFIX}/sleep-requested`,
  /**
   * on a VirtualCluster: the step of a rotation of its CA the manager is asked to do (add, reissue, drop), set by
   * `vc rotate-ca`; the CARotation condition says when it is done
   */
  caRotation: `${PREFIX}/ca-rotation`,
  /**
   * on a VirtualCluster: a renewal of its certificates asked for by hand, `[NAME[,NAME...]@]TIME` (set by `vc certs
   * renew`): those issued before TIME are renewed (core/pki/renewal.ts, parseRenewalRequest)
   */
  renewCertificates: `${PREFIX}/renew-certificates`,
} as const;

/** LABEL names the labels the project writes: the SDK's (managed-by, cluster, public) and those only the core writes. */
export const LABEL = {
  ...OWNERSHIP_LABEL,
  /** tells the etcd, apiserver and controller-manager Pods of a native tenant control plane apart */
  component: `${PREFIX}/component`,
  /** on every object a GitSource applied: that GitSource */
  gitSource: `${PREFIX}/gitsource`,
  /** on a Secret, "true": the platform allows it as a GitSource's credentials (spec.secretRef) */
  gitCredentials: `${PREFIX}/git-credentials`,
} as const;

/** VC_FINALIZER guards a VirtualCluster until its control plane and super namespaces are gone. */
export const VC_FINALIZER = `${PREFIX}/virtualcluster`;

/**
 * IDENTITY names each writer of the project. The value is its server-side apply field manager, the managed-by
 * label it puts on what it creates, and the source of its events.
 */
export const IDENTITY = {
  /** the syncer: super objects it copies from tenants */
  syncer: MANAGER,
  /** the syncer's service-account token Secrets */
  syncerToken: 'vc-syncer-token',
  /** the VirtualCluster controller and the provisioners: root namespaces, control planes, kubeconfig Secrets */
  manager: 'vc-manager',
  /** the manager applying the GitSources its configuration declares */
  managerConfig: 'vc-manager-config',
  /** the GitSource controller and its applier */
  gitops: 'vc-gitops',
} as const;

/**
 * ROOT_MAX is the longest root namespace: it leaves 22 characters for `-<tenant namespace>` before a super namespace
 * name has to be cut.
 */
export const ROOT_MAX = 40;

const sha256hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** HASH_LEN is how many hex characters of sha256 identify a tenant (64 bits). */
const HASH_LEN = 16;

/** ROOT_PREFIX starts every root namespace, so that the tenant's hash sits at a fixed position. */
const ROOT_PREFIX = 'vc-';

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

/**
 * sourceLabelValue is the value of SOURCE_LABEL for a GitSource: `<namespace>.<name>`, or, past the 63 characters a
 * label value may have, its first 54 characters, a dash and 8 hex characters of its sha256.
 */
export function sourceLabelValue(source: { namespace: string; name: string }): string {
  const full = `${source.namespace}.${source.name}`;
  if (full.length <= 63) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '')}-${hash}`;
}
