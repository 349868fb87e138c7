import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeClient, KubeObject, Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { LocalSuperCluster } from '../local/supercluster.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../local/realnode.ts';
import type { NativeOptions } from '../../provisioners/native/provisioner.ts';
import { NODE_IMAGES } from '../../toolchain/node.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import type { LocalControlPlane } from '../local/controlplane.ts';
import { ensureClusterCRD, registerSuperCluster } from '../local/registration.ts';
import { TcpForwarder } from '../local/forwarder.ts';
import { freePorts, waitFor } from '../local/process.ts';
import { fromPackageRoot } from '../../paths.ts';
import { renderKubeconfig } from '../../pki/kubeconfig.ts';
import { issueCert, issueNodeCert } from '../../pki/pki.ts';
import { pluginHostFromConfig } from '../../programs/plugins.ts';
import { DEFAULT_POLICY, DEFAULT_POLICY_ANNOTATION, type TenantPolicy } from '../../tenancy/policy.ts';
import { startVnAgent, type VnAgent } from '../../vnagent/agent.ts';
import { VirtualClusterDirectory, type TenantDirectory } from '../../vnagent/directory.ts';
import { nodeSuperClient, parseNodeCredential } from '../../vnagent/nodecredential.ts';
import { InformerSuperView, NodesSuperView } from '../../vnagent/superview.ts';
import type { ManagerConfig } from '../../programs/manager/config.ts';
import { startManager, type Manager } from '../../programs/manager/manager.ts';
import { localProvisioners } from '../provisioner/offer.ts';
import { git, startGitServer, type TenantRepositoryServer } from './gitserver.ts';

/** Embedded is the whole system on this machine: super cluster, tenant git repository and the manager. */
export interface Embedded {
  superCluster: LocalSuperCluster;
  /**
   * superClusters are every super cluster with its admin kubeconfig and the port of its own vn-agent: the first (also
   * the meta cluster), then r2..
   */
  superClusters: Array<{ name: string; kubeconfigPath: string; vnAgentPort: number }>;
  manager: Manager;
  configPath: string;
  /** clone/push URL of the tenant repository the manager follows */
  gitURL: string;
  /** where the git server's webhook should be pointed (generic HMAC with the token in Secret default/tenants-webhook) */
  webhookURL?: string;
  /** port of the first super cluster's vn-agent, where the tenants' vNodes of its nodes point */
  vnAgentPort: number;
  stop(): Promise<void>;
}

/** SAMPLE_TENANTS are the two tenants the embedded default's repository starts with. */
export const SAMPLE_TENANTS = ['dev', 'staging'] as const;

const sampleTenant = (name: string) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace: 'default' },
    spec: { provisioner: { type: 'local' }, weight: 1, podSecurityLevel: 'baseline' },
  });

/** EMBEDDED_POLICY_NAME is the TenantPolicy `vc up` creates (once) and annotates default. */
export const EMBEDDED_POLICY_NAME = 'embedded';

/**
 * embeddedPolicy is the TenantPolicy of the embedded default: the built-in defaults, except that tenant Pods may
 * tolerate the real node's NoSchedule taint and select nodes by its label. The platform thereby lets a tenant run a
 * Pod on a real node (the toolchain's images only) when the Pod asks for it; where `vc up` runs one super cluster with
 * a real node it places every tenant Pod there anyway (embeddedForcedPlacement). The toolchain's images, which `vc up`
 * imports into the real node, run from the node's image store (pods.preloadedImages): nothing can be pulled here.
 * It grants the super clusters `vc up` started (spec.superCluster may name them), and, being the default policy, is
 * everyone's. Nothing else is widened: no ClusterVersion and no import Secret is granted.
 */
export function embeddedPolicy(superClusters: readonly string[] = []): TenantPolicy {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'TenantPolicy',
    metadata: { name: EMBEDDED_POLICY_NAME, annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
    spec: {
      pods: {
        tolerations: [
          ...DEFAULT_POLICY.podTolerations.map((t) => ({ ...t })),
          { key: REAL_NODE_TAINT.key, effect: REAL_NODE_TAINT.effect },
        ],
        nodeLabelKeys: [...DEFAULT_POLICY.podNodeLabelKeys, REAL_NODE_LABEL],
        preloadedImages: Object.values(NODE_IMAGES),
      },
      ...(superClusters.length && { grants: { superClusters: [...superClusters] } }),
    },
  };
}

