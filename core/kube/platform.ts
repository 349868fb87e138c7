import { existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse } from 'yaml';
import {
  certFileSource,
  execSource,
  fileTokenSource,
  joinSources,
  staticSource,
  type CredentialSource,
} from './credentials.ts';
import { parseExecConfig, type ExecClusterInfo } from './exec.ts';
import { Kubeconfig } from './kubeconfigfile.ts';

/**
 * The configurations the platform owns: its own kubeconfig files (the manager's and vn-agent's --kubeconfig, the
 * CLI user's) and the in-cluster ServiceAccount. Their credentials may run an exec plugin and read files, re-read as
 * they change (credentials.ts). Kubeconfigs from tenants or Secrets never come here: kubeconfig.ts refuses all that.
 */

/** SERVICE_ACCOUNT_DIR is where a Pod's ServiceAccount token, CA and namespace are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** InClusterConfig is where a process in a Pod finds its apiserver, as client-go's rest.InClusterConfig. */
export interface InClusterConfig {
  server: string;
  caFile: string;
  tokenFile: string;
  /** the Pod's namespace, from the namespace file, when mounted */
  namespace?: string;
}

/** InClusterError says why this process cannot use the in-cluster configuration (not in a Pod, nothing mounted). */
export class InClusterError extends Error {
  override readonly name = 'InClusterError';
}

/**
 * inClusterConfig reads the in-cluster configuration from the environment (KUBERNETES_SERVICE_HOST and _PORT) and
 * the ServiceAccount directory (`dir`, for tests), or throws InClusterError saying what is missing.
 */
export function inClusterConfig(
  env: NodeJS.ProcessEnv = process.env,
  dir: string = SERVICE_ACCOUNT_DIR,
): InClusterConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new InClusterError(
      'cannot use the in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set ' +
        '(they are in a Pod); outside a cluster, give a kubeconfig',
    );
  const tokenFile = join(dir, 'token');
  const caFile = join(dir, 'ca.crt');
  for (const f of [tokenFile, caFile])
    if (!existsSync(f))
      throw new InClusterError(
        `cannot use the in-cluster configuration: ${f} does not exist (is a ServiceAccount token mounted?)`,
      );
  const out: InClusterConfig = { server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile, tokenFile };
  const nsFile = join(dir, 'namespace');
  if (existsSync(nsFile)) {
    const ns = readFileSync(nsFile, 'utf8').trim();
    if (ns) out.namespace = ns;
  }
  return out;
}

/**
 * inClusterKubeConfig is a Kubeconfig of the in-cluster configuration, its token given as a token file:
 * KubeClient.fromKubeConfig re-reads it as it rotates.
 */
export function inClusterKubeConfig(c: InClusterConfig): Kubeconfig {
  const kc = new Kubeconfig();
  kc.loadFromOptions({
    clusters: [{ name: 'in-cluster', server: c.server, caFile: c.caFile, skipTLSVerify: false }],
    users: [{ name: 'in-cluster', authProvider: { name: 'tokenFile', config: { tokenFile: c.tokenFile } } }],
    contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'in-cluster', namespace: c.namespace }],
    currentContext: 'in-cluster',
  });
  return kc;
}

/** PlatformAuth is a trusted configuration's TLS settings for the agent and its per-request credentials. */
export interface PlatformAuth {
  tls: https.RequestOptions;
  credentials: CredentialSource;
}

/** PlatformFileHints are what the kubeconfig loader (client-node's entry mapping) drops from a file and the credentials need. */
export interface PlatformFileHints {
  /** the current user's tokenFile, absolute */
  tokenFile?: string;
  /** the kubeconfig's directory, for relative exec commands */
  baseDir?: string;
}

/**
 * platformAuth maps the current cluster and user of a trusted kubeconfig to TLS settings and a credential source:
 * an exec plugin, a token file (`tokenFile`, or the in-cluster token provider) re-read as it changes, a static
 * token, basic auth, client certificates inline or as files re-read as they change. Other auth-providers are applied
 * once through client-node.
 */
export async function platformAuth(kc: Kubeconfig, hints: PlatformFileHints = {}): Promise<PlatformAuth> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const user = kc.getCurrentUser();
  const tls: https.RequestOptions = { rejectUnauthorized: !cluster.skipTLSVerify };
  if (cluster.caData) tls.ca = Buffer.from(cluster.caData, 'base64').toString('utf8');
  else if (cluster.caFile) tls.ca = readFileSync(cluster.caFile, 'utf8');
  if (cluster.tlsServerName) tls.servername = cluster.tlsServerName;
  const parts: CredentialSource[] = [];
  if (user) {
    const provider = user.authProvider as { name?: unknown; config?: { tokenFile?: unknown } } | null | undefined;
    if (user.exec) {
      const info: ExecClusterInfo = { server: cluster.server };
      if (tls.ca) info['certificate-authority-data'] = Buffer.from(String(tls.ca)).toString('base64');
      if (cluster.tlsServerName) info['tls-server-name'] = cluster.tlsServerName;
      if (cluster.skipTLSVerify) info['insecure-skip-tls-verify'] = true;
      parts.push(execSource(parseExecConfig(user.exec, user.name, hints.baseDir, info), user.name));
    } else if (hints.tokenFile) parts.push(fileTokenSource(hints.tokenFile));
    else if (provider?.name === 'tokenFile' && typeof provider.config?.tokenFile === 'string')
      parts.push(fileTokenSource(provider.config.tokenFile));
    else if (user.token) parts.push(staticSource({ authorization: `Bearer ${user.token}` }));
    else if (user.username)
      parts.push(
        staticSource({
          authorization: `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`,
        }),
      );
    else if (provider) {
      const once: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(once);
      const header = (once.headers as Record<string, string> | undefined)?.Authorization;
      if (header) parts.push(staticSource({ authorization: header }));
    }
    if (user.certData && user.keyData)
      parts.push(
        staticSource({
          cert: Buffer.from(user.certData, 'base64').toString('utf8'),
          key: Buffer.from(user.keyData, 'base64').toString('utf8'),
        }),
      );
    else if (user.certFile && user.keyFile) parts.push(certFileSource(user.certFile, user.keyFile));
  }
  return { tls, credentials: parts.length ? joinSources(parts) : staticSource({}) };
}

/**
 * platformFileHints reads from a kubeconfig file what the loader drops: the current user's `tokenFile`
 * (relative to the file's directory, as kubectl) and that directory.
 */
export function platformFileHints(path: string, kc: Kubeconfig): PlatformFileHints {
  const baseDir = dirname(resolve(path));
  const hints: PlatformFileHints = { baseDir };
  const name = kc.getCurrentUser()?.name;
  const doc = parse(readFileSync(path, 'utf8')) as {
    users?: Array<{ name?: unknown; user?: { tokenFile?: unknown } }>;
  };
  const entry = Array.isArray(doc?.users) ? doc.users.find((u) => u?.name === name) : undefined;
  const tf = entry?.user?.tokenFile;
  if (typeof tf === 'string' && tf) hints.tokenFile = isAbsolute(tf) ? tf : resolve(baseDir, tf);
  return hints;
}
