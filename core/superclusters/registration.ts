// The pure half of super cluster registration: from a Cluster object and its `<name>-kubeconfig` Secret to a kubeconfig
// the registry may connect with, and from what happened to the Cluster's status condition. Every failure is a
// RegistrationFailure with a machine-readable reason and a message that names the object and the field to fix.

import { KubeconfigError, parseKubeconfig, type SafeKubeconfig } from '../kube/kubeconfig.ts';
import type { Condition, ConditionInput } from '../controller/status.ts';
import { KUBECONFIG_KEY, kubeconfigSecretName } from '../scheduler/registration.ts';

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
  data?: Record<string, string>;
}

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
