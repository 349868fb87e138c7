// NativeProvisioner's ensure, roll planning and delete flow. Its parts are apart by job: rendering (render.ts, flags.ts,
// expose.ts, egress.ts, layout.ts, parts.ts), the PKI Secret and its renewal (pkistore.ts, renewal.ts), the apply and
// roll of the StatefulSets (roll.ts), the readiness probe (readyz.ts), the DNS view routes (dnsroutes.ts) and the
// component reports (components.ts).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { isAlreadyExists, isNotFound, type KubeClient, type KubeObject, type Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { childLogger } from '../../log.ts';
import { ANN, IDENTITY, LABEL } from '../../names/names.ts';
import { rootNamespaceObject } from '../../tenancy/namespace.ts';
import { judgeMembersChange, judgeNativeChange, runningKubernetesVersion } from './version.ts';
import { judgeResources, withPolicyLimits } from './resourcebounds.ts';
import type { JoinedNetworks } from '../dnsview.ts';
import { renderKubeconfig, type ControlPlanePKI } from '../../pki/pki.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import { assertFlagsAllowed } from '../../tenancy/allowlist.ts';
import {
  ADMIN_KUBECONFIG_KEY,
  apiserverHost,
  apiserverURL,
  controlPlaneCounts,
  NATIVE_PORTS,
  NATIVE_SECRETS,
  NETWORK_POLICIES,
  ETCD_CLIENT_SERVICE,
  renderNative,
  renderNativeServices,
  resourceFor,
  type ClusterVersion,
  type NativeServiceIPs,
} from './render.ts';
import { pinnedVersions } from '../../toolchain/toolchain.ts';
import {
  ProvisionRefused,
  type ComponentReport,
  type ComponentSource,
  type NodeAddressReader,
  type Provisioner,
  type ProvisionLimits,
  type ProvisionState,
  type RemoveWaiting,
  type RollPlanner,
} from '../provisioner.ts';
import type { RollComponent } from '../roll.ts';
import { DEFAULT_ROLL_STEP_TIMEOUT_MS, WorkloadRoller } from './roll.ts';
import { nativeComponents } from './components.ts';
import { platformAddressesOf, type EndpointsLike, type VnAgentAddress } from './egress.ts';
import { kubeletClientFingerprints, nativeCaRotation, nativeCertificates } from './renewal.ts';
import { DEFAULT_RENEW_FRACTION } from '../../pki/renewal.ts';
import { renewalRequestOf } from '../renewrequest.ts';
import {
  exposeSettings,
  exposure,
  externalAccess,
  type ApiserverService,
  type Exposure,
  type NodeLike,
} from './expose.ts';
import { ensurePKI } from './pkistore.ts';
import { probeReadyz } from './readyz.ts';
import { DnsViewRoutes } from './dnsroutes.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';

const log = childLogger({ controller: 'provisioner-native' });

/** READYZ_TIMEOUT_MS bounds the /readyz probe of the tenant apiserver. */
export const READYZ_TIMEOUT_MS = 3000;

/** The kinds remove deletes from the root namespace, workloads first so nothing restarts on missing Secrets. */
const OWNED_KINDS: readonly Resource[] = [
  R.statefulsets,
  R.services,
  NETWORK_POLICIES,
  R.secrets,
  R.persistentvolumeclaims,
];

interface StatefulSet extends KubeObject {
  spec?: { replicas?: number };
  status?: { readyReplicas?: number; replicas?: number };
}

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

/** API_ACCESS lists how a manager can reach the tenant apiservers of the native provisioner. */
export const API_ACCESS = ['ServiceName', 'ClusterIP'] as const;
/** ApiAccess is one of API_ACCESS. */
export type ApiAccess = (typeof API_ACCESS)[number];

