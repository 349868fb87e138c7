import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { R } from '../../kube/resources.ts';
import { VIRTUAL_CLUSTER_PROBE, waitAdmissionConfigured } from '../../kube/admission.ts';
import { LocalSuperCluster } from '../local/supercluster.ts';
import type { NodeCertificateSettings } from '../local/nodecerts.ts';
import { registerSuperCluster } from '../local/registration.ts';
import { TcpForwarder } from '../local/forwarder.ts';
import { confinementUnavailable } from '../local/netconfine.ts';
import { platformCgroup } from '../local/cpulimit.ts';
import { waitFor } from '../local/process.ts';
import type { ManagerConfig } from '../../programs/manager/config.ts';
import { startManager, type Manager } from '../../programs/manager/manager.ts';
import { localProvisioners } from '../provisioner/offer.ts';
import { git, startGitServer, type TenantRepositoryServer } from './gitserver.ts';
import { keptPort, startAgent } from './agent.ts';
import { embeddedTenantDefaults, nativeOnRealNodes } from './defaults.ts';
import { resolveShape, shapeOf } from './shape.ts';
import { applyCRDs, applyFile, ensureEmbeddedPolicy, managerIdentity } from './superobjects.ts';

// The embedded default's parts, named from here as well, where its users have always found them.
export { startNodesAgent } from './agent.ts';
export {
  EMBEDDED_POLICY_NAME,
  embeddedForcedPlacement,
  embeddedPolicy,
  embeddedTenantDefaults,
  nativeOnRealNodes,
} from './defaults.ts';
export { applyCRDs, MANAGER_GROUP, managerIdentity } from './superobjects.ts';

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
  /** lifetime and renewal of the real nodes' client certificates (SuperClusterOptions.realNodeCertificates) */
  realNodeCertificates?: NodeCertificateSettings;
  plugins?: string[];
  /**
   * images imported on the real nodes besides the node toolchain's (e.g. `npm run conformance` imports the e2e
   * suite's names): tenant Pods run them IfNotPresent like the toolchain's
   */
  preloadedImages?: readonly string[];
  onStep?: (s: string) => void;
  /**
   * superClusters > 1 runs further super clusters r2..rN on the same etcd, each registered in the meta cluster as a
   * user would register one; the first is then named r1 (default: as many as the state directory ran, else one super
   * cluster, named default). A restart may add super clusters, never remove one (resolveShape).
   */
  superClusters?: number;
  /**
   * realNodeSuper names the super cluster (r1..rN) that gets the real nodes when superClusters > 1; default the first.
   * The native provisioner needs them on the first; a tenant's DNS follows it to every super cluster it is on
   * (docs/concepts/tenant-dns.md), run on the real node of r1 with the meta cluster apart by test/realnode/metademo.
   */
  realNodeSuper?: string;
  /**
   * realNodeSupers names several super clusters that get realNodes real nodes each, every node in a network namespace
   * of its own (core/dev/local/nodenetns.ts; one host's network has room for one super cluster's kube-proxy rules);
   * it replaces realNodeSuper
   */
  realNodeSupers?: readonly string[];
  /**
   * confine (default true) runs each local tenant's apiserver and controller manager network-confined where the host
   * allows it (core/dev/local/netconfine.ts): they reach their own ports, the vn-agents, the real nodes' Pod CIDRs and
   * the outside, not the host, the super cluster, the manager or other tenants
   */
  confine?: boolean;
  /**
   * meta runs the meta cluster apart from the super clusters, as the original VirtualCluster's demo does: a control
   * plane named `meta` without nodes holds the VirtualClusters, the manager's Lease and the registrations, and every
   * super cluster r1..rN (superClusters of them, at least one) is registered in it; the scheduler places every tenant
   * namespace, and no tenant Pod runs on the meta cluster. The native provisioner (Pods in the meta cluster) is then
   * not offered. Default: as the state directory was started; a state directory refuses the other way (resolveShape).
   */
  meta?: boolean;
  /**
   * metricsServer runs metrics-server beside each local tenant when there is a real node (LocalProvisionerOptions
   * .metricsServer): `kubectl top` and HPAs in the tenants. The binary must be built (ensureMetricsServer); `vc up`
   * turns it on and builds it, tests that do not measure usage leave it off (default).
   */
  metricsServer?: boolean;
  /**
   * platformCpu (default true) runs this process (the manager's) and the super clusters in a cpu cgroup of the
   * platform's weight (core/dev/local/cpulimit.ts PlatformCgroup) from start until stop, where the host's cpu
   * controller can be written; false leaves them ordinary processes
   */
  platformCpu?: boolean;
}): Promise<Embedded> {
  // A restart runs the clusters the state directory has, or refuses what would strand its objects and Pods.
  const { superClusters: count, meta } = resolveShape(o, shapeOf(o.stateDir), o.stateDir);
  const firstName = meta ? 'meta' : count > 1 ? 'r1' : 'default';
  const superNames = meta || count > 1 ? Array.from({ length: count }, (_, i) => `r${i + 1}`) : [firstName];
  const realSupers = o.realNodeSupers ?? [o.realNodeSuper ?? superNames[0]!];
  for (const r of realSupers)
    if (!superNames.includes(r))
      throw new Error(`realNodeSuper ${JSON.stringify(r)}: not one of the super clusters (${superNames.join(', ')})`);
  const netnsRealNodes = realSupers.length > 1;
  const realOn = (name: string) => (realSupers.includes(name) ? (o.realNodes ?? 0) : 0);
  const firstReal = realOn(firstName);
  const step = o.onStep ?? (() => {});
  // The platform (the super clusters and the manager, whose syncer serves every tenant) runs in a cpu cgroup whose
  // weight is above the tenant control planes' cgroups: a tenant whose control plane takes the cores cannot make the
  // platform wait for one. Every process started from here on inherits it, but for the tenants' control planes, which
  // enter their own cgroups, and the real nodes' Pods, which run under the kubelet's cgroupRoot.
  const platform = o.platformCpu === false ? undefined : platformCgroup();
  if (platform && 'unavailable' in platform)
    step(`the platform's processes run with an ordinary process's CPU weight: ${platform.unavailable}`);
  const leavePlatform = async () => {
    if (platform && 'cgroup' in platform) await platform.cgroup.leave();
  };
  step(
    meta
      ? 'starting the meta cluster (etcd, kube-apiserver, controller-manager; no scheduler, no nodes)'
      : `starting the super cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok nodes${firstReal ? `, ${firstReal} real node(s)` : ''})`,
  );
  const sc = await LocalSuperCluster.start({
    stateDir: o.stateDir,
    nodes: meta ? 0 : (o.nodes ?? 3),
    // The meta cluster apart runs no Pod: nothing for a scheduler to do there.
    ...(meta && { scheduler: false }),
    realNodes: firstReal,
    ...(netnsRealNodes && { netnsRealNodes }),
    ...(o.realNodeLockWaitMs ? { realNodeLockWaitMs: o.realNodeLockWaitMs } : {}),
    ...(o.realNodeCertificates && { realNodeCertificates: o.realNodeCertificates }),
    restart: true,
  }).catch(async (e: unknown) => {
    await leavePlatform();
    throw e;
  });
  try {
    step('installing the CRDs');
    await applyCRDs(sc);
    step('creating the embedded TenantPolicy (tenant Pods may tolerate the real node) unless it exists');
    await ensureEmbeddedPolicy(await sc.cluster.client(), superNames);
    step('admitting only VirtualClusters whose choices their TenantPolicy grants (deploy/policy/tenant-grants.yaml)');
    await applyFile(await sc.cluster.client(), 'deploy/policy/tenant-grants.yaml', 'vc-up');
    // The policy takes TenantPolicies, a CRD of moments ago, as parameters: until the apiserver maps them it refuses
    // every VirtualCluster write, and `vc up` must not hand over a cluster that does.
    await waitAdmissionConfigured(await sc.cluster.client(), R.virtualclusters, VIRTUAL_CLUSTER_PROBE);
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

    step('starting the vn-agent (kubelet proxy for tenants)');
    // Tenant apiservers in Pods (native tenants) reach the vn-agent where Pods reach this host: the real node's bridge.
    const podAddress = sc.realNodes[0]?.hostAddress;
    const agent = await startAgent(sc, o.stateDir, sc.cluster, podAddress, o.plugins);
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
    // The meta cluster apart is no super cluster: Embedded.superClusters lists r1..rN only.
    const supers = meta ? [] : [{ name: firstName, kubeconfigPath: sc.kubeconfigPath, vnAgentPort: agent.port }];
    // Each super cluster has its own vn-agent; on this one machine they differ by port, which each super cluster's
    // vNodes advertise (pluginConfig.nodes.vnAgent.superClusters).
    const perSuper: Record<string, { host: string; port: number }> = {};
    try {
      for (let i = meta ? 1 : 2; i <= count; i++) {
        const name = `r${i}`;
        step(`starting super cluster ${name}, its vn-agent, and registering it in the meta cluster`);
        const real = realOn(name);
        // Apart from the meta cluster, the super cluster of the real nodes has them alone, untainted: every tenant Pod
        // placed there (the default dnsPolicy's DNS copy too) runs as a container, as in the seed's demo.
        const realOnly = meta && real > 0;
        const cp = await sc.addSuperCluster(name, {
          nodes: realOnly ? 0 : (o.nodes ?? 3),
          restart: true,
          realNodes: real,
          ...(realOnly && { untaintedRealNodes: true }),
          ...(netnsRealNodes && { netnsRealNodes }),
          ...(real && o.realNodeLockWaitMs ? { realNodeLockWaitMs: o.realNodeLockWaitMs } : {}),
        });
        const kubeconfig = await managerIdentity(cp, 'kube-system');
        await registerSuperCluster(c, { name, kubeconfig, superClient: await cp.client() });
        const a = await startAgent(sc, o.stateDir, cp, undefined, o.plugins);
        agents.push(a);
        perSuper[name] = { host: '127.0.0.1', port: a.port };
        supers.push({ name, kubeconfigPath: cp.kubeconfigPath, vnAgentPort: a.port });
      }
    } catch (e) {
      for (const a of agents) await a.stop();
      throw e;
    }
    // Every vn-agent serves with a certificate of the first super cluster's CA (startNodesAgent): tenant apiservers,
    // local and native, verify it against this file.
    const agentCAFile = join(sc.cluster.dir, 'pki/ca.crt');
    const metaRealNode = sc.realNodesOf(sc.cluster)[0];
    const cfg: ManagerConfig = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ManagerConfiguration',
      superClusters: [{ name: firstName, kubeconfig: managerKubeconfig, ...(meta && { metaOnly: true }) }],
      ...(meta || count > 1 ? { superClusterRegistry: { enabled: true, probeIntervalSeconds: 10 } } : {}),
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
          // (the first real node of all, started by now: with the meta cluster apart it is r1's, started above)
          ...(sc.realNodes[0] && { podAddress: sc.realNodes[0].hostAddress }),
          // tenant apiservers verify the vn-agents' serving certificates (startNodesAgent: of the first super's CA)
          kubeletCAFile: agentCAFile,
          // kubectl top and HPAs in every tenant, where a real node has Pods to measure (kwok's report no usage)
          ...(o.metricsServer && sc.realNodes.length > 0 && { metricsServer: true }),
        },
        // Native tenants are Pods in the meta cluster: offered where it has the real node.
        ...(metaRealNode && {
          native: {
            ...nativeOnRealNodes(o.stateDir, {
              host: metaRealNode.hostAddress,
              port: await keptPort(join(o.stateDir, 'native-dns-view-port')),
            }),
            kubeletCAFile: agentCAFile,
          },
        }),
        tenantDNS: { enabled: true },
      },
      // Snapshots of the embedded tenants (vc backup, vc restore) stay in the state directory, the last ten of each.
      backups: { directory: join(o.stateDir, 'backups'), retention: { count: 10 } },
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
      ...(meta || count > 1 ? { scheduler: { enabled: true, namespace: 'vc-system' } } : {}),
      ...(o.plugins?.length ? { plugins: { thirdParty: o.plugins } } : {}),
    };
    cfg.virtualClusters!.defaultPluginConfig = {
      nodes: {
        vnAgent: { ...agentAddress, ...(meta || count > 1 ? { superClusters: perSuper } : {}) },
      },
    };
    if (cfg.tenantDefaults?.pods?.forced) step(`tenant Pods run on the real node ${sc.realNodes[0]!.name}`);
    // Tenant admins make their apiserver connect where they say (webhooks, APIServices, proxy paths): on this host that
    // would start beside everything else. Their control planes reach their own ports, the vn-agents, their own tenant's
    // Pods (the manager follows the super cluster's Pods for them) and the outside.
    const unconfined = o.confine === false ? 'turned off (--no-confine)' : await confinementUnavailable();
    if (unconfined) step(`tenant control planes are NOT network-confined: ${unconfined}`);
    else
      cfg.virtualClusters!.local!.confine = {
        podCidrs: sc.realNodes.map((n) => n.cfg.podCidr),
        endpoints: [
          { host: '127.0.0.1', port: agent.port },
          ...(agentAddress.host !== '127.0.0.1' ? [agentAddress] : []),
          ...Object.values(perSuper),
        ],
      };
    const configPath = join(o.stateDir, 'manager.yaml');
    writeFileSync(configPath, stringify(cfg));
    step('starting the manager (leader election, VirtualCluster controller, syncer)');
    // The local provisioner is the developer environment's: this program offers it to the manager, which never imports it.
    const manager = await startManager(cfg, configPath, { provisioners: localProvisioners(cfg) });
    await waitFor('the manager to lead', async () => manager.isLeader(), { timeoutMs: 60_000 }).catch(
      async (e: unknown) => {
        await manager.stop();
        throw e;
      },
    );
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
        await leavePlatform();
      },
    };
  } catch (e) {
    await sc.stop();
    await leavePlatform();
    throw e;
  }
}
