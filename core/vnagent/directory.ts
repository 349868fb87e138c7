import type { KubeClient, KubeObject } from '../kube/client.ts';
import { Informer } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { TENANT_CA_KEY, tenantCAConfigMapName, type VirtualCluster } from '../api/virtualcluster.ts';
import { childLogger } from '../log.ts';
import { IDENTITY, LABEL, rootNamespace } from '../names/names.ts';
import type { NodesPolicyView } from '../plugins/contract.ts';
import { GRANTED_BY_CONTROLLER } from '../tenancy/grants.ts';
import { acceptedPolicyOf, checkPolicies, resolvePolicy, type TenantPolicy } from '../tenancy/policy.ts';
import { PLUGIN_DEFAULTS_CONFIGMAP, pluginDefaultsOf, type PluginDefaults } from '../tenancy/plugindefaults.ts';
import { agentTenant, tenantCACommonName, type AgentTenant, type AgentTenantSpec } from './auth.ts';

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

/** caFromKubeconfig is re-exported from core/pki: where the manager reads the CA it publishes for the agent. */
export { caFromKubeconfig } from '../pki/kubeconfig.ts';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

/** VirtualClusterDirectoryOptions configure VirtualClusterDirectory. */
export interface VirtualClusterDirectoryOptions {
  /** the meta cluster, where VirtualCluster objects and their tenant CA ConfigMaps live */
  meta: KubeClient;
  /** serve only VirtualClusters whose spec.superCluster is this name (or unset) */
  superCluster?: string;
}

/**
 * VirtualClusterDirectory derives tenants from the VirtualCluster objects of the meta cluster. A tenant is allowed
 * while its VirtualCluster is Running, not being deleted, and its status names the kubelet client certificate
 * fingerprint; its key is rootNamespace of the VirtualCluster's namespace, name and uid (status.clusterNamespace is
 * an output and is not read). Both caches are watched; tenants are recomputed from them on each read (memoized
 * per resourceVersion), so a deleted or failed VirtualCluster drops out as soon as the watch reports it.
 *
 * Where the tenant CA comes from: the ConfigMap `<vc>-tenant-ca` (tenantCAConfigMapName, key TENANT_CA_KEY) next
 * to the VirtualCluster, which the manager writes with its managed-by label and the VirtualCluster as controller
 * owner. The agent reads no Secret. The CA is deliberately not read from status: a status writer (S) could then
 * name a CA of its own together with the fingerprint of a certificate it made, and the agent would accept that
 * certificate as the tenant's. So the ConfigMap's name comes from the VirtualCluster's name, never from status, and
 * it counts only when it carries LABEL.managedBy = IDENTITY.manager and its controller owner is this
 * VirtualCluster's uid (a ConfigMap left from a deleted VirtualCluster of the same name does not count). Writing
 * status therefore cannot change which CA the agent trusts. And only a CA certificate named after the tenant's key
 * (tenantCACommonName, the name the manager's PKI gives it) counts, so another tenant's CA and fingerprint, wherever
 * they are copied to, match no certificate this tenant's CA signed. The label and owner are only as strong as the rule
 * that only the manager may write ConfigMaps carrying that label: deploy/policy/manager-scope.yaml
 * (vc-manager-owned-objects) enforces it in the apiserver, against namespace editors as well as status writers.
 *
 * What a tenant sees of a node's own totals (nodes.totals) comes from its TenantPolicy, resolved as the manager
 * resolves it (resolvePolicy: the one spec.policyName names, else the default one). Until the TenantPolicy cache has
 * synced, or when no policy can be resolved, node totals are withheld: the agent never shows more than the policy
 * allows. That cache is not waited for, so an agent of a meta cluster without the TenantPolicy CRD still serves.
 */
export class VirtualClusterDirectory implements TenantDirectory {
  private readonly vcs: Informer<VirtualCluster>;
  private readonly cas: Informer<ConfigMap>;
  private readonly policies: Informer<TenantPolicy>;
  private readonly memo = new Map<string, { stamp: string; entry: AgentTenant | undefined }>();
  /** pluginsOf's answers by VirtualCluster key, kept while its resourceVersion and the policies' stay the same */
  /** the manager's plugin defaults as the tenant-CA informer last showed them (plugindefaults.ts) */
  private defaults: PluginDefaults = { state: 'none' };
  /** the last reason the manager's plugin defaults were unusable, logged once */
  private defaultsWarned?: string;
  private readonly pluginsMemo = new Map<
    string,
    { stamp: string; plugins: Pick<AgentTenantSpec, 'plugins' | 'pluginConfig'> }
  >();