/** NativeOptions are the platform's settings of the native provisioner (manager configuration virtualClusters.native). */
export interface NativeOptions {
  /**
   * how the manager reaches tenant apiservers: `ServiceName` (default) dials `apiserver.<root>.svc`, which needs the
   * manager inside the super cluster's network and DNS; `ClusterIP` dials the Service's ClusterIP, which kube-proxy
   * routes on every node's host (the local super cluster's real nodes), and adds that IP to the serving certificate
   */
  apiserverAccess?: ApiAccess;
  /** node selector entries and tolerations added to every control-plane Pod, e.g. to run them on real nodes */
  placement?: ForcedPlacementView;
  /**
   * a directory on the nodes' host: etcd keeps its data in `<dir>/<root>` (a hostPath volume) instead of a volume
   * claim, and remove deletes that directory once etcd's Pod is gone. Only for a manager running on the host of the
   * nodes (the local super cluster, which has no volume provisioner)
   */
  etcdHostPathDir?: string;
  /**
   * where the manager serves the tenant DNS servers' view of their apiservers (core/provisioners/dnsview.ts: each Service
   * shown with its super cluster IP), one address for all native tenants, told apart by TLS server name
   * (dnsViewServerName). Pods must reach it (e.g. a real node's bridge gateway, for a manager on the nodes' host).
   * Absent: tenant DNS servers read the tenant apiserver in-cluster and answer with the tenant's own cluster IPs,
   * which each node's translation (core/vnagent/clusterips.ts) carries to the super copies
   */
  dnsView?: { host: string; port: number };
  /**
   * which super clusters' Pod networks are joined (the manager configuration's `superClusters[].network`), for the DNS
   * view's answer to a Service with no copy, or a copy with no ready endpoint, on the asking Pod's super cluster
   * (superAddressed); absent: none
   */
  joined?: JoinedNetworks;
  /**
   * the vn-agents the platform's vNodes name as their kubelet (the manager configuration's
   * defaultPluginConfig.nodes.vnAgent, every super cluster's): the apiserver's egress NetworkPolicy allows each at its
   * host when one is named, else at its port on every address; absent, VN_AGENT_PORT (the vn-agent DaemonSet's)
   */
  vnAgents?: readonly VnAgentAddress[];
  /**
   * a CA certificate file on the manager's host: tenant apiservers verify their kubelets (the vn-agent, which the
   * vNodes name) against it (--kubelet-certificate-authority, from the Secret `kubelet-ca`); absent, not verified
   */
  kubeletCAFile?: string;
  /**
   * renewal of the tenants' leaf certificates (core/provisioners/native/renewal.ts): validityDays is the lifetime of
   * each leaf issued or renewed (default the tenant's spec.pkiExpireDays; the CAs keep that), renewFraction the share
   * of its life after which it is renewed (default DEFAULT_RENEW_FRACTION)
   */
  certificates?: { validityDays?: number; renewFraction?: number };
  /**
   * how long one component of a running tenant's roll may take to roll out before the roll stops there (default
   * DEFAULT_ROLL_STEP_TIMEOUT_MS)
   */
  rollStepTimeoutMs?: number;
}

/**
 * defaultClusterVersion is the ClusterVersion of a VirtualCluster that names none: the Kubernetes and etcd versions
 * the project pins for its toolchain (so the images are those a real node of the local super cluster has), every
 * other field left to renderNative's defaults.
 */
export function defaultClusterVersion(): ClusterVersion {
  const v = pinnedVersions();
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'ClusterVersion',
    metadata: { name: 'default' },
    spec: { kubernetesVersion: v.kubernetes, etcd: { version: v.etcd } },
  };
}

