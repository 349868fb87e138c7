import { ANN, LABEL, superNamespace } from '../../core/names/names.ts';

/** TenantObject is one tenant object the syncer must copy: where it lives in its tenant and its uid. */
export interface TenantObject {
  namespace: string;
  name: string;
  uid: string;
}

/** TenantState is one tenant at the end of a run: its key (root namespace) and every object it has. */
export interface TenantState {
  key: string;
  objects: TenantObject[];
}

/** SuperObject is an object of the super cluster: where it lives and its ownership annotations. */
export interface SuperObject {
  namespace: string;
  name: string;
  annotations?: Record<string, string>;
}

/** SuperNamespace is a namespace of the super cluster and its labels (LABEL.cluster names its tenant). */
export interface SuperNamespace {
  name: string;
  labels?: Record<string, string>;
}

/** CompareInput is everything compareCopies reads: live tenants, deleted tenants' keys and the super cluster. */
export interface CompareInput {
  tenants: TenantState[];
  /** keys of tenants deleted during the run: nothing of them may remain in the super cluster */
  deletedTenants?: string[];
  superObjects: SuperObject[];
  superNamespaces: SuperNamespace[];
}

/**
 * CopyFindings are what compareCopies found wrong, each entry naming the object:
 * - missing: a tenant object with no super copy in its super namespace;
 * - duplicates: a tenant object (by uid) with more than one super copy;
 * - orphans: a super object in a tenant's super namespace whose tenant object is gone, or anything (object or
 *   namespace) left of a deleted tenant;
 * - wrongOwner: a super copy whose ownership annotations disagree with where it lives or with the tenant object
 *   at that place (another uid, tenant, namespace or name).
 */
export interface CopyFindings {
  missing: string[];
  duplicates: string[];
  orphans: string[];
  wrongOwner: string[];
}

/** findingsTotal is the number of problems compareCopies found (0 means the super cluster matches the tenants). */
export function findingsTotal(f: CopyFindings): number {
  return f.missing.length + f.duplicates.length + f.orphans.length + f.wrongOwner.length;
}

/**
 * compareCopies compares every tenant's objects with the super cluster's: each tenant object must have exactly one
 * super copy, at `superNamespace(key, namespace)/name`, annotated with its tenant, namespace, name and uid; no super
 * object may sit in a tenant's super namespace without a tenant object; nothing of a deleted tenant may remain.
 * Super objects in namespaces of no tenant (the platform's own) are not looked at.
 */
export function compareCopies(input: CompareInput): CopyFindings {
  const f: CopyFindings = { missing: [], duplicates: [], orphans: [], wrongOwner: [] };
  const deleted = new Set(input.deletedTenants ?? []);
  const live = new Set(input.tenants.map((t) => t.key));
  // Which tenant each super namespace belongs to: its label, else the tenant whose object names it.
  const nsTenant = new Map<string, string>();
  for (const n of input.superNamespaces) {
    const k = n.labels?.[LABEL.cluster];
    if (k) nsTenant.set(n.name, k);
  }
  const expected = new Map<string, { tenant: string; o: TenantObject }>();
  for (const t of input.tenants)
    for (const o of t.objects) {
      const sns = superNamespace(t.key, o.namespace);
      if (!nsTenant.has(sns)) nsTenant.set(sns, t.key);
      expected.set(`${sns}/${o.name}`, { tenant: t.key, o });
    }
  for (const n of input.superNamespaces) {
    const k = n.labels?.[LABEL.cluster];
    if (k && deleted.has(k)) f.orphans.push(`namespace ${n.name} of deleted tenant ${k}`);
  }
  const copiesByUid = new Map<string, string[]>();
  const present = new Set<string>();
  for (const s of input.superObjects) {
    const at = `${s.namespace}/${s.name}`;
    const a = s.annotations ?? {};
    const owner = a[ANN.cluster];
    const home = nsTenant.get(s.namespace);
    if ((owner && deleted.has(owner)) || (home && deleted.has(home))) {
      f.orphans.push(`${at} of deleted tenant ${owner ?? home}`);
      continue;
    }
    if (!home && !(owner && live.has(owner))) continue;
    const uid = a[ANN.uid];
    if (uid) copiesByUid.set(uid, [...(copiesByUid.get(uid) ?? []), at]);
    const want = expected.get(at);
    if (!want) {
      f.orphans.push(`${at} (tenant ${owner ?? home} has no ${a[ANN.namespace] ?? '?'}/${a[ANN.name] ?? '?'})`);
      continue;
    }
    present.add(at);
    const wrong: string[] = [];
    if (owner !== want.tenant) wrong.push(`cluster ${owner} != ${want.tenant}`);
    if (a[ANN.namespace] !== want.o.namespace) wrong.push(`namespace ${a[ANN.namespace]} != ${want.o.namespace}`);
    if (a[ANN.name] !== want.o.name) wrong.push(`name ${a[ANN.name]} != ${want.o.name}`);
    if (uid !== want.o.uid) wrong.push(`uid ${uid} != ${want.o.uid}`);
    if (wrong.length) f.wrongOwner.push(`${at}: ${wrong.join(', ')}`);
  }
  for (const [at, { tenant, o }] of expected)
    if (!present.has(at)) f.missing.push(`${tenant} ${o.namespace}/${o.name} has no super copy ${at}`);
  for (const [uid, ats] of copiesByUid) if (ats.length > 1) f.duplicates.push(`uid ${uid}: ${ats.join(', ')}`);
  return f;
}
