// Super cluster registration, in one place. A super cluster is registered as the original VirtualCluster reads it:
// a Cluster API `Cluster` object (cluster.x-k8s.io) in the meta cluster, its credentials in the Secret
// `<name>-kubeconfig` (key `value`, the Cluster API convention), and in the super cluster itself the ConfigMap
// kube-system/supercluster-info whose `id` names it.
//
// The first half are the pure readers of a Cluster the scheduler's placement state comes from: a bad registration is
// a RegistrationError naming the object and field, for the Cluster's status, never a crash. The second half, from a
// Cluster object and its Secret to a kubeconfig the registry may connect with, and from what happened to the Cluster's
// status condition: every failure is a RegistrationFailure with a machine-readable reason and a message that names the
// object and the field to fix.

import { KubeconfigError, parseKubeconfig, type SafeKubeconfig } from '../kube/kubeconfig.ts';
import type { Condition, ConditionInput } from '../controller/status.ts';

/** CLUSTER_STATES are a registration's states; only `ready` takes new placements, the others keep existing ones. */
export const CLUSTER_STATES = ['ready', 'unreachable', 'draining', 'deregistered'] as const;
/** ClusterState is one of CLUSTER_STATES. */
export type ClusterState = (typeof CLUSTER_STATES)[number];

/** SUPERCLUSTER_INFO is where a super cluster names itself: ConfigMap kube-system/supercluster-info, key `id`. */
export const SUPERCLUSTER_INFO = { namespace: 'kube-system', name: 'supercluster-info', idKey: 'id' } as const;

/**
 * DEFAULT_REGISTRATION_NAMESPACE is the only namespace of the meta cluster whose Clusters the registry reads unless the
 * manager configuration names another: registering a super cluster is the platform's act, and the namespaces where
 * VirtualClusters and their `<vc>-kubeconfig` Secrets live are their authors'.
 */
export const DEFAULT_REGISTRATION_NAMESPACE = 'vc-system';

/** KUBECONFIG_KEY is the key of the kubeconfig in a Cluster's `<name>-kubeconfig` Secret (Cluster API convention). */
export const KUBECONFIG_KEY = 'value';

/** DRAINING is the annotation on a Cluster that stops new placements on it; existing ones stay until moved off. */
export const DRAINING = 'scheduler.tenancy.x-k8s.io/draining';

/** RegistrationError is a registration the scheduler cannot use; the message names the object and field. */
export class RegistrationError extends Error {}

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** kubeconfigSecretName is the Secret that holds a registered Cluster's kubeconfig: `<name>-kubeconfig`. */
export function kubeconfigSecretName(cluster: string): string {
  return `${cluster}-kubeconfig`;
}

/** ClusterObject is what the scheduler reads of a `cluster.x-k8s.io` Cluster. */
export interface ClusterObject {
  metadata: { name: string; namespace?: string; deletionTimestamp?: string; annotations?: Record<string, string> };
}

/**
 * superClusterId checks the supercluster-info ConfigMap read from a registered super cluster: its `id` must be a
 * DNS label equal to the Cluster's name, since placements and Pod annotations name super clusters by it and two
 * registrations claiming one id would sync the same placements twice.
 */
export function superClusterId(cluster: ClusterObject, data: Readonly<Record<string, string>> | undefined): string {
  const info = `ConfigMap ${SUPERCLUSTER_INFO.namespace}/${SUPERCLUSTER_INFO.name} in the super cluster`;
  const where = `Cluster ${cluster.metadata.namespace ?? ''}/${cluster.metadata.name}: ${info}`;
  const id = data?.[SUPERCLUSTER_INFO.idKey];
  if (id === undefined) throw new RegistrationError(`${where}: data.${SUPERCLUSTER_INFO.idKey} is missing`);
  if (!LABEL.test(id))
    throw new RegistrationError(`${where}: data.${SUPERCLUSTER_INFO.idKey} ${JSON.stringify(id)} is not a DNS label`);
  if (id !== cluster.metadata.name)
    throw new RegistrationError(
      `${where}: data.${SUPERCLUSTER_INFO.idKey} ${JSON.stringify(id)} differs from the Cluster's name ${JSON.stringify(cluster.metadata.name)}`,
    );
  return id;
}

