import { isReservedKey, type Naming } from '@virtualcluster-ts/plugin-sdk';

/**
 * What a generic kind's copied fields may not carry. The generic sync copies whole fields (`spec` by default) of a
 * kind no plugin reads, so a tenant chooses everything inside them; a kind with a template (a workload, a job) or
 * with references makes the super cluster create or act on further objects from them. contentRefusals names every
 * place in the copied fields that would let the tenant choose what only the syncer or the platform chooses:
 * - the project's reserved label and annotation keys (provenance) in any nested `labels` or `annotations`: a
 *   template's metadata becomes the super objects the super controllers make from it;
 * - `ownerReferences` and `finalizers` anywhere: they tie super objects' lifetimes to objects the tenant picks;
 * - a namespace in any field called `namespace`, `namespaces` or `…Namespace` that is not one of the tenant's own
 *   super namespaces (an entry's `fields.translate` with `to: namespace` maps a tenant namespace to one), and any
 *   `namespaceSelector`, which selects across every namespace of the super cluster.
 */

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** NAMESPACE_FIELD matches a field holding one namespace name. */
const NAMESPACE_FIELD = /^(namespace|[A-Za-z0-9]+Namespace)$/;

/** contentRefusals returns one sentence per refused place of `copied` (field name to value), in path order. */
export function contentRefusals(copied: Record<string, unknown>, names: Pick<Naming, 'tenantNamespace'>): string[] {
  const out: string[] = [];
  const own = (ns: string) => names.tenantNamespace(ns) !== undefined;
  const outside = (path: string, ns: string) =>
    out.push(
      `${path}: "${ns}" is not a namespace of this tenant (the entry translates tenant namespaces with ` +
        'fields.translate to: namespace)',
    );
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (!isRecord(v)) return;
    for (const [k, x] of Object.entries(v)) {
      const at = `${path}.${k}`;
      if ((k === 'labels' || k === 'annotations') && isRecord(x)) {
        for (const key of Object.keys(x).filter(isReservedKey))
          out.push(`${at}["${key}"]: keys under tenancy.x-k8s.io are set by the syncer alone`);
        continue;
      }
      if ((k === 'ownerReferences' || k === 'finalizers') && Array.isArray(x) && x.length) {
        out.push(`${at}: ${k} of the super objects are set by the super cluster, never copied from a tenant`);
        continue;
      }
      if (k === 'namespaceSelector' && x !== null && x !== undefined) {
        out.push(`${at}: a namespace selector reaches every namespace of the super cluster`);
        continue;
      }
      if (NAMESPACE_FIELD.test(k) && typeof x === 'string') {
        if (x !== '' && !own(x)) outside(at, x);
        continue;
      }
      if (k === 'namespaces' && Array.isArray(x) && x.every((n) => typeof n === 'string')) {
        for (const [i, n] of (x as string[]).entries()) if (!own(n)) outside(`${at}[${i}]`, n);
        continue;
      }
      walk(x, at);
    }
  };
  for (const [k, v] of Object.entries(copied)) walk({ [k]: v }, '');
  return out.map((s) => s.replace(/^\./, ''));
}
