import type { KubeClient, KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { IDENTITY, LABEL } from '../names/names.ts';
import type { RetainedRecord } from './backuppolicy.ts';

/** RETAINED_LABEL marks the ConfigMap that records a tenant deleted under Retain (value "true"). */
export const RETAINED_LABEL = 'backup.tenancy.x-k8s.io/retained';
/** RETAINED_KEY is the key of that ConfigMap holding the RetainedRecord (JSON). */
export const RETAINED_KEY = 'retained.json';

/**
 * retainedName names the ConfigMap, next to where the VirtualCluster was, that records it was deleted under Retain. It
 * outlives the VirtualCluster (no owner reference), as the catalog does.
 */
export function retainedName(vcName: string): string {
  return `vc-retained-${vcName}`;
}

/** Retained is one record with the VirtualCluster it is of. */
export interface Retained {
  namespace: string;
  name: string;
  record: RetainedRecord;
}

/** parseRetained reads a record ConfigMap; undefined when it holds none that can be read. */
export function parseRetained(cm: KubeObject & { data?: Record<string, string> }): Retained | undefined {
  const text = cm.data?.[RETAINED_KEY];
  const name = cm.metadata?.name?.replace(/^vc-retained-/, '');
  if (!text || !name || !cm.metadata?.namespace) return undefined;
  try {
    const r = JSON.parse(text) as RetainedRecord;
    if (typeof r.uid !== 'string' || typeof r.snapshot !== 'string' || typeof r.until !== 'string') return undefined;
    return { namespace: cm.metadata.namespace, name, record: r };
  } catch {
    return undefined;
  }
}

/** readRetained is the record of a deleted VirtualCluster of this namespace and name, if one is kept. */
export async function readRetained(meta: KubeClient, namespace: string, name: string): Promise<Retained | undefined> {
  const cm = await meta.getOrNull<KubeObject & { data?: Record<string, string> }>(
    R.configmaps,
    namespace,
    retainedName(name),
  );
  return cm ? parseRetained(cm) : undefined;
}

/** listRetained lists every kept record of the meta cluster. */
export async function listRetained(meta: KubeClient, namespace?: string): Promise<Retained[]> {
  const list = await meta.list<KubeObject & { data?: Record<string, string> }>(R.configmaps, {
    ...(namespace && { namespace }),
    labelSelector: `${RETAINED_LABEL}=true`,
  });
  return list.items.flatMap((cm) => parseRetained(cm) ?? []);
}

/** writeRetained records that a VirtualCluster was deleted under Retain (replacing the record of an earlier one). */
export async function writeRetained(meta: KubeClient, t: Retained): Promise<void> {
  await meta.apply(
    R.configmaps,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: retainedName(t.name),
        namespace: t.namespace,
        labels: { [LABEL.managedBy]: IDENTITY.manager, [RETAINED_LABEL]: 'true' },
      },
      data: { [RETAINED_KEY]: JSON.stringify(t.record) },
    } as KubeObject,
    IDENTITY.manager,
  );
}

/** dropRetained removes the record of the deleted VirtualCluster with this uid; a record of another is left alone. */
export async function dropRetained(meta: KubeClient, namespace: string, name: string, uid: string): Promise<void> {
  const now = await readRetained(meta, namespace, name);
  if (now?.record.uid === uid) await meta.delete(R.configmaps, namespace, retainedName(name));
}
