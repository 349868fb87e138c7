import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Gauge } from 'prom-client';
import { childLogger } from '../../log.ts';
import { registry } from '../../metrics/registry.ts';
import { issueCert, issueNodeCert, type CertKeyPair } from '../../pki/pki.ts';
import { CLOCK_SKEW_MS, DEFAULT_RENEW_FRACTION, renewAt } from '../../pki/renewal.ts';
import type { ConditionInput } from '../../controller/status.ts';
import { certificatesCondition } from '../../lifecycle/certificates.ts';
import { KUBE_ROUTER_USER, KUBELET_SERVING_FILE } from './nodeconfig.ts';
import { writeAtomic } from './renewal.ts';

/**
 * The client certificates of a real node's components towards the super apiserver (kubelet, kube-proxy, kube-router),
 * and the kubelet's serving certificate, which the manager issues from the super cluster's CA and renews while the
 * node runs. The kubelet reloads its serving certificate file when it changes (ReloadKubeletServerCertificateFile, on
 * by default since Kubernetes 1.31) and presents the renewed one to connections opened from then on. Each is one file with the
 * certificate and its key, named by path in the component's kubeconfig: Kubernetes' clients (client-go) read such a
 * file at every new connection and, every five minutes, close their connections once it changed, so a renewal needs
 * no restart. The old certificate must therefore stay valid for five minutes after its renewal (NODE_CLIENT_RELOAD_MS):
 * its window, from its notBefore a minute before issue (CLOCK_SKEW_MS) to its end, times (1 - renew fraction) above that.
 */

const log = childLogger({ controller: 'real-node-certificates' });

/** NODE_CLIENT_RELOAD_MS is how long client-go may take to close connections made with a replaced certificate. */
export const NODE_CLIENT_RELOAD_MS = 5 * 60_000;
/** RETRY_MS is how soon a failed renewal is tried again, and how often the condition is looked at. */
const RETRY_MS = 60_000;
/** MAX_TIMER_MS is the longest delay a Node.js timer keeps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** NodeCertificateSettings are the lifetime of a real node's client certificates and when they are renewed. */
export interface NodeCertificateSettings {
  /** lifetime of each certificate issued or renewed, in days (fractions allowed; default 365) */
  validityDays?: number;
  /** share of its life after which a certificate is renewed (0 < f < 1; default two thirds) */
  renewFraction?: number;
}

/** NodeClient is one component's client certificate. */
export interface NodeClient {
  /** the name it is reported under (metric label) */
  name: 'kubelet' | 'kube-proxy' | 'kube-router';
  /** its file below the node directory: certificate and key in one PEM */
  file: string;
  /** the user it authenticates as */
  user: (node: string) => string;
}

/** NODE_CLIENTS are the client certificates of a real node's components. */
export const NODE_CLIENTS: readonly NodeClient[] = [
  // where a kubelet with certificate rotation keeps its own (--cert-dir): an in-cluster vn-agent reads it there
  { name: 'kubelet', file: 'pki/kubelet-client-current.pem', user: (n) => `system:node:${n}` },
  { name: 'kube-proxy', file: 'pki/kube-proxy-client.pem', user: () => 'system:kube-proxy' },
  { name: 'kube-router', file: 'pki/kube-router-client.pem', user: () => KUBE_ROUTER_USER },
];

/** KUBELET_SERVING is the kubelet's serving certificate: its name (metric label) and its file (nodeconfig.ts). */
export const KUBELET_SERVING = { name: 'kubelet-serving', file: KUBELET_SERVING_FILE } as const;

/** NodeCertificateName is the name a real node's certificate is reported under. */
export type NodeCertificateName = NodeClient['name'] | typeof KUBELET_SERVING.name;

