// Over 500 lines, on purpose: NativeProvisioner is one provisioner's ensure, status and delete flow over the objects
// it owns, with the PKI Secret that flow keeps. Rendering (render.ts), flags (flags.ts), exposure (expose.ts), the
// layout of names (layout.ts), the parts list (parts.ts), component reports (components.ts) and the reading of a
// rollout (roll.ts) are already apart; the rest shares the class's state (the failed rolls among it).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { isAbsolute, join } from 'node:path';
import { isAlreadyExists, isNotFound, type KubeClient, type KubeObject, type Resource } from '../../kube/client.ts';
import { Kubeconfig } from '../../kube/kubeconfigfile.ts';
import { R } from '../../kube/resources.ts';
import { childLogger } from '../../log.ts';
import { ANN, IDENTITY, LABEL, PREFIX } from '../../names/names.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import { rootNamespaceObject } from '../../tenancy/namespace.ts';
import { judgeMembersChange, judgeNativeChange, runningKubernetesVersion } from './version.ts';
import { judgeResources } from './resourcebounds.ts';
import { DnsViews, type JoinedNetworks } from '../dnsview.ts';
import {
  generateControlPlanePKI,
  issueApiserverCert,
  issueCert,
  renderKubeconfig,
  type ControlPlanePKI,
  type ControlPlanePKIOptions,
} from '../../pki/pki.ts';
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
  nativePKIOptions,
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
import { stableJson, type RollComponent, type RollFailure } from '../roll.ts';
import {
  DEFAULT_ROLL_STEP_TIMEOUT_MS,
  NATIVE_WORKLOADS,
  rolloutInProgress,
  waitRolledOut,
  type RolledStatefulSet,
} from './roll.ts';
import { nativeComponents } from './components.ts';
import { platformAddressesOf, type EndpointsLike, type VnAgentAddress } from './egress.ts';
import {
  kubeletClientFingerprints,
  nativeCaRotation,
  nativeCertificates,
  renewDueLeaves,
  renewKubeletClient,
  type KubeletClientRotation,
} from './renewal.ts';
import { DEFAULT_RENEW_FRACTION } from '../../pki/renewal.ts';
import { renewalRequestOf } from '../renewrequest.ts';
import {
  exposeSettings,
  exposure,
  externalAccess,
  servingNamesHash,
  type ApiserverService,
  type Exposure,
  type NodeLike,
} from './expose.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';

const log = childLogger({ controller: 'provisioner-native' });

/** PKI_SECRET is the Secret in the root namespace that keeps a tenant's generated PKI across reconciles. */
export const PKI_SECRET = 'vc-pki';
/** PKI_SECRET_KEY is the data key of the serialized ControlPlanePKI (JSON) in PKI_SECRET. */
export const PKI_SECRET_KEY = 'pki.json';
/**
 * KUBELET_CLIENT_ROTATION_KEY is the data key in PKI_SECRET of the kubelet client certificate's renewal in progress
 * (KubeletClientRotation, JSON): a renewed pair published before the apiserver is given it, the one it replaced.
 */
export const KUBELET_CLIENT_ROTATION_KEY = 'kubelet-client-rotation.json';
/** PKI_OPTIONS_ANNOTATION on PKI_SECRET is pkiOptionsHash of the options the PKI was generated with. */
export const PKI_OPTIONS_ANNOTATION = ANN.pkiOptionsHash;
/**
 * SERVING_NAMES_ANNOTATION on PKI_SECRET is servingNamesHash of the exposed names (spec.apiServer.expose and the
 * addresses of its Service) the apiserver's serving certificate carries; when only they change, only that
 * certificate is issued again, from the same CA, so every kubeconfig and ServiceAccount token stays valid.
 */
export const SERVING_NAMES_ANNOTATION = `${PREFIX}/serving-names-hash`;
/** EXPOSE_RECHECK_MS is how soon a reconcile looks again while the exposed address is awaited. */
export const EXPOSE_RECHECK_MS = 10_000;
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
   * which carry no packets in the super cluster
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