/**
 * embeddedForcedPlacement is what `vc up` forces onto every tenant Pod (the manager's tenantDefaults.pods.forced) when
 * it runs one super cluster with a real node: the real node's label and a toleration of its NoSchedule taint, so
 * tenant workloads run as real containers (DNS, Services, logs and exec work) rather than as kwok's simulations. It is
 * written into the manager configuration by every `vc up`, so it follows that run: `--real-nodes 0`, the fallback to
 * simulated nodes or several super clusters (whose others have no real node) force nothing. Unlike the embedded
 * TenantPolicy, created once and then the administrator's, it cannot outlive the real node it names.
 */
export function embeddedForcedPlacement(): ForcedPlacementView {
  return {
    nodeSelector: { [REAL_NODE_LABEL]: 'true' },
    tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
  };
}

/**
 * embeddedTenantDefaults is the manager's tenantDefaults under `vc up`, from the real nodes it started (each Ready by
 * then) and its super clusters: none without a real node; with one, the real node's images (imported with it, never
 * pulled) kept IfNotPresent, and with a single super cluster every tenant Pod forced onto the real node.
 */
export function embeddedTenantDefaults(o: {
  realNodes: number;
  superClusters: number;
  preloadedImages: readonly string[];
}): Pick<ManagerConfig, 'tenantDefaults'> {
  if (o.realNodes < 1) return {};
  return {
    tenantDefaults: {
      pods: {
        preloadedImages: [...Object.values(NODE_IMAGES), ...o.preloadedImages],
        ...(o.superClusters === 1 && { forced: embeddedForcedPlacement() }),
      },
    },
  };
}

/**
 * ensureEmbeddedPolicy creates the embedded TenantPolicy when no policy of that name exists; an existing one is the
 * platform administrator's from then on and is left as it is.
 */
async function ensureEmbeddedPolicy(c: KubeClient, superClusters: readonly string[]): Promise<void> {
  if (await c.getOrNull(R.tenantpolicies, undefined, EMBEDDED_POLICY_NAME)) return;
  await c.create(R.tenantpolicies, embeddedPolicy(superClusters) as KubeObject);
}

/**
 * applyKubeletAccess grants the vn-agent's user (`vc-vn-agent`, its client certificate towards kubelets) what the
 * kubelets' webhook authorization asks for, and nothing else: the `vc-vn-agent-kubelet` ClusterRole and binding of
 * deploy/vn-agent/rbac.yaml (nodes/proxy get and create).
 */
