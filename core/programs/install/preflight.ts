import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import { ApiError, type KubeClient, type KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import type { InstallComponent } from './render.ts';

/** MIN_SERVER is the oldest Kubernetes `vc install` supports: ValidatingAdmissionPolicy v1 is GA from 1.30. */
export const MIN_SERVER = { major: 1, minor: 30 } as const;

/** Probe is what one check found: present, absent (with why), or not decidable from here (with why). */
export type Probe = { state: 'ok'; detail?: string } | { state: 'missing' | 'unknown'; detail: string };

/** KubeletCAFact is where the vn-agent's kubelet CA comes from, or why it cannot be found. */
export type KubeletCAFact =
  | { source: 'flag'; file: string; pem: string }
  | { source: 'cluster'; pem: string; nodes: string[] }
  | { source: 'none'; detail: string };

/** PreflightFacts are what gatherFacts read from the cluster, the input of preflightLines. */
export interface PreflightFacts {
  server: { gitVersion: string; major: number; minor: number } | { error: string };
  crdApi: boolean;
  vapApi: boolean;
  csrApi: boolean;
  podSecurity: Probe;
  nodeAuthorizer: Probe;
  nodeRestriction: Probe;
  /** may this identity create CertificateSigningRequests and approve them for kube-apiserver-client */
  csrRights: Probe;
  kubeletCA: KubeletCAFact;
  /** the Cluster API Cluster CRD, which the scheduler component's super cluster registry reads */
  clusterCrd: boolean;
}

/** PreflightLine is one line of the preflight: what was checked, whether it holds, and how to fix it when not. */
export interface PreflightLine {
  ok: boolean;
  /** a failed fatal line stops the install */
  fatal: boolean;
  text: string;
  fix?: string;
}

/**
 * preflightLines decides, from the facts, one line per requirement of the chosen components: the cluster's version,
 * CRD, ValidatingAdmissionPolicy and Pod Security admission for every install; the Node authorizer, NodeRestriction,
 * a way to a kubelet client certificate and the kubelet CA for the vn-agent; the Cluster CRD for the scheduler.
 */
export function preflightLines(f: PreflightFacts, components: readonly InstallComponent[]): PreflightLine[] {
  const out: PreflightLine[] = [];
  const line = (ok: boolean, text: string, fix?: string, fatal = true) =>
    out.push({ ok, fatal, text, ...(!ok && fix && { fix }) });
  const min = `${MIN_SERVER.major}.${MIN_SERVER.minor}`;
  if ('error' in f.server) line(false, `server version: cannot read /version: ${f.server.error}`, 'check --kubeconfig');
  else {
    const { major, minor, gitVersion } = f.server;
    const recent = major > MIN_SERVER.major || (major === MIN_SERVER.major && minor >= MIN_SERVER.minor);
    line(recent, `server version ${gitVersion} (minimum ${min})`, `upgrade the cluster to Kubernetes ${min} or later`);
  }
  line(
    f.crdApi,
    `CustomResourceDefinitions (apiextensions.k8s.io/v1) ${f.crdApi ? 'served' : 'not served'}`,
    'the apiserver must serve apiextensions.k8s.io/v1',
  );
  line(
    f.vapApi,
    `ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) ${f.vapApi ? 'served' : 'not served'}`,
    `enable the admissionregistration.k8s.io/v1 API (on by default from ${min}); the policies keep the manager in tenant namespaces`,
  );
  probeLine(
    line,
    'Pod Security admission',
    f.podSecurity,
    'enable the PodSecurity admission plugin (on by default from 1.25): vc-system is labelled restricted and tenant namespaces get their level from it',
  );
  if (components.includes('vn-agent')) {
    probeLine(
      line,
      'Node authorizer',
      f.nodeAuthorizer,
      'run the apiserver with --authorization-mode=Node,RBAC: each vn-agent reads Pods with its node credential, ' +
        'which only the Node authorizer confines to its node',
    );
    probeLine(
      line,
      'NodeRestriction admission',
      f.nodeRestriction,
      'add NodeRestriction to the apiserver --enable-admission-plugins: it limits what a node credential may write to its own node',
    );
    line(
      f.csrApi && f.csrRights.state === 'ok',
      `kubelet client certificate for the vn-agent: ${
        !f.csrApi
          ? 'certificates.k8s.io/v1 not served'
          : f.csrRights.state === 'ok'
            ? 'a CertificateSigningRequest (signer kubernetes.io/kube-apiserver-client) this install approves'
            : f.csrRights.detail
      }`,
      'install with an identity that may create CertificateSigningRequests and approve them for the signer ' +
        'kubernetes.io/kube-apiserver-client, or create the Secret vc-vn-agent/vc-vn-agent-kubelet-client by hand ' +
        '(deploy/vn-agent/daemonset.yaml)',
    );
    const ca = f.kubeletCA;
    line(
      ca.source !== 'none',
      ca.source === 'flag'
        ? `kubelet CA for the vn-agent: ${ca.file} (--kubelet-ca)`
        : ca.source === 'cluster'
          ? `kubelet CA for the vn-agent: the cluster CA (it signs the serving certificates of ${ca.nodes.join(', ')})`
          : `kubelet CA for the vn-agent: not found: ${ca.detail}`,
      'pass --kubelet-ca FILE, the CA that signs your kubelets\u2019 serving certificates (or let kubelets get them ' +
        'from the cluster CA: serverTLSBootstrap: true and approved kubelet-serving CertificateSigningRequests)',
    );
  }
  if (components.includes('scheduler'))
    line(
      f.clusterCrd,
      `Cluster API Clusters (cluster.x-k8s.io) ${f.clusterCrd ? 'served' : 'not served'}`,
      'install Cluster API, or its minimal CRD: kubectl create -f deploy/crds/clusters.yaml',
    );
  return out;
}

function probeLine(line: (ok: boolean, text: string, fix?: string) => void, what: string, p: Probe, fix: string): void {
  const state = p.state === 'ok' ? 'on' : p.state === 'missing' ? 'off' : 'cannot tell';
  line(p.state === 'ok', `${what}: ${state}${p.detail ? ` (${p.detail})` : ''}`, fix);
}

/** formatPreflight renders the lines as `ok|FAIL|warn text`, each failure followed by its fix. */
export function formatPreflight(lines: readonly PreflightLine[]): string {
  return lines
    .map((l) => {
      const mark = l.ok ? 'ok  ' : l.fatal ? 'FAIL' : 'warn';
      return `${mark} ${l.text}${l.fix ? `\n       fix: ${l.fix}` : ''}`;
    })
    .join('\n');
}

const PROBE_NODE = 'vc-preflight';

async function served(c: KubeClient, groupVersion: string, resource: string): Promise<boolean> {
  try {
    const list = await c.request<{ resources: Array<{ name: string }> }>('GET', `/apis/${groupVersion}`);
    return list.resources.some((r) => r.name === resource);
  } catch (e) {
    if (e instanceof ApiError && e.code === 404) return false;
    throw e;
  }
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** gatherFacts reads what preflightLines decides on, with requests that change nothing (dry runs, reviews). */
export async function gatherFacts(
  c: KubeClient,
  components: readonly InstallComponent[],
  o: { kubeletCAFile?: string } = {},
): Promise<PreflightFacts> {
  let server: PreflightFacts['server'];
  try {
    const v = await c.request<{ gitVersion: string; major: string; minor: string }>('GET', '/version');
    server = { gitVersion: v.gitVersion, major: parseInt(v.major, 10), minor: parseInt(v.minor, 10) };
  } catch (e) {
    server = { error: message(e) };
  }
  const vnAgent = components.includes('vn-agent');
  const csrApi = await served(c, 'certificates.k8s.io/v1', 'certificatesigningrequests');
  return {
    server,
    crdApi: await served(c, 'apiextensions.k8s.io/v1', 'customresourcedefinitions'),
    vapApi: await served(c, 'admissionregistration.k8s.io/v1', 'validatingadmissionpolicies'),
    csrApi,
    podSecurity: await probePodSecurity(c),
    nodeAuthorizer: vnAgent ? await probeNodeAuthorizer(c) : { state: 'unknown', detail: 'not checked' },
    nodeRestriction: vnAgent ? await probeNodeRestriction(c) : { state: 'unknown', detail: 'not checked' },
    csrRights: vnAgent && csrApi ? await probeCsrRights(c) : { state: 'unknown', detail: 'not checked' },
    kubeletCA: vnAgent ? await findKubeletCA(c, o.kubeletCAFile) : { source: 'none', detail: 'not checked' },
    clusterCrd: await served(c, 'cluster.x-k8s.io/v1beta1', 'clusters'),
  };
}

/**
 * probePodSecurity asks for a dry-run Namespace whose enforce label names no Pod Security level: Pod Security
 * admission refuses it, an apiserver without it accepts it (a dry run: nothing is created either way).
 */
async function probePodSecurity(c: KubeClient): Promise<Probe> {
  try {
    await c.create(
      R.namespaces,
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: 'vc-preflight-pod-security',
          labels: { 'pod-security.kubernetes.io/enforce': 'no-such-level' },
        },
      },
      { dryRun: true },
    );
    return {
      state: 'missing',
      detail: 'a Namespace with an invalid pod-security.kubernetes.io/enforce label was accepted',
    };
  } catch (e) {
    if (e instanceof ApiError && /pod-security\.kubernetes\.io\/enforce/.test(e.message)) return { state: 'ok' };
    return { state: 'unknown', detail: message(e) };
  }
}

