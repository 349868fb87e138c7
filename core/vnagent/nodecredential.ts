import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { KubeClient } from '../kube/client.ts';
import { CachingSource, FILE_CHECK_MS, type Auth, type CredentialSource } from '../kube/credentials.ts';

/** NODE_USER_PREFIX starts the user name of a node's credential: `system:node:<node>`, what the Node authorizer reads. */
export const NODE_USER_PREFIX = 'system:node:';

/** NODES_GROUP is the group a node's credential must carry for the Node authorizer to decide its requests. */
export const NODES_GROUP = 'system:nodes';

/**
 * NodeCredential is a node's own client certificate and key for the super cluster (user `system:node:<nodeName>`,
 * group `system:nodes`, as the kubelet's). With it the kube-apiserver's Node authorizer lets the vn-agent read only
 * the Pods bound to that node and only that Node object.
 */
export interface NodeCredential {
  nodeName: string;
  certPem: string;
  keyPem: string;
  /** when the certificate stops being valid */
  notAfter: Date;
}

/** NodeCredentialError is a node credential that cannot be used; its message names the file and what is wrong. */
export class NodeCredentialError extends Error {
  override name = 'NodeCredentialError';
}

/**
 * nodeIdentityOf returns the node a client certificate speaks for (subject CN `system:node:<node>` with O
 * `system:nodes`), or why it speaks for none.
 */
