// What the embedded default installs in a super cluster: CRDs, its TenantPolicy, the manager's bounded identity and
// the vn-agent's kubelet access.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeClient, KubeObject, Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { fromPackageRoot } from '../../paths.ts';
import { renderKubeconfig } from '../../pki/kubeconfig.ts';
import { issueCert } from '../../pki/pki.ts';
import type { LocalControlPlane } from '../local/controlplane.ts';
import { waitFor } from '../local/process.ts';
import { ensureClusterCRD } from '../local/registration.ts';
import type { LocalSuperCluster } from '../local/supercluster.ts';
import { embeddedPolicy, EMBEDDED_POLICY_NAME } from './defaults.ts';

/**
 * ensureEmbeddedPolicy creates the embedded TenantPolicy when no policy of that name exists; an existing one is the
 * platform administrator's from then on and is left as it is.
 */
export async function ensureEmbeddedPolicy(c: KubeClient, superClusters: readonly string[]): Promise<void> {
  if (await c.getOrNull(R.tenantpolicies, undefined, EMBEDDED_POLICY_NAME)) return;
  await c.create(R.tenantpolicies, embeddedPolicy(superClusters) as KubeObject);
}

/**
 * applyKubeletAccess grants the vn-agent's user (`vc-vn-agent`, its client certificate towards kubelets) what the
 * kubelets' webhook authorization asks for, and nothing else: the `vc-vn-agent-kubelet` ClusterRole and binding of
 * deploy/vn-agent/rbac.yaml (nodes/proxy get and create; nodes/stats and nodes/metrics get, for tenant usage).
 */
export async function applyKubeletAccess(c: KubeClient): Promise<void> {
  const file = 'deploy/vn-agent/rbac.yaml';
  const kinds = { ClusterRole: R.clusterroles, ClusterRoleBinding: R.clusterrolebindings } as const;
  for (const d of parseAllDocuments(readFileSync(fromPackageRoot(file), 'utf8'))) {
    const o = d.toJS() as KubeObject | null;
    if (o?.metadata?.name !== VN_AGENT_KUBELET_ROLE) continue;
    const r = kinds[o.kind as keyof typeof kinds];
    if (!r) throw new Error(`${file}: ${o.kind} ${VN_AGENT_KUBELET_ROLE} is neither a ClusterRole nor a binding`);
    await c.apply(r, o, 'vc-up');
  }
}

/** VN_AGENT_KUBELET_ROLE names the ClusterRole (and its binding) of what kubelets let the vn-agent do. */
const VN_AGENT_KUBELET_ROLE = 'vc-vn-agent-kubelet';

/**
 * applyCRDs server-side-applies every CRD under deploy/crds and waits until the VirtualCluster API answers. The
 * minimal Cluster CRD (clusters.yaml) is only created where no Cluster CRD is (ensureClusterCRD).
 */
export async function applyCRDs(sc: LocalSuperCluster): Promise<void> {
  const c = await sc.cluster.client();
  const dir = fromPackageRoot('deploy/crds');
  await ensureClusterCRD(c);
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml') && x !== 'clusters.yaml')) {
    for (const d of parseAllDocuments(readFileSync(join(dir, f), 'utf8')))
      await c.apply(R.crds, d.toJS() as KubeObject, 'vc-up');
  }
  await waitFor('the VirtualCluster API', async () => !!(await c.list(R.virtualclusters)), { timeoutMs: 30_000 });
}

/** MANAGER_GROUP is the group of the embedded manager's client certificate, which deploy/policy matches. */
export const MANAGER_GROUP = 'tenancy.x-k8s.io:managers';

/** applyFile server-side-applies every object of a repository YAML file with the resource its kind names. */
export const applyFile = async (c: KubeClient, file: string, fieldManager: string): Promise<void> => {
  const byKind = new Map<string, Resource>(Object.values(R).map((r) => [r.kind, r]));
  for (const d of parseAllDocuments(readFileSync(fromPackageRoot(file), 'utf8'))) {
    const o = d.toJS() as KubeObject | null;
    if (!o) continue;
    const r = byKind.get(o.kind ?? '');
    if (!r) throw new Error(`${file}: no resource known for kind ${o.kind}`);
    await c.apply(r, o, fieldManager);
  }
};

/**
 * managerIdentity applies the manager's RBAC (deploy/manager/rbac.yaml, bound to MANAGER_GROUP as well) and the
 * admission policies that keep it inside tenant namespaces (deploy/policy), and returns a kubeconfig for a client
 * certificate `vc-manager` in MANAGER_GROUP: the embedded manager runs as what the policies bound, not as admin.
 */
export async function managerIdentity(
  sc: LocalSuperCluster | LocalControlPlane,
  leaseNamespace: string,
): Promise<string> {
  const cp = 'cluster' in sc ? sc.cluster : sc;
  const c = await cp.client();
  await applyFile(c, 'deploy/manager/rbac.yaml', 'vc-up');
  const group = { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: MANAGER_GROUP };
  await c.apply(
    R.clusterrolebindings,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'vc-manager-embedded' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'vc-manager' },
      subjects: [group],
    },
    'vc-up',
  );
  const lease = { name: 'vc-manager-leader-election', namespace: leaseNamespace };
  await c.apply(
    R.roles,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: lease,
      rules: [
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
        },
      ],
    },
    'vc-up',
  );
  await c.apply(
    R.rolebindings,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: lease,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: lease.name },
      subjects: [group],
    },
    'vc-up',
  );
  await applyFile(c, 'deploy/policy/manager-scope.yaml', 'vc-up');
  const superCA = { certPem: cp.caPem, keyPem: readFileSync(join(cp.dir, 'pki/ca.key'), 'utf8') };
  const cert = await issueCert(superCA, {
    commonName: 'vc-manager',
    organizations: [MANAGER_GROUP],
    usages: ['client'],
    validityDays: 365,
  });
  return renderKubeconfig({
    clusterName: cp.name,
    server: cp.server,
    caPem: cp.caPem,
    user: 'vc-manager',
    clientCertPem: cert.certPem,
    clientKeyPem: cert.keyPem,
  });
}
