import { parse, stringify } from 'yaml';
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
  /**
   * A file holding the client certificate and its key (PEM, as a kubelet's `kubelet-client-current.pem`), referred to
   * by path rather than embedded: Kubernetes' clients read such a file again when it is replaced (a renewal).
   */
  clientCredentialFile?: string;
}

/**
 * renderKubeconfig renders a kubeconfig YAML with one cluster, one user and the context `<user>@<clusterName>` joining
 * them, set as current-context. Certificates and key are embedded as base64 `*-data` fields, or named by path
 * (clientCredentialFile).
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
  if (opts.clientCredentialFile !== undefined) {
    if (opts.clientCertPem !== undefined)
      throw new Error(`kubeconfig for ${opts.user}: clientCredentialFile or clientCertPem, not both`);
    user['client-certificate'] = opts.clientCredentialFile;
    user['client-key'] = opts.clientCredentialFile;
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

/**
 * withServer rewrites the server of a kubeconfig's current cluster to `server` (an https URL with a host), for a
 * front door the platform runs in front of a tenant apiserver; with caPem, that cluster's CA becomes caPem (a front
 * door presenting a certificate of another CA), else the CA stays. Nothing else changes: the credentials are the
 * tenant's own. `what` names the kubeconfig in errors.
 */
export function withServer(text: string, server: string, caPem?: string, what = 'the kubeconfig'): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new Error(`--server ${JSON.stringify(server)} is not a URL (expected https://host[:port])`);
  }
  if (url.protocol !== 'https:' || !url.hostname)
    throw new Error(`--server ${server}: expected an https URL with a host, e.g. https://api.example.com:443`);
  if (caPem !== undefined && !/-----BEGIN CERTIFICATE-----/.test(caPem))
    throw new Error('--certificate-authority: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file');
  const doc: unknown = parse(text);
  const kc = doc as {
    'current-context'?: string;
    contexts?: Array<{ name?: string; context?: { cluster?: string } }>;
    clusters?: Array<{ name?: string; cluster?: Record<string, unknown> }>;
  } | null;
  if (!kc || typeof kc !== 'object') throw new Error(`${what} is not a kubeconfig document`);
  const contextName = kc['current-context'];
  const context = kc.contexts?.find((c) => c.name === contextName);
  if (!context?.context?.cluster)
    throw new Error(`${what}: current-context ${JSON.stringify(contextName)} names no context with a cluster`);
  const cluster = kc.clusters?.find((c) => c.name === context.context!.cluster)?.cluster;
  if (!cluster) throw new Error(`${what}: clusters has no entry ${JSON.stringify(context.context.cluster)}`);
  cluster.server = server.replace(/\/+$/, '');
  if (caPem !== undefined) {
    delete cluster['certificate-authority'];
    cluster['certificate-authority-data'] = base64(caPem);
  }
  return stringify(kc, { lineWidth: 0 });
}
