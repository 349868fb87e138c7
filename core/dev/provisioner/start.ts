/**
 * Starting a local tenant's processes: its own etcd, its control plane (confined when the provisioner says so), and,
 * for real nodes' Pods, a forwarder and the DNS view; and stopping them. The LocalProvisioner (provisioner.ts) decides
 * when; this file is how.
 */
import type { VersionedBinaries } from './upgrade.ts';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExtraArgs } from '../../api/controlplane.ts';
import { type ControlPlaneCpu, DEFAULT_CONTROL_PLANE_CPU } from '../../api/tenantpolicy.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { childLogger } from '../../log.ts';
import { issueCert, PKI_FILES } from '../../pki/pki.ts';
import { DnsView, type JoinedNetworks } from '../../provisioners/dnsview.ts';
import { TENANT_CONTROLLERS } from '../../provisioners/native/flags.ts';
import { goRuntimeEnv } from '../../provisioners/native/parts.ts';
import type { ComponentSettings } from '../../provisioners/roll.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import { LocalControlPlane, type ControlPlaneOptions } from '../local/controlplane.ts';
import { type EtcdEndpoint, LocalEtcd } from '../local/etcd.ts';
import { TcpForwarder } from '../local/forwarder.ts';
import { cgroup2Root, type Confinement, NetConfinement } from '../local/netconfine.ts';
import { controlPlaneCgroup, type CpuCgroup } from '../local/cpulimit.ts';
import { hostAddress, startTenantMetricsServer, type TenantMetricsServer } from '../local/metricsserver.ts';
import { freePorts } from '../local/process.ts';
import { metricsServerPath } from '../../toolchain/metricsserver.ts';

const log = childLogger({ controller: 'provisioner-local' });

/**
 * localApiserverArgs are the kube-apiserver flags of a tenant run on this host: the tenant's own extraArgs, plus
 * `--enable-aggregator-routing=true` unless they set it. A local tenant apiserver runs on the host, where its Services'
 * cluster IPs carry no packets (only the super copies' do), so it reaches the backends of its webhooks, CRD
 * conversion webhooks and aggregated APIs at their endpoints, the Pod IPs the syncer copies up from the super
 * cluster, as upstream does when the apiserver runs outside the cluster network. No new reach: a tenant's webhook
 * may name any URL already.
 */
export function localApiserverArgs(extra: ExtraArgs = {}): ExtraArgs {
  const named = Object.keys(extra).some((k) => k.replace(/^--?/, '') === 'enable-aggregator-routing');
  return named ? extra : { ...extra, 'enable-aggregator-routing': 'true' };
}

