import { KubeConfig } from '@kubernetes/client-node';
import type { KubeClient, KubeObject } from '../kube/client.ts';
import { Informer } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import type { VirtualCluster } from '../lifecycle/types.ts';
import { childLogger } from '../log.ts';
import { IDENTITY, LABEL } from '../names/names.ts';
import { agentTenant, type AgentTenant, type AgentTenantSpec } from './auth.ts';

const log = childLogger({ controller: 'vn-agent-directory' });

/**
 * TenantDirectory tells the vn-agent which tenants may reach it right now. `tenants()` is read on every request, so
 * a tenant that is removed is refused from its next request on.
 */
export interface TenantDirectory {
  /** tenants lists the tenants currently allowed. */
  tenants(): Iterable<AgentTenant>;
  /** start loads the directory (a no-op for static ones). */
  start(): Promise<void>;
  /** stop releases watches. */
  stop(): Promise<void>;
  /** ready reports whether the directory has loaded, or why not. */
  ready(): true | string;
}

/** StaticTenantDirectory serves a fixed set of tenants (tests, single-tenant setups) that can be changed in place. */
export class StaticTenantDirectory implements TenantDirectory {
  private readonly map = new Map<string, AgentTenant>();

  constructor(tenants: Array<AgentTenant | AgentTenantSpec> = []) {
    for (const t of tenants) this.upsert(t);
  }

  /** upsert adds or replaces a tenant. */
  upsert(t: AgentTenant | AgentTenantSpec): void {
    const entry = 'cas' in t ? t : agentTenant(t);
    this.map.set(entry.key, entry);
  }

  /** remove drops a tenant; its certificate is refused from the next request on. */
  remove(key: string): void {
    this.map.delete(key);
  }

  tenants(): Iterable<AgentTenant> {
    return this.map.values();
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  ready(): true {
    return true;
  }
}

/** caFromKubeconfig returns the CA (PEM) of the current cluster of a kubeconfig, from certificate-authority-data. */
export function caFromKubeconfig(text: string): string {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  if (!cluster.caData) throw new Error(`cluster ${cluster.name} of the kubeconfig has no certificate-authority-data`);
  return Buffer.from(cluster.caData, 'base64').toString('utf8');
}

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

/** VirtualClusterDirectoryOptions configure VirtualClusterDirectory. */
export interface VirtualClusterDirectoryOptions {
  /** the meta cluster, where VirtualCluster objects and their kubeconfig Secrets live */
  meta: KubeClient;
  /** serve only VirtualClusters whose spec.superCluster is this name (or unset) */
  superCluster?: string;
}

/**
 * VirtualClusterDirectory derives tenants from the VirtualCluster objects of the meta cluster. A tenant is allowed
 * while its VirtualCluster is Running, not being deleted, and its status names the root namespace, the kubelet client
 * certificate fingerprint and the admin kubeconfig Secret; the tenant CA is the certificate-authority-data of that
 * kubeconfig. Both caches are watched; tenants are recomputed from them on each read (memoized per resourceVersion),
 * so a deleted or failed VirtualCluster drops out as soon as the watch reports it. Secrets are watched in all
 * namespaces, restricted by label to those the manager writes (LABEL.managedBy = IDENTITY.manager).
 */
export class VirtualClusterDirectory implements TenantDirectory {
  private readonly vcs: Informer<VirtualCluster>;
  private readonly secrets: Informer<Secret>;
  private readonly memo = new Map<string, { stamp: string; entry: AgentTenant | undefined }>();

  constructor(private readonly o: VirtualClusterDirectoryOptions) {
    this.vcs = new Informer<VirtualCluster>({ client: o.meta, resource: R.virtualclusters, name: 'vn-agent-virtualclusters' });
    this.secrets = new Informer<Secret>({
      client: o.meta,
      resource: R.secrets,
      labelSelector: `${LABEL.managedBy}=${IDENTITY.manager}`,
      name: 'vn-agent-kubeconfig-secrets',
    });
  }

  async start(): Promise<void> {
    this.vcs.start();
    this.secrets.start();
    await Promise.all([this.vcs.waitForSync(), this.secrets.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.vcs.stop(), this.secrets.stop()]);
  }

  ready(): true | string {
    if (!this.vcs.hasSynced()) return 'VirtualCluster cache not synced';
    if (!this.secrets.hasSynced()) return 'kubeconfig Secret cache not synced';
    return true;
  }

  *tenants(): Iterable<AgentTenant> {
    const seen = new Set<string>();
    for (const vc of this.vcs.list()) {
      const key = `${vc.metadata?.namespace}/${vc.metadata?.name}`;
      seen.add(key);
      const entry = this.entryOf(key, vc);
      if (entry) yield entry;
    }
    for (const k of this.memo.keys()) if (!seen.has(k)) this.memo.delete(k);
  }

  private entryOf(key: string, vc: VirtualCluster): AgentTenant | undefined {
    const s = vc.status;
    if (vc.metadata?.deletionTimestamp || s?.phase !== 'Running') return undefined;
    if (this.o.superCluster && vc.spec?.superCluster && vc.spec.superCluster !== this.o.superCluster) return undefined;
    if (!s.clusterNamespace || !s.kubeletClientCertFingerprint || !s.kubeconfigSecretName) return undefined;
    const secret = this.secrets.get(`${vc.metadata?.namespace}/${s.kubeconfigSecretName}`);
    if (!secret?.data?.kubeconfig) return undefined;
    const stamp = `${vc.metadata?.resourceVersion}/${secret.metadata?.resourceVersion}`;
    const cached = this.memo.get(key);
    if (cached?.stamp === stamp) return cached.entry;
    let entry: AgentTenant | undefined;
    try {
      const spec: AgentTenantSpec = {
        key: s.clusterNamespace,
        caPem: caFromKubeconfig(Buffer.from(secret.data.kubeconfig, 'base64').toString('utf8')),
        fingerprint: s.kubeletClientCertFingerprint,
        vcName: vc.metadata?.name,
        vcNamespace: vc.metadata?.namespace,
        vcUid: vc.metadata?.uid,
        plugins: vc.spec?.plugins,
        pluginConfig: vc.spec?.pluginConfig,
      };
      entry = agentTenant(spec);
    } catch (e) {
      log.warn({ vc: key, err: e instanceof Error ? e.message : String(e) }, 'tenant left out: its kubeconfig Secret has no usable CA');
    }
    this.memo.set(key, { stamp, entry });
    return entry;
  }
}