interface ReviewStatus {
  allowed: boolean;
  reason?: string;
}

async function review(c: KubeClient, body: Record<string, unknown>): Promise<ReviewStatus> {
  const kind = 'user' in body ? 'SubjectAccessReview' : 'SelfSubjectAccessReview';
  const r = await c.request<{ status: ReviewStatus }>('POST', `/apis/authorization.k8s.io/v1/${kind.toLowerCase()}s`, {
    body: { apiVersion: 'authorization.k8s.io/v1', kind, spec: body },
  });
  return r.status;
}

/**
 * probeNodeAuthorizer asks with SubjectAccessReviews what a node identity (system:node:vc-preflight, group
 * system:nodes) may do: its own Node yes, a Secret no Pod of it uses no. That pair is the Node authorizer's answer;
 * RBAC alone refuses the first (nothing binds system:nodes) or, with the legacy system:node binding, allows both.
 */
async function probeNodeAuthorizer(c: KubeClient): Promise<Probe> {
  const node = { user: `system:node:${PROBE_NODE}`, groups: ['system:nodes', 'system:authenticated'] };
  try {
    const own = await review(c, { ...node, resourceAttributes: { verb: 'get', resource: 'nodes', name: PROBE_NODE } });
    const secret = await review(c, {
      ...node,
      resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'kube-system', name: PROBE_NODE },
    });
    if (own.allowed && !secret.allowed) return { state: 'ok' };
    if (own.allowed) return { state: 'missing', detail: 'a node identity may read any Secret: RBAC grants nodes more' };
    return { state: 'missing', detail: 'a node identity may not read its own Node' };
  } catch (e) {
    return { state: 'unknown', detail: message(e) };
  }
}