  constructor(private readonly o: VirtualClusterDirectoryOptions) {
    this.vcs = new Informer<VirtualCluster>({
      client: o.meta,
      resource: R.virtualclusters,
      name: 'vn-agent-virtualclusters',
    });
    this.cas = new Informer<ConfigMap>({
      client: o.meta,
      resource: R.configmaps,
      labelSelector: `${LABEL.managedBy}=${IDENTITY.manager}`,
      name: 'vn-agent-tenant-cas',
    });
    // The manager's plugin defaults ride the same informer; they are picked out again only when a ConfigMap of that
    // name changes, not on every request.
    const pick = (cm: ConfigMap) => {
      if (cm.metadata?.name === PLUGIN_DEFAULTS_CONFIGMAP.name) this.defaults = pluginDefaultsOf(this.cas.list());
    };
    this.cas.addHandler({ onAdd: pick, onUpdate: (_old, cm) => pick(cm), onDelete: pick });
    this.policies = new Informer<TenantPolicy>({
      client: o.meta,
      resource: R.tenantpolicies,
      name: 'vn-agent-tenant-policies',
    });
  }

  async start(): Promise<void> {
    this.vcs.start();
    this.cas.start();
    this.policies.start();
    await Promise.all([this.vcs.waitForSync(), this.cas.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.vcs.stop(), this.cas.stop(), this.policies.stop()]);
  }

  ready(): true | string {
    if (!this.vcs.hasSynced()) return 'VirtualCluster cache not synced';
    if (!this.cas.hasSynced()) return 'tenant CA ConfigMap cache not synced';
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
    for (const k of this.pluginsMemo.keys()) if (!seen.has(k)) this.pluginsMemo.delete(k);
  }

  private entryOf(key: string, vc: VirtualCluster): AgentTenant | undefined {
    const s = vc.status;
    if (vc.metadata?.deletionTimestamp || (s?.phase !== 'Running' && s?.phase !== 'Degraded')) return undefined;
    if (this.o.superCluster && vc.spec?.superCluster && vc.spec.superCluster !== this.o.superCluster) return undefined;
    const m = vc.metadata ?? {};
    if (!m.namespace || !m.name || !m.uid || !s.kubeletClientCertFingerprint) return undefined;
    const ca = this.cas.get(`${m.namespace}/${tenantCAConfigMapName(m.name)}`);
    const caPem = ca?.data?.[TENANT_CA_KEY];
    if (!caPem || !ownedByVirtualCluster(ca, vc)) return undefined;
    const nodes = this.nodesOf(vc);
    const plugins = this.pluginsOf(key, vc);
    const stamp = `${m.resourceVersion}/${ca.metadata?.resourceVersion}/${JSON.stringify([nodes, plugins])}`;
    const cached = this.memo.get(key);
    if (cached?.stamp === stamp) return cached.entry;
    let entry: AgentTenant | undefined;
    const tenantKey = rootNamespace(m.namespace, m.name, m.uid);
    try {
      const spec: AgentTenantSpec = {
        // The key follows from metadata, never from status: a status writer must not be able to point this tenant's
        // certificate at another tenant's namespaces.
        key: tenantKey,
        caCommonName: tenantCACommonName(tenantKey),
        caPem,
        fingerprint: s.kubeletClientCertFingerprint,
        rotating: s.rotatingKubeletClientCertFingerprints,
        vcName: vc.metadata?.name,
        vcNamespace: vc.metadata?.namespace,
        vcUid: vc.metadata?.uid,
        ...plugins,
        nodes,
      };
      entry = agentTenant(spec);
    } catch (e) {
      log.warn(
        { vc: key, err: e instanceof Error ? e.message : String(e) },
        'tenant left out: its tenant CA ConfigMap has no usable CA',
      );
    }
    this.memo.set(key, { stamp, entry });
    return entry;
  }