export function nodeIdentityOf(certPem: string): { nodeName: string } | { error: string } {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (e) {
    return { error: `not a certificate: ${e instanceof Error ? e.message : String(e)}` };
  }
  const lines = cert.subject.split('\n');
  const cn = lines.filter((l) => l.startsWith('CN=')).map((l) => l.slice(3));
  const orgs = lines.filter((l) => l.startsWith('O=')).map((l) => l.slice(2));
  const user = cn[0] ?? '';
  if (cn.length !== 1 || !user.startsWith(NODE_USER_PREFIX) || user.length === NODE_USER_PREFIX.length)
    return { error: `its subject CN is ${JSON.stringify(user)}, not ${NODE_USER_PREFIX}<node>` };
  if (!orgs.includes(NODES_GROUP))
    return { error: `its subject O is ${JSON.stringify(orgs.join(','))}, without the group ${NODES_GROUP}` };
  return { nodeName: user.slice(NODE_USER_PREFIX.length) };
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g;

function pemBlocks(text: string): Array<{ type: string; pem: string }> {
  return [...text.matchAll(PEM_BLOCK)].map((m) => ({ type: m[1]!, pem: `${m[0]}\n` }));
}

/**
 * parseNodeCredential reads a node credential from PEM text: the certificate (chain) from certText, the private key
 * from keyText (often the same text: the kubelet keeps both in kubelet-client-current.pem). It checks that the key
 * belongs to the certificate, that the certificate is valid now and names a node, and, when expectNode is given,
 * that it is that node. `source` names where the text came from in errors.
 */
export function parseNodeCredential(
  certText: string,
  keyText: string,
  source: string,
  expectNode?: string,
  now: Date = new Date(),
): NodeCredential {
  const fail = (why: string) => new NodeCredentialError(`node credential ${source}: ${why}`);
  const certs = pemBlocks(certText).filter((b) => b.type === 'CERTIFICATE');
  const key = pemBlocks(keyText).find((b) => /PRIVATE KEY$/.test(b.type));
  if (!certs.length) throw fail('holds no CERTIFICATE block');
  if (!key) throw fail('holds no PRIVATE KEY block');
  const id = nodeIdentityOf(certs[0]!.pem);
  if ('error' in id) throw fail(`the certificate is not a node's: ${id.error}`);
  if (expectNode && id.nodeName !== expectNode)
    throw fail(`the certificate is node ${id.nodeName}'s, but this agent runs on node ${expectNode}`);
  const cert = new X509Certificate(certs[0]!.pem);
  try {
    if (!cert.checkPrivateKey(createPrivateKey(key.pem)))
      throw fail('the private key does not belong to the certificate');
  } catch (e) {
    if (e instanceof NodeCredentialError) throw e;
    throw fail(`the private key cannot be read: ${e instanceof Error ? e.message : String(e)}`);
  }
  const notAfter = new Date(cert.validTo);
  if (notAfter.getTime() <= now.getTime()) throw fail(`the certificate expired at ${notAfter.toISOString()}`);
  return { nodeName: id.nodeName, certPem: certs.map((c) => c.pem).join(''), keyPem: key.pem, notAfter };
}

/**
 * loadNodeCredential reads a node credential from files (see parseNodeCredential); keyFile defaults to certFile. A
 * missing file is an error that says how the credential is meant to get there (deploy/vn-agent/daemonset.yaml).
 */
export function loadNodeCredential(o: { certFile: string; keyFile?: string; nodeName?: string }): NodeCredential {
  const keyFile = o.keyFile ?? o.certFile;
  for (const [field, file] of [
    ['nodeClientCert', o.certFile],
    ['nodeClientKey', keyFile],
  ] as const) {
    if (!existsSync(file))
      throw new NodeCredentialError(
        `node credential: ${field} ${file} does not exist. The vn-agent reads super Pods with its node's own ` +
          `credential (user ${NODE_USER_PREFIX}<node>, group ${NODES_GROUP}): mount the kubelet's client ` +
          'certificate read-only (hostPath /var/lib/kubelet/pki/kubelet-client-current.pem, see ' +
          'deploy/vn-agent/daemonset.yaml), or issue one for this node with the cluster CA',
      );
  }
  const source = keyFile === o.certFile ? o.certFile : `${o.certFile} (key ${keyFile})`;
  return parseNodeCredential(readFileSync(o.certFile, 'utf8'), readFileSync(keyFile, 'utf8'), source, o.nodeName);
}

/**
 * RenewedNodeCredential is a node credential that renewals replace while the clients built on it run (nodeSuperClient
 * with it as their source): every request carries the current one, and a new certificate opens new connections, so
 * requests and watches started after a renewal no longer present the old one.
 */
export class RenewedNodeCredential implements CredentialSource {
  constructor(private cred: NodeCredential) {}

  /** current is the credential requests carry now. */
  get current(): NodeCredential {
    return this.cred;
  }

  /** replace takes up a renewed credential; one of another node is refused (its Pods are not this node's). */
  replace(next: NodeCredential): void {
    if (next.nodeName !== this.cred.nodeName)
      throw new NodeCredentialError(
        `node credential: a renewal for node ${next.nodeName} cannot replace node ${this.cred.nodeName}'s`,
      );
    this.cred = next;
  }

  get(): Auth {
    return { cert: this.cred.certPem, key: this.cred.keyPem };
  }

  rejected(used: Auth): boolean {
    return used.cert !== this.cred.certPem;
  }
}

/**
 * nodeCredentialFileSource gives the node credential of files (loadNodeCredential's) to every request, read again
 * every `checkMs` and after a 401, so a certificate the kubelet rotates in kubelet-client-current.pem is taken up
 * without a restart. A read that fails (a file half written, a certificate of another node) keeps the credential read
 * before, logged, until the next check.
 */
export function nodeCredentialFileSource(
  o: { certFile: string; keyFile?: string; nodeName?: string },
  checkMs = FILE_CHECK_MS,
): CredentialSource {
  const keyFile = o.keyFile ?? o.certFile;
  return new CachingSource(
    `node credential ${o.certFile}${keyFile === o.certFile ? '' : ` (key ${keyFile})`}`,
    async () => {
      const c = loadNodeCredential(o);
      return { value: { cert: c.certPem, key: c.keyPem }, validUntil: Date.now() + checkMs };
    },
  );
}

/**
 * nodeSuperClient is a client for the same super cluster as `base` (its server and CA) that authenticates with the
 * node credential instead of base's user: `cred`, or what `source` gives at each request (a RenewedNodeCredential,
 * nodeCredentialFileSource) when one is given.
 */
export function nodeSuperClient(base: KubeClient, cred: NodeCredential, source?: CredentialSource): KubeClient {
  const cluster = base.kubeConfig.getCurrentCluster();
  if (!cluster) throw new NodeCredentialError('node credential: the super cluster kubeconfig has no current cluster');
  const caPem = cluster.caData
    ? Buffer.from(cluster.caData, 'base64').toString('utf8')
    : cluster.caFile
      ? readFileSync(cluster.caFile, 'utf8')
      : undefined;
  return KubeClient.fromSafe(
    {
      server: cluster.server,
      caPem,
      tlsServerName: cluster.tlsServerName,
      certPem: cred.certPem,
      keyPem: cred.keyPem,
      context: `${NODE_USER_PREFIX}${cred.nodeName}`,
    },
    {},
    source,
  );
}
