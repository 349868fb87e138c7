import { X509Certificate } from 'node:crypto';
import { parse, stringify } from 'yaml';

/**
 * A kubeconfig that comes from a place a tenant or an author controls (the import provisioner's Secret, the admin
 * kubeconfig Secret of a VirtualCluster, a tenant the syncer serves) is read here, never by @kubernetes/client-node's
 * loader, which would run an `exec` plugin, call an `auth-provider` or read certificate, key and token files on the
 * manager's host. Only one thing is accepted: an https server with inline credentials. Every other field is refused by
 * name, so the message says what to change. The platform's own kubeconfig files (the manager's configuration) are
 * trusted: KubeClient.fromFile loads them, and platform.ts runs their exec plugins and re-reads their token files.
 */

/** SafeKubeconfig is the one cluster and user of a kubeconfig that passed parseKubeconfig. */
export interface SafeKubeconfig {
  /** the https URL of the apiserver */
  server: string;
  /** the CA bundle (PEM) from certificate-authority-data; absent: the system's trusted CAs */
  caPem?: string;
  /** the server name to verify instead of the server's host */
  tlsServerName?: string;
  /** client certificate and key (PEM) from client-certificate-data and client-key-data */
  certPem?: string;
  keyPem?: string;
  /** bearer token */
  token?: string;
  /** the name of the context used, and its namespace */
  context: string;
  namespace?: string;
}

/** KubeconfigError is a kubeconfig refused by parseKubeconfig: where it came from, which field, and why. */
export class KubeconfigError extends Error {
  /** reason is the machine-readable reason, for a status condition */
  readonly reason = 'KubeconfigRefused';

  constructor(
    /** where the kubeconfig came from, e.g. `Secret team-a/imported (key "kubeconfig")` */
    readonly source: string,
    /** the path of the refused field, e.g. `users[0].user.exec` */
    readonly field: string,
    why: string,
  ) {
    super(`kubeconfig in ${source}: ${field}: ${why}`);
    this.name = 'KubeconfigError';
  }
}

const FILES = 'the manager never reads files on its own host because a kubeconfig names them';
const INLINE = 'give the credentials inline (client-certificate-data and client-key-data, or token)';

/** REFUSED_USER_FIELDS are the user fields refused, each with the reason given. */
const REFUSED_USER_FIELDS: Readonly<Record<string, string>> = {
  exec: `exec plugins are refused: the manager never runs a command a kubeconfig names; ${INLINE}`,
  'auth-provider': `auth-provider plugins are refused: the manager never calls a credential plugin a kubeconfig names; ${INLINE}`,
  tokenFile: `token files are refused: ${FILES}; use token`,
  'client-certificate': `certificate files are refused: ${FILES}; use client-certificate-data`,
  'client-key': `key files are refused: ${FILES}; use client-key-data`,
  username: `basic authentication is refused; ${INLINE}`,
  password: `basic authentication is refused; ${INLINE}`,
  as: 'impersonation is refused',
  'as-uid': 'impersonation is refused',
  'as-groups': 'impersonation is refused',
  'as-user-extra': 'impersonation is refused',
};
const USER_FIELDS = new Set(['client-certificate-data', 'client-key-data', 'token', 'extensions']);

/** REFUSED_CLUSTER_FIELDS are the cluster fields refused, each with the reason given. */
const REFUSED_CLUSTER_FIELDS: Readonly<Record<string, string>> = {
  'certificate-authority': `CA files are refused: ${FILES}; use certificate-authority-data`,
  'insecure-skip-tls-verify': 'skipping TLS verification is refused: give the server CA in certificate-authority-data',
  'proxy-url': 'proxies are refused: the manager connects to the server directly',
};
const CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority-data',
  'tls-server-name',
  'extensions',
  'disable-compression',
]);
const CONTEXT_FIELDS = new Set(['cluster', 'user', 'namespace', 'extensions']);
const TOP_FIELDS = new Set([
  'apiVersion',
  'kind',
  'clusters',
  'users',
  'contexts',
  'current-context',
  'preferences',
  'extensions',
]);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Named {
  name: string;
  body: Obj;
  path: string;
}

