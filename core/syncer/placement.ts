import type { KubeObject } from '../kube/client.ts';
import {
  AnnotationError,
  parsePlacements,
  PLACEMENTS,
  parseSuperCluster,
  SUPER_CLUSTER,
} from '../scheduler/annotations.ts';
import { DNS_NAMESPACE } from '../scheduler/namespace.ts';
import { SIGNATURE, signedValue } from '../scheduler/signature.ts';
import {
  changedNamespaces,
  parseRecord,
  PLACEMENT_RECORD,
  RecordError,
  recordedValue,
  recordName,
  type RecordEntries,
} from '../scheduler/placementrecord.ts';
import type { SharedInformer } from '../kube/factory.ts';
import { childLogger } from '../log.ts';
import { PREFIX } from '../names/names.ts';

const log = childLogger({ component: 'placement' });

/**
 * The placement filter: with several super clusters, the syncer of super cluster X copies a tenant namespace and its
 * objects to X only when the scheduler placed the namespace there, and a tenant Pod only when the scheduler put the
 * Pod on X. Only signed values count (core/scheduler/signature.ts): a tenant can write the annotations itself, but
 * not their signatures.
 */

/**
 * SignedPlacements reads where the scheduler placed a tenant's namespace (from the platform's record, see
 * recordedPlacements) and a tenant Pod (its annotation, only when its signature verifies).
 */
export interface SignedPlacements {
  namespacePlacements(tenant: string, ns: KubeObject): string | undefined;
  podSuperCluster(tenant: string, pod: KubeObject): string | undefined;
  /** onChange, where given, reports the namespaces of a tenant whose recorded placements changed */
  onChange?(fn: (tenant: string, namespaces: string[]) => void): () => void;
}

/** signedPlacements reads signed placements with the scheduler's signing key. */
export function signedPlacements(key: Uint8Array): SignedPlacements {
  return {
    namespacePlacements: (tenant, ns) => signedValue(key, tenant, ns, PLACEMENTS, 'Namespace'),
    podSuperCluster: (tenant, pod) => signedValue(key, tenant, pod, SUPER_CLUSTER, 'Pod'),
  };
}

/**
 * recordedPlacements reads a namespace's placements from the scheduler's record of its tenant (a ConfigMap in
 * `namespace` of the meta cluster that tenants cannot reach, core/scheduler/placementrecord.ts) in the cache of
 * `records`, the shared informer of those ConfigMaps (RECORD_SELECTOR), whose handlers it adds: a
 * namespace whose entry is missing or names another uid is not placed, whatever its annotations say, so a signed
 * value the tenant kept from before a move counts for nothing. Only a tenant with no record at all (placed before
 * records, not yet counted by the scheduler) is read from its signed annotations. A Pod's super cluster is still its
 * signed annotation: the scheduler never changes it once written, so no earlier value of it exists to write back.
 */