/**
 * NativeProvisioner runs each tenant control plane as workloads in the super cluster, in its root namespace:
 * etcd, kube-apiserver and kube-controller-manager StatefulSets, their Services and Secrets, as renderNative
 * renders them from the VirtualCluster and its ClusterVersion. The PKI is generated once and kept in the Secret
 * PKI_SECRET, so reconciling re-applies identical objects (server-side apply, field manager IDENTITY.manager) and
 * changes nothing; it is regenerated only when the certificate options (service CIDR, cluster domain, lifetime)
 * change, which rolls the StatefulSets through their config hash. The control plane is ready when the apiserver
 * StatefulSet has a ready replica and the apiserver answers /readyz through the admin kubeconfig. That kubeconfig
 * names the in-cluster Service (`apiserver.<root>.svc`), so a manager outside the super cluster's network never
 * sees it ready and says so in waitingFor; with NativeOptions.apiserverAccess `ClusterIP` the manager gets a
 * kubeconfig for the Service's ClusterIP instead (the local super cluster's real nodes run kube-proxy on this host).
 * The Services are applied first: the Pods map the in-cluster names to their ClusterIPs (hostAliases), so the
 * control plane needs no cluster DNS. The `apiserver` Service has the exposed type (spec.apiServer.expose,
 * core/provisioners/native/expose.ts); the addresses it is reached at from outside (the nodes' for NodePort, the load
 * balancer's once assigned) and the extra names go into the serving certificate, which alone is issued again when
 * they change, and the result carries an admin kubeconfig for the outside server (externalAccess).
 */
export class NativeProvisioner implements Provisioner, ComponentSource, RollPlanner, NodeAddressReader {
  readonly type = 'native';

  /** components reports the tenant's control-plane Pods (core/provisioners/native/components.ts). */
  components(_vc: VirtualCluster, root: string): Promise<ComponentReport[]> {
    return nativeComponents(this.superClient, root);
  }

  private readonly opts: NativeOptions;
  /** the apiserver egress leaves out every node's addresses (egress.ts): a Node that joins or moves renders again */
  readonly readsNodeAddresses = true as const;
  /** applies and rolls the StatefulSets, remembering the rolls that stopped */
  private readonly roller: WorkloadRoller;
  /** the tenants' routes on the shared DNS view, when the platform serves one (NativeOptions.dnsView) */
  private readonly dnsView?: DnsViewRoutes;

  constructor(
    private readonly superClient: KubeClient,
    opts: NativeOptions = {},
  ) {
    if (opts.apiserverAccess && !API_ACCESS.includes(opts.apiserverAccess))
      throw new Error(
        `native provisioner: apiserverAccess ${opts.apiserverAccess} is not one of ${API_ACCESS.join(', ')}`,
      );
    if (opts.etcdHostPathDir !== undefined && !isAbsolute(opts.etcdHostPathDir))
      throw new Error(`native provisioner: etcdHostPathDir ${opts.etcdHostPathDir} is not an absolute path`);
    this.opts = opts;
    this.roller = new WorkloadRoller(superClient, opts.rollStepTimeoutMs ?? DEFAULT_ROLL_STEP_TIMEOUT_MS);
    if (opts.dnsView)
      this.dnsView = new DnsViewRoutes({ ...opts.dnsView, ...(opts.joined && { joined: opts.joined }) });
  }