/** LocalProvisionerOptions tune the local provisioner. */
export interface LocalProvisionerOptions {
  /**
   * tenantEtcd: each new tenant gets an etcd of its own with the storage quota of its policy (default). shared: new
   * tenants share the given etcd under their prefix, as before (no storage guard: one tenant can fill it for all).
   */
  etcd?: 'tenant' | 'shared';
  /**
   * podAddress is a host address Pods on this host's real nodes can reach (a real node's bridge gateway). Each
   * tenant apiserver, which listens on 127.0.0.1 only, is then also reached there through a forwarder of its own
   * (one port per tenant, kept across restarts), and that is the tenant's apiserverEndpoint: what its Pods (the
   * tenant DNS server among them) get as KUBERNETES_SERVICE_HOST/PORT. The apiserver certificate names the address.
   */
  podAddress?: string;
  /**
   * joined says which super clusters' Pod networks are joined (the configuration's `superClusters[].network`): the DNS
   * view of one answers a Service whose copies are all on super clusters joined to it, or whose copy there has no
   * ready endpoint while those copies have some, with their Pod IPs (superAddressed). Absent: none is joined.
   */
  joined?: JoinedNetworks;
  /**
   * the CA tenant apiservers verify their kubelets' serving certificates against (--kubelet-certificate-authority):
   * every vNode's kubelet is the vn-agent, so this is the CA of the vn-agent's serving certificate
   */
  kubeletCAFile?: string;
  /**
   * confine runs each tenant's apiserver and controller manager in a cgroup of their own whose new connections reach
   * only their etcd and apiserver ports on loopback, these endpoints (the vn-agent), the addresses of their own
   * tenant's Pods inside these Pod CIDRs (followPodAddresses; none until it is called), and addresses outside the
   * internal ranges (NetConfinement): the tenant admin's webhooks, APIServices and proxy paths cannot reach the super
   * apiserver, the manager, other tenants, the platform's Pods or the host's ports. Needs root, cgroup v2 and iptables.
   */
  confine?: Omit<Confinement, 'loopbackPorts'>;
  /**
   * certificates: validityDays is how long each leaf certificate of a tenant (serving and client; not the CAs, which
   * keep the tenant's spec.pkiExpireDays) is valid when issued or renewed, default spec.pkiExpireDays; renewFraction is
   * the share of its life after which it is renewed (0 < f < 1, default DEFAULT_RENEW_FRACTION, two thirds).
   */
  certificates?: { validityDays?: number; renewFraction?: number };
  /**
   * metricsServer runs metrics-server beside each tenant's control plane (core/dev/local/metricsserver.ts), fed by the
   * vn-agent's filtered /metrics/resource, so `kubectl top` and HorizontalPodAutoscalers work in the tenant. It needs
   * kubeletCAFile (the vn-agent's CA) and the metrics-server binary of the toolchain (ensureMetricsServer; `vc up`
   * builds it when it starts real nodes); without the binary a tenant starts without it and says so in the log.
   */
  metricsServer?: boolean;
}

/** Running is one served tenant: its control plane, its own etcd (absent on the shared one) and the spec it runs. */
export interface Running {
  cp: LocalControlPlane;
  etcd?: LocalEtcd;
  /** the forwarder from podAddress to the apiserver */
  forwarder?: TcpForwarder;
  /** the tenant DNS server's view of the apiserver on podAddress */
  dnsView?: DnsView;
  /** the network confinement of the apiserver and controller manager */
  confinement?: NetConfinement;
  /** the cpu cgroup of the etcd, apiserver and controller manager (absent where the host has none to write) */
  cpu?: CpuCgroup;
  /** metrics-server of the tenant (LocalProvisionerOptions.metricsServer) */
  metricsServer?: TenantMetricsServer;
  /** what each component runs with, and its hash */
  settings: ComponentSettings;
  hash: string;
  /** stops reporting the processes' crashes (before a roll replaces some) */
  unwatch?: () => void;
  /** the (effective) VirtualCluster and the settings it was started with: a wake starts it with them again */
  vc: VirtualCluster;
  desired: LocalSettings;
}

/** Parts are a served tenant's processes and helpers, before its settings are recorded. */
export type Parts = Omit<Running, 'hash' | 'settings' | 'unwatch' | 'vc' | 'desired'>;

/** LocalSettings are what a tenant's components start with: their flags and quota, and per component for planRoll. */
export interface LocalSettings {
  etcdBytes: number;
  /**
   * the CPU limit of the etcd, apiserver and controller manager (the policy's quota.controlPlaneCPU; default
   * DEFAULT_CONTROL_PLANE_CPU). Not a component setting: a change is written to the running processes' cgroup.
   */
  controlPlaneCpu?: ControlPlaneCpu;
  /** the ClusterVersion's etcd flags */
  etcdArgs?: ExtraArgs;
  /** the ClusterVersion's Go memory limit of each component (quantities), where it sets one */
  goMemoryLimits?: { etcd?: string; apiserver?: string; controllerManager?: string };
  /** the ClusterVersion's GOGC of each component, where it sets one */
  goGCPercents?: { etcd?: number; apiserver?: number; controllerManager?: number };
  apiserverArgs: ExtraArgs;
  controllerManagerArgs: ExtraArgs;
  components: ComponentSettings;
  /** the binaries of the tenant's Kubernetes version, or why it cannot run here (default: the pinned toolchain's) */
  bins?: VersionedBinaries;
}

