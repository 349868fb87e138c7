import type { KubeClient, KubeObject } from '../kube/client.ts';
import { childLogger } from '../log.ts';
import { resourceName } from './execute.ts';
import { R } from '../kube/resources.ts';
import { ANN, IDENTITY, LABEL, MANAGER } from '../names/names.ts';
import type { Effect } from '../plugins/contract.ts';
import type { Tenant } from '../tenancy/tenant.ts';

/** TOKEN_SECONDS is the lifetime asked for each token; tokens are refreshed at 80% of it. */
export const TOKEN_SECONDS = 3600;

const log = childLogger({ controller: 'syncer' });

type TokenRequestEffect = Extract<Effect, { type: 'serviceAccountToken' }> & {
  superNamespace: string;
  superPodUid: string;
};

/** TokenWrite is the side, verb and resource of one write the minter makes, for vc_syncer_writes_total. */
export type TokenWrite = [side: 'tenant' | 'super', verb: 'create' | 'patch', resource: string];

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
 * TokenMinter keeps, for every synced Pod, a super Secret holding the service account tokens the Pod asks for, each
 * minted by the Pod's own *tenant* apiserver (TokenRequest bound to the tenant Pod, with the source's audience and
 * lifetime), the tenant CA and the tenant namespace, and refreshes them at 80% of the shortest lifetime. The Secret
 * is owned by the super Pod, so the super garbage collector removes it with the Pod. The refresh time is kept in
 * memory and on the Secret: a new leader reads the token Secrets once (one paged list) before its first mint, so a
 * restart mints nothing that is not due.
 *
 * Tokens stay one per Pod, not one per ServiceAccount: a token bound to its tenant Pod stops authenticating when that
 * Pod is deleted and names the Pod to the tenant's audit log; a token shared by the Pods of a ServiceAccount could
 * only be bound to nothing (valid until it expires) or to another object, which would weaken both.
 */
export class TokenMinter {
  private readonly refreshAt = new Map<string, number>();
  private primed?: Promise<void>;

  constructor(private readonly superClient: KubeClient) {}

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
          if (owner && due !== undefined) this.refreshAt.set(`${m.namespace}/${m.name}/${owner}`, due);
        }
        cont = page.metadata.continue || undefined;
      } while (cont);
    } catch (err) {
      log.warn({ err: String(err) }, 'could not read the token Secrets; tokens are minted again as Pods are synced');
    }
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
    const id = `${e.superNamespace}/${e.secretName}/${e.superPodUid}`;
    const due = this.refreshAt.get(id);
    const now = Date.now();
    if (due && due > now) return { minted: false, refreshInMs: due - now };
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
              boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: e.pod, uid: e.podUid },
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
    await this.superClient.apply(
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
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: e.pod, uid: e.superPodUid }],
        },
        type: 'Opaque',
        data: { ...data, 'ca.crt': ca, namespace: Buffer.from(e.namespace).toString('base64') },
      },
      MANAGER,
    );
    this.refreshAt.set(id, next);
    if (this.refreshAt.size > 200_000) this.refreshAt.clear();
    return { minted: true, refreshInMs: next - now };
  }
}