async function applyKubeletAccess(c: KubeClient): Promise<void> {
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

/** startTenantRepository serves `<stateDir>/git` on a port kept across restarts and seeds the tenants repository once. */
async function startTenantRepository(stateDir: string): Promise<TenantRepositoryServer> {
  const portFile = join(stateDir, 'git-port');
  const port = existsSync(portFile) ? Number(readFileSync(portFile, 'utf8')) : 0;
  const server = await startGitServer({ root: join(stateDir, 'git'), port });
  writeFileSync(portFile, String(server.port));
  if (!existsSync(join(stateDir, 'git', 'tenants.git'))) {
    await server.initRepo('tenants');
    await git(join(stateDir, 'git', 'tenants.git'), ['config', 'http.receivepack', 'true']);
    const files: Record<string, string> = {
      'README.md': 'Tenant definitions: one VirtualCluster per file under tenants/.\n',
    };
    for (const t of SAMPLE_TENANTS) files[`tenants/${t}.yaml`] = sampleTenant(t);
    await server.commitFiles('tenants', files, 'two sample tenants');
  }
  return server;
}

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

const applyFile = async (c: KubeClient, file: string, fieldManager: string): Promise<void> => {
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

/**
 * startEmbedded starts (or restarts, reusing its state) the local super cluster in stateDir, installs the CRDs and
 * runs a manager with leader election, the VirtualCluster controller (local provisioner sharing the super's etcd)
 * and the syncer. The manager configuration it uses is written to `<stateDir>/manager.yaml`.
 */
export async function startEmbedded(o: {
  stateDir: string;
  nodes?: number;
  /** real nodes (kubelet + containerd on this host) next to the kwok nodes; default 0 */
  realNodes?: number;
  /** how long to wait for another set of real nodes on this host to stop (host lock); default 0: fail at once */
  realNodeLockWaitMs?: number;
  plugins?: string[];
  /**
   * images imported on the real nodes besides the node toolchain's (e.g. `npm run conformance` imports the e2e
   * suite's names): tenant Pods run them IfNotPresent like the toolchain's
   */
  preloadedImages?: readonly string[];
  onStep?: (s: string) => void;
  /**
   * superClusters > 1 runs further super clusters r2..rN on the same etcd, each registered in the meta cluster as a
   * user would register one; the first is then named r1 (default: one super cluster, named default)
   */
  superClusters?: number;
  /**
   * realNodeSuper names the super cluster (r1..rN) that gets the real nodes when superClusters > 1; default the first.
   * The native provisioner and the tenants' DNS on real nodes need them on the first; elsewhere tenant Pods there use
   * `dnsPolicy: Default` (README, Several super clusters).
   */
  realNodeSuper?: string;
}): Promise<Embedded> {
  const count = o.superClusters ?? 1;
  const firstName = count > 1 ? 'r1' : 'default';
  const realSuper = o.realNodeSuper ?? firstName;
  const superNames = count > 1 ? Array.from({ length: count }, (_, i) => `r${i + 1}`) : [firstName];
  if (!superNames.includes(realSuper))
    throw new Error(
      `realNodeSuper ${JSON.stringify(realSuper)}: not one of the super clusters (${superNames.join(', ')})`,
    );
  const firstReal = realSuper === firstName ? (o.realNodes ?? 0) : 0;
  const step = o.onStep ?? (() => {});
  step(
    `starting the super cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok nodes${firstReal ? `, ${firstReal} real node(s)` : ''})`,
  );
  const sc = await LocalSuperCluster.start({
    stateDir: o.stateDir,
    nodes: o.nodes ?? 3,
    realNodes: firstReal,
    ...(o.realNodeLockWaitMs ? { realNodeLockWaitMs: o.realNodeLockWaitMs } : {}),
    restart: true,
  });
  try {
    step('installing the CRDs');
    await applyCRDs(sc);
    step('creating the embedded TenantPolicy (tenant Pods may tolerate the real node) unless it exists');
    await ensureEmbeddedPolicy(await sc.cluster.client(), superNames);
    step('admitting only VirtualClusters whose choices their TenantPolicy grants (deploy/policy/tenant-grants.yaml)');
    await applyFile(await sc.cluster.client(), 'deploy/policy/tenant-grants.yaml', 'vc-up');
    step('starting the tenant git repository');
    const gitServer = await startTenantRepository(o.stateDir);
    const gitURL = gitServer.url('tenants');
    const c = await sc.cluster.client();
    await c.apply(
      R.secrets,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'tenants-webhook', namespace: 'default' },
        stringData: { token: 'embedded' },
      },
      'vc-up',
    );

    step('giving the manager its own identity, bounded by the admission policies of deploy/policy');
    const managerKubeconfig = join(o.stateDir, 'manager.kubeconfig');
    writeFileSync(managerKubeconfig, await managerIdentity(sc, 'kube-system'), { mode: 0o600 });

    // Every vn-agent serves with a certificate of the first super cluster's CA (startNodesAgent): tenant apiservers,
    // local and native, verify it against this file.
    const agentCAFile = join(sc.cluster.dir, 'pki/ca.crt');
    const cfg: ManagerConfig = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ManagerConfiguration',
      superClusters: [{ name: firstName, kubeconfig: managerKubeconfig }],
      ...(count > 1 ? { superClusterRegistry: { enabled: true, probeIntervalSeconds: 10 } } : {}),
      leaderElection: {
        enabled: true,
        namespace: 'kube-system',
        name: 'vc-manager',
        leaseDurationSeconds: 15,
        renewDeadlineSeconds: 10,
        retryPeriodSeconds: 2,
      },
      virtualClusters: {
        enabled: true,
        // The embedded manager's tenants are processes beside it unless they name another provisioner.
        defaultProvisioner: 'local',
        local: {
          stateDir: join(o.stateDir, 'tenants'),
          etcdEndpoint: sc.etcd.endpoint,
          // Pods on the real node reach the tenant apiservers (their DNS servers read Services there) on its bridge.
          ...(sc.realNodes[0] && { podAddress: sc.realNodes[0].nodeIP }),
          // tenant apiservers verify the vn-agents' serving certificates (startNodesAgent: of the first super's CA)
          kubeletCAFile: agentCAFile,
        },
        ...(sc.realNodes[0] && {
          native: {
            ...nativeOnRealNodes(o.stateDir, {
              host: sc.realNodes[0].nodeIP,
              port: await keptPort(join(o.stateDir, 'native-dns-view-port')),
            }),
            kubeletCAFile: agentCAFile,
          },
        }),
        tenantDNS: { enabled: true },
      },
      // The real nodes of --real-node-super rK start with rK, after this configuration is written: count them by request.
      ...embeddedTenantDefaults({
        realNodes: o.realNodes ?? 0,
        superClusters: count,
        preloadedImages: o.preloadedImages ?? [],
      }),
      gitops: {
        enabled: true,
        cacheDir: join(o.stateDir, 'gitops-cache'),
        // The tenant repository is served on 127.0.0.1.
        allowPrivateAddresses: ['127.0.0.0/8', '::1/128'],
        // The tenant repository's GitSource is declared here; the manager applies it when it starts.
        sources: [
          {
            apiVersion: 'tenancy.x-k8s.io/v1alpha1',
            kind: 'GitSource',
            metadata: { name: 'tenants', namespace: 'default' },
            spec: {
              url: gitURL,
              ref: { branch: 'main' },
              path: 'tenants',
              interval: '10s',
              webhook: { kind: 'generic', secretRef: { name: 'tenants-webhook' } },
            },
          },
        ],
      },
      syncer: { workers: 8, patrolIntervalSeconds: 60 },
      // Several super clusters: the namespace scheduler places each tenant namespace, each syncer syncs what is placed.
      // Its signing key and summary live in vc-system, the one namespace besides tenant ones where the manager's
      // admission policy lets it keep them (deploy/policy/manager-scope.yaml).
      ...(count > 1 ? { scheduler: { enabled: true, namespace: 'vc-system' } } : {}),
      ...(o.plugins?.length ? { plugins: { thirdParty: o.plugins } } : {}),
    };
    step('starting the vn-agent (kubelet proxy for tenants)');
    // Tenant apiservers in Pods (native tenants) reach the vn-agent where Pods reach this host: the real node's bridge.
    const podAddress = sc.realNodes[0]?.nodeIP;
    const agent = await startAgent(sc, o.stateDir, sc.cluster, podAddress);
    const agents: Array<{ stop(): Promise<void> }> = [agent];
    const agentAddress = { host: '127.0.0.1', port: agent.port };
    if (podAddress) {
      const target = { host: '127.0.0.1', port: agent.port };
      const fwd = await TcpForwarder.start({ host: podAddress, port: agent.port, target }).catch(() =>
        TcpForwarder.start({ host: podAddress, port: 0, target }),
      );
      agents.push(fwd);
      Object.assign(agentAddress, { host: podAddress, port: fwd.port });
    }
    const supers = [{ name: firstName, kubeconfigPath: sc.kubeconfigPath, vnAgentPort: agent.port }];
    // Each super cluster has its own vn-agent; on this one machine they differ by port, which each super cluster's
    // vNodes advertise (pluginConfig.nodes.vnAgent.superClusters).
    const perSuper: Record<string, { host: string; port: number }> = {};
    try {
      for (let i = 2; i <= count; i++) {
        const name = `r${i}`;
        step(`starting super cluster ${name}, its vn-agent, and registering it in the meta cluster`);
        const real = name === realSuper ? (o.realNodes ?? 0) : 0;
        const cp = await sc.addSuperCluster(name, {
          nodes: o.nodes ?? 3,
          restart: true,
          realNodes: real,
          ...(real && o.realNodeLockWaitMs ? { realNodeLockWaitMs: o.realNodeLockWaitMs } : {}),
        });
        const kubeconfig = await managerIdentity(cp, 'kube-system');
        await registerSuperCluster(c, { name, kubeconfig, superClient: await cp.client() });
        const a = await startAgent(sc, o.stateDir, cp);
        agents.push(a);
        perSuper[name] = { host: '127.0.0.1', port: a.port };
        supers.push({ name, kubeconfigPath: cp.kubeconfigPath, vnAgentPort: a.port });
      }
    } catch (e) {
      for (const a of agents) await a.stop();
      throw e;
    }
    cfg.virtualClusters!.defaultPluginConfig = {
      nodes: {
        vnAgent: { ...agentAddress, ...(count > 1 ? { superClusters: perSuper } : {}) },
      },
    };
    if (cfg.tenantDefaults?.pods?.forced) step(`tenant Pods run on the real node ${sc.realNodes[0]!.name}`);
    const configPath = join(o.stateDir, 'manager.yaml');
    writeFileSync(configPath, stringify(cfg));
    step('starting the manager (leader election, VirtualCluster controller, syncer)');
    // The local provisioner is the developer environment's: this program offers it to the manager, which never imports it.
    const manager = await startManager(cfg, configPath, { provisioners: localProvisioners(cfg) });
    await waitFor('the manager to lead', async () => manager.isLeader(), { timeoutMs: 60_000 });
    return {
      superCluster: sc,
      superClusters: supers,
      manager,
      configPath,
      gitURL,
      webhookURL: manager.gitops?.webhookURL('default', 'tenants'),
      vnAgentPort: agent.port,
      async stop() {
        await manager.stop();
        for (const a of agents) await a.stop();
        await gitServer.close();
        await sc.stop();
      },
    };
  } catch (e) {
    await sc.stop();
    throw e;
  }
}