/** nodeCertificateExpiry is when each real node's certificate runs out. */
export const nodeCertificateExpiry = new Gauge({
  name: 'vc_real_node_certificate_expiry_timestamp_seconds',
  help:
    "When a real node's certificate runs out (Unix seconds), per node and certificate: the client certificates " +
    'towards the super apiserver (kubelet, kube-proxy, kube-router) and the kubelet serving certificate ' +
    '(kubelet-serving); it moves when the manager renews it. Bounded by the real nodes.',
  labelNames: ['node', 'certificate'],
  registers: [registry],
});

/** checkNodeCertificateSettings refuses settings under which a renewal would cut a component off. */
export function checkNodeCertificateSettings(s: NodeCertificateSettings, where: string): void {
  const days = s.validityDays ?? 365;
  const f = s.renewFraction ?? DEFAULT_RENEW_FRACTION;
  if (!(f > 0 && f < 1)) throw new Error(`${where}: renewFraction must be between 0 and 1, got ${f}`);
  if (!(days > 0)) throw new Error(`${where}: validityDays must be above 0, got ${days}`);
  // renewAt counts the fraction from notBefore, which lies CLOCK_SKEW_MS before the issue (core/pki/ca.ts)
  const leftMs = (days * 86_400_000 + CLOCK_SKEW_MS) * (1 - f);
  if (leftMs <= NODE_CLIENT_RELOAD_MS)
    throw new Error(
      `${where}: a certificate renewed with ${Math.round(leftMs / 1000)} s of life left may expire before the ` +
        `node's components take the new one up (within ${NODE_CLIENT_RELOAD_MS / 60_000} minutes): make ` +
        'validityDays longer or renewFraction smaller',
    );
}

/** validity reads the window of a PEM that holds a certificate. */
function windowOf(pem: string): { notBefore: Date; notAfter: Date } {
  const x = new X509Certificate(pem);
  return { notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) };
}

/**
 * NodeCertificates issues and renews one real node's certificates from the super cluster's CA. issue writes all of
 * them (at the node's preparation); start keeps them renewed until stop.
 */
export class NodeCertificates {
  private timer?: ReturnType<typeof setTimeout>;
  private stopped = false;
  /** the renewal under way, which stop waits for */
  private running?: Promise<void>;

  constructor(
    private readonly o: {
      node: string;
      dir: string;
      ca: CertKeyPair;
      settings?: NodeCertificateSettings;
      /** which components the node runs (kube-router only with the netpol toolchain) */
      clients?: readonly NodeClient['name'][];
      /** the kubelet's serving certificate, for these addresses (and the node's name); none without it */
      serving?: { ipAddresses: string[] };
      /**
       * report writes the CertificatesValid condition (as tenants have it, core/lifecycle/certificates.ts) where users
       * see it: the real node's Node. Called at start, after each renewal and when the condition changes.
       */
      report?: (c: ConditionInput) => Promise<void>;
    },
  ) {}

  private reported?: string;
  private watchTimer?: ReturnType<typeof setInterval>;

  /** condition is the CertificatesValid condition of the node's client certificates at now. */
  condition(now = new Date()): ConditionInput {
    return certificatesCondition(this.read(), now, this.fraction);
  }

  /** reportCondition hands the condition to report when it changed since the last time (or force). */
  private async reportCondition(force = false): Promise<void> {
    if (!this.o.report) return;
    const c = this.condition();
    const key = `${c.status}/${c.reason}/${c.message}`;
    if (!force && key === this.reported) return;
    try {
      await this.o.report(c);
      this.reported = key;
    } catch (e) {
      log.warn(
        { node: this.o.node, err: e instanceof Error ? e.message : String(e) },
        'reporting the condition failed',
      );
    }
  }

  private get clients(): readonly NodeClient[] {
    const want = this.o.clients;
    return want ? NODE_CLIENTS.filter((c) => want.includes(c.name)) : NODE_CLIENTS;
  }

  private get fraction(): number {
    return this.o.settings?.renewFraction ?? DEFAULT_RENEW_FRACTION;
  }

