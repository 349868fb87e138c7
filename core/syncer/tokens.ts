import { isConflict, isNotFound, type KubeClient, type KubeObject } from '../kube/client.ts';
import type { EventHandler } from '../kube/informer.ts';
import { childLogger } from '../log.ts';
import { resourceName } from './execute.ts';
import { R } from '../kube/resources.ts';
import { ANN, IDENTITY, LABEL, MANAGER } from '../names/names.ts';
import type { CacheReader, Effect } from '../plugins/contract.ts';
import type { Tenant } from '../tenancy/tenant.ts';
import { countSend } from './metrics.ts';

/** TOKEN_SECONDS is the lifetime asked for each token; tokens are refreshed at 80% of it. */
export const TOKEN_SECONDS = 3600;

const log = childLogger({ controller: 'syncer' });

type TokenRequestEffect = Extract<Effect, { type: 'serviceAccountToken' }> & {
  superNamespace: string;
  superPodUid: string;
};

/** TokenWrite is the side, verb and resource of one write the minter makes, for vc_syncer_writes_total. */
export type TokenWrite = [side: 'tenant' | 'super', verb: 'create' | 'patch' | 'delete', resource: string];

/**
 * SHARED_GRACE_MS is how long a shared token Secret is kept after it was last asked for although no cached super Pod
 * reads it: the Pod that asked was just created and may not be in the cache yet.
 */
export const SHARED_GRACE_MS = 5_000;
/** SWEEP_DELAY_MS is how long after a super Pod reading a shared token Secret goes the minter looks for unused ones. */
export const SWEEP_DELAY_MS = 1_000;
/** SWEEP_RETRY_MS is when a sweep that failed or kept a Secret for its grace period looks again. */
const SWEEP_RETRY_MS = 2_000;

/**
 * SWEEP_PLUGIN is the plugin label in vc_syncer_writes_total of the delete of a shared Secret that no Pod asked for
 * since this minter started (found by prime): no plugin's key caused it.
 */
export const SWEEP_PLUGIN = 'token-sweep';

/** SharedSecret is what the minter remembers of one shared token Secret (keyed `<super namespace>/<name>`). */
export interface SharedSecret {
  /** the tenant key, for vc_syncer_writes_total */
  tenant: string;
  /** its uid, the precondition of its delete; absent until written or read once */
  uid?: string;
  /** when a Pod last asked for it (ms) */
  lastUse: number;
  /** counts a write made for it in vc_syncer_writes_total */
  wrote?: (w: TokenWrite) => void;
}

interface PodVolumes {
  spec?: {
    volumes?: Array<{
      secret?: { secretName?: string };
      projected?: { sources?: Array<{ secret?: { name?: string } }> };
    }>;
  };
}

/** secretsReadBy lists the `<namespace>/<name>` of every Secret a Pod's volumes read. */
export function secretsReadBy(pod: KubeObject): string[] {
  const ns = pod.metadata?.namespace ?? '';
  const out: string[] = [];
  for (const v of (pod as PodVolumes).spec?.volumes ?? []) {
    if (v.secret?.secretName) out.push(`${ns}/${v.secret.secretName}`);
    for (const s of v.projected?.sources ?? []) if (s.secret?.name) out.push(`${ns}/${s.secret.name}`);
  }
  return out;
}

/**
 * unusedShared splits the shared token Secrets into those to delete (none of the Pods given reads them and they were
 * last asked for at least SHARED_GRACE_MS before `now`) and whether any other unread one is waiting out its grace.
 */
export function unusedShared(
  shared: ReadonlyMap<string, Pick<SharedSecret, 'lastUse'>>,
  pods: Iterable<KubeObject>,
  now: number,
): { remove: string[]; waiting: boolean } {
  const read = new Set<string>();
  for (const p of pods) for (const id of secretsReadBy(p)) if (shared.has(id)) read.add(id);
  const remove: string[] = [];
  let waiting = false;
  for (const [id, s] of shared) {
    if (read.has(id)) continue;
    if (now - s.lastUse < SHARED_GRACE_MS) waiting = true;
    else remove.push(id);
  }
  return { remove, waiting };
}

/** TOKEN_SECRET_SELECTOR selects the super Secrets the minter writes. */
const TOKEN_SECRET_SELECTOR = `${LABEL.managedBy}=${IDENTITY.syncerToken}`;

/**
 * refreshOf is when a token Secret the minter wrote is due again: its refresh annotation, else (written before the
 * annotation existed) 20% of TOKEN_SECONDS before its tokens expire; undefined when it says neither.
 */
export function refreshOf(secret: KubeObject): number | undefined {
  const a = secret.metadata?.annotations ?? {};
  const refresh = Date.parse(a[ANN.tokenRefresh] ?? '');
  if (Number.isFinite(refresh)) return refresh;
  const expires = Date.parse(a[ANN.tokenExpires] ?? '');
  return Number.isFinite(expires) ? expires - 0.2 * TOKEN_SECONDS * 1000 : undefined;
}