/** POD_PORT_FILE keeps a tenant's forwarder port: its Pods carry it in their environment. */
const POD_PORT_FILE = 'pod-port';
/** METRICS_PORT_FILE keeps a tenant's metrics-server port: its APIService's Endpoints name it. */
const METRICS_PORT_FILE = 'metrics-server-port';
/** DNS_PORT_FILE keeps a tenant's DNS view port: its DNS server's kubeconfig names it. */
const DNS_PORT_FILE = 'dns-view-port';

/** ETCD_DIR is where a tenant's own etcd keeps its data and log, inside the tenant's state directory. */
export const ETCD_DIR = 'etcd';

/** StartContext is what starting a tenant's processes reads of its provisioner. */
export interface StartContext {
  /** the state directory of a tenant */
  dir: (root: string) => string;
  /** the shared etcd (tenants made before tenants had their own stay on it) */
  etcd: EtcdEndpoint;
  options: LocalProvisionerOptions;
  /** the addresses of a tenant's own Pods in the super cluster, which its confined control plane may reach */
  podAddresses?: (root: string) => readonly string[];
}

/** goEnv is the Go runtime environment (GOMEMLIMIT, GOGC) of one component with the settings `desired`. */
function goEnv(
  desired: LocalSettings,
  component: 'etcd' | 'apiserver' | 'controllerManager',
): Record<string, string> | undefined {
  return goRuntimeEnv({
    ...(desired.goMemoryLimits?.[component] !== undefined && { goMemoryLimit: desired.goMemoryLimits[component] }),
    ...(desired.goGCPercents?.[component] !== undefined && { goGCPercent: desired.goGCPercents[component] }),
  });
}

/** etcdSettings are what a tenant's own etcd starts with: its storage quota, the platform's flags and memory limit. */
export function etcdSettings(
  root: string,
  desired: LocalSettings,
  cpu?: CpuCgroup,
): {
  quotaBackendBytes: number;
  name: string;
  extraArgs?: ExtraArgs;
  env?: Record<string, string>;
  cgroupProcs?: string;
} {
  const env = goEnv(desired, 'etcd');
  return {
    quotaBackendBytes: desired.etcdBytes,
    name: `${root}/etcd`,
    ...(desired.etcdArgs && { extraArgs: desired.etcdArgs }),
    ...(env && { env }),
    ...(cpu && { cgroupProcs: cpu.procsFile }),
  };
}

/**
 * limitCpu makes (or updates) the cpu cgroup of the tenant's control plane with the limit `desired` asks for; on a
 * host without a cpu controller it can write, the control plane runs unlimited and the log says why.
 */
export function limitCpu(root: string, desired: LocalSettings): CpuCgroup | undefined {
  const out = controlPlaneCgroup(root, desired.controlPlaneCpu ?? DEFAULT_CONTROL_PLANE_CPU);
  if ('cgroup' in out) return out.cgroup;
  log.warn({ tenant: root, reason: out.unavailable }, 'control plane runs without a CPU limit');
  return undefined;
}