  /**
   * render reads what a tenant's control plane is made of and renders its objects: the ClusterVersion (or the
   * default), the flags through the allow-list, the version change judged by the skew policy (and snapshotted before
   * an upgrade), the Services (their addresses go into the certificates and the Pods' host aliases) and the PKI. With
   * `dry` nothing is written: the Services are applied as a dry run, a PKI due for renewal is renewed in memory only,
   * and no snapshot is taken.
   */
  private async render(
    vc: VirtualCluster,
    root: string,
    limits: ProvisionLimits,
    dry: boolean,
  ): Promise<
    | { waitingFor: string }
    | {
        objects: KubeObject[];
        pki: ControlPlanePKI;
        kubeletClients: ReturnType<typeof kubeletClientFingerprints>;
        certificates: ReturnType<typeof nativeCertificates>;
        serviceIPs: NativeServiceIPs;
        byClusterIP: boolean;
        exposed: Exposure;
      }
  > {
    const cvName = vc.spec.clusterVersionName;
    let clusterVersion: ClusterVersion;
    if (cvName) {
      const cv = await this.superClient.getOrNull<ClusterVersion>(R.clusterversions, undefined, cvName);
      if (!cv) return { waitingFor: `ClusterVersion ${cvName}` };
      clusterVersion = cv;
    } else {
      clusterVersion = defaultClusterVersion();
    }
    // The ClusterVersion's flags are the platform's; they pass the allow-list like the policy's and the tenant's.
    assertFlagsAllowed({
      apiServer: { ...clusterVersion.spec.apiServer?.extraArgs, ...vc.spec.apiServer?.extraArgs },
      controllerManager: {
        ...clusterVersion.spec.controllerManager?.extraArgs,
        ...vc.spec.controllerManager?.extraArgs,
      },
      etcd: clusterVersion.spec.etcd?.extraArgs,
    });
    // The policy bounds what the ClusterVersion's components may request; over it, nothing is applied.
    judgeResources(clusterVersion, cvName, limits.maxResources, limits.etcdBytes);
    // What the policy bounds is a limit too: a component left without one is limited to the policy's maximum.
    clusterVersion = withPolicyLimits(clusterVersion, limits.maxResources?.max, limits.etcdBytes);
    // A version change the skew policy forbids is refused before anything is applied; an upgrade snapshots first.
    const running = await this.superClient.getOrNull<KubeObject>(R.statefulsets, root, 'apiserver');
    const to = clusterVersion.spec.kubernetesVersion;
    await judgeNativeChange(runningKubernetesVersion(running), to, cvName, dry ? undefined : limits.beforeUpgrade);
    const etcd = await this.superClient.getOrNull<StatefulSet>(R.statefulsets, root, 'etcd');
    judgeMembersChange(etcd ? (etcd.spec?.replicas ?? 1) : undefined, controlPlaneCounts(vc, clusterVersion).etcd);
    if (!dry) await this.ensureNamespace(vc, root);
    const expose = exposeSettings(vc.spec.apiServer?.expose, clusterVersion.spec.apiServer?.serviceType);
    const serviceIPs: NativeServiceIPs = {};
    let apiserverService: ApiserverService | undefined;
    const { etcd: members } = controlPlaneCounts(vc, clusterVersion);
    for (const svc of renderNativeServices(clusterVersion, root, expose, members)) {
      const applied = await this.superClient.apply<ApiserverService>(R.services, svc, IDENTITY.manager, {
        dryRun: dry,
      });
      if (svc.metadata?.name === 'apiserver') apiserverService = applied;
      const ip = applied.spec?.clusterIP;
      if (!ip || ip === 'None') continue;
      if (svc.metadata?.name === 'apiserver') serviceIPs.apiserver = ip;
      if (svc.metadata?.name === ETCD_CLIENT_SERVICE) serviceIPs.etcd = ip;
      const member = /^etcd-(\d+)$/.exec(svc.metadata?.name ?? '');
      if (member) (serviceIPs.etcdMembers ??= [])[Number(member[1])] = ip;
    }
    const byClusterIP = this.opts.apiserverAccess === 'ClusterIP';
    if (byClusterIP && !serviceIPs.apiserver) return { waitingFor: `a ClusterIP for the Service ${root}/apiserver` };
    // every node's addresses and the super apiserver's endpoints are kept out of the apiserver's egress (egress.ts)
    const allNodes = (await this.superClient.listAll<NodeLike>(R.nodes)).items;
    const superApiserver = await this.superClient.getOrNull<EndpointsLike>(R.endpoints, 'default', 'kubernetes');
    const nodes = expose.type === 'NodePort' ? allNodes : [];
    const exposed = exposure(expose, apiserverService!, nodes, this.opts.placement);
    const { pki, rotation } = await ensurePKI(
      this.superClient,
      vc,
      root,
      byClusterIP ? [serviceIPs.apiserver!] : [],
      exposed.sans,
      { ...this.opts.certificates, renewFraction: this.renewFraction() },
      dry,
    );
    const objects = renderNative({
      vc,
      clusterVersion,
      pki,
      rootNamespace: root,
      serviceIPs,
      placement: this.opts.placement,
      etcdHostPath: this.etcdDataDir(root),
      ...(limits.etcdBytes !== undefined && { etcdBytes: limits.etcdBytes }),
      ...(this.opts.kubeletCAFile && { kubeletCA: readFileSync(this.opts.kubeletCAFile, 'utf8') }),
      ...(this.opts.vnAgents?.length && { vnAgents: this.opts.vnAgents }),
      platformAddresses: platformAddressesOf(superApiserver, allNodes, [this.superClient.server.hostname]),
    });
    const kubeletClients = kubeletClientFingerprints(pki, rotation, new Date());
    return {
      objects,
      pki,
      kubeletClients,
      certificates: nativeCertificates(pki, renewalRequestOf(vc)),
      serviceIPs,
      byClusterIP,
      exposed,
    };
  }

