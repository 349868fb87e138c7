import type { KubeClient } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, IDENTITY, LABEL, MANAGER } from '../names/names.ts';
import type { Effect } from '../plugins/contract.ts';
import type { Tenant } from '../tenancy/tenant.ts';

/** TOKEN_SECONDS is the lifetime asked for each token; tokens are refreshed at 80% of it. */
export const TOKEN_SECONDS = 3600;

type TokenRequestEffect = Extract<Effect, { type: 'serviceAccountToken' }> & {
  superNamespace: string;
  superPodUid: string;
};

/**
 * TokenMinter keeps, for every synced Pod, a super Secret holding the service account tokens the Pod asks for, each
 * minted by the Pod's own *tenant* apiserver (TokenRequest bound to the tenant Pod, with the source's audience and
 * lifetime), the tenant CA and the tenant namespace, and refreshes them at 80% of the shortest lifetime. The Secret
 * is owned by the super Pod, so the super garbage collector removes it with the Pod. Refresh times live in memory:
 * after a restart each Pod's token is minted once more.
 */
export class TokenMinter {
  private readonly refreshAt = new Map<string, number>();

  constructor(private readonly superClient: KubeClient) {}

  /** ensure mints or refreshes the token when due; it says whether it minted and when the next refresh is due. */
  async ensure(
    tenant: Tenant,
    tenantClient: KubeClient,
    e: TokenRequestEffect,
  ): Promise<{ minted: boolean; refreshInMs: number }> {
    const id = `${e.superNamespace}/${e.secretName}/${e.superPodUid}`;
    const due = this.refreshAt.get(id);
    const now = Date.now();
    if (due && due > now) return { minted: false, refreshInMs: due - now };
    const wanted = e.tokens ?? [{ key: 'token', audiences: e.audiences }];
    const data: Record<string, string> = {};
    let expires = Infinity;
    for (const t of wanted) {
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
    const ca = tenantClient.kubeConfig.getCurrentCluster()?.caData ?? '';
    await this.superClient.apply(
      R.secrets,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: e.secretName,
          namespace: e.superNamespace,
          labels: { [LABEL.managedBy]: IDENTITY.syncerToken, [LABEL.cluster]: tenant.key },
          annotations: { [ANN.tokenExpires]: new Date(expires).toISOString() },
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: e.pod, uid: e.superPodUid }],
        },
        type: 'Opaque',
        data: { ...data, 'ca.crt': ca, namespace: Buffer.from(e.namespace).toString('base64') },
      },
      MANAGER,
    );
    const next = now + 0.8 * (Math.min(expires, now + TOKEN_SECONDS * 1000) - now);
    this.refreshAt.set(id, next);
    if (this.refreshAt.size > 200_000) this.refreshAt.clear();
    return { minted: true, refreshInMs: next - now };
  }
}
