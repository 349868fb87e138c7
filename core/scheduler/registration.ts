// Super cluster registration as the original VirtualCluster reads it: a Cluster API `Cluster` object
// (cluster.x-k8s.io) in the meta cluster, its credentials in the Secret `<name>-kubeconfig` (key `value`, the Cluster
// API convention), and in the super cluster itself the ConfigMap kube-system/supercluster-info whose `id` names it.
// These pure readers turn what the controller fetched into the scheduler's SuperCluster state; a bad registration is
// a RegistrationError naming the object and field, for the Cluster's status, never a crash.

import type { ClusterState } from './capacity.ts';

/** SUPERCLUSTER_INFO is where a super cluster names itself: ConfigMap kube-system/supercluster-info, key `id`. */
export const SUPERCLUSTER_INFO = { namespace: 'kube-system', name: 'supercluster-info', idKey: 'id' } as const;

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
