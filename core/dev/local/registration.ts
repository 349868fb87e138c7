// Registering a local super cluster in the meta cluster exactly as a user registers any super cluster: the
// supercluster-info ConfigMap in the super cluster, the `<name>-kubeconfig` Secret and the Cluster in the meta cluster.

import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { KubeClient, KubeObject, Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { fromPackageRoot } from '../../paths.ts';
import {
  CLUSTER_NAME_LABEL,
  CLUSTERS,
  DEFAULT_REGISTRATION_NAMESPACE,
  KUBECONFIG_KEY,
  kubeconfigSecretName,
  SUPERCLUSTER_INFO,
} from '../../superclusters/registration.ts';
import { waitFor } from './process.ts';

/** REGISTRATION_NAMESPACE is where the local super clusters are registered in the meta cluster. */
export const REGISTRATION_NAMESPACE = DEFAULT_REGISTRATION_NAMESPACE;

const FIELD_MANAGER = 'vc-up';

/**
 * ensureClusterCRD installs deploy/crds/clusters.yaml (the minimal Cluster CRD) when the meta cluster has no Cluster
 * CRD, leaves one that is there (Cluster API's) as it is, and waits until Clusters can be listed.
 */
export async function ensureClusterCRD(meta: KubeClient): Promise<void> {
  const name = `${CLUSTERS.resource}.${CLUSTERS.group}`;
  if (!(await meta.getOrNull(R.crds, undefined, name))) {
    const text = readFileSync(fromPackageRoot('deploy/crds/clusters.yaml'), 'utf8');
    for (const d of parseAllDocuments(text)) await meta.apply(R.crds, d.toJS() as KubeObject, FIELD_MANAGER);
  }
  await waitFor(
    'the Cluster API (cluster.x-k8s.io)',
    async () => {
      try {
        await meta.list(CLUSTERS as Resource, { limit: 1 });
        return true;
      } catch {
        return false;
      }
    },
    { timeoutMs: 30_000 },
  );
}

/** SuperClusterRegistration is one super cluster to register. */
export interface SuperClusterRegistration {
  /** name of the Cluster, and the id its supercluster-info carries */
  name: string;
  /** namespace of the Cluster and its Secret in the meta cluster (default REGISTRATION_NAMESPACE) */
  namespace?: string;
  /** the kubeconfig (inline credentials) the manager reaches the super cluster with */
  kubeconfig: string;
  /** an admin client of the super cluster, to write its supercluster-info */
  superClient: KubeClient;
}

/**
 * registerSuperCluster writes the three objects of a registration: kube-system/supercluster-info (id = name) in the
 * super cluster, then the Secret `<name>-kubeconfig` (key `value`, Cluster API's cluster-name label) and the Cluster
 * in the meta cluster. Re-running it changes nothing that is already so.
 */
export async function registerSuperCluster(meta: KubeClient, r: SuperClusterRegistration): Promise<void> {
  const namespace = r.namespace ?? REGISTRATION_NAMESPACE;
  await r.superClient.apply(
    R.configmaps,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: SUPERCLUSTER_INFO.name, namespace: SUPERCLUSTER_INFO.namespace },
      data: { [SUPERCLUSTER_INFO.idKey]: r.name },
    },
    FIELD_MANAGER,
  );
  await meta.apply(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, FIELD_MANAGER);
  await meta.apply(
    R.secrets,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: kubeconfigSecretName(r.name), namespace, labels: { [CLUSTER_NAME_LABEL]: r.name } },
      type: 'cluster.x-k8s.io/secret',
      data: { [KUBECONFIG_KEY]: Buffer.from(r.kubeconfig).toString('base64') },
    },
    FIELD_MANAGER,
  );
  await meta.apply(
    CLUSTERS as Resource,
    {
      apiVersion: `${CLUSTERS.group}/${CLUSTERS.version}`,
      kind: CLUSTERS.kind,
      metadata: { name: r.name, namespace },
      spec: {},
    },
    FIELD_MANAGER,
  );
}