/** dnsViewServerName is the TLS server name a native tenant's DNS server asks the shared DNS view for. */
export function dnsViewServerName(root: string): string {
  return `${root}.dns-view.invalid`;
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

/** pkiOptionsHash identifies the certificate-relevant options; the PKI is regenerated only when it changes. */
export function pkiOptionsHash(o: ControlPlanePKIOptions): string {
  const stable = { ...o, apiserverDnsNames: [...o.apiserverDnsNames].sort(), apiserverIPs: [...o.apiserverIPs].sort() };
  return createHash('sha256')
    .update(JSON.stringify(stable, Object.keys(stable).sort()))
    .digest('hex')
    .slice(0, 16);
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
  /** per root namespace, the last roll that stopped and the hash of the StatefulSets it was rolling to */
  private readonly failedRolls = new Map<string, { hash: string; failure: RollFailure }>();
  /** the shared DNS view, started with the first tenant that needs it */
  private views?: Promise<DnsViews>;

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
    });
    // The policy bounds what the ClusterVersion's components may request; over it, nothing is applied.
    judgeResources(clusterVersion, cvName, limits.maxResources, limits.etcdBytes);
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
    const { pki, rotation } = await this.ensurePKI(
      vc,
      root,
      byClusterIP ? [serviceIPs.apiserver!] : [],
      exposed.sans,
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
    const { rolled, failure } = await this.applyWorkloads(
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
        ...(this.opts.dnsView && { dnsApiEndpoint: await this.ensureDnsView(vc, root, pki, target) }),
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
    const workloads = r.objects.filter((o) => o.kind === 'StatefulSet');
    if (this.failedRolls.get(root)?.hash === workloadsHash(workloads)) return [];
    const plan: RollComponent[] = [];
    for (const [component, name] of NATIVE_WORKLOADS) {
      const obj = workloads.find((o) => o.metadata?.name === name);
      const existing = await this.superClient.getOrNull<RolledStatefulSet>(R.statefulsets, root, name);
      if (!obj || !existing) return [];
      const dry = await this.superClient.apply(R.statefulsets, obj, IDENTITY.manager, { dryRun: true });
      if (dry.metadata?.generation !== existing.metadata?.generation) plan.push(component);
    }
    return plan;
  }

  /**
   * applyWorkloads applies the tenant's StatefulSets. A first start applies all three at once (the apiserver waits
   * for etcd by itself), and so does a tenant with no ready replica of any component. A serving tenant's are rolled
   * in ROLL_ORDER (core/provisioners/native/roll.ts): each one applied, and when that changed it or it was still
   * rolling, waited for until all its replicas run it and are ready, before the next is applied. A step that does not
   * roll out in time stops there and is reported; the same spec is not applied past that step again until it changes.
   */
  private async applyWorkloads(
    root: string,
    workloads: readonly KubeObject[],
  ): Promise<{ rolled: boolean; failure?: RollFailure }> {
    const current = new Map<string, RolledStatefulSet | null>();
    for (const [, name] of NATIVE_WORKLOADS)
      current.set(name, await this.superClient.getOrNull<RolledStatefulSet>(R.statefulsets, root, name));
    // A first start, or a tenant none of whose components has a ready replica (it never came up, or is down
    // whole), has nothing to keep serving: all three at once, as waiting on a step that never was ready would stall.
    const serving = [...current.values()].some((sts) => (sts?.status?.readyReplicas ?? 0) > 0);
    if (!current.get('apiserver') || !serving) {
      for (const obj of workloads) await this.superClient.apply(R.statefulsets, obj, IDENTITY.manager);
      return { rolled: false };
    }
    const hash = workloadsHash(workloads);
    const failed = this.failedRolls.get(root);
    if (failed?.hash === hash) return { rolled: false, failure: failed.failure };
    let rolled = false;
    for (const [component, name] of NATIVE_WORKLOADS) {
      const obj = workloads.find((o) => o.metadata?.name === name);
      if (!obj) continue;
      const before = current.get(name);
      const applied = await this.superClient.apply<RolledStatefulSet>(R.statefulsets, obj, IDENTITY.manager);
      const changed = applied.metadata?.generation !== before?.metadata?.generation;
      if (!changed && !rolloutInProgress(applied)) continue;
      rolled ||= changed;
      log.info({ tenant: root, component, changed }, 'rolling the component; waiting for its rollout');
      const stalled = await waitRolledOut(this.superClient, root, name, this.rollStepTimeoutMs());
      if (stalled) {
        const failure: RollFailure = { component, message: stalled.message, kept: stalled.serving };
        log.warn({ tenant: root, ...failure }, 'roll stopped');
        this.failedRolls.set(root, { hash, failure });
        return { rolled, failure };
      }
    }
    this.failedRolls.delete(root);
    return { rolled };
  }

  /** rollStepTimeoutMs is how long one component of a roll may take to roll out. */
  private rollStepTimeoutMs(): number {
    return this.opts.rollStepTimeoutMs ?? DEFAULT_ROLL_STEP_TIMEOUT_MS;
  }

  /**
   * ensureDnsView routes the tenant's server name on the shared DNS view to its apiserver, with a serving
   * certificate of the tenant CA (its DNS server verifies it with its ServiceAccount's ca.crt); the certificate is
   * made again only when the CA or the apiserver address changed, or the manager restarted.
   */
  private async ensureDnsView(
    vc: VirtualCluster,
    root: string,
    pki: ControlPlanePKI,
    target: { host: string; port: number; caPem: string },
  ): Promise<{ host: string; port: number; tlsServerName: string }> {
    const views = await this.dnsViews();
    const serverName = dnsViewServerName(root);
    const have = views.route(serverName)?.target;
    if (have?.caPem !== target.caPem || have.host !== target.host || have.port !== target.port) {
      const serving = await issueCert(pki.ca, {
        commonName: 'vc-tenant-dns-view',
        dnsNames: [serverName],
        usages: ['server'],
        validityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
      });
      views.set({ serverName, certPem: serving.certPem, keyPem: serving.keyPem, target });
    }
    return { host: views.host, port: views.port, tlsServerName: serverName };
  }

  /** dnsViews starts the shared DNS view once; a failed start is tried again by the next reconcile. */
  private dnsViews(): Promise<DnsViews> {
    if (!this.views) {
      const started = DnsViews.start({ ...this.opts.dnsView!, ...(this.opts.joined && { joined: this.opts.joined }) });
      this.views = started;
      started.catch(() => {
        if (this.views === started) this.views = undefined;
      });
    }
    return this.views;
  }

  /** stop closes the shared DNS view (the manager stopping; it outlives leadership terms); a next ensure reopens it. */
  async stop(): Promise<void> {
    const views = this.views;
    this.views = undefined;
    await (await views?.catch(() => undefined))?.stop();
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

  /**
   * ensurePKI returns the PKI kept in PKI_SECRET, generating and storing it when the Secret is missing or was made
   * for other certificate options (with `dry`, what it would store, without storing it), with the kubelet client
   * certificate's renewal in progress. Leaves past their renewal time are issued again from the same CA, and the
   * kubelet client certificate is taken one step through its renewal (renewKubeletClient: the status must publish a
   * renewed one before the apiserver is given it). Creation is a create, not an apply: of two racing managers one wins
   * and the other reads its PKI.
   */
  private async ensurePKI(
    vc: VirtualCluster,
    root: string,
    apiserverIPs: string[],
    exposed: Exposure['sans'],
    dry = false,
  ): Promise<{ pki: ControlPlanePKI; rotation: KubeletClientRotation }> {
    const base = nativePKIOptions(vc, root, undefined, apiserverIPs);
    const hash = pkiOptionsHash(base);
    const namesHash = servingNamesHash(exposed);
    // The exposed names are not part of the options hash: a change of them alone reissues the serving certificate.
    // Neither is the platform's leaf lifetime: the CAs keep the tenant's spec.pkiExpireDays, the leaves get it.
    const leafDays = this.opts.certificates?.validityDays ?? base.validityDays;
    const opts = {
      ...base,
      apiserverDnsNames: [...base.apiserverDnsNames, ...exposed.dnsNames],
      apiserverIPs: [...base.apiserverIPs, ...exposed.ips],
      validityDays: leafDays,
      caValidityDays: base.validityDays,
      kubeletClientValidityDays: leafDays,
    };
    const existing = await this.superClient.getOrNull<Secret>(R.secrets, root, PKI_SECRET);
    const annotations = existing?.metadata?.annotations ?? {};
    if (existing && annotations[PKI_OPTIONS_ANNOTATION] === hash) {
      let pki = parsePKI(existing, root);
      const rotation = parseRotation(existing, root);
      const sameNames =
        (annotations[SERVING_NAMES_ANNOTATION] ?? servingNamesHash({ dnsNames: [], ips: [] })) === namesHash;
      if (!sameNames) {
        if (!dry)
          log.info(
            { tenant: root, names: exposed },
            'exposed names changed; reissuing the apiserver serving certificate',
          );
        pki = { ...pki, apiserver: await issueApiserverCert(pki.ca, opts) };
      }
      const now = new Date();
      const request = renewalRequestOf(vc);
      const due = await renewDueLeaves(pki, opts, now, this.renewFraction(), leafDays, request);
      // The kubelet client's renewal needs the status its last step published: a dry run leaves it where it is (its
      // files are reloaded by the apiserver, so no StatefulSet a dry run plans for depends on it).
      if (dry) return { pki: due.pki, rotation };
      const s = vc.status;
      const kubelet = await renewKubeletClient(due.pki, rotation, {
        now,
        fraction: this.renewFraction(),
        validityDays: leafDays,
        request,
        published: [s?.kubeletClientCertFingerprint, ...(s?.rotatingKubeletClientCertFingerprints ?? [])].filter(
          (f) => f !== undefined,
        ),
      });
      const sameRotation = stableJson(kubelet.rotation) === stableJson(rotation);
      if (sameNames && !due.renewed.length && sameRotation) return kubelet;
      if (due.renewed.length) log.info({ tenant: root, renewed: due.renewed }, 'certificates renewed');
      if (kubelet.step === 'stage')
        log.info({ tenant: root }, 'kubelet client certificate renewed; published before the apiserver takes it');
      if (kubelet.step === 'promote')
        log.info({ tenant: root }, 'renewed kubelet client certificate given to the apiserver');
      await this.superClient.update(
        R.secrets,
        pkiSecret(root, kubelet.pki, hash, namesHash, existing, kubelet.rotation),
        { fieldManager: IDENTITY.manager },
      );
      return kubelet;
    }

    // A new PKI has new CAs: a renewal of the kubelet client in progress under the old one is dropped. It keeps the
    // ServiceAccount signing key of the PKI it replaces, where that one is readable: tokens issued before stay valid.
    const generated = await generateControlPlanePKI(opts);
    const kept = existing ? keptServiceAccountKey(existing) : undefined;
    const pki = kept ? { ...generated, serviceAccount: kept } : generated;
    if (dry) return { pki, rotation: {} };
    if (existing) {
      log.info({ tenant: root }, 'certificate options changed; regenerating the tenant PKI (new CAs)');
      // Replace only the Secret we read: a concurrent writer makes this a conflict, and the next reconcile reads theirs.
      await this.superClient.update(R.secrets, pkiSecret(root, pki, hash, namesHash, existing), {
        fieldManager: IDENTITY.manager,
      });
      return { pki, rotation: {} };
    }
    try {
      await this.superClient.create(R.secrets, pkiSecret(root, pki, hash, namesHash), {
        fieldManager: IDENTITY.manager,
      });
      log.info({ tenant: root }, 'tenant PKI generated');
      return { pki, rotation: {} };
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      const theirs = await this.superClient.get<Secret>(R.secrets, root, PKI_SECRET);
      return { pki: parsePKI(theirs, root), rotation: parseRotation(theirs, root) };
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
    (await this.views?.catch(() => undefined))?.delete(dnsViewServerName(root));
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

/** workloadsHash identifies the StatefulSets a roll goes to (a failed roll is not tried again until they change). */
function workloadsHash(workloads: readonly KubeObject[]): string {
  return createHash('sha256').update(stableJson(workloads)).digest('hex').slice(0, 16);
}

/**
 * pkiSecret is PKI_SECRET holding pki, annotated with the hashes it was made for; given the Secret it replaces, with
 * that one's resourceVersion, so a concurrent writer makes the update a conflict (the next reconcile reads theirs).
 */
function pkiSecret(
  root: string,
  pki: ControlPlanePKI,
  hash: string,
  namesHash: string,
  replaces?: Secret,
  rotation: KubeletClientRotation = {},
): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: PKI_SECRET,
      namespace: root,
      labels: { [LABEL.managedBy]: IDENTITY.manager, [LABEL.cluster]: root },
      annotations: { [PKI_OPTIONS_ANNOTATION]: hash, [SERVING_NAMES_ANNOTATION]: namesHash },
      ...(replaces && { resourceVersion: replaces.metadata?.resourceVersion }),
    },
    type: 'Opaque',
    data: {
      [PKI_SECRET_KEY]: Buffer.from(JSON.stringify(pki), 'utf8').toString('base64'),
      ...((rotation.next || rotation.previousCertPem) && {
        [KUBELET_CLIENT_ROTATION_KEY]: Buffer.from(JSON.stringify(rotation), 'utf8').toString('base64'),
      }),
    },
  };
}

/** keptServiceAccountKey is the ServiceAccount signing key of the PKI in PKI_SECRET, or undefined when it is unreadable. */
function keptServiceAccountKey(secret: Secret): ControlPlanePKI['serviceAccount'] | undefined {
  try {
    const sa = parsePKI(secret, '').serviceAccount;
    return sa?.privateKeyPem && sa.publicKeyPem ? sa : undefined;
  } catch {
    return undefined;
  }
}

/**
 * parseRotation reads the kubelet client certificate's renewal in progress from PKI_SECRET ({} without one); a value
 * that is not one is refused, naming the Secret and key, rather than dropped (its certificates may be in use).
 */
function parseRotation(secret: Secret, root: string): KubeletClientRotation {
  const data = secret.data?.[KUBELET_CLIENT_ROTATION_KEY];
  if (!data) return {};
  try {
    const r = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as KubeletClientRotation;
    if (typeof r !== 'object' || r === null) throw new Error('not an object');
    if (r.next && (!r.next.certPem || !r.next.keyPem || Number.isNaN(Date.parse(r.next.stagedAt))))
      throw new Error('next needs certPem, keyPem and stagedAt');
    if (r.previousCertPem !== undefined && typeof r.previousCertPem !== 'string')
      throw new Error('previousCertPem is not a string');
    return r;
  } catch (e) {
    throw new Error(
      `Secret ${root}/${PKI_SECRET} key "${KUBELET_CLIENT_ROTATION_KEY}" is not a kubelet client renewal ` +
        `(${(e as Error).message}); delete that key to start the renewal again`,
    );
  }
}

function parsePKI(secret: Secret, root: string): ControlPlanePKI {
  const data = secret.data?.[PKI_SECRET_KEY];
  if (!data)
    throw new Error(
      `Secret ${root}/${PKI_SECRET} has no key "${PKI_SECRET_KEY}"; delete it to have the PKI regenerated`,
    );
  try {
    const pki = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as ControlPlanePKI;
    if (!pki.ca?.certPem || !pki.kubeletClient?.certPem || !pki.kubeletClientFingerprint) throw new Error('incomplete');
    return pki;
  } catch (e) {
    throw new Error(
      `Secret ${root}/${PKI_SECRET} key "${PKI_SECRET_KEY}" is not a serialized PKI (${(e as Error).message}); delete it to have the PKI regenerated`,
    );
  }
}

/**
 * probeReadyz sends GET /readyz to the server of a kubeconfig with its credentials and returns true on 200, or a
 * short reason (DNS failure, refused, timeout, status code).
 */
export async function probeReadyz(kubeconfig: string, timeoutMs: number): Promise<true | string> {
  const kc = new Kubeconfig();
  kc.loadFromString(kubeconfig);
  const cluster = kc.getCurrentCluster();
  if (!cluster) return 'kubeconfig has no current cluster';
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const url = new URL('/readyz', cluster.server);
  return new Promise((resolve) => {
    const req = https.get(
      url,
      { ca: tls.ca, cert: tls.cert, key: tls.key, headers: tls.headers, agent: false },
      (res) => {
        res.resume();
        clearTimeout(timer);
        resolve(res.statusCode === 200 ? true : `HTTP ${res.statusCode}`);
      },
    );
    // One deadline for DNS, connect, TLS and the answer.
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(e.code ? `${e.code} ${url.hostname}` : e.message);
    });
  });
}
