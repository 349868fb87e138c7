import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { recordEvent } from '../../core/kube/events.ts';
import { R } from '../../core/kube/resources.ts';

/** The field manager of the scripted writes. */
const FIELD_MANAGER = 'bench-same-writes';

/**
 * apiCallsOf turns counts per op of vc_syncer_writes_total into API requests: one each, since every request is counted
 * (a minted token is its TokenRequest and its Secret write, two counts of `token`).
 */
export const apiCallsOf = (perOp: Record<string, number>): number => Object.values(perOp).reduce((s, n) => s + n, 0);

/**
 * quota is how many writes of a kind the Pod with this index makes when the syncer made `rate` of them per Pod on
 * average: the writes are spread so the first n Pods make floor(n * rate) in all (rate 0.5: every second Pod).
 */
export function quota(rate: number, index: number): number {
  return Math.floor((index + 1) * rate + 1e-9) - Math.floor(index * rate + 1e-9);
}

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string } & Record<string, unknown>;
}

/** SameWritesTenant is one tenant of the scripted arm: its client and the super namespace its Pods' copies go to. */
export interface SameWritesTenant {
  client: KubeClient;
  superNamespace: string;
}

interface Tracked {
  index: number;
  tenant: SameWritesTenant;
  name: string;
  uid: string;
  bound: boolean;
  statused: boolean;
  /** chain orders this Pod's bind and status writes */
  chain: Promise<void>;
}

/**
 * SameWrites is the "same writes without the syncer" arm: a scripted client that performs, per Pod, the API writes the
 * real syncer performed per Pod (measured from vc_syncer_writes_total in the syncer arm of the same run), with none of
 * its machinery (no informers, queue, plugins or plans), as soon as each write can be made:
 * - at the tenant create: createSuper (the super copy, label bench=samewrites), token (pairs of a TokenRequest in the
 *   tenant, for the ServiceAccount as the syncer's shared tokens are, and a Secret in the super: half as many pairs
 *   as the syncer's `token` count), event (an Event in the tenant, not awaited: the syncer records events on a side lane),
 *   patchSuper / patchTenant (a label on the super copy / tenant Pod), createTenant (a ConfigMap in the tenant,
 *   standing for the vNode), any other op (a ConfigMap applied in the super namespace);
 * - when the super copy is scheduled: bind (the tenant Pod's binding), and every status write but the last;
 * - when the super copy is Running: the last status write (the super status applied to the tenant Pod).
 * Writes are counted when they succeed; failures are kept in `errors`.
 */