  async ensure(vc: VirtualCluster, root: string, limits: ProvisionLimits = {}): Promise<ProvisionState> {
    const r = await this.render(vc, root, limits, false);
    if ('waitingFor' in r) return { ready: false, waitingFor: r.waitingFor };
    const { objects, pki, kubeletClients, certificates, serviceIPs, byClusterIP, exposed } = r;
    let adminKubeconfig: string | undefined;
    // Everything but the workloads first (Secrets, Services, policies): the Pods of a roll read the new Secrets.
    for (const obj of objects.filter((o) => o.kind !== 'StatefulSet')) {
      const applied = await this.superClient.apply<Secret>(resourceFor(obj), obj, IDENTITY.manager);
      if (obj.kind === 'Secret' && obj.metadata?.name === NATIVE_SECRETS.adminKubeconfig) {
        const data = applied.data?.[ADMIN_KUBECONFIG_KEY];
        if (data) adminKubeconfig = Buffer.from(data, 'base64').toString('utf8');
      }
    }
    if (!adminKubeconfig)
      throw new Error(
        `Secret ${root}/${NATIVE_SECRETS.adminKubeconfig} has no key "${ADMIN_KUBECONFIG_KEY}" after apply`,
      );
    const { rolled, failure } = await this.roller.apply(
      root,
      objects.filter((o) => o.kind === 'StatefulSet'),
    );

    const sts = await this.superClient.getOrNull<StatefulSet>(R.statefulsets, root, 'apiserver');
    const ready = sts?.status?.readyReplicas ?? 0;
    if (ready < 1 && !failure)
      return {
        ready: false,
        waitingFor: `the apiserver StatefulSet ${root}/apiserver to have a ready Pod (${ready}/${sts?.spec?.replicas ?? 1} ready)`,
      };
    const host = byClusterIP ? serviceIPs.apiserver! : apiserverHost(root);
    const url = byClusterIP ? `https://${host}:${NATIVE_PORTS.apiserver}` : apiserverURL(root);
    const kubeconfig = byClusterIP
      ? renderKubeconfig({
          clusterName: vc.metadata?.name ?? root,
          server: url,
          caPem: pki.ca.certPem,
          user: 'admin',
          clientCertPem: pki.admin.certPem,
          clientKeyPem: pki.admin.keyPem,
        })
      : adminKubeconfig;
    // A roll that stopped is reported whether or not the apiserver answers: the condition says which step and why.
    const answer = failure ? true : await probeReadyz(kubeconfig, READYZ_TIMEOUT_MS);
    if (answer !== true) return { ready: false, waitingFor: `the apiserver to answer at ${url} (${answer})` };
    const target = { host, port: NATIVE_PORTS.apiserver, caPem: pki.ca.certPem };
    const caRotation = nativeCaRotation(vc.metadata?.annotations?.[ANN.caRotation]);
    return {
      ready: true,
      rolled,
      ...(failure && { rollFailed: failure }),
      result: {
        kubeconfig,
        kubeletClientCertFingerprint: kubeletClients.current,
        rotatingKubeletClientCertFingerprints: kubeletClients.rotating,
        apiserverEndpoint: { host, port: NATIVE_PORTS.apiserver },
        externalAccess: externalAccess(exposed, vc.metadata?.name ?? root, pki),
        certificates,
        certificateRenewFraction: this.renewFraction(),
        ...(caRotation && { caRotation }),
        ...(this.dnsView && { dnsApiEndpoint: await this.dnsView.route(vc, root, pki, target) }),
      },
    };
  }