  /** path is the file of one client certificate. */
  path(c: NodeClient['name']): string {
    return join(this.o.dir, NODE_CLIENTS.find((x) => x.name === c)!.file);
  }

  /** entries are the certificates this node has: its components' clients, then the kubelet's serving one. */
  private get entries(): ReadonlyArray<{ name: NodeCertificateName; file: string }> {
    return [...this.clients, ...(this.o.serving ? [KUBELET_SERVING] : [])];
  }

  /** issueCertificate issues one certificate of the node from the CA, for the configured lifetime. */
  private issueCertificate(name: NodeCertificateName, days: number): Promise<CertKeyPair> {
    const node = this.o.node;
    if (name === KUBELET_SERVING.name)
      return issueCert(this.o.ca, {
        commonName: node,
        dnsNames: [node],
        ipAddresses: this.o.serving?.ipAddresses ?? [],
        usages: ['server'],
        validityDays: days,
      });
    if (name === 'kubelet') return issueNodeCert(this.o.ca, node, days);
    const c = NODE_CLIENTS.find((x) => x.name === name)!;
    return issueCert(this.o.ca, { commonName: c.user(node), usages: ['client'], validityDays: days });
  }

  /** issue writes one certificate and its key anew in one file, atomically (a reader never sees half of it). */
  private async issueOne(c: { name: NodeCertificateName; file: string }): Promise<void> {
    const pair = await this.issueCertificate(c.name, this.o.settings?.validityDays ?? 365);
    writeAtomic(join(this.o.dir, c.file), pair.certPem + pair.keyPem, 0o600);
    nodeCertificateExpiry.set(
      { node: this.o.node, certificate: c.name },
      windowOf(pair.certPem).notAfter.getTime() / 1000,
    );
  }

  /** issue writes every certificate of the node anew. */
  async issue(): Promise<void> {
    for (const c of this.entries) await this.issueOne(c);
  }

  /** read lists each certificate's window as it is on disk now. */
  read(): Array<{ name: NodeCertificateName; notBefore: Date; notAfter: Date }> {
    return this.entries
      .filter((c) => existsSync(join(this.o.dir, c.file)))
      .map((c) => ({ name: c.name, ...windowOf(readFileSync(join(this.o.dir, c.file), 'utf8')) }));
  }

  /** start renews each certificate at the renew fraction of its life, until stop. */
  start(): void {
    this.stopped = false;
    this.schedule();
    void this.reportCondition(true);
    this.watchTimer = setInterval(() => void this.reportCondition(), RETRY_MS);
    this.watchTimer.unref();
  }

  private schedule(delayMs?: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    const times = this.read().map((c) => renewAt(c, this.fraction).getTime());
    if (!times.length) return;
    const left = delayMs ?? Math.min(...times) - Date.now();
    this.timer = setTimeout(() => void (this.running = this.renewDue()), Math.max(0, Math.min(left, MAX_TIMER_MS)));
    this.timer.unref();
  }

  /** renewDue issues again every certificate whose renewal time has come, then waits for the next. */
  private async renewDue(): Promise<void> {
    if (this.stopped) return;
    const now = Date.now();
    try {
      for (const c of this.read()) {
        if (this.stopped) return;
        if (renewAt(c, this.fraction).getTime() > now) continue;
        await this.issueOne(this.entries.find((x) => x.name === c.name)!);
        log.info({ node: this.o.node, certificate: c.name }, 'real node certificate renewed');
      }
      this.schedule();
      await this.reportCondition();
    } catch (e) {
      log.warn({ node: this.o.node, err: e instanceof Error ? e.message : String(e) }, 'renewal failed');
      this.schedule(RETRY_MS);
    }
  }

  /** stop ends the renewals (waiting for one under way) and the node's metric series. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.watchTimer);
    await this.running;
    for (const c of [...NODE_CLIENTS, KUBELET_SERVING])
      nodeCertificateExpiry.remove({ node: this.o.node, certificate: c.name });
  }
}