/**
 * clusterState is a registration's state for placement: a Cluster being deleted is deregistered, one annotated
 * DRAINING=true is draining, one the controller could not reach (or whose id did not check) is unreachable. A
 * DRAINING value other than "true" or "false" is a RegistrationError.
 */
export function clusterState(cluster: ClusterObject, reachable: boolean): ClusterState {
  if (cluster.metadata.deletionTimestamp) return 'deregistered';
  const draining = cluster.metadata.annotations?.[DRAINING];
  if (draining !== undefined && draining !== 'true' && draining !== 'false')
    throw new RegistrationError(
      `Cluster ${cluster.metadata.namespace ?? ''}/${cluster.metadata.name}: annotation ${DRAINING} must be "true" or "false", not ${JSON.stringify(draining)}`,
    );
  if (draining === 'true') return 'draining';
  return reachable ? 'ready' : 'unreachable';
}

/** CLUSTERS is the Cluster API resource a super cluster is registered with (cluster.x-k8s.io/v1beta1 Cluster). */
export const CLUSTERS = {
  group: 'cluster.x-k8s.io',
  version: 'v1beta1',
  resource: 'clusters',
  kind: 'Cluster',
  namespaced: true,
} as const;

/** CLUSTER_NAME_LABEL is Cluster API's label on a kubeconfig Secret naming its Cluster; such Secrets are watched. */
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';

/** READY_CONDITION is the condition the registry keeps on each Cluster's status. */
export const READY_CONDITION = 'SuperClusterReady';

/** REGISTRATION_REASONS are the reasons of READY_CONDITION; only Registered comes with status True. */
export const REGISTRATION_REASONS = [
  'Registered',
  'SecretMissing',
  'KubeconfigInvalid',
  'TenantKubeconfig',
  'Unreachable',
  'InfoInvalid',
  'DuplicateName',
  'InvalidAnnotation',
  'Deregistering',
] as const;
/** RegistrationReason is one of REGISTRATION_REASONS. */
export type RegistrationReason = (typeof REGISTRATION_REASONS)[number];

/** RegistrationFailure is why a registration is not usable: a reason for the condition and a message naming the field. */
export class RegistrationFailure extends Error {
  constructor(
    readonly reason: Exclude<RegistrationReason, 'Registered'>,
    message: string,
  ) {
    super(message);
    this.name = 'RegistrationFailure';
  }
}

/** ClusterRef names a Cluster object. */
export interface ClusterRef {
  namespace: string;
  name: string;
}

/** SecretLike is what the registry reads of a Secret. */
export interface SecretLike {
  metadata?: { ownerReferences?: ReadonlyArray<{ apiVersion?: string; kind?: string; name?: string }> };
  data?: Record<string, string>;
}

/** TENANCY_GROUP is the API group of VirtualClusters, as owner references name it (`tenancy.x-k8s.io/v1alpha1`). */
const TENANCY_GROUP = 'tenancy.x-k8s.io/';

/** secretSource names a Cluster's kubeconfig Secret and key in messages. */
export function secretSource(c: ClusterRef): string {
  return `Secret ${c.namespace}/${kubeconfigSecretName(c.name)}`;
}

/**
 * kubeconfigFromSecret reads the kubeconfig of a Cluster from its Secret (null when it does not exist): data.value,
 * base64, a kubeconfig parseKubeconfig accepts (inline credentials, https, no exec or file references). The text is
 * returned too, so a change of credentials can be told from a probe of the same ones.
 */