/**
 * parseKubeconfig reads a kubeconfig's YAML text and returns its one usable cluster and user, or throws
 * KubeconfigError naming `source` and the field. Refused anywhere in the file (used entries or not): exec and
 * auth-provider plugins, token, certificate and key files, basic auth and impersonation, insecure-skip-tls-verify,
 * proxy-url, unknown fields, a server that is not https, data that is not base64 PEM. The context used is
 * current-context; without one, the only context; with several and none current the file is ambiguous and refused.
 */
export function parseKubeconfig(text: string, source: string): SafeKubeconfig {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new KubeconfigError(
      source,
      '(document)',
      `not YAML: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
  }
  if (!isObj(doc))
    throw new KubeconfigError(
      source,
      '(document)',
      'not a kubeconfig: expected a mapping with clusters, users and contexts',
    );
  for (const k of Object.keys(doc)) if (!TOP_FIELDS.has(k)) throw new KubeconfigError(source, k, 'unknown field');
  const clusters = entries(doc, 'clusters', 'cluster', source);
  const users = entries(doc, 'users', 'user', source);
  const contexts = entries(doc, 'contexts', 'context', source);
  for (const c of clusters) checkFields(c, CLUSTER_FIELDS, REFUSED_CLUSTER_FIELDS, source);
  for (const u of users) checkFields(u, USER_FIELDS, REFUSED_USER_FIELDS, source);
  for (const c of contexts) checkFields(c, CONTEXT_FIELDS, {}, source);

  const current = doc['current-context'];
  let ctx: Named | undefined;
  if (current !== undefined && current !== '') {
    if (typeof current !== 'string') throw new KubeconfigError(source, 'current-context', 'must be a string');
    ctx = contexts.find((c) => c.name === current);
    if (!ctx)
      throw new KubeconfigError(
        source,
        'current-context',
        `names context "${current}", which the file does not define`,
      );
  } else if (contexts.length === 1) {
    ctx = contexts[0];
  } else {
    throw new KubeconfigError(
      source,
      'current-context',
      contexts.length
        ? `is not set and there are ${contexts.length} contexts: name the one to use`
        : 'no context is defined',
    );
  }
  const cluster = byName(clusters, ctx.body.cluster, `${ctx.path}.cluster`, 'cluster', source);
  const user =
    ctx.body.user === undefined || ctx.body.user === ''
      ? undefined
      : byName(users, ctx.body.user, `${ctx.path}.user`, 'user', source);

  const out: SafeKubeconfig = { server: serverOf(cluster, source), context: ctx.name };
  const ns = ctx.body.namespace;
  if (typeof ns === 'string' && ns) out.namespace = ns;
  const ca = cluster.body['certificate-authority-data'];
  if (ca !== undefined) out.caPem = pem(ca, `${cluster.path}.certificate-authority-data`, 'CERTIFICATE', source);
  const sni = cluster.body['tls-server-name'];
  if (sni !== undefined) {
    if (typeof sni !== 'string' || !sni)
      throw new KubeconfigError(source, `${cluster.path}.tls-server-name`, 'must be a non-empty string');
    out.tlsServerName = sni;
  }
  if (user) {
    const b = user.body;
    const cert = b['client-certificate-data'];
    const key = b['client-key-data'];
    if ((cert === undefined) !== (key === undefined)) {
      throw new KubeconfigError(
        source,
        `${user.path}.${cert === undefined ? 'client-certificate-data' : 'client-key-data'}`,
        'client-certificate-data and client-key-data go together',
      );
    }
    if (cert !== undefined) {
      out.certPem = pem(cert, `${user.path}.client-certificate-data`, 'CERTIFICATE', source);
      out.keyPem = pem(key, `${user.path}.client-key-data`, 'PRIVATE KEY', source);
    }
    const token = b.token;
    if (token !== undefined) {
      if (typeof token !== 'string' || !token || /[\r\n]/.test(token))
        throw new KubeconfigError(source, `${user.path}.token`, 'must be a non-empty one-line string');
      out.token = token;
    }
  }
  return out;
}

function entries(doc: Obj, list: string, inner: string, source: string): Named[] {
  const v = doc[list];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new KubeconfigError(source, list, 'must be a list');
  const seen = new Set<string>();
  return v.map((e, i) => {
    const path = `${list}[${i}]`;
    if (!isObj(e) || typeof e.name !== 'string' || !e.name)
      throw new KubeconfigError(source, path, `must be a mapping with a name and a ${inner}`);
    if (seen.has(e.name))
      throw new KubeconfigError(source, `${path}.name`, `"${e.name}" is defined twice: the file is ambiguous`);
    seen.add(e.name);
    for (const k of Object.keys(e))
      if (k !== 'name' && k !== inner) throw new KubeconfigError(source, `${path}.${k}`, 'unknown field');
    const body = e[inner] ?? {};
    if (!isObj(body)) throw new KubeconfigError(source, `${path}.${inner}`, 'must be a mapping');
    return { name: e.name, body, path: `${path}.${inner}` };
  });
}

function checkFields(
  e: Named,
  allowed: ReadonlySet<string>,
  refused: Readonly<Record<string, string>>,
  source: string,
): void {
  for (const k of Object.keys(e.body)) {
    if (Object.hasOwn(refused, k)) throw new KubeconfigError(source, `${e.path}.${k}`, refused[k]!);
    if (!allowed.has(k))
      throw new KubeconfigError(source, `${e.path}.${k}`, 'unknown field: only inline credentials are accepted');
  }
}

function byName(list: Named[], name: unknown, field: string, what: string, source: string): Named {
  if (typeof name !== 'string' || !name) throw new KubeconfigError(source, field, `must name a ${what}`);
  const found = list.find((e) => e.name === name);
  if (!found) throw new KubeconfigError(source, field, `names ${what} "${name}", which the file does not define`);
  return found;
}

function serverOf(cluster: Named, source: string): string {
  const field = `${cluster.path}.server`;
  const s = cluster.body.server;
  if (typeof s !== 'string' || !s) throw new KubeconfigError(source, field, 'is required');
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new KubeconfigError(source, field, `"${s}" is not a URL`);
  }
  if (url.protocol !== 'https:')
    throw new KubeconfigError(source, field, `"${s}" is not https: the manager talks to apiservers over TLS only`);
  if (url.username || url.password) throw new KubeconfigError(source, field, 'credentials in the URL are refused');
  return s;
}

function pem(v: unknown, field: string, label: 'CERTIFICATE' | 'PRIVATE KEY', source: string): string {
  if (typeof v !== 'string' || !v) throw new KubeconfigError(source, field, 'must be base64 PEM data');
  const text = Buffer.from(v, 'base64').toString('utf8');
  const block = label === 'CERTIFICATE' ? /-----BEGIN CERTIFICATE-----/ : /-----BEGIN (RSA |EC )?PRIVATE KEY-----/;
  if (!block.test(text))
    throw new KubeconfigError(
      source,
      field,
      `must be base64 of a PEM ${label === 'CERTIFICATE' ? 'certificate' : 'private key'}`,
    );
  if (label === 'CERTIFICATE') {
    try {
      new X509Certificate(text);
    } catch (e) {
      throw new KubeconfigError(
        source,
        field,
        `is not a readable certificate (${e instanceof Error ? e.message : String(e)})`,
      );
    }
  }
  return text;
}

/**
 * renderSafeKubeconfig writes a SafeKubeconfig back as kubeconfig YAML with one cluster, user and context, all inline:
 * what the manager passes on (to the kubeconfig Secret, to the syncer) is only what it accepted.
 */
export function renderSafeKubeconfig(k: SafeKubeconfig, name = 'default'): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const cluster: Obj = { server: k.server };
  if (k.caPem) cluster['certificate-authority-data'] = b64(k.caPem);
  if (k.tlsServerName) cluster['tls-server-name'] = k.tlsServerName;
  const user: Obj = {};
  if (k.certPem && k.keyPem) {
    user['client-certificate-data'] = b64(k.certPem);
    user['client-key-data'] = b64(k.keyPem);
  }
  if (k.token) user.token = k.token;
  const context: Obj = { cluster: name, user: name };
  if (k.namespace) context.namespace = k.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context }],
    'current-context': name,
  });
}
