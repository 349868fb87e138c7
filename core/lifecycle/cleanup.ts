import type { EventRecorder } from '../controller/events.ts';
import type { KubeClient } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { IDENTITY, LABEL, VC_FINALIZER } from '../names/names.ts';
import { kubeconfigSecretName, tenantCAConfigMapName } from '../api/virtualcluster.ts';
import type { Outcome } from './decisions.ts';
import type { LifecycleOptions } from './options.ts';
import { notOwnedRoot, ownedNamespace, type MetaObjects } from './ownership.ts';
import { recordName } from '../scheduler/placementrecord.ts';
import { snapshotBeforeRemove } from './snapshots.ts';
import type { Pass } from './steps.ts';

const log = childLogger({ controller: 'virtualcluster' });
/** DELETE_RECHECK_MS is how soon a deletion that waits for namespaces or a control plane to go is looked at again. */
const DELETE_RECHECK_MS = 1000;

/** CleanUpParts are what the deletion of a VirtualCluster reads and writes through. */
export interface CleanUpParts {
  meta: KubeClient;
  superClient: KubeClient;
  metaObjects: MetaObjects;
  events: EventRecorder;
  provisioners: LifecycleOptions['provisioners'];
  beforeRemove?: LifecycleOptions['beforeRemove'];
  placementRecords?: LifecycleOptions['placementRecords'];
}

/**
 * cleanUp removes the control plane (with the provisioner `type` that made it, not one a refused edit names since),
 * the tenant's super namespaces, its kubeconfig Secret and CA ConfigMap, the scheduler's record of its placements,
 * then the finalizer; it looks again each second while something is going.
 */
export async function cleanUp(c: CleanUpParts, p: Pass, type: string | undefined): Promise<Outcome> {
  const vc = p.vc;
  const m = vc.metadata!;
  // A root namespace that is not this VirtualCluster's was never provisioned into: nothing in it is deleted.
  const rootNs = await c.superClient.getOrNull(R.namespaces, undefined, p.root);
  const ours = !rootNs || !notOwnedRoot(rootNs, m.uid!);
  if (ours) await snapshotBeforeRemove(c.events, c.beforeRemove, vc);
  const removing = ours && type ? await c.provisioners[type]?.remove(vc, p.root) : undefined;
  const labelled = await c.superClient.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${p.root}` });
  const remaining = labelled.items.filter((n) => ownedNamespace(n, p.root, m.uid!));
  if (remaining.length) {
    for (const n of remaining) {
      if (!n.metadata?.deletionTimestamp)
        await c.superClient.delete(R.namespaces, undefined, n.metadata!.name!, { uid: n.metadata!.uid });
    }
    return { stop: true, requeueAfter: DELETE_RECHECK_MS };
  }
  if (removing) {
    log.debug({ vc: p.key, tenant: p.root }, `deleting: waiting for ${removing.waitingFor}`);
    return { stop: true, requeueAfter: DELETE_RECHECK_MS };
  }
  await c.metaObjects.deleteOwned(R.secrets, m.namespace!, kubeconfigSecretName(m.name!), m.uid!);
  await c.metaObjects.deleteOwned(R.configmaps, m.namespace!, tenantCAConfigMapName(m.name!), m.uid!);
  if (c.placementRecords) await c.meta.delete(R.configmaps, c.placementRecords, recordName(p.root));
  const finalizers = m.finalizers ?? [];
  await c.meta.patch(
    R.virtualclusters,
    m.namespace,
    m.name!,
    [
      { op: 'test', path: '/metadata/finalizers', value: finalizers },
      { op: 'replace', path: '/metadata/finalizers', value: finalizers.filter((f) => f !== VC_FINALIZER) },
    ],
    'json',
    { fieldManager: IDENTITY.manager },
  );
  log.info({ vc: p.key, tenant: p.root }, 'VirtualCluster deleted');
  return { stop: true };
}
