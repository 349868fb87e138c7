// Where each tenant namespace is placed now, as the platform holds it. A signature on the tenant's namespace binds a
// placement to the tenant, the namespace and its uid, but not to a time: a tenant that kept an earlier signed value
// (its own apiserver shows it every version) could write it back after the scheduler moved the namespace, and the
// value would verify. So the scheduler also keeps, per tenant, the one current placement of each namespace in a
// ConfigMap of the meta cluster that tenants cannot reach; the syncers sync a namespace where that record says, and
// a restarted scheduler counts placements from it. The annotation on the tenant's namespace stays what the tenant
// reads (and the scheduler writes it back whenever it differs).
import type { KubeClient, KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { IDENTITY, LABEL } from '../names/names.ts';

/**
 * PLACEMENT_RECORD names the record ConfigMaps: `vc-placements-<tenant key>` in the scheduler's namespace, labelled as
 * the manager's (only the manager may write such a ConfigMap under deploy/policy/manager-scope.yaml) and with `label`
 * set to the tenant key, the JSON of every placed namespace under `key`.
 */
export const PLACEMENT_RECORD = {
  prefix: 'vc-placements-',
  key: 'placements.json',
  label: 'scheduler.tenancy.x-k8s.io/placements',
} as const;

/**
 * RECORD_SELECTOR selects the record ConfigMaps in the scheduler's namespace: the manager's, with a tenant named. It
 * selects none of the ConfigMaps a syncer watches on a super cluster (its copies are labelled as the syncer's), so a
 * meta cluster that is also a super cluster holds two ConfigMap watches with no object in both.
 */
export const RECORD_SELECTOR = `${LABEL.managedBy}=${IDENTITY.manager},${PLACEMENT_RECORD.label}`;

/** recordName is the record ConfigMap of a tenant. */
export const recordName = (tenant: string): string => `${PLACEMENT_RECORD.prefix}${tenant}`;

/** RecordEntry is one namespace's placement: the namespace's uid and the PLACEMENTS value the scheduler signed. */
export interface RecordEntry {
  uid: string;
  placements: string;
}

/** RecordEntries are a tenant's placed namespaces by name. */
export type RecordEntries = ReadonlyMap<string, RecordEntry>;

type ConfigMap = KubeObject & { data?: Record<string, string> };

/** RecordError is a record ConfigMap that cannot be read, naming it and its field. */
export class RecordError extends Error {}

/** parseRecord reads a record ConfigMap's entries; anything but a map of {uid, placements} strings is a RecordError. */
export function parseRecord(cm: ConfigMap): RecordEntries {
  const where = `configmap ${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}: data.${PLACEMENT_RECORD.key}`;
  const raw = cm.data?.[PLACEMENT_RECORD.key];
  if (raw === undefined) return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw new RecordError(`${where}: not JSON: ${(e as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new RecordError(`${where}: must be an object of namespaces`);
  const out = new Map<string, RecordEntry>();
  for (const [ns, v] of Object.entries(parsed as Record<string, unknown>)) {
    const e = v as Partial<RecordEntry> | null;
    if (typeof e !== 'object' || e === null || typeof e.uid !== 'string' || typeof e.placements !== 'string')
      throw new RecordError(`${where}: namespace ${ns}: must be {"uid": string, "placements": string}`);
    out.set(ns, { uid: e.uid, placements: e.placements });
  }
  return out;
}

/** recordConfigMap is the ConfigMap holding a tenant's entries, namespaces in name order. */
export function recordConfigMap(namespace: string, tenant: string, entries: RecordEntries): ConfigMap {
  const data: Record<string, RecordEntry> = {};
  for (const name of [...entries.keys()].sort()) data[name] = entries.get(name)!;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: recordName(tenant),
      namespace,
      labels: { [LABEL.managedBy]: IDENTITY.manager, [PLACEMENT_RECORD.label]: tenant },
    },
    data: { [PLACEMENT_RECORD.key]: JSON.stringify(data) },
  };
}

/** changedNamespaces lists the namespaces whose entry differs between two versions of a record. */
export function changedNamespaces(a: RecordEntries, b: RecordEntries): string[] {
  const out: string[] = [];
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(name);
    const y = b.get(name);
    if (x?.uid !== y?.uid || x?.placements !== y?.placements) out.push(name);
  }
  return out.sort();
}

/** recordedValue is a namespace's recorded PLACEMENTS value, when the record holds one for this namespace's uid. */
export function recordedValue(entries: RecordEntries | undefined, ns: KubeObject): string | undefined {
  const m = ns.metadata ?? {};
  const e = m.name === undefined ? undefined : entries?.get(m.name);
  return e !== undefined && e.uid === m.uid ? e.placements : undefined;
}

/**
 * PlacementRecords is the scheduler's side of the records: it loads a tenant's record and writes its changes. Writes
 * of one tenant are made one at a time, and changes made while one is under way go out together in the next, so a
 * burst of placements costs a few writes, not one each; `set` resolves once a write holding its change has landed.
 */
export class PlacementRecords {
  private readonly tenants = new Map<
    string,
    { entries: Map<string, RecordEntry>; dirty: boolean; chain: Promise<void> }
  >();
  /** reads under way, so that a tenant served twice at once is read once */
  private readonly reading = new Map<string, Promise<RecordEntries | undefined>>();

  constructor(
    private readonly client: KubeClient,
    readonly namespace: string,
  ) {}

  /**
   * load reads a tenant's record (undefined: none written yet) and makes it the base of later writes; a tenant held
   * already (served again while this scheduler runs) is answered from what it wrote, which a write under way may not
   * have landed yet.
   */
  load(tenant: string): Promise<RecordEntries | undefined> {
    const held = this.tenants.get(tenant);
    if (held) return Promise.resolve(held.entries);
    let reading = this.reading.get(tenant);
    if (!reading) {
      reading = this.read(tenant).finally(() => this.reading.delete(tenant));
      this.reading.set(tenant, reading);
    }
    return reading;
  }

  private async read(tenant: string): Promise<RecordEntries | undefined> {
    const cm = await this.client.getOrNull<ConfigMap>(R.configmaps, this.namespace, recordName(tenant));
    const entries = cm ? parseRecord(cm) : undefined;
    if (!this.tenants.has(tenant))
      this.tenants.set(tenant, { entries: new Map(entries), dirty: false, chain: Promise.resolve() });
    return entries;
  }

  /** set records a namespace's placement (undefined: none) and resolves once it is written. */
  set(tenant: string, namespace: string, entry: RecordEntry | undefined): Promise<void> {
    let t = this.tenants.get(tenant);
    if (!t) this.tenants.set(tenant, (t = { entries: new Map(), dirty: false, chain: Promise.resolve() }));
    const now = t.entries.get(namespace);
    // Unchanged, and no write failed since: a write carrying it has been made.
    if (now?.uid === entry?.uid && now?.placements === entry?.placements && !t.dirty) return Promise.resolve();
    if (entry) t.entries.set(namespace, entry);
    else t.entries.delete(namespace);
    t.dirty = true;
    const st = t;
    const next = st.chain.then(async () => {
      if (!st.dirty) return;
      st.dirty = false;
      try {
        await this.client.apply(R.configmaps, recordConfigMap(this.namespace, tenant, st.entries), IDENTITY.manager);
      } catch (e) {
        st.dirty = true;
        throw e;
      }
    });
    st.chain = next.catch(() => undefined);
    return next;
  }

  /** forget drops what is held of a tenant, as at the end of a leadership term. */
  forget(tenant: string): void {
    this.tenants.delete(tenant);
  }
}