/** controlPlaneOptions are the options of the tenant's LocalControlPlane with the settings `desired`. */
export function controlPlaneOptions(
  ctx: StartContext,
  vc: VirtualCluster,
  root: string,
  etcd: EtcdEndpoint,
  cgroups: { net?: string; cpu?: CpuCgroup },
  desired: LocalSettings,
): ControlPlaneOptions {
  const apiserverEnv = goEnv(desired, 'apiserver');
  const controllerManagerEnv = goEnv(desired, 'controllerManager');
  return {
    name: root,
    dir: ctx.dir(root),
    ...(cgroups.net && { cgroupDir: cgroups.net }),
    ...(cgroups.cpu && { cpuCgroupDir: cgroups.cpu.dir }),
    etcd,
    serviceCidr: vc.spec.serviceCidr ?? TENANT_DEFAULTS.serviceCidr,
    controllers: TENANT_CONTROLLERS,
    restart: true,
    pkiValidityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
    ...(ctx.options.certificates?.validityDays && { leafValidityDays: ctx.options.certificates.validityDays }),
    // The policy refuses kubelet-certificate-authority in a tenant's extraArgs: only the platform sets it.
    apiserverExtraArgs: localApiserverArgs(
      ctx.options.kubeletCAFile
        ? { ...desired.apiserverArgs, 'kubelet-certificate-authority': ctx.options.kubeletCAFile }
        : desired.apiserverArgs,
    ),
    controllerManagerExtraArgs: desired.controllerManagerArgs,
    ...(apiserverEnv && { apiserverEnv }),
    ...(controllerManagerEnv && { controllerManagerEnv }),
    ...(ctx.options.podAddress && { apiserverIPs: [ctx.options.podAddress] }),
    ...(desired.bins && 'binaries' in desired.bins && { binaries: desired.bins.binaries }),
  };
}

/**
 * StartHooks follow a tenant's start: serving, given only for a tenant that ran before on the same data (a wake), is
 * called once its apiserver serves (/readyz but for the bootstrap hooks, RunHooks.apiserverServing; the controller
 * manager is still starting: a front door may relay from then on), phase with each component's time to health, in ms
 * from the call.
 */
export interface StartHooks {
  /** the tenant's own etcd, still running (kept through a sleep): used as it is instead of starting one */
  etcd?: LocalEtcd;
  serving?: (cp: LocalControlPlane) => void;
  phase?: (component: StartPhase, ms: number) => void;
}

/** StartPhase names a component whose health a start waits for. */
export type StartPhase = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

/**
 * startComponents starts a tenant's etcd (its own unless it lives on the shared one), then its control plane, and for
 * real nodes' Pods the forwarder and the DNS view. The etcd is started without waiting for its health: the apiserver
 * starts beside it (it retries its storage until etcd answers, and its /readyz checks etcd), so their start-ups overlap.
 */
export async function startComponents(
  ctx: StartContext,
  vc: VirtualCluster,
  root: string,
  desired: LocalSettings,
  hooks: StartHooks = {},
): Promise<Parts> {
  const t0 = Date.now();
  const dir = ctx.dir(root);
  // A tenant made before tenants had their own etcd (a control plane without an etcd directory) keeps its data in
  // the shared etcd: starting it on an empty one would lose everything it has.
  const legacy = existsSync(join(dir, 'pki/ca.crt')) && !existsSync(join(dir, ETCD_DIR));
  const own = ctx.options.etcd !== 'shared' && !legacy;
  if (legacy) log.warn({ tenant: root }, 'tenant created on the shared etcd stays there: no storage quota');
  const kept = own ? hooks.etcd : undefined;
  // the cgroup before any process: each enters it before it runs (an etcd kept through a sleep is in it already)
  const cpu = limitCpu(root, desired);
  const etcd =
    kept ??
    (own
      ? await LocalEtcd.prepare({ ...etcdSettings(root, desired, cpu), dir: join(dir, ETCD_DIR), restart: true })
      : undefined);
  const etcdHealthy = kept ? undefined : etcd?.resume().then(() => hooks.phase?.('etcd', Date.now() - t0));
  let confinement: NetConfinement | undefined;
  try {
    const metrics = await metricsServerPlan(ctx, root, dir, cpu);
    const confined =
      ctx.options.confine && (await confine(ctx, root, dir, etcd ?? ctx.etcd, metrics && [metrics.endpoint]));
    confinement = confined?.confinement;
    const cp = await LocalControlPlane.prepare({
      ...controlPlaneOptions(ctx, vc, root, etcd ?? ctx.etcd, { net: confined?.confinement.cgroupDir, cpu }, desired),
      ...(confined && { ports: { apiserver: confined.apiserverPort } }),
    });
    // An etcd that does not come up stops the control plane waiting on it; the etcd's error is the one reported.
    const etcdUp = etcdHealthy?.catch(async (e: unknown) => {
      await cp.stop().catch(() => undefined);
      throw e;
    });
    const [etcdOutcome, cpOutcome] = await Promise.allSettled([
      etcdUp,
      cp.run({
        ...(hooks.serving && { apiserverServing: hooks.serving }),
        apiserverReady: () => hooks.phase?.('kube-apiserver', Date.now() - t0),
      }),
    ]);
    if (etcdOutcome.status === 'rejected') throw etcdOutcome.reason;
    if (cpOutcome.status === 'rejected') throw cpOutcome.reason;
    if (cp.controllerManager) hooks.phase?.('kube-controller-manager', Date.now() - t0);
    const pod = ctx.options.podAddress;
    let forwarder: TcpForwarder | undefined;
    let dnsView: DnsView | undefined;
    try {
      forwarder = pod ? await startForwarder(dir, pod, cp) : undefined;
      dnsView = pod ? await startDnsView(dir, pod, cp, vc, ctx.options.joined) : undefined;
    } catch (e) {
      await forwarder?.stop();
      await cp.stop();
      throw e;
    }
    const metricsServer = metrics && (await metrics.start(cp));
    return {
      cp,
      ...(metricsServer && { metricsServer }),
      ...(etcd && { etcd }),
      ...(forwarder && { forwarder }),
      ...(dnsView && { dnsView }),
      ...(confinement && { confinement }),
      ...(cpu && { cpu }),
    };
  } catch (e) {
    etcdHealthy?.catch(() => undefined);
    await confinement?.remove();
    await etcd?.stop();
    await cpu?.remove();
    throw e;
  }
}

