import { formatErrors, validate } from '../../schemas/validate.ts';
import type { ConditionInput } from '../controller/status.ts';
import type { KubeObject } from '../kube/client.ts';
import { LABEL } from '../names/names.ts';
import { CAPI_CLUSTER_LABEL as CAPI_CLUSTER_NAME_LABEL } from './kubeconfigsecret.ts';
import { SERVING_PHASES, type VirtualCluster, type VirtualClusterSpec } from '../api/virtualcluster.ts';
import { UPGRADE_REFUSED } from '../provisioners/upgrade.ts';
import { SPEC_APPLIED } from './rollout.ts';
import type {
  ClusterVersionSpec,
  VirtualClusterControlPlaneSpec,
  VirtualClusterControlPlaneStatus,
} from '../api/generated.ts';

/**
 * This file decides, without I/O, what the Cluster API control-plane provider does: which VirtualCluster a
 * VirtualClusterControlPlane stands for, and what of that VirtualCluster's state goes back into the fields Cluster API
 * reads. The VirtualCluster controller stays the one owner of the tenant's lifecycle (policy, provisioning, rollouts,
 * deletion); this provider only translates.
 */

/** CONTROL_PLANE_API_VERSION is the apiVersion of VirtualClusterControlPlane objects. */
export const CONTROL_PLANE_API_VERSION = 'controlplane.tenancy.x-k8s.io/v1alpha1';
/** INFRA_CLUSTER_API_VERSION is the apiVersion of VirtualClusterInfraCluster objects. */
export const INFRA_CLUSTER_API_VERSION = 'infrastructure.tenancy.x-k8s.io/v1alpha1';

/** VirtualClusterControlPlane is the control-plane provider object as the cache holds it. */
export interface VirtualClusterControlPlane extends KubeObject {
  spec: VirtualClusterControlPlaneSpec;
  status?: VirtualClusterControlPlaneStatus;
}

/** ClusterVersionObject is a ClusterVersion as the cache holds it. */
export type ClusterVersionObject = KubeObject & { spec?: ClusterVersionSpec };

/** CAPI_REASONS are the reasons of the provider's own conditions (the VirtualCluster's pass through unchanged). */
export const CAPI_REASONS = {
  /** no Cluster owns the control plane yet (Cluster API labels it with the Cluster's name) */
  waitingForCluster: 'WaitingForCluster',
  /** no ClusterVersion offers spec.version, or the named one does not */
  unknownVersion: 'UnknownVersion',
  /** spec.virtualCluster is not a valid VirtualCluster spec */
  invalidSpec: 'InvalidSpec',
  /** the TenantPolicy of the VirtualCluster cannot be resolved, or grants no ClusterVersion the choice needs */
  policyViolation: 'PolicyViolation',
  /** a VirtualCluster of the Cluster's name exists and is not this control plane's */
  notOwned: 'NotOwned',
  /** the VirtualCluster exists and has no Ready condition yet */
  provisioning: 'Provisioning',
  available: 'Available',
  /** Cluster API's reasons of the Paused condition */
  paused: 'Paused',
  notPaused: 'NotPaused',
} as const;

/** PAUSED_ANNOTATION on a provider object pauses its reconciliation, as Cluster API's spec.paused on the Cluster does. */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';

/**
 * pausedCondition is Cluster API's Paused condition of a provider object: True (reason Paused) while its Cluster has
 * spec.paused or the object carries the paused annotation (of any value), the message naming which; else False
 * (NotPaused). While it is True the provider changes nothing but this condition.
 */
export function pausedCondition(clusterPaused: boolean, obj: KubeObject): ConditionInput {
  const why = [
    ...(clusterPaused ? ['Cluster spec.paused is set to true'] : []),
    ...(obj.metadata?.annotations && PAUSED_ANNOTATION in obj.metadata.annotations
      ? [`${obj.kind ?? 'Object'} has the ${PAUSED_ANNOTATION} annotation`]
      : []),
  ];
  return why.length
    ? { type: 'Paused', status: 'True', reason: CAPI_REASONS.paused, message: why.join(', ') }
    : { type: 'Paused', status: 'False', reason: CAPI_REASONS.notPaused };
}