export function kubeconfigFromSecret(c: ClusterRef, secret: SecretLike | null): { safe: SafeKubeconfig; text: string } {
  const src = secretSource(c);
  if (!secret)
    throw new RegistrationFailure(
      'SecretMissing',
      `Cluster ${c.namespace}/${c.name}: ${src} not found (it holds the kubeconfig in data.${KUBECONFIG_KEY})`,
    );
  // The manager writes each VirtualCluster's admin kubeconfig as `<vc>-kubeconfig`, Cluster API's name, and adds the
  // `value` key for a VirtualCluster labelled as a Cluster's: whoever defines a tenant would otherwise register its
  // control plane, whose Nodes and supercluster-info it writes, and have other tenants' namespaces placed there.
  const tenant = secret.metadata?.ownerReferences?.find(
    (o) => o.kind === 'VirtualCluster' && (o.apiVersion ?? '').startsWith(TENANCY_GROUP),
  );
  if (tenant)
    throw new RegistrationFailure(
      'TenantKubeconfig',
      `Cluster ${c.namespace}/${c.name}: ${src} is the admin kubeconfig of VirtualCluster ${c.namespace}/${tenant.name ?? ''}: ` +
        "a tenant's control plane is never a super cluster; give the super cluster's own credentials in a Secret of this name",
    );
  const b64 = secret.data?.[KUBECONFIG_KEY];
  if (b64 === undefined || b64 === '')
    throw new RegistrationFailure(
      'SecretMissing',
      `Cluster ${c.namespace}/${c.name}: ${src}: data.${KUBECONFIG_KEY} is missing`,
    );
  const text = Buffer.from(b64, 'base64').toString('utf8');
  try {
    return { safe: parseKubeconfig(text, `${src} (data.${KUBECONFIG_KEY})`), text };
  } catch (e) {
    if (e instanceof KubeconfigError)
      throw new RegistrationFailure('KubeconfigInvalid', `Cluster ${c.namespace}/${c.name}: ${e.message}`);
    throw e;
  }
}

/** unreachable is the failure of a super cluster that did not answer: the Secret field, the server and the error. */
export function unreachable(c: ClusterRef, server: string, err: unknown): RegistrationFailure {
  const why = err instanceof Error ? err.message || err.name : String(err);
  return new RegistrationFailure(
    'Unreachable',
    `Cluster ${c.namespace}/${c.name}: ${secretSource(c)} (data.${KUBECONFIG_KEY}): server ${server}: ${why}`,
  );
}

/** ClusterMeta is what duplicateOf reads of a Cluster. */
export interface ClusterMeta {
  metadata?: { namespace?: string; name?: string; creationTimestamp?: string; deletionTimestamp?: string };
}

/**
 * duplicateOf returns the Cluster that owns `c`'s name when another one does (super clusters are named by their
 * Cluster's name, so two namespaces may not both register `r1`): a statically configured super cluster of that name,
 * else the oldest live Cluster of that name (namespace order breaks ties). Undefined when `c` owns its name.
 */
export function duplicateOf(
  c: ClusterRef,
  all: readonly ClusterMeta[],
  reserved: ReadonlySet<string> = new Set(),
): string | undefined {
  if (reserved.has(c.name)) return `the statically configured super cluster ${c.name}`;
  const same = all
    .filter((x) => x.metadata?.name === c.name && !x.metadata.deletionTimestamp)
    .sort((a, b) => {
      const ta = a.metadata?.creationTimestamp ?? '';
      const tb = b.metadata?.creationTimestamp ?? '';
      if (ta !== tb) return ta < tb ? -1 : 1;
      return (a.metadata?.namespace ?? '') < (b.metadata?.namespace ?? '') ? -1 : 1;
    });
  const owner = same[0]?.metadata;
  if (!owner || owner.namespace === c.namespace) return undefined;
  return `Cluster ${owner.namespace}/${owner.name}`;
}

/** readyCondition is READY_CONDITION for an outcome: True/Registered, or False with the failure's reason. */
export function readyCondition(outcome: RegistrationFailure | { server: string }, generation?: number): ConditionInput {
  const base = generation === undefined ? {} : { observedGeneration: generation };
  if (outcome instanceof RegistrationFailure)
    return { type: READY_CONDITION, status: 'False', reason: outcome.reason, message: outcome.message, ...base };
  return {
    type: READY_CONDITION,
    status: 'True',
    reason: 'Registered',
    message: `connected to ${outcome.server}; its supercluster-info names it as this Cluster`,
    ...base,
  };
}

/** readyOf returns a Cluster's READY_CONDITION from its status, if the registry wrote one. */
export function readyOf(status: { conditions?: readonly Condition[] } | undefined): Condition | undefined {
  return status?.conditions?.find((x) => x.type === READY_CONDITION);
}