/**
 * TokenMinter keeps the super Secrets holding the service account tokens synced Pods ask for, each minted by the Pod's
 * own *tenant* apiserver (with the source's audience and lifetime), the tenant CA and the tenant namespace, and
 * refreshes them at 80% of the shortest lifetime (as the kubelet does). A Secret is either
 * - one Pod's (the effect is not `shared`): its tokens are bound to the tenant Pod (TokenRequest boundObjectRef), and
 *   it is owned by the super Pod, so the super garbage collector removes it with the Pod; or
 * - shared (`shared`): one per super namespace, ServiceAccount and token request, minted once for the ServiceAccount
 *   (no bound object) for every Pod that reads it, and deleted by the minter once no super Pod in the cache reads it:
 *   a super Pod's deletion (podHandler) brings a sweep SWEEP_DELAY_MS later.
 * The refresh time is kept in memory and on the Secret: a new leader reads the token Secrets once (one paged list)
 * before its first mint or sweep, so a restart mints nothing that is not due. Two Pods asking for one shared Secret
 * at once wait for one mint. Why shared is the default and when a platform wants per Pod: README "The syncer's writes".
 */
export class TokenMinter {
  private readonly refreshAt = new Map<string, number>();
  private readonly shared = new Map<string, SharedSecret>();
  private readonly minting = new Map<string, Promise<{ minted: boolean; refreshInMs: number }>>();
  private primed?: Promise<void>;
  private sweepTimer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;
  private stopped = false;

  /** superCache holds the super Pods; without it shared Secrets are never deleted (tests of minting alone). */
  constructor(
    private readonly superClient: KubeClient,
    private readonly superCache?: CacheReader,
  ) {}

  /**
   * prime records the refresh time of every token Secret already in the super cluster, keyed like ensure's, page by
   * page. A failure is logged and leaves the minter minting as if it had found nothing.
   */
  private async prime(): Promise<void> {
    let cont: string | undefined;
    try {
      do {
        const page = await this.superClient.list(R.secrets, {
          labelSelector: TOKEN_SECRET_SELECTOR,
          limit: 500,
          continue: cont,
        });
        for (const sec of page.items) {
          const m = sec.metadata ?? {};
          const owner = m.ownerReferences?.find((o) => o.kind === 'Pod')?.uid;
          const due = refreshOf(sec);
          const id = owner ? `${m.namespace}/${m.name}/${owner}` : `${m.namespace}/${m.name}`;
          if (!owner) {
            // Its Pods may be in the cache only in a moment: it gets a grace period like a Secret just asked for.
            this.shared.set(id, { tenant: m.labels?.[LABEL.cluster] ?? '', uid: m.uid, lastUse: Date.now() });
          }
          if (due !== undefined) this.refreshAt.set(id, due);
        }
        cont = page.metadata.continue || undefined;
      } while (cont);
    } catch (err) {
      log.warn({ err: String(err) }, 'could not read the token Secrets; tokens are minted again as Pods are synced');
    }
    // Shared Secrets whose Pods went while no leader ran.
    if (this.shared.size) this.sweepSoon(SHARED_GRACE_MS);
  }

  /**
   * ensure mints or refreshes the token when due; it says whether it minted and when the next refresh is due, and
   * tells `wrote` of each write just before making it (one TokenRequest per token, then the super Secret).
   */
  async ensure(
    tenant: Tenant,
    tenantClient: KubeClient,
    e: TokenRequestEffect,
    wrote: (w: TokenWrite) => void = () => undefined,
  ): Promise<{ minted: boolean; refreshInMs: number }> {
    await (this.primed ??= this.prime());
    const id = e.shared
      ? `${e.superNamespace}/${e.secretName}`
      : `${e.superNamespace}/${e.secretName}/${e.superPodUid}`;
    if (e.shared) {
      const s = this.shared.get(id);
      this.shared.set(id, { ...s, tenant: tenant.key, lastUse: Date.now(), wrote });
    }
    const due = this.refreshAt.get(id);
    const now = Date.now();
    if (due && due > now) return { minted: false, refreshInMs: due - now };
    const running = this.minting.get(id);
    if (running) return { minted: false, refreshInMs: (await running).refreshInMs };
    const p = this.mint(tenant, tenantClient, e, id, wrote);
    this.minting.set(id, p);
    try {
      return await p;
    } finally {
      this.minting.delete(id);
    }
  }