/**
 * confine sets up the network confinement of a tenant's control plane before it starts: its apiserver port (kept
 * across restarts in ports.json, as the control plane keeps it) and its etcd's are its only loopback destinations.
 */
async function confine(
  ctx: StartContext,
  root: string,
  dir: string,
  etcd: EtcdEndpoint,
  endpoints: Array<{ host: string; port: number }> = [],
): Promise<{ confinement: NetConfinement; apiserverPort: number }> {
  const cgroups = cgroup2Root();
  if (!cgroups) throw new Error('confining a local control plane needs a cgroup v2 hierarchy on this host');
  const file = join(dir, 'ports.json');
  const saved = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { apiserver?: number }) : {};
  const apiserverPort = saved.apiserver ?? (await freePorts(1))[0]!;
  const etcdPort = Number(new URL(etcd.endpoint).port);
  const confinement = new NetConfinement(
    root,
    {
      ...ctx.options.confine!,
      endpoints: [...ctx.options.confine!.endpoints, ...endpoints],
      loopbackPorts: [etcdPort, apiserverPort],
      podAddresses: ctx.podAddresses?.(root) ?? [],
    },
    cgroups,
  );
  await confinement.apply();
  confinement.keep();
  return { confinement, apiserverPort };
}

/** startDnsView serves the DNS view of the tenant apiserver on host, with a certificate of the tenant CA. */
async function startDnsView(
  dir: string,
  host: string,
  cp: LocalControlPlane,
  vc: VirtualCluster,
  joined?: JoinedNetworks,
): Promise<DnsView> {
  const pki = (f: string) => readFileSync(join(cp.dir, 'pki', f), 'utf8');
  const ca = { certPem: pki(PKI_FILES.ca.cert), keyPem: pki(PKI_FILES.ca.key) };
  const serving = await issueCert(ca, {
    commonName: 'vc-tenant-dns-view',
    ipAddresses: [host],
    usages: ['server'],
    validityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
  });
  const target = { host: '127.0.0.1', port: cp.ports.apiserver, caPem: ca.certPem };
  const file = join(dir, DNS_PORT_FILE);
  const kept = existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
  const start = (port: number) =>
    DnsView.start({ host, port, certPem: serving.certPem, keyPem: serving.keyPem, target, ...(joined && { joined }) });
  const v = await start(kept).catch((e: unknown) => {
    if (!kept) throw e;
    return start(0);
  });
  writeFileSync(file, `${v.port}\n`);
  return v;
}