/**
 * nativeOnRealNodes are the native provisioner's settings on a local super cluster with real nodes: the control-plane
 * Pods run on a real node (the only nodes that run containers), the manager on this host reaches each tenant
 * apiserver at its Service's ClusterIP (kube-proxy routes it here), and etcd keeps its data under
 * `<stateDir>/native/<root>` (the local super cluster has no volume provisioner), deleted with the tenant. The tenants'
 * DNS servers read their Services through the manager's DNS view at dnsView (the real node's bridge gateway, where
 * Pods reach this host), which shows each with its super cluster IP.
 */
export function nativeOnRealNodes(stateDir: string, dnsView: { host: string; port: number }): NativeOptions {
  return {
    apiserverAccess: 'ClusterIP',
    placement: embeddedForcedPlacement(),
    etcdHostPathDir: join(stateDir, 'native'),
    dnsView,
  };
}

/** keptPort is the port recorded in a file, or a free one, recorded there: the same port across restarts. */
async function keptPort(file: string): Promise<number> {
  const port = existsSync(file) ? Number(readFileSync(file, 'utf8')) : (await freePorts(1))[0]!;
  writeFileSync(file, String(port));
  return port;
}

/**
 * startNodesAgent runs the vn-agent of one super cluster of the embedded default (default the first; `cluster`
 * another one, r2..) on 127.0.0.1: tenants are the Running VirtualClusters of the meta cluster (or the given
 * directory); it serves every node of that super cluster, simulated and real, and reads each node's
 * Pods with that node's own credential (system:node:<node>, signed by that super cluster's CA), so the apiserver's Node
 * authorizer shows it nothing else. Towards the kubelets it is the user `vc-vn-agent` (a client certificate of that
 * super cluster's CA, allowed nodes/proxy by applyKubeletAccess) and verifies their serving certificates against that
 * CA. Its own serving certificate is of the first super cluster's CA, for 127.0.0.1 and `podAddress` when given (a
 * forwarder there lets tenant apiservers in Pods, native tenants', reach it): the one CA tenant apiservers verify every
 * vn-agent against (virtualClusters.local.kubeletCAFile, virtualClusters.native.kubeletCAFile).
 */