/**
 * probeNodeRestriction dry-runs, impersonating the node identity, the creation of another node's Node object:
 * NodeRestriction refuses it ("is not allowed to modify node"), an apiserver without it lets the dry run pass.
 */
async function probeNodeRestriction(c: KubeClient): Promise<Probe> {
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: `${PROBE_NODE}-other` } });
  try {
    const { status, text } = await asNode(c, 'POST', '/api/v1/nodes?dryRun=All', body);
    if (status >= 200 && status < 300) return { state: 'missing', detail: "a node could create another node's Node" };
    if (/is not allowed to modify node/.test(text)) return { state: 'ok' };
    return { state: 'unknown', detail: `HTTP ${status}: ${text.slice(0, 200)}` };
  } catch (e) {
    return { state: 'unknown', detail: message(e) };
  }
}

/** asNode sends one request impersonating the probe node (Impersonate-User and -Group), with c's credentials. */
async function asNode(
  c: KubeClient,
  method: string,
  path: string,
  body: string,
): Promise<{ status: number; text: string }> {
  const opts: https.RequestOptions = {};
  await c.kubeConfig.applyToHTTPSOptions(opts);
  const headers: Record<string, string | string[]> = {
    ...(opts.headers as Record<string, string>),
    Accept: 'application/json',
    'Content-Type': 'application/json',
    'Impersonate-User': `system:node:${PROBE_NODE}`,
    'Impersonate-Group': ['system:nodes', 'system:authenticated'],
  };
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, c.server), { ...opts, method, headers, timeout: 15_000 }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 15s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** probeCsrRights asks (SelfSubjectAccessReviews) whether this identity may create and approve the agent's CSR. */
async function probeCsrRights(c: KubeClient): Promise<Probe> {
  const group = 'certificates.k8s.io';
  const asks = [
    { verb: 'create', group, resource: 'certificatesigningrequests' },
    { verb: 'update', group, resource: 'certificatesigningrequests', subresource: 'approval' },
    { verb: 'approve', group, resource: 'signers', name: 'kubernetes.io/kube-apiserver-client' },
  ];
  try {
    const refused: string[] = [];
    for (const a of asks) {
      const r = await review(c, { resourceAttributes: a });
      if (!r.allowed) refused.push(`${a.verb} ${a.resource}${'subresource' in a ? `/${a.subresource}` : ''}`);
    }
    return refused.length
      ? { state: 'missing', detail: `this identity may not ${refused.join(', ')}` }
      : { state: 'ok' };
  } catch (e) {
    return { state: 'unknown', detail: message(e) };
  }
}