export class SameWrites {
  /** writes counts the API requests made, by op (a token pair counts two). */
  readonly writes: Record<string, number> = {};
  /** errors are the failed writes' messages (at most 20 kept). */
  readonly errors: string[] = [];
  private errorCount = 0;
  private readonly bySuperKey = new Map<string, Tracked>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly superClient: KubeClient,
    private readonly perPod: Record<string, number>,
  ) {}

  /** failures is how many writes failed. */
  get failures(): number {
    return this.errorCount;
  }

  private count(op: string, n = 1): void {
    this.writes[op] = (this.writes[op] ?? 0) + n;
  }

  private run(what: string, fn: () => Promise<unknown>): Promise<void> {
    const p = fn().then(
      () => undefined,
      (e: unknown) => {
        this.errorCount++;
        if (this.errors.length < 20) this.errors.push(`${what}: ${e instanceof Error ? e.message : String(e)}`);
      },
    );
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
    return p;
  }

  private n(op: string, index: number): number {
    return quota(this.perPod[op] ?? 0, index);
  }

  /** created is called once the tenant Pod with this index exists (the user's create, not counted here). */
  created(index: number, tenant: SameWritesTenant, pod: Pod): void {
    const name = pod.metadata!.name!;
    const ns = pod.metadata!.namespace!;
    const uid = pod.metadata!.uid!;
    const sns = tenant.superNamespace;
    this.bySuperKey.set(`${sns}/${name}`, {
      index,
      tenant,
      name,
      uid,
      bound: false,
      statused: false,
      chain: Promise.resolve(),
    });
    for (let k = 0; k < this.n('createSuper', index); k++) {
      const superName = k === 0 ? name : `${name}-${k}`;
      void this.run('createSuper', async () => {
        await this.superClient.create(R.pods, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: superName,
            namespace: sns,
            labels: { bench: 'samewrites' },
            annotations: { tenantUid: uid },
          },
          spec: { containers: [{ name: 'c', image: 'nginx' }] },
        });
        this.count('createSuper');
      });
    }
    for (let k = 0; k < quota((this.perPod.token ?? 0) / 2, index); k++)
      void this.run('token', async () => {
        const tr = await tenant.client.request<{ status: { token: string } }>(
          'POST',
          `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/default/token`,
          {
            body: {
              apiVersion: 'authentication.k8s.io/v1',
              kind: 'TokenRequest',
              spec: { audiences: [], expirationSeconds: 3600 },
            },
          },
        );
        this.count('token');
        await this.superClient.apply(
          R.secrets,
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: `${name}-token-${k}`, namespace: sns },
            type: 'Opaque',
            data: { token: Buffer.from(tr.status.token).toString('base64') },
          },
          FIELD_MANAGER,
        );
        this.count('token');
      });
    for (let k = 0; k < this.n('event', index); k++)
      void this.run('event', async () => {
        const err = await recordEvent(
          tenant.client,
          { apiVersion: 'v1', kind: 'Pod', namespace: ns, name, uid },
          'Normal',
          'Synced',
          `bench event ${k}`,
          FIELD_MANAGER,
        );
        if (err) throw err;
        this.count('event');
      });
    const label = (k: number) => ({ metadata: { labels: { [`bench-patch-${k}`]: 'x' } } });
    for (let k = 0; k < this.n('patchSuper', index); k++)
      void this.run('patchSuper', async () => {
        await this.retryNotFound(() => this.superClient.patch(R.pods, sns, name, label(k), 'merge'));
        this.count('patchSuper');
      });
    for (let k = 0; k < this.n('patchTenant', index); k++)
      void this.run('patchTenant', async () => {
        await tenant.client.patch(R.pods, ns, name, label(k), 'merge');
        this.count('patchTenant');
      });
    const configMap = (namespace: string, cmName: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace, name: cmName },
      data: { pod: name },
    });
    for (let k = 0; k < this.n('createTenant', index); k++)
      void this.run('createTenant', async () => {
        await tenant.client.create(R.configmaps, configMap(ns, `sw-${name}-${k}`));
        this.count('createTenant');
      });
    const known = new Set(['createSuper', 'token', 'event', 'patchSuper', 'patchTenant', 'createTenant', 'bind']);
    for (const op of Object.keys(this.perPod)) {
      if (known.has(op) || op === 'patchTenantStatus') continue;
      for (let k = 0; k < this.n(op, index); k++)
        void this.run(op, async () => {
          await this.superClient.apply(
            R.configmaps,
            configMap(sns, `sw-${op.toLowerCase()}-${name}-${k}`),
            FIELD_MANAGER,
          );
          this.count(op);
        });
    }
  }

  /** retryNotFound retries a write on an object another write of this Pod is still creating. */
  private async retryNotFound(fn: () => Promise<unknown>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await fn();
        return;
      } catch (e) {
        if (attempt >= 50 || !(e instanceof Error && /404|not found/i.test(e.message))) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  /**
   * superPod is called for every state of a super copy the watch shows: once scheduled it binds the tenant Pod (and
   * makes every status write but the last), once Running it applies the super status to the tenant Pod. Each Pod's
   * writes are chained, so the status never goes before the bind (the tenant refuses it on an unbound Pod).
   */
  superPod(p: Pod): void {
    const t = this.bySuperKey.get(`${p.metadata?.namespace}/${p.metadata?.name}`);
    if (!t) return;
    const ns = 'default';
    const statuses = this.n('patchTenantStatus', t.index);
    const applyStatus = async () => {
      await t.tenant.client.apply(
        R.pods,
        { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: ns, name: t.name }, status: p.status ?? {} },
        FIELD_MANAGER,
        { force: true, subresource: 'status' },
      );
      this.count('patchTenantStatus');
    };
    if (p.spec?.nodeName && !t.bound) {
      t.bound = true;
      const node = p.spec.nodeName;
      t.chain = t.chain.then(() =>
        this.run('bind', async () => {
          for (let k = 0; k < this.n('bind', t.index); k++) {
            await t.tenant.client.request('POST', KubeClient.path(R.pods, ns, t.name, 'binding'), {
              body: {
                apiVersion: 'v1',
                kind: 'Binding',
                metadata: { name: t.name, namespace: ns, uid: t.uid },
                target: { apiVersion: 'v1', kind: 'Node', name: node },
              },
            });
            this.count('bind');
          }
          for (let k = 0; k < statuses - 1; k++) await applyStatus();
        }),
      );
    }
    if (p.status?.phase === 'Running' && !t.statused && t.bound) {
      t.statused = true;
      if (statuses > 0) t.chain = t.chain.then(() => this.run('patchTenantStatus', applyStatus));
    }
  }

  /** settle waits until every write started so far has finished. */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }
}
