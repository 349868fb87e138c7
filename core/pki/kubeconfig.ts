import { stringify } from 'yaml';
import { parseKubeconfig } from '../kube/kubeconfig.ts';

/** KubeconfigOptions describes the single cluster, user and context of a kubeconfig. */
export interface KubeconfigOptions {
  clusterName: string;
  /** apiserver URL, e.g. `https://127.0.0.1:6443`. */
  server: string;
  /** CA that signed the apiserver's serving certificate. */
  caPem: string;
  user: string;
  /** Client certificate; needs clientKeyPem. */
  clientCertPem?: string;
  clientKeyPem?: string;
  /** Bearer token, e.g. a service-account token. */
  token?: string;
}

/**
 * renderKubeconfig renders a kubeconfig YAML with one cluster, one user and the context `<user>@<clusterName>` joining
 * them, set as current-context. Certificates and key are embedded as base64 `*-data` fields.
 */
export function renderKubeconfig(opts: KubeconfigOptions): string {
  if ((opts.clientCertPem === undefined) !== (opts.clientKeyPem === undefined)) {
    throw new Error(`kubeconfig for ${opts.user}: clientCertPem and clientKeyPem go together`);
  }
  const context = `${opts.user}@${opts.clusterName}`;
  const user: Record<string, string> = {};
  if (opts.clientCertPem !== undefined && opts.clientKeyPem !== undefined) {
    user['client-certificate-data'] = base64(opts.clientCertPem);
    user['client-key-data'] = base64(opts.clientKeyPem);
  }
  if (opts.token !== undefined) user.token = opts.token;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: opts.clusterName, cluster: { server: opts.server, 'certificate-authority-data': base64(opts.caPem) } },
    ],
    users: [{ name: opts.user, user }],
    contexts: [{ name: context, context: { cluster: opts.clusterName, user: opts.user } }],
    'current-context': context,
    preferences: {},
  };
  return stringify(config, { lineWidth: 0 });
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/**
 * caFromKubeconfig returns the CA (PEM) of the current cluster of a kubeconfig, from certificate-authority-data. It
 * reads the kubeconfig with the same parser as every other kubeconfig the manager is handed (core/kube/kubeconfig.ts).
 */
export function caFromKubeconfig(text: string): string {
  const kc = parseKubeconfig(text, 'the tenant kubeconfig');
  if (!kc.caPem) throw new Error(`context ${kc.context} of the kubeconfig has no certificate-authority-data`);
  return kc.caPem;
}
