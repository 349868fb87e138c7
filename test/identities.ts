import { ApiError, KubeClient } from '../core/kube/client.ts';
import { R } from '../core/kube/resources.ts';
import type { LocalSuperCluster } from '../core/dev/local/supercluster.ts';
import { renderKubeconfig } from '../core/pki/kubeconfig.ts';

/**
 * serviceAccountClient returns a client of the super cluster that authenticates as a ServiceAccount, with a token
 * from the TokenRequest API (what a Pod of that ServiceAccount would get projected).
 */
export async function serviceAccountClient(
  sc: LocalSuperCluster,
  namespace: string,
  name: string,
): Promise<KubeClient> {
  const admin = await sc.cluster.client();
  const path = `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`;
  const tr = await admin.request<{ status: { token: string } }>('POST', path, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return KubeClient.fromString(
    renderKubeconfig({
      clusterName: 'super',
      server: sc.cluster.server,
      caPem: sc.cluster.caPem,
      user: name,
      token: tr.status.token,
    }),
  );
}

/** ResourceAttributes are what a SelfSubjectAccessReview asks about. */
export interface ResourceAttributes {
  verb: string;
  resource: string;
  group?: string;
  namespace?: string;
  name?: string;
}

/** canI asks the apiserver, as the client's own identity, whether it may do one thing (`kubectl auth can-i`). */
export async function canI(
  client: KubeClient,
  attrs: ResourceAttributes,
): Promise<{ allowed: boolean; reason?: string }> {
  const r = await client.request<{ status: { allowed: boolean; reason?: string } }>(
    'POST',
    '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
    {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: attrs },
      },
    },
  );
  return r.status;
}

/** ensureNamespace creates a namespace with these labels unless it exists. */
export async function ensureNamespace(
  admin: KubeClient,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  await admin.apply(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }, 'test');
}

/**
 * refusedBy runs a request that admission or authorization must refuse (403) and returns the apiserver's message;
 * it throws when the request went through or failed otherwise.
 */
export async function refusedBy(fn: () => Promise<unknown>, message: RegExp): Promise<string> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof ApiError && e.code === 403 && message.test(e.message)) return e.message;
    throw e;
  }
  throw new Error(`the request went through; expected a refusal matching ${message}`);
}