type StatusCondition = NonNullable<VirtualClusterControlPlaneStatus['conditions']>[number];

/**
 * withCondition puts c into conditions in place of the one of its type, keeping that one's transition time when its
 * status did not change; generation is the object's metadata.generation the condition was computed from.
 */
export function withCondition(
  conditions: readonly StatusCondition[] | undefined,
  c: ConditionInput,
  generation: number | undefined,
  now = new Date(),
): StatusCondition[] {
  const before = conditions?.find((x) => x.type === c.type);
  const next: StatusCondition = {
    ...c,
    lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : now.toISOString(),
    ...(generation !== undefined && { observedGeneration: generation }),
  };
  const rest = (conditions ?? []).filter((x) => x.type !== c.type);
  return [...rest, next].sort((a, b) => CONDITION_ORDER(a.type) - CONDITION_ORDER(b.type));
}

const CONDITION_ORDER = (type: string) => ['Available', 'Ready', 'Paused'].indexOf(type) >>> 0;

/** Refusal is bad input on a control plane: a reason of CAPI_REASONS and what to fix. */
export interface Refusal {
  reason: string;
  message: string;
}

/**
 * ClusterVersionGrant is what the TenantPolicy a control plane's VirtualCluster resolves to grants it of
 * ClusterVersions (spec.grants.clusterVersions); `policy` names that policy, absent when none applies (then nothing is
 * granted).
 */
export interface ClusterVersionGrant {
  policy?: string;
  clusterVersions: readonly string[];
}

/**
 * pickClusterVersion finds the ClusterVersion a control plane's spec.version means, among those its policy grants
 * (issue 31 §1: a choice the provider makes for the author is granted, as one the author makes): the one named by
 * spec.clusterVersionName when given (it must offer the version and be granted), else the first by name of the
 * granted ones that offer it. A version offered only by ungranted ClusterVersions is a policy violation naming them.
 */
export function pickClusterVersion(
  spec: Pick<VirtualClusterControlPlaneSpec, 'version' | 'clusterVersionName'>,
  versions: readonly ClusterVersionObject[],
  grant: ClusterVersionGrant,
): { name: string } | Refusal {
  const offering = versions
    .filter((cv) => cv.spec?.kubernetesVersion === spec.version)
    .map((cv) => cv.metadata!.name!)
    .sort();
  const under = grant.policy ? `TenantPolicy "${grant.policy}"` : 'the built-in defaults (no TenantPolicy applies)';
  const granted = (name: string) => grant.clusterVersions.includes(name);
  if (spec.clusterVersionName) {
    if (offering.includes(spec.clusterVersionName)) {
      if (granted(spec.clusterVersionName)) return { name: spec.clusterVersionName };
      return {
        reason: CAPI_REASONS.policyViolation,
        message: `spec.clusterVersionName: "${spec.clusterVersionName}" is not granted by ${under} (spec.grants.clusterVersions)`,
      };
    }
    const named = versions.find((cv) => cv.metadata?.name === spec.clusterVersionName);
    return {
      reason: CAPI_REASONS.unknownVersion,
      message: named
        ? `ClusterVersion ${spec.clusterVersionName} offers ${named.spec?.kubernetesVersion ?? 'no version'}, not ${spec.version}`
        : `spec.clusterVersionName: ClusterVersion ${spec.clusterVersionName} does not exist`,
    };
  }
  const pick = offering.find(granted);
  if (pick) return { name: pick };
  if (offering.length)
    return {
      reason: CAPI_REASONS.policyViolation,
      message:
        `spec.version: ${spec.version} is offered by ${offering.join(', ')}, none granted by ${under} ` +
        `(spec.grants.clusterVersions: ${grant.clusterVersions.length ? grant.clusterVersions.join(', ') : 'none'})`,
    };
  const offered = [...new Set(versions.map((cv) => cv.spec?.kubernetesVersion).filter(Boolean))].sort();
  return {
    reason: CAPI_REASONS.unknownVersion,
    message: `spec.version: no ClusterVersion offers ${spec.version}; offered: ${offered.length ? offered.join(', ') : 'none'}`,
  };
}