  /**
   * planRoll lists the components whose StatefulSet a call of ensure with this spec would change, in ROLL_ORDER, by a
   * dry run of the same rendering and of each StatefulSet's apply (a changed spec bumps its generation). A first
   * start, a spec ensure refuses, and a spec whose last roll failed (it is not rolled again until it changes) plan
   * nothing: ensure reports them.
   */
  async planRoll(vc: VirtualCluster, root: string, limits: ProvisionLimits = {}): Promise<RollComponent[]> {
    let r: Awaited<ReturnType<NativeProvisioner['render']>>;
    try {
      r = await this.render(vc, root, limits, true);
    } catch (e) {
      if (e instanceof ProvisionRefused) return [];
      throw e;
    }
    if ('waitingFor' in r) return [];
    return this.roller.plan(
      root,
      r.objects.filter((o) => o.kind === 'StatefulSet'),
    );
  }

  /** stop closes the shared DNS view (the manager stopping; it outlives leadership terms); a next ensure reopens it. */
  async stop(): Promise<void> {
    await this.dnsView?.stop();
  }

  /** ensureNamespace creates the root namespace when it is missing (the PKI Secret goes there before rendering). */
  private async ensureNamespace(vc: VirtualCluster, root: string): Promise<void> {
    if (await this.superClient.getOrNull(R.namespaces, undefined, root)) return;
    try {
      await this.superClient.create(R.namespaces, rootNamespaceObject(vc.metadata ?? {}, root), {
        fieldManager: IDENTITY.manager,
      });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }

  /** renewFraction is the share of a leaf certificate's life after which it is renewed. */
  private renewFraction(): number {
    return this.opts.certificates?.renewFraction ?? DEFAULT_RENEW_FRACTION;
  }

  /** etcdDataDir is the host directory of a tenant's etcd data when the platform keeps it on the host. */
  private etcdDataDir(root: string): string | undefined {
    return this.opts.etcdHostPathDir === undefined ? undefined : join(this.opts.etcdHostPathDir, root);
  }

  /**
   * remove deletes what ensure made in the root namespace (StatefulSets first, then Services, the NetworkPolicy,
   * Secrets including the PKI, and etcd's volume claims) with Background propagation; the controller then deletes
   * the root namespace itself. With etcdHostPathDir it deletes etcd's data directory too, once no etcd Pod of the
   * tenant is left (until then it answers what it waits for, and the controller calls it again). A missing
   * namespace is not an error.
   */
  async remove(_vc: VirtualCluster, root: string): Promise<void | RemoveWaiting> {
    await this.dnsView?.remove(root);
    const selector = `${LABEL.cluster}=${root}`;
    let deleted = 0;
    for (const r of OWNED_KINDS) {
      let items: KubeObject[];
      try {
        items = (await this.superClient.listAll(r, { namespace: root, labelSelector: selector })).items;
      } catch (e) {
        // A super cluster without the NetworkPolicy API has nothing of that kind to delete.
        if (r === NETWORK_POLICIES && isNotFound(e)) continue;
        throw e;
      }
      for (const o of items) {
        if (o.metadata?.deletionTimestamp) continue;
        if (await this.superClient.delete(r, root, o.metadata!.name!, { propagationPolicy: 'Background' })) deleted++;
      }
    }
    log.info({ tenant: root, deleted }, 'native control plane removed');
    const data = this.etcdDataDir(root);
    if (data && existsSync(data)) {
      const etcdPods = await this.superClient.list(R.pods, {
        namespace: root,
        labelSelector: `${LABEL.cluster}=${root},${LABEL.component}=etcd`,
      });
      if (etcdPods.items.length)
        return { waitingFor: `the etcd Pod of ${root} to stop before deleting its data ${data}` };
      rmSync(data, { recursive: true, force: true });
      log.info({ tenant: root, data }, 'etcd data removed');
    }
  }
}