  private async mint(
    tenant: Tenant,
    tenantClient: KubeClient,
    e: TokenRequestEffect,
    id: string,
    wrote: (w: TokenWrite) => void,
  ): Promise<{ minted: boolean; refreshInMs: number }> {
    const now = Date.now();
    const wanted = e.tokens ?? [{ key: 'token', audiences: e.audiences }];
    const data: Record<string, string> = {};
    let expires = Infinity;
    for (const t of wanted) {
      wrote(['tenant', 'create', resourceName(R.serviceaccounts, 'token')]);
      const tr = await tenantClient.request<{ status: { token: string; expirationTimestamp: string } }>(
        'POST',
        `/api/v1/namespaces/${encodeURIComponent(e.namespace)}/serviceaccounts/${encodeURIComponent(e.serviceAccount)}/token`,
        {
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: {
              audiences: t.audiences ?? [],
              expirationSeconds: t.expirationSeconds ?? TOKEN_SECONDS,
              // A shared token is bound to the ServiceAccount alone: deleting the account revokes it.
              ...(!e.shared && { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: e.pod, uid: e.podUid } }),
            },
          },
        },
      );
      data[t.key] = Buffer.from(tr.status.token).toString('base64');
      expires = Math.min(expires, Date.parse(tr.status.expirationTimestamp));
    }
    const next = now + 0.8 * (Math.min(expires, now + TOKEN_SECONDS * 1000) - now);
    const ca = tenantClient.kubeConfig.getCurrentCluster()?.caData ?? '';
    wrote(['super', 'patch', resourceName(R.secrets)]);
    const written = await this.superClient.apply(
      R.secrets,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: e.secretName,
          namespace: e.superNamespace,
          labels: { [LABEL.managedBy]: IDENTITY.syncerToken, [LABEL.cluster]: tenant.key },
          annotations: {
            [ANN.tokenExpires]: new Date(expires).toISOString(),
            [ANN.tokenRefresh]: new Date(next).toISOString(),
          },
          ...(!e.shared && { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: e.pod, uid: e.superPodUid }] }),
        },
        type: 'Opaque',
        data: { ...data, 'ca.crt': ca, namespace: Buffer.from(e.namespace).toString('base64') },
      },
      MANAGER,
    );
    const s = this.shared.get(id);
    if (s) s.uid = written.metadata?.uid ?? s.uid;
    this.refreshAt.set(id, next);
    if (this.refreshAt.size > 200_000) this.refreshAt.clear();
    return { minted: true, refreshInMs: next - now };
  }

  /** podHandler is the super Pod informer's handler: a deleted Pod that read a shared Secret brings a sweep. */
  podHandler(): EventHandler<KubeObject> {
    return {
      onDelete: (pod) => {
        if (this.shared.size && secretsReadBy(pod).some((id) => this.shared.has(id))) this.sweepSoon(SWEEP_DELAY_MS);
      },
    };
  }

  /** sweepSoon runs sweep after `delayMs`, once however often it is asked meanwhile. */
  private sweepSoon(delayMs: number): void {
    if (this.sweepTimer || this.stopped || !this.superCache) return;
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = undefined;
      void this.sweep();
    }, delayMs);
    this.sweepTimer.unref();
  }

  /**
   * sweep deletes the shared token Secrets no cached super Pod reads (unusedShared), each under its uid, and forgets
   * them, so a Pod that asks for one later gets it minted again. One sweep runs at a time; a failure or a Secret kept
   * for its grace period brings another one SWEEP_RETRY_MS later.
   */
  async sweep(): Promise<void> {
    if (this.sweeping) return this.sweeping;
    this.sweeping = this.sweepOnce().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    if (this.stopped || !this.superCache) return;
    await (this.primed ??= this.prime());
    const { remove, waiting } = unusedShared(this.shared, this.superCache.list(R.pods), Date.now());
    let again = waiting;
    for (const id of remove) {
      const s = this.shared.get(id);
      if (!s || this.minting.has(id) || this.stopped) continue;
      // Asked for while earlier deletes of this sweep ran: its Pod may not be in the cache yet.
      if (Date.now() - s.lastUse < SHARED_GRACE_MS) {
        again = true;
        continue;
      }
      const [namespace, name] = id.split('/') as [string, string];
      const count =
        s.wrote ??
        ((w: TokenWrite) =>
          countSend(this.superClient, {
            tenant: s.tenant,
            plugin: SWEEP_PLUGIN,
            op: 'token',
            side: w[0],
            verb: w[1],
            resource: w[2],
          }));
      try {
        count(['super', 'delete', resourceName(R.secrets)]);
        await this.superClient.delete(R.secrets, namespace, name, s.uid ? { uid: s.uid } : {});
      } catch (err) {
        // A Secret written again since (another uid) is read again; anything else is tried again.
        if (!isConflict(err) && !isNotFound(err)) {
          log.warn({ tenant: s.tenant, secret: id, err: String(err) }, 'could not delete an unused token Secret');
          again = true;
          continue;
        }
      }
      // A Pod that asks for it from now on gets it minted again (and one that asked during the delete, on its next
      // reconcile: its super Pod's scheduling and status bring one).
      this.shared.delete(id);
      this.refreshAt.delete(id);
    }
    if (again) this.sweepSoon(SWEEP_RETRY_MS);
  }

  /** stop cancels a planned sweep; nothing is deleted after it. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
  }
}
