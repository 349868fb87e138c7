/**
 * The running part of a node's tenant cluster IP translation (clusterips.ts): it watches the node's super Pods and
 * the super cluster's Services, and whenever the plan changes writes the node's nftables table anew with `nft -f -`.
 * It runs on every node, in the node's network namespace, with the kubelet's own credential (the Node authorizer lets
 * it read the node's Pods and every Service, which is all it needs); on stop it deletes its table.
 */
import { execFile } from 'node:child_process';
import { KubeClient } from '../kube/client.ts';
import { Informer } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { loadNodeCredential, nodeCredentialFileSource, nodeSuperClient } from './nodecredential.ts';
import {
  clusterIPsScript,
  DEFAULT_CLUSTER_IP_TABLE,
  planClusterIPs,
  type SuperPodAddresses,
  type SuperServiceAddresses,
  type TenantTranslation,
} from './clusterips.ts';

const log = childLogger({ controller: 'cluster-ips' });

/** NftRunner runs an nft script (or, with args, an nft command); rejects with nft's message. */
export type NftRunner = (args: string[], script?: string) => Promise<void>;

/** NFT_PATH is where nft is looked for: the PATH, then the system directories Debian installs it in. */
const NFT_PATH = [process.env.PATH, '/usr/sbin', '/sbin'].filter(Boolean).join(':');

/** runNft runs nft (from NFT_PATH). */
export const runNft: NftRunner = (args, script) =>
  new Promise<void>((resolve, reject) => {
    const opts = { timeout: 30_000, env: { ...process.env, PATH: NFT_PATH } };
    const child = execFile('nft', args, opts, (err, _out, stderr) =>
      err ? reject(new Error(`nft ${args.join(' ')}: ${stderr.trim() || err.message}`)) : resolve(),
    );
    if (script !== undefined) child.stdin?.end(script);
  });

/** ClusterIPTranslatorOptions configure a ClusterIPTranslator. */
export interface ClusterIPTranslatorOptions {
  /** a client of the super cluster (the node's own credential is enough) */
  client: KubeClient;
  /** the node whose Pods are sources */
  nodeName: string;
  /** the nftables table (family ip); default DEFAULT_CLUSTER_IP_TABLE */
  table?: string;
  /** how long changes are gathered before one write; default 100 ms */
  debounceMs?: number;
  nft?: NftRunner;
}

/**
 * ClusterIPTranslator keeps a node's table equal to the plan of its caches. Writes are serialized, gathered over
 * debounceMs and skipped when the plan did not change; a failed write is retried after 1 s, doubling up to 30 s, with
 * whatever changed meanwhile.
 */
export class ClusterIPTranslator {
  private readonly pods: Informer<SuperPodAddresses>;
  private readonly services: Informer<SuperServiceAddresses>;
  private readonly table: string;
  private readonly nft: NftRunner;
  private timer?: NodeJS.Timeout;
  private writing = Promise.resolve();
  /** the wait before the next write after a failed one (doubling from 1 s to 30 s; 0 after a success) */
  private backoffMs = 0;
  private written?: string;
  private stopped = false;
  /** plan is the translation last written (for tests and the log) */
  plan: TenantTranslation[] = [];
  /** writes counts the tables written */
  writes = 0;

  constructor(private readonly o: ClusterIPTranslatorOptions) {
    this.table = o.table ?? DEFAULT_CLUSTER_IP_TABLE;
    this.nft = o.nft ?? runNft;
    this.pods = new Informer<SuperPodAddresses>({
      client: o.client,
      resource: R.pods,
      fieldSelector: `spec.nodeName=${o.nodeName}`,
      name: 'cluster-ips-pods',
    });
    this.services = new Informer<SuperServiceAddresses>({
      client: o.client,
      resource: R.services,
      name: 'cluster-ips-services',
    });
    const changed = { onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() };
    this.pods.addHandler(changed);
    this.services.addHandler(changed);
  }

  /** start lists and watches, and tries the first write once both caches have synced. */
  async start(): Promise<void> {
    this.pods.start();
    this.services.start();
    await Promise.all([this.pods.waitForSync(), this.services.waitForSync()]);
    // the first write (a failed one is retried in the background, as later ones are)
    this.writing = this.writing.then(() => this.write());
    await this.writing;
  }

  /** flush waits for a scheduled write and the write under way. */
  async flush(): Promise<void> {
    while (this.timer) await new Promise((r) => setTimeout(r, 10));
    await this.writing;
  }

  private schedule(ms = this.o.debounceMs ?? 100): void {
    if (this.stopped || !this.pods.hasSynced() || !this.services.hasSynced() || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.writing.then(() => this.write());
    }, ms);
  }

  private async write(): Promise<void> {
    if (this.stopped) return;
    const plan = planClusterIPs(this.pods.list(), this.services.list());
    const script = clusterIPsScript(this.table, plan);
    if (script === this.written) return;
    try {
      await this.nft(['-f', '-'], script);
      this.written = script;
      this.plan = plan;
      this.writes++;
      this.backoffMs = 0;
      log.info(
        {
          table: this.table,
          tenants: plan.length,
          pods: plan.reduce((n, t) => n + t.podIPs.length, 0),
          services: plan.reduce((n, t) => n + t.services.length, 0),
        },
        'wrote the cluster IP translation',
      );
    } catch (e) {
      this.backoffMs = Math.min(Math.max(this.backoffMs * 2, 1000), 30_000);
      log.error(
        { err: e, table: this.table, retryInMs: this.backoffMs },
        'writing the cluster IP translation failed; retrying',
      );
      // the one pending timer: changes in the meantime are written with the retry, not each on its own
      this.schedule(this.backoffMs);
    }
  }

  /** stop ends the watches and deletes the table (a node without the translator translates nothing). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    await Promise.all([this.pods.stop(), this.services.stop()]);
    await this.nft(['delete', 'table', 'ip', this.table]).catch(() => undefined);
  }
}

/** ClusterIPTranslatorRun configures `vc cluster-ips`. */
export interface ClusterIPTranslatorRun {
  /** the super cluster; in-cluster configuration when absent */
  kubeconfig?: string;
  /**
   * the node's own client certificate (and key; default the same file), as the kubelet keeps it: requests then
   * carry it instead of the kubeconfig's user, so the Node authorizer shows the translator its node's Pods only
   */
  nodeClientCert?: string;
  nodeClientKey?: string;
  nodeName: string;
  table?: string;
}

/** runClusterIPTranslator runs the translator of a node until stopped (its client is closed with it). */
export async function runClusterIPTranslator(o: ClusterIPTranslatorRun): Promise<ClusterIPTranslator> {
  const base = o.kubeconfig ? await KubeClient.fromFile(o.kubeconfig) : await KubeClient.inCluster();
  let client = base;
  if (o.nodeClientCert) {
    const files = { certFile: o.nodeClientCert, keyFile: o.nodeClientKey, nodeName: o.nodeName };
    const cred = loadNodeCredential(files);
    client = nodeSuperClient(base, cred, nodeCredentialFileSource(files));
  }
  const t = new ClusterIPTranslator({ client, nodeName: o.nodeName, table: o.table });
  await t.start();
  return t;
}
