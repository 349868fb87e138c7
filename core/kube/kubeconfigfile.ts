import { readFileSync } from 'node:fs';
import type https from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';
// config_types.js is client-node's own mapping of kubeconfig entries to its Cluster, User and Context; it imports only
// node:fs, where the package's index (and config.js, which KubeConfig lives in) loads the whole generated API.
import type { Cluster, Context, User } from '@kubernetes/client-node';
import { newClusters, newContexts, newUsers } from '@kubernetes/client-node/dist/config_types.js';
import { parse } from 'yaml';

/**
 * Kubeconfig holds a kubeconfig the platform owns (the CLI user's, the manager's and vn-agent's --kubeconfig, the
 * in-cluster configuration) with the fields, entries and lookups of client-node's KubeConfig, without loading it.
 * Importing `@kubernetes/client-node` costs about 0.6 CPU-seconds (its generated API models) and the project reads
 * only a kubeconfig's fields through it: every `vc` command, every manager and vn-agent start paid that cost. The
 * entries are mapped by client-node's own functions (newClusters, newUsers, newContexts: the same names and checks
 * as KubeConfig.loadFromString) and relative certificate paths resolved as KubeConfig.loadFromFile resolves them.
 * Only applyToHTTPSOptions, for an auth-provider the project does not handle itself (platform.ts), loads client-node.
 */
export class Kubeconfig {
  clusters: Cluster[] = [];
  users: User[] = [];
  contexts: Context[] = [];
  currentContext = '';

  /** loadFromFile reads a kubeconfig file; certificate and CA paths in it are relative to the file's directory. */
  loadFromFile(path: string): void {
    this.loadFromString(readFileSync(path, 'utf8'));
    const root = dirname(path);
    const abs = (p: string | undefined) => (p && !isAbsolute(p) ? join(root, p) : p);
    for (const c of this.clusters) c.caFile = abs(c.caFile);
    for (const u of this.users) {
      u.certFile = abs(u.certFile);
      u.keyFile = abs(u.keyFile);
    }
  }

  /** loadFromString reads a kubeconfig's YAML (or JSON) text; an entry without a name or server is an error. */
  loadFromString(text: string): void {
    const doc = parse(text) as Record<string, unknown> | null;
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
      throw new Error('a kubeconfig is a YAML mapping (apiVersion: v1, kind: Config)');
    this.clusters = newClusters(doc.clusters);
    this.users = newUsers(doc.users);
    this.contexts = newContexts(doc.contexts);
    this.currentContext = typeof doc['current-context'] === 'string' ? doc['current-context'] : '';
  }

  /** loadFromOptions takes entries already mapped (as client-node's KubeConfig.loadFromOptions). */
  loadFromOptions(o: { clusters: Cluster[]; users: User[]; contexts: Context[]; currentContext: string }): void {
    this.clusters = o.clusters;
    this.users = o.users;
    this.contexts = o.contexts;
    this.currentContext = o.currentContext;
  }

  /** getCurrentContext is the name of the current context ('' when none). */
  getCurrentContext(): string {
    return this.currentContext;
  }

  /** getContextObject is the context of that name, or null. */
  getContextObject(name: string): Context | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  /** getCurrentCluster is the cluster the current context names, or null. */
  getCurrentCluster(): Cluster | null {
    const ctx = this.getContextObject(this.currentContext);
    return (ctx && this.clusters.find((c) => c.name === ctx.cluster)) ?? null;
  }

  /** getCurrentUser is the user the current context names, or null. */
  getCurrentUser(): User | null {
    const ctx = this.getContextObject(this.currentContext);
    return (ctx && this.users.find((u) => u.name === ctx.user)) ?? null;
  }

  /**
   * applyToHTTPSOptions lets client-node apply the current cluster and user to request options (its auth-providers:
   * OIDC, Azure, GCP): the one use of the package's KubeConfig, loaded here when first needed.
   */
  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: this.clusters,
      users: this.users,
      contexts: this.contexts,
      currentContext: this.currentContext,
    });
    await kc.applyToHTTPSOptions(opts);
  }
}