export function recordedPlacements(
  key: Uint8Array,
  records: SharedInformer<KubeObject>,
  namespace: string,
): SignedPlacements {
  const signed = signedPlacements(key);
  const parsed = new Map<string, { rv: string; entries: RecordEntries }>();
  /** tenantOf is the tenant a record is of; undefined for any other ConfigMap the informer holds */
  const tenantOf = (cm: KubeObject | undefined): string | undefined => {
    const tenant = cm?.metadata?.labels?.[PLACEMENT_RECORD.label];
    return tenant && cm?.metadata?.namespace === namespace && cm.metadata.name === recordName(tenant)
      ? tenant
      : undefined;
  };
  const entriesOf = (cm: KubeObject | undefined): RecordEntries => {
    const tenant = tenantOf(cm);
    if (!cm || !tenant) return new Map();
    const rv = cm.metadata?.resourceVersion ?? '';
    const known = parsed.get(tenant);
    if (known?.rv === rv) return known.entries;
    let entries: RecordEntries = new Map();
    try {
      entries = parseRecord(cm);
    } catch (e) {
      if (!(e instanceof RecordError)) throw e;
      log.error({ tenant, err: e.message }, 'placement record unreadable: none of its namespaces is synced here');
    }
    parsed.set(tenant, { rv, entries });
    return entries;
  };
  const listeners = new Set<(tenant: string, namespaces: string[]) => void>();
  const changed = (a: KubeObject | undefined, b: KubeObject | undefined) => {
    const tenant = tenantOf(b ?? a);
    if (!tenant) return;
    const names = changedNamespaces(entriesOf(a), entriesOf(b));
    if (!b) parsed.delete(tenant);
    if (names.length) for (const fn of listeners) fn(tenant, names);
  };
  records.addHandler({
    onAdd: (obj) => changed(undefined, obj),
    onUpdate: (a, b) => changed(a, b),
    onDelete: (obj) => changed(obj, undefined),
  });
  return {
    namespacePlacements: (tenant, ns) => {
      const cm = records.get(`${namespace}/${recordName(tenant)}`);
      // No record yet: a tenant placed by a scheduler of an earlier version, until this one counts and records it (a
      // tenant the scheduler placed since has one, written before its first placement).
      if (!tenantOf(cm)) return signed.namespacePlacements(tenant, ns);
      return recordedValue(entriesOf(cm), ns);
    },
    podSuperCluster: signed.podSuperCluster,
    onChange: (fn) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
}

/** PLACEMENT_ANNOTATIONS are the annotations whose change on a tenant namespace may change where it is synced. */
export const PLACEMENT_ANNOTATIONS = [PLACEMENTS, SIGNATURE] as const;

/** PlacementKind is what a key is to the filter: a tenant namespace, a Pod, another namespaced object, or neither. */
export type PlacementKind = 'namespace' | 'pod' | 'namespaced' | 'cluster';

/** PLACEMENT_REASONS are why an object is not synced to this super cluster. */
export const PLACEMENT_REASONS = [
  'NamespaceNotPlaced',
  'NotPlacedHere',
  'PodNotScheduled',
  'PodOnOtherCluster',
  'MalformedPlacement',
] as const;
/** PlacementReason is one of PLACEMENT_REASONS. */
export type PlacementReason = (typeof PLACEMENT_REASONS)[number];

/**
 * PlacementVerdict says whether the syncer of one super cluster syncs an object, and why not. `follow` marks a copy of
 * the tenant's DNS on a super cluster other than its home (dnsFollows): synced down only, nothing of it flows up.
 * `remove` marks an object of the tenant's DNS namespace on a super cluster the tenant has left (placementVerdict): its copy
 * there, if any, is deleted.
 */
export type PlacementVerdict =
  { sync: true; follow?: true } | { sync: false; reason: PlacementReason; message: string; remove?: true };

/** DNS_POD_LABEL is the label (and value) of the tenant's DNS Pods, as kubeadm and core/lifecycle/tenantdns.ts set it. */
export const DNS_POD_LABEL = { key: 'k8s-app', value: 'kube-dns' } as const;

/** PlacementInput is what the filter reads: the super cluster, the tenant, the key's kind and the tenant objects. */
export interface PlacementInput {
  /** the super cluster this syncer serves */
  cluster: string;
  /** the tenant's cluster key */
  tenant: string;
  kind: PlacementKind;
  /** the tenant namespace the object is in (or is), from the tenant cache; undefined when it is not there */
  namespace?: KubeObject;
  /** the tenant Pod, for kind 'pod' */
  pod?: KubeObject;
  signed: SignedPlacements;
  /**
   * whether the tenant is on `cluster` (tenantOnCluster): asked only for an object of the tenant's DNS namespace that
   * is not placed here (dnsFollows, and its removal where the tenant has left)
   */
  tenantOn?: (cluster: string) => boolean;
}

const SYNC: PlacementVerdict = { sync: true };

/**
 * placementVerdict decides whether the syncer of `cluster` syncs an object that exists in the tenant:
 * - cluster-scoped objects other than namespaces: yes (each syncer serves what its tenants need cluster-wide);
 * - a Pod whose signed SUPER_CLUSTER is this cluster: yes, whatever the namespace's placements say now (a Pod is never
 *   moved, and one left on a cluster its namespace no longer spans keeps being served until it ends); signed for
 *   another cluster: no;
 * - otherwise the namespace's signed PLACEMENTS decide: no placements (or an unsigned or malformed one) means nothing
 *   is synced; a namespace and its other objects go wherever it is placed; a Pod without a super cluster only where
 *   the namespace is placed whole, on this cluster alone.
 * An annotation whose signature does not verify is read as absent.
 * The tenant's DNS namespace (kube-system) is the exception both ways: on a super cluster that is not its home it
 * follows the tenant there (dnsFollows), and where the tenant no longer is (its last namespace placed there moved or
 * went, and no Pod of it is left there: tenantOnCluster) its objects are marked `remove`, so that copy is deleted
 * whole. Only that tenant's copy: the super objects are found by the tenant's own names and deleted only when their
 * provenance names the tenant.
 */
export function placementVerdict(i: PlacementInput): PlacementVerdict {
  const v = namespaceVerdict(i);
  if (v.sync || v.reason !== 'NotPlacedHere' || !isDnsNamespace(i)) return v;
  if (i.tenantOn?.(i.cluster) ?? false) return followsHere(i) ? FOLLOW : v;
  return { ...v, message: `${v.message}; the tenant has left super cluster ${i.cluster}`, remove: true };
}

const FOLLOW: PlacementVerdict = { sync: true, follow: true };

/**
 * dnsFollows is the one exception to placements: the tenant's DNS namespace (kube-system) is placed whole on the
 * tenant's home, but a Pod on any other super cluster the tenant is on needs a tenant DNS server there too. So the
 * syncer of a super cluster where another namespace of the tenant is placed also copies kube-system there: the
 * namespace, its objects other than Pods (the kube-dns Service, the Corefile ConfigMap, the ServiceAccounts), and
 * of its Pods those of the tenant's DNS (label k8s-app=kube-dns). Such a copy flows down only (the home's copy writes
 * the Pod's status and binding). A tenant gains no super cluster by it, and a Pod it labels so runs only where the
 * tenant already is.
 */
export function dnsFollows(i: PlacementInput): boolean {
  return isDnsNamespace(i) && followsHere(i) && (i.tenantOn?.(i.cluster) ?? false);
}

function isDnsNamespace(i: PlacementInput): boolean {
  return i.kind !== 'cluster' && i.namespace?.metadata?.name === DNS_NAMESPACE;
}

// Of kube-system's Pods only the tenant's DNS servers follow; its other objects all do.
function followsHere(i: PlacementInput): boolean {
  return i.kind !== 'pod' || i.pod?.metadata?.labels?.[DNS_POD_LABEL.key] === DNS_POD_LABEL.value;
}

/** TERMINAL_PHASES are the phases of a Pod that has ended: it no longer keeps its tenant on its super cluster. */
const TERMINAL_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed']);

/** TenantObjects lists a tenant's namespaces and Pods from its cache (the Pods only when the namespaces do not tell). */
export interface TenantObjects {
  namespaces(): readonly KubeObject[];
  pods(): readonly KubeObject[];
}

/**
 * podEndsPresence reports whether a tenant Pod event may be the one that ends the tenant's presence on `cluster`
 * (tenantOnCluster), so the syncer checks whether its copy of the tenant's DNS is to go: a Pod signed onto `cluster`
 * (outside the DNS namespace) that is deleted (`after` undefined) or has just ended.
 */
export function podEndsPresence(
  tenant: string,
  cluster: string,
  signed: SignedPlacements,
  before: KubeObject,
  after: KubeObject | undefined,
): boolean {
  const pod = after ?? before;
  if (pod.metadata?.namespace === DNS_NAMESPACE || signed.podSuperCluster(tenant, pod) !== cluster) return false;
  return !after || (!ended(before) && ended(after));
}

const ended = (p: KubeObject) => TERMINAL_PHASES.has((p as { status?: { phase?: string } }).status?.phase ?? '');

/**
 * tenantOnCluster reports whether a tenant is on `cluster`, as placementVerdict reads it for kube-system: a namespace other
 * than its DNS namespace has a signed placement there, or a Pod of it that has not ended is signed onto it (a Pod is
 * never moved, so one left on a super cluster its namespace no longer spans keeps its DNS there until it ends).
 */
export function tenantOnCluster(
  tenant: string,
  cluster: string,
  signed: SignedPlacements,
  tenantObjects: TenantObjects,
): boolean {
  const placed = tenantObjects.namespaces().some((ns) => {
    if (ns.metadata?.name === DNS_NAMESPACE) return false;
    const raw = signed.namespacePlacements(tenant, ns);
    return raw !== undefined && placedOn(raw, cluster);
  });
  if (placed) return true;
  return tenantObjects
    .pods()
    .some((p) => p.metadata?.namespace !== DNS_NAMESPACE && !ended(p) && signed.podSuperCluster(tenant, p) === cluster);
}

function namespaceVerdict(i: PlacementInput): PlacementVerdict {
  if (i.kind === 'cluster') return SYNC;
  const nsName = i.namespace?.metadata?.name ?? '?';
  if (i.kind === 'pod' && i.pod) {
    const pinned = i.signed.podSuperCluster(i.tenant, i.pod);
    if (pinned !== undefined) {
      const where = `${i.pod.metadata?.namespace ?? '?'}/${i.pod.metadata?.name ?? '?'}`;
      try {
        parseSuperCluster(`Pod ${where}`, pinned);
      } catch (e) {
        return { sync: false, reason: 'MalformedPlacement', message: (e as Error).message };
      }
      return pinned === i.cluster
        ? SYNC
        : { sync: false, reason: 'PodOnOtherCluster', message: `Pod ${where} is placed on super cluster ${pinned}` };
    }
  }
  const raw = i.namespace && i.signed.namespacePlacements(i.tenant, i.namespace);
  if (raw === undefined)
    return {
      sync: false,
      reason: 'NamespaceNotPlaced',
      message: `namespace ${nsName} has no placement by the scheduler yet`,
    };
  let placements: ReadonlyMap<string, number>;
  try {
    placements = parsePlacements(`namespace ${nsName}`, raw);
  } catch (e) {
    if (e instanceof AnnotationError) return { sync: false, reason: 'MalformedPlacement', message: e.message };
    throw e;
  }
  if (!placements.has(i.cluster))
    return {
      sync: false,
      reason: 'NotPlacedHere',
      message: `namespace ${nsName} is placed on ${[...placements.keys()].join(', ') || 'no super cluster'}`,
    };
  if (i.kind !== 'pod' || placements.size === 1) return SYNC;
  return {
    sync: false,
    reason: 'PodNotScheduled',
    message: `namespace ${nsName} spans ${[...placements.keys()].join(', ')} and the Pod has no super cluster yet`,
  };
}

/** placedOn reports whether a placements annotation value names `cluster`; a malformed one names none. */
export function placedOn(raw: string, cluster: string): boolean {
  try {
    return parsePlacements('namespace', raw).has(cluster);
  } catch (e) {
    if (e instanceof AnnotationError) return false;
    throw e;
  }
}

/** placementChanged reports whether a tenant namespace's placement annotations differ between two versions. */
export function placementChanged(
  a: KubeObject | undefined,
  b: KubeObject | undefined,
  keys: readonly string[],
): boolean {
  return keys.some((k) => a?.metadata?.annotations?.[k] !== b?.metadata?.annotations?.[k]);
}

/**
 * UP_OWNER_LABEL is set, with the placement filter on, on every tenant object that flows up from a super cluster (a
 * vNode, a PV, a public RuntimeClass, PriorityClass or StorageClass): the super cluster whose syncer wrote it and
 * alone keeps it (updates it, and deletes it once its source there is gone).
 */
export const UP_OWNER_LABEL = `${PREFIX}/super-cluster`;

/**
 * upOwned decides whether the syncer of `cluster` reconciles an existing tenant object that flows up: the one its
 * UP_OWNER_LABEL names, else (an object written before the label, or one the tenant stripped of it) any syncer whose
 * super cluster has the source. So a public class of the same name on two super clusters has one writer, the first to
 * create it, and a vNode whose super node is deleted is deleted by its super cluster's syncer. When the owner deletes
 * its copy, a super cluster that still has a source of that name creates it again as its own.
 */
export function upOwned(i: { cluster: string; tenantObj: KubeObject; hasSource: boolean }): boolean {
  const owner = i.tenantObj.metadata?.labels?.[UP_OWNER_LABEL];
  return owner ? owner === i.cluster : i.hasSource;
}