/** startForwarder relays podAddress:<the tenant's kept port, or a free one> to the tenant apiserver. */
async function startForwarder(dir: string, host: string, cp: LocalControlPlane): Promise<TcpForwarder> {
  const file = join(dir, POD_PORT_FILE);
  const target = { host: '127.0.0.1', port: cp.ports.apiserver };
  const kept = existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
  let f: TcpForwarder;
  try {
    f = await TcpForwarder.start({ host, port: kept, target });
  } catch (e) {
    if (!kept) throw e;
    log.warn({ dir, port: kept, err: e instanceof Error ? e.message : String(e) }, 'tenant Pod port taken; new port');
    f = await TcpForwarder.start({ host, port: 0, target });
  }
  writeFileSync(file, `${f.port}\n`);
  return f;
}

/**
 * metricsServerPlan decides whether the tenant gets metrics-server and where it will listen (this host's address, a
 * port kept across restarts), so that a confined apiserver may reach it; start runs it once the apiserver is up. A
 * tenant starts without it when the binary is not built or it fails to start: metrics are not worth a tenant. It runs
 * in the control plane's cpu cgroup `cpu`, under the tenant's CPU limit, where that is a cgroup v1 one: on cgroup v2 it
 * is also the network confinement's (made for the apiserver and the controller manager), and metrics-server stays in
 * the manager's cgroup as before.
 */
async function metricsServerPlan(
  ctx: StartContext,
  root: string,
  dir: string,
  cpu: CpuCgroup | undefined,
): Promise<
  | { endpoint: { host: string; port: number }; start(cp: LocalControlPlane): Promise<TenantMetricsServer | undefined> }
  | undefined
> {
  const kubeletCaFile = ctx.options.kubeletCAFile;
  if (!ctx.options.metricsServer || !kubeletCaFile) return undefined;
  const binary = metricsServerPath();
  if (!binary) {
    log.warn(
      { tenant: root },
      'metrics-server is not built: the tenant has no kubectl top or HPA metrics (vc up builds it with real nodes)',
    );
    return undefined;
  }
  mkdirSync(dir, { recursive: true });
  const file = join(dir, METRICS_PORT_FILE);
  const port = existsSync(file) ? Number(readFileSync(file, 'utf8')) : (await freePorts(1))[0]!;
  writeFileSync(file, `${port}\n`);
  const endpoint = { host: hostAddress(), port };
  return {
    endpoint,
    async start(cp) {
      const client = await cp.client();
      try {
        const ms = await startTenantMetricsServer({
          dir: cp.dir,
          kubeconfigPath: cp.kubeconfigPath,
          client,
          kubeletCaFile,
          port,
          binary,
          timeoutMs: 0,
          ...(cpu?.hierarchy.version === 1 && { cgroupProcs: cpu.procsFile }),
        });
        return {
          ...ms,
          async stop() {
            await ms.stop();
            client.close();
          },
        };
      } catch (e) {
        client.close();
        log.error(
          { tenant: root, err: e instanceof Error ? e.message : String(e) },
          'metrics-server did not start: the tenant runs without kubectl top and HPA metrics',
        );
        return undefined;
      }
    },
  };
}

/** stopRunning stops a tenant's metrics-server and control plane, then its etcd (unless keepEtcd: a sleep that keeps it). */
export async function stopRunning(r: Parts & { unwatch?: () => void }, o: { keepEtcd?: boolean } = {}): Promise<void> {
  r.unwatch?.();
  await r.metricsServer?.stop();
  await r.dnsView?.stop();
  await r.forwarder?.stop();
  await r.cp.stop();
  await r.confinement?.remove();
  if (!o.keepEtcd) await r.etcd?.stop();
  // kept while a kept etcd is in it
  await r.cpu?.remove();
}