export async function startNodesAgent(
  sc: LocalSuperCluster,
  o: {
    port: number;
    cluster?: LocalControlPlane;
    directory?: TenantDirectory;
    handshakeTimeoutMs?: number;
    podAddress?: string;
  },
): Promise<VnAgent> {
  const cluster = o.cluster ?? sc.cluster;
  const meta = await sc.cluster.client();
  const c = cluster === sc.cluster ? meta : await cluster.client();
  await applyKubeletAccess(c);
  const superCA = cluster.ca;
  const nodes = [...cluster.kwokNodeNames, ...sc.realNodesOf(cluster).map((n) => n.name)];
  const views: InformerSuperView[] = [];
  for (const nodeName of nodes) {
    const cert = await issueNodeCert(superCA, nodeName, 365);
    const cred = parseNodeCredential(cert.certPem, cert.keyPem, `of ${nodeName}`, nodeName);
    views.push(
      new InformerSuperView({ client: nodeSuperClient(c, cred), nodeName, nodeScoped: true, closeClient: true }),
    );
  }
  const client = await issueCert(superCA, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 365 });
  const serving = await issueCert(sc.cluster.ca, {
    commonName: 'vc-vn-agent',
    ipAddresses: ['127.0.0.1', ...(o.podAddress ? [o.podAddress] : [])],
    usages: ['server'],
    validityDays: 365,
  });
  return startVnAgent({
    host: '127.0.0.1',
    port: o.port,
    serving,
    directory: o.directory ?? new VirtualClusterDirectory({ meta }),
    superView: new NodesSuperView(views),
    plugins: await pluginHostFromConfig('vn-agent'),
    kubelet: { certPem: client.certPem, keyPem: client.keyPem, caPem: superCA.certPem },
    handshakeTimeoutMs: o.handshakeTimeoutMs,
  });
}

/** startAgent runs the vn-agent of one super cluster (startNodesAgent) on a port kept across restarts. */
async function startAgent(
  sc: LocalSuperCluster,
  stateDir: string,
  cluster: LocalControlPlane = sc.cluster,
  podAddress?: string,
): Promise<VnAgent> {
  const port = await keptPort(
    join(stateDir, cluster === sc.cluster ? 'vn-agent-port' : `vn-agent-port-${cluster.name}`),
  );
  return startNodesAgent(sc, { port, cluster, podAddress });
}