  /**
   * pluginsOf is the tenant's plugins and their configuration as its TenantPolicy accepts them (checkPolicies, as the
   * manager runs it on a served tenant): a spec.plugins.disable of a plugin the policy enforces, an opt-in it does not
   * allow or a pluginConfig key the platform reserves never reaches the agent's plugins. Until the policies are known,
   * or when the spec is refused, the tenant gets the plugins every tenant gets and no configuration of its own. The
   * manager's defaultPluginConfig is the layer under the policy's, as the manager publishes it (plugindefaults.ts);
   * while that cannot be told (two such ConfigMaps, or one that does not parse) every tenant gets no configuration of
   * its own, and without one (no manager publishes it) the policy's layer is all there is.
   */
  private pluginsOf(key: string, vc: VirtualCluster): Pick<AgentTenantSpec, 'plugins' | 'pluginConfig'> {
    if (!this.policies.hasSynced()) return {};
    const defaults = this.defaults;
    if (defaults.state === 'unusable') {
      if (this.defaultsWarned !== defaults.why)
        log.warn({ why: defaults.why }, "the manager's plugin defaults are unusable");
      this.defaultsWarned = defaults.why;
      return {};
    }
    // tenants() runs on every request: the evaluation (about 20 µs) is redone only when the VirtualCluster, a policy
    // or the manager's defaults changed
    const policies = this.policies.list();
    const layer = defaults.state === 'known' ? defaults.stamp : '-';
    const stamp = `${vc.metadata?.resourceVersion}/${layer}/${policies.map((p) => `${p.metadata?.name}@${p.metadata?.resourceVersion}`).join(',')}`;
    const cached = this.pluginsMemo.get(key);
    if (cached?.stamp === stamp) return cached.plugins;
    // The agent cannot judge grants (it reads no namespaces): where the controller refused the tenant's spec or its
    // grant (PolicyAccepted False, the tenant kept on its last accepted settings), a policy widened since does not
    // reach the agent either; what it served stays.
    const accepted = vc.status?.conditions?.find((c) => c.type === 'PolicyAccepted');
    if (accepted?.status === 'False') return cached?.plugins ?? {};
    const pluginConfig = defaults.state === 'known' ? defaults.config : undefined;
    const r = checkPolicies(vc, policies, { ...(pluginConfig && { pluginConfig }) }, GRANTED_BY_CONTROLLER);
    // Nor does a policy the controller has not accepted for this tenant yet (status.acceptedPolicy names another
    // generation): a widened policy reaching the agent before the controller's refusal would otherwise be served, and
    // kept. The controller's acceptance changes the VirtualCluster, which evaluates again.
    const recorded = vc.status?.acceptedPolicy;
    const evaluated = 'effective' in r ? acceptedPolicyOf(r.effective, policies) : undefined;
    if (recorded && evaluated && (recorded.name !== evaluated.name || recorded.generation !== evaluated.generation))
      return cached?.plugins ?? {};
    const plugins = 'effective' in r ? { plugins: r.effective.plugins, pluginConfig: r.effective.pluginConfig } : {};
    this.pluginsMemo.set(key, { stamp, plugins });
    return plugins;
  }

  /** nodesOf is what the tenant's TenantPolicy decides of node totals: withheld unless it is known to say scaled. */
  private nodesOf(vc: VirtualCluster): NodesPolicyView {
    if (!this.policies.hasSynced()) return { totals: 'withheld' };
    const r = resolvePolicy(vc, this.policies.list());
    if ('error' in r) return { totals: 'withheld' };
    const totals = r.policy?.spec?.nodes?.totals;
    return { totals: totals === undefined || totals === 'scaled' ? 'scaled' : 'withheld' };
  }
}

/** ownedByVirtualCluster reports whether o names vc (by uid) as its controller owner. */
function ownedByVirtualCluster(o: KubeObject, vc: VirtualCluster): boolean {
  const uid = vc.metadata?.uid;
  return (
    !!uid &&
    !!o.metadata?.ownerReferences?.some((r) => r.kind === 'VirtualCluster' && r.controller === true && r.uid === uid)
  );
}