/** isRefusal tells a Refusal from a successful decision. */
export const isRefusal = (x: object): x is Refusal => 'reason' in x && 'message' in x;

/**
 * desiredVirtualCluster is the VirtualCluster a control plane of the Cluster `cluster` stands for: named like the
 * Cluster (so that its kubeconfig Secret is the `<cluster>-kubeconfig` Cluster API expects), labelled with the
 * Cluster's name, controlled by the control plane, its spec spec.virtualCluster with the ClusterVersion picked for
 * spec.version among those `grant` allows. A spec.virtualCluster that names a ClusterVersion itself, or fails the
 * VirtualCluster schema, is refused.
 */
export function desiredVirtualCluster(
  cp: VirtualClusterControlPlane,
  cluster: string,
  versions: readonly ClusterVersionObject[],
  grant: ClusterVersionGrant,
): VirtualCluster | Refusal {
  const extra = cp.spec.virtualCluster ?? {};
  if ('clusterVersionName' in extra)
    return {
      reason: CAPI_REASONS.invalidSpec,
      message:
        'spec.virtualCluster.clusterVersionName: not allowed; spec.version (and spec.clusterVersionName) pick it',
    };
  const picked = pickClusterVersion(cp.spec, versions, grant);
  if (isRefusal(picked)) return picked;
  const m = cp.metadata!;
  const vc: VirtualCluster = {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: {
      name: cluster,
      namespace: m.namespace,
      labels: { [CAPI_CLUSTER_NAME_LABEL]: cluster, [LABEL.managedBy]: CAPI_FIELD_MANAGER },
      ownerReferences: [
        {
          apiVersion: CONTROL_PLANE_API_VERSION,
          kind: 'VirtualClusterControlPlane',
          name: m.name,
          uid: m.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...(extra as VirtualClusterSpec), clusterVersionName: picked.name },
  };
  const errors = validate('virtualCluster', vc);
  if (errors.length)
    return {
      reason: CAPI_REASONS.invalidSpec,
      message: formatErrors(
        'spec.virtualCluster',
        errors.map((e) => ({ ...e, pointer: e.pointer.replace(/^\/spec/, '') })),
      ),
    };
  return vc;
}

/** CAPI_FIELD_MANAGER is the field manager (and managed-by label) of what the Cluster API provider writes. */
export const CAPI_FIELD_MANAGER = 'vc-manager-capi';

/** controlledBy tells whether obj's controlling owner is the control plane with this uid. */
export function controlledBy(obj: KubeObject | undefined, uid: string | undefined): boolean {
  return !!obj?.metadata?.ownerReferences?.some(
    (r) => r.controller === true && r.kind === 'VirtualClusterControlPlane' && r.uid === uid,
  );
}

/** Endpoint is a Cluster API APIEndpoint. */
export interface Endpoint {
  host: string;
  port: number;
}

/** MirrorInput is what controlPlaneStatus reads: the control plane, its VirtualCluster and what was decided of it. */
export interface MirrorInput {
  cp: VirtualClusterControlPlane;
  /** the VirtualCluster as the cache holds it; absent before it is created */
  vc?: VirtualCluster;
  /** the Kubernetes version of the ClusterVersion the VirtualCluster names */
  vcVersion?: string;
  /** bad input that kept the VirtualCluster from being written (or changed) */
  refusal?: Refusal;
}

const available = (status: ConditionInput['status'], reason: string, message?: string): ConditionInput => ({
  type: 'Available',
  status,
  reason,
  ...(message ? { message } : {}),
});

/**
 * controlPlaneStatus is the control plane's status by Cluster API's contract: initialized once the VirtualCluster has
 * served (and from then on), ready while it serves, version the one it runs once a roll to it finished, and the
 * Available condition (which Cluster API mirrors into the Cluster's ControlPlaneAvailable): the VirtualCluster's Ready
 * condition, or the refusal, which wins even while an older control plane keeps serving, so that bad input is seen on
 * the Cluster. Ready is the VirtualCluster's Ready condition as it is.
 */
export function controlPlaneStatus(i: MirrorInput, now = new Date()): VirtualClusterControlPlaneStatus {
  const { cp, vc, refusal } = i;
  const phase = vc?.status?.phase;
  const serving = SERVING_PHASES.has(phase ?? '');
  const initialized = serving || !!cp.status?.initialization?.controlPlaneInitialized;
  const vcReady = vc?.status?.conditions?.find((c) => c.type === 'Ready');
  // A version change the VirtualCluster controller refused (a skipped minor, a downgrade) is bad input too: the
  // tenant keeps running the version it had, and the refusal is what the Cluster shows.
  const vcApplied = vc?.status?.conditions?.find((c) => c.type === SPEC_APPLIED);
  const refused: Refusal | undefined =
    refusal ??
    (serving && vcApplied?.status === 'False' && vcApplied.reason === UPGRADE_REFUSED
      ? { reason: vcApplied.reason, message: vcApplied.message ?? '' }
      : undefined);
  const settled =
    phase === 'Running' &&
    vcApplied?.status !== 'False' &&
    vc?.status?.observedGeneration !== undefined &&
    vc.status.observedGeneration === vc.metadata?.generation;
  const version = settled && i.vcVersion ? i.vcVersion : cp.status?.version;
  let cond: ConditionInput;
  if (refused)
    cond = available(
      'False',
      refused.reason,
      serving
        ? `${refused.message}; the control plane keeps serving ${version ?? 'its last version'}`
        : refused.message,
    );
  else if (!vc) cond = available('False', CAPI_REASONS.provisioning, 'the VirtualCluster is being created');
  else if (serving) cond = available('True', CAPI_REASONS.available, `VirtualCluster ${vc.metadata?.name} is ${phase}`);
  else if (vcReady) cond = available('False', vcReady.reason, vcReady.message);
  else
    cond = available(
      'False',
      CAPI_REASONS.provisioning,
      `VirtualCluster ${vc.metadata?.name} is ${phase ?? 'Pending'}`,
    );
  const ready: ConditionInput = vcReady
    ? {
        type: 'Ready',
        status: vcReady.status,
        reason: vcReady.reason,
        ...(vcReady.message && { message: vcReady.message }),
      }
    : { type: 'Ready', status: 'False', reason: cond.reason, ...(cond.message && { message: cond.message }) };
  const generation = cp.metadata?.generation;
  let conditions = cp.status?.conditions;
  for (const c of [cond, ready, pausedCondition(false, cp)]) conditions = withCondition(conditions, c, generation, now);
  return {
    initialization: { controlPlaneInitialized: initialized },
    initialized,
    ready: serving,
    externalManagedControlPlane: true,
    ...(version && { version, versions: [{ version }] }),
    ...(vc?.metadata?.name && { virtualClusterName: vc.metadata.name }),
    ...(phase && { phase }),
    ...(generation !== undefined && { observedGeneration: generation }),
    conditions: conditions!.filter((c) => ['Available', 'Ready', 'Paused'].includes(c.type)),
  };
}

/**
 * pausedStatus is the status of a paused control plane: what it said before, with the Paused condition (True) in
 * place; nothing else is looked at or changed while Cluster API's pause holds.
 */
export function pausedStatus(
  cp: VirtualClusterControlPlane,
  paused: ConditionInput,
  now = new Date(),
): VirtualClusterControlPlaneStatus {
  return { ...cp.status, conditions: withCondition(cp.status?.conditions, paused, cp.metadata?.generation, now) };
}

/** clusterNameOf is the name of the Cluster that owns a control plane or infrastructure cluster, once Cluster API set it. */
export function clusterNameOf(o: KubeObject): string | undefined {
  return o.metadata?.labels?.[CAPI_CLUSTER_NAME_LABEL] || undefined;
}
