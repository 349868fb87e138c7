import { sameJSON } from '../controller/status.ts';
import type { KubeClient, KubeObject } from '../kube/client.ts';
import { InformerFactory, type SharedInformer } from '../kube/factory.ts';
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { IDENTITY, LABEL, rootNamespace } from '../names/names.ts';
import { checkPolicies, type EffectiveSettings, type ManagerDefaults, type TenantPolicy } from '../tenancy/policy.ts';
import { subjectOf } from '../tenancy/grants.ts';
import { MutableTenantRegistry, type Tenant, type TenantEvent, type TenantRegistry } from '../tenancy/tenant.ts';
import { tenantOfVirtualCluster } from './tenantof.ts';
import { provisionedOfSecret } from './kubeconfigsecret.ts';
import { kubeconfigSecretName, SERVING_PHASES, type VirtualCluster } from '../api/virtualcluster.ts';

const log = childLogger({ controller: 'meta-tenants' });

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

/** MetaTenantRegistryOptions configure MetaTenantRegistry. */
export interface MetaTenantRegistryOptions {
  meta: KubeClient;
  /** the meta cluster's shared informers (the VirtualCluster controller's, in a manager); default: own */
  informers?: InformerFactory;
  /** the manager's tenant defaults and default plugin configuration, as the VirtualCluster controller has them */
  defaults: ManagerDefaults;
}

/**
 * MetaTenantRegistry reads the tenants of a syncer that runs apart from the manager (`vc syncer`), or of a manager
 * standing by, from the meta cluster: every Running VirtualCluster not being deleted, with the admin kubeconfig
 * Secret the manager wrote for it (`<vc>-kubeconfig`, counted only with the manager's label and the VirtualCluster's
 * uid as controlling owner) and the settings its TenantPolicy allows, built as the manager's controller builds them.
 * Identity comes from metadata; the endpoints Pods and the DNS server use come from the Secret (kubeconfigsecret.ts),
 * not status. A spec the policy refuses keeps the tenant's last settings here, as the controller keeps the control
 * plane on its last accepted ones.
 */
export class MetaTenantRegistry implements TenantRegistry {
  private readonly vcs: SharedInformer<VirtualCluster>;
  private readonly policies: SharedInformer<TenantPolicy>;
  private readonly secrets: SharedInformer<Secret>;
  private readonly namespaces: SharedInformer<KubeObject>;
  private readonly out = new MutableTenantRegistry();
  private readonly served = new Map<string, string>();

  constructor(private readonly o: MetaTenantRegistryOptions) {
    const informers = o.informers ?? new InformerFactory(o.meta, 'meta-tenants');
    this.vcs = informers.informer<VirtualCluster>({ resource: R.virtualclusters });
    this.policies = informers.informer<TenantPolicy>({ resource: R.tenantpolicies });
    this.secrets = informers.informer<Secret>({
      resource: R.secrets,
      labelSelector: `${LABEL.managedBy}=${IDENTITY.manager}`,
    });
    this.namespaces = informers.informer<KubeObject>({ resource: R.namespaces });
  }

  /** start syncs the caches, reports the tenants, and follows changes. */
  async start(): Promise<void> {
    const all = () => this.refresh();
    for (const inf of [this.vcs, this.policies, this.secrets] as Array<SharedInformer<KubeObject>>) {
      inf.addHandler({ onAdd: all, onUpdate: all, onDelete: all });
      inf.start();
    }
    // A namespace's labels can grant a policy (spec.grants.subjects selector): only a change of them counts. A
    // VirtualCluster's namespace exists before it, and goes after it.
    this.namespaces.addHandler({
      onUpdate: (a, b) => {
        if (!sameJSON(a.metadata?.labels ?? {}, b.metadata?.labels ?? {})) all();
      },
    });
    this.namespaces.start();
    await Promise.all([
      this.vcs.waitForSync(),
      this.policies.waitForSync(),
      this.secrets.waitForSync(),
      this.namespaces.waitForSync(),
    ]);
    this.refresh();
  }

  /** stop stops the caches. */
  async stop(): Promise<void> {
    await Promise.all([this.vcs.stop(), this.policies.stop(), this.secrets.stop(), this.namespaces.stop()]);
  }

  subscribe(fn: (e: TenantEvent) => void): () => void {
    return this.out.subscribe(fn);
  }

  /** refresh recomputes every tenant; only those whose tenant changed are reported. */
  private refresh(): void {
    const caches = [this.vcs, this.policies, this.secrets, this.namespaces] as Array<SharedInformer<KubeObject>>;
    if (!caches.every((c) => c.hasSynced())) return;
    const seen = new Set<string>();
    for (const vc of this.vcs.list()) {
      const t = this.tenantOf(vc);
      if (t === 'keep') {
        const m = vc.metadata ?? {};
        seen.add(rootNamespace(m.namespace ?? '', m.name ?? '', m.uid ?? ''));
        continue;
      }
      if (!t) continue;
      seen.add(t.key);
      const stamp = JSON.stringify(t);
      if (this.served.get(t.key) === stamp) continue;
      this.served.set(t.key, stamp);
      this.out.upsert(t);
    }
    for (const key of [...this.served.keys()]) {
      if (seen.has(key)) continue;
      this.served.delete(key);
      this.out.remove(key);
    }
  }

  private tenantOf(vc: VirtualCluster): Tenant | 'keep' | undefined {
    const m = vc.metadata ?? {};
    if (!m.namespace || !m.name || !m.uid || m.deletionTimestamp) return undefined;
    if (!SERVING_PHASES.has(vc.status?.phase ?? '')) return undefined;
    const root = rootNamespace(m.namespace, m.name, m.uid);
    const secret = this.secrets.get(`${m.namespace}/${kubeconfigSecretName(m.name)}`);
    const owner = secret?.metadata?.ownerReferences?.find((r) => r.controller === true);
    const provisioned = provisionedOfSecret(secret?.data);
    if (!provisioned || owner?.uid !== m.uid) return undefined;
    const decided = servedSettings(
      vc,
      this.policies.list(),
      this.o.defaults,
      this.namespaces.get(m.namespace)?.metadata?.labels ?? {},
      this.served.has(root),
    );
    if (decided === 'keep' || decided === undefined) {
      log.warn({ vc: objectKey(vc) }, 'spec or its grant refused by its policy; the tenant keeps its last settings');
      return decided;
    }
    return tenantOfVirtualCluster(vc, root, provisioned, decided);
  }
}

/**
 * servedSettings decides what a syncer apart from the controller serves a Running VirtualCluster with, judging it as
 * the controller does, grants included (its namespace and labels, the GitSource that applied it): the effective
 * settings when its spec and choices are allowed now, else 'keep' (the last ones served stay, as the controller keeps
 * the control plane on its last accepted ones) or, when nothing was served yet, undefined (not served). Taking the
 * controller's word instead would let a tenant whose grant was revoked run on whatever its former policy allows next.
 */
export function servedSettings(
  vc: VirtualCluster,
  policies: readonly TenantPolicy[],
  defaults: ManagerDefaults,
  namespaceLabels: Readonly<Record<string, string>>,
  served: boolean,
): EffectiveSettings | 'keep' | undefined {
  const r = checkPolicies(vc, policies, defaults, subjectOf(vc, namespaceLabels));
  if ('effective' in r) return r.effective;
  return served ? 'keep' : undefined;
}