/**
 * findKubeletCA is the CA the vn-agent verifies kubelets with: the --kubelet-ca file, else the cluster CA (the
 * kube-root-ca.crt ConfigMap) when the serving certificates of the kubelets reached from here (up to three nodes)
 * are all signed by it, else none with the reason.
 */
async function findKubeletCA(c: KubeClient, file: string | undefined): Promise<KubeletCAFact> {
  if (file) {
    let pem: string;
    try {
      pem = readFileSync(file, 'utf8');
      new X509Certificate(pem);
    } catch (e) {
      return { source: 'none', detail: `--kubelet-ca ${file}: ${message(e)}` };
    }
    return { source: 'flag', file, pem };
  }
  const cm = await c.getOrNull<KubeObject & { data?: Record<string, string> }>(
    R.configmaps,
    'default',
    'kube-root-ca.crt',
  );
  const pem = cm?.data?.['ca.crt'];
  if (!pem) return { source: 'none', detail: 'the cluster publishes no CA (ConfigMap default/kube-root-ca.crt)' };
  const ca = new X509Certificate(pem);
  const nodes = (await c.list<NodeObject>(R.nodes, { limit: 3 })).items;
  if (!nodes.length) return { source: 'none', detail: 'the cluster has no nodes to check a kubelet of' };
  const problems: string[] = [];
  for (const n of nodes) {
    const ip = n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    const port = n.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 10250;
    const name = n.metadata?.name ?? '?';
    if (!ip) {
      problems.push(`node ${name} has no InternalIP`);
      continue;
    }
    try {
      const cert = await peerCertificate(ip, port);
      if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey))
        problems.push(
          `node ${name}: the kubelet's serving certificate (issuer ${cert.issuer}) is not the cluster CA's`,
        );
    } catch (e) {
      problems.push(`node ${name}: cannot reach its kubelet at ${ip}:${port} from here (${message(e)})`);
    }
  }
  if (problems.length) return { source: 'none', detail: problems.join('; ') };
  return { source: 'cluster', pem, nodes: nodes.map((n) => n.metadata!.name!) };
}

interface NodeObject extends KubeObject {
  status?: {
    addresses?: Array<{ type: string; address: string }>;
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
  };
}

function peerCertificate(host: string, port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host, port, rejectUnauthorized: false, timeout: 3000 }, () => {
      const raw = s.getPeerCertificate().raw;
      s.destroy();
      if (!raw) reject(new Error('no certificate'));
      else resolve(new X509Certificate(raw));
    });
    s.on('timeout', () => s.destroy(new Error('no answer in 3s')));
    s.on('error', reject);
  });
}
