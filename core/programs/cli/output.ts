import { stringify } from 'yaml';
import type { KubeObject } from '../../kube/client.ts';

/** OUTPUT_FORMATS are the `-o` values that print objects as data rather than as a table. */
export const OUTPUT_FORMATS = ['json', 'yaml', 'name'] as const;

/**
 * formatObjects prints objects as kubectl does for `-o json|yaml|name`: one object alone when `single`, else a
 * `v1 List` holding them; `name` is `<resource>.<group>/<name>` per line. `resource` is the plural lower-case name and
 * `group` its API group. Undefined for a format it does not handle (table and wide are the caller's).
 */
export function formatObjects(
  objects: readonly KubeObject[],
  o: { format: string; single: boolean; resource: string; group: string; apiVersion: string; kind: string },
): string | undefined {
  const typed = objects.map((x) => ({ apiVersion: o.apiVersion, kind: o.kind, ...x }));
  const doc = o.single ? typed[0] : { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items: typed };
  if (o.format === 'json') return JSON.stringify(doc, null, 2) + '\n';
  if (o.format === 'yaml') return stringify(doc);
  if (o.format === 'name')
    return objects.map((x) => `${o.resource.replace(/s$/, '')}.${o.group}/${x.metadata?.name}\n`).join('');
  return undefined;
}
