// Over 500 lines: one provisioner's start, roll, certificate renewal and removal of a local tenant share its running
// map and state directory; the roll's steps live in roll.ts and the components' reports in components.ts.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_QUOTA_BACKEND_BYTES, deleteEtcdPrefix, type EtcdEndpoint, LocalEtcd } from '../local/etcd.ts';
import { X509Certificate } from 'node:crypto';
import { LocalControlPlane, reissueServingCert, type ControlPlaneOptions } from '../local/controlplane.ts';
import { DEFAULT_RENEW_FRACTION, dueForRenewal, type IssuedCertificate } from '../../lifecycle/certificates.ts';
import {
  planRoll,
  stableJson,
  type ComponentSettings,
  type RollComponent,
  type RollFailure,
} from '../../provisioners/roll.ts';
import { rollLocal } from './roll.ts';
import { cgroup2Root, type Confinement, NetConfinement } from '../local/netconfine.ts';
import { freePorts } from '../local/process.ts';
import { TcpForwarder } from '../local/forwarder.ts';
import { DnsView } from '../../provisioners/dnsview.ts';
import { assertFlagsAllowed } from '../../tenancy/allowlist.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';
import { TENANT_CONTROLLERS } from '../../provisioners/native/flags.ts';
import { childLogger } from '../../log.ts';
import { fingerprintSha256, issueCert, PKI_FILES } from '../../pki/pki.ts';
import {
  ProvisionRefused,
  type ComponentReport,
  type ComponentSource,
  type ProvisionLimits,
  type Provisioner,
  type ProvisionState,
} from '../../provisioners/provisioner.ts';
import { localComponents, watchCrashes } from './components.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';

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
   * the CA tenant apiservers verify their kubelets' serving certificates against (--kubelet-certificate-authority):
   * every vNode's kubelet is the vn-agent, so this is the CA of the vn-agent's serving certificate
   */
  kubeletCAFile?: string;
  /**
   * confine runs each tenant's apiserver and controller manager in a cgroup of their own whose new connections reach
   * only their etcd and apiserver ports on loopback, these Pod CIDRs and endpoints (the vn-agent), and addresses
   * outside the internal ranges (NetConfinement): the tenant admin's webhooks, APIServices and proxy paths cannot
   * reach the super apiserver, the manager, other tenants or the host's ports. Needs root, cgroup v2 and iptables.
   */
  confine?: Omit<Confinement, 'loopbackPorts'>;
  /**
   * certificates.servingValidityDays: how long a renewed apiserver serving certificate is valid (default the tenant's
   * spec.pkiExpireDays); it is renewed at DEFAULT_RENEW_FRACTION of its life
   */
  certificates?: { servingValidityDays?: number };
}

/** Running is one served tenant: its control plane, its own etcd (absent on the shared one) and the spec it runs. */
interface Running {
  cp: LocalControlPlane;
  etcd?: LocalEtcd;
  /** the forwarder from podAddress to the apiserver */
  forwarder?: TcpForwarder;
  /** the tenant DNS server's view of the apiserver on podAddress */
  dnsView?: DnsView;
  /** the network confinement of the apiserver and controller manager */
  confinement?: NetConfinement;
  /** what each component runs with, and its hash */
  settings: ComponentSettings;
  hash: string;
  /** stops reporting the processes' crashes (before a roll replaces some) */
  unwatch?: () => void;
}

/** Parts are a served tenant's processes and helpers, before its settings are recorded. */
type Parts = Omit<Running, 'hash' | 'settings' | 'unwatch'>;

/** LocalSettings are what a tenant's components start with: their flags and quota, and per component for planRoll. */
interface LocalSettings {
  etcdBytes: number;
  apiserverArgs: ExtraArgs;
  controllerManagerArgs: ExtraArgs;
  components: ComponentSettings;
}

/** POD_PORT_FILE keeps a tenant's forwarder port: its Pods carry it in their environment. */
const POD_PORT_FILE = 'pod-port';
/** DNS_PORT_FILE keeps a tenant's DNS view port: its DNS server's kubeconfig names it. */
const DNS_PORT_FILE = 'dns-view-port';

/** ETCD_DIR is where a tenant's own etcd keeps its data and log, inside the tenant's state directory. */
export const ETCD_DIR = 'etcd';

/**
 * LocalProvisioner runs each tenant's etcd, kube-apiserver and kube-controller-manager as processes on this machine.
 * Each tenant has an etcd of its own whose --quota-backend-bytes is its policy's quota.etcdBytes: a tenant that fills
 * it gets "database space exceeded" from its apiserver while the super cluster and the other tenants go on (a
 * prefix in a shared etcd cannot be bounded, and a ResourceQuota inside the tenant is the tenant's to delete).
 * Tenants created before this, with their data under `/<root namespace>` in the shared etcd, stay there.
 * State (PKI, kubeconfigs, ports, etcd data) lives in `<stateDir>/<root namespace>/`, so after a manager restart the
 * same control plane comes back with its data; crashed components are restarted. A change of the service CIDR, of
 * the apiserver or controller-manager flags or of the storage quota restarts the components with the new values. The
 * PKI is made once, when the control plane is first created, so the certificate lifetime (and the service IP in the
 * apiserver certificate) keep their first values.
 */
export class LocalProvisioner implements Provisioner, ComponentSource {
  readonly type = 'local';
  private readonly running = new Map<string, Running>();
  private readonly exitListeners = new Set<(root: string, component: string) => void>();
  private readonly starting = new Map<string, Promise<Parts>>();
  /** the hash of the spec whose roll failed, per tenant, and how: not tried again until the spec changes */
  private readonly failedRolls = new Map<string, { hash: string; failure: RollFailure }>();

  constructor(
    private readonly stateDir: string,
    private readonly etcd: EtcdEndpoint,
    private readonly options: LocalProvisionerOptions = {},
  ) {}

  private dir(root: string): string {
    return join(this.stateDir, root);
  }

  async ensure(vc: VirtualCluster, root: string, limits: ProvisionLimits = {}): Promise<ProvisionState> {
    const desired = this.settings(vc, limits);
    const hash = settingsHash(desired);
    let entry = this.running.get(root);
    let rolled = false;
    let rollFailed: RollFailure | undefined;
    if (entry && entry.hash !== hash) {
      const failed = this.failedRolls.get(root);
      // A spec whose roll failed is not tried again until it changes: each try would restart a serving component.
      if (failed?.hash === hash) rollFailed = failed.failure;
      else {
        const out = await this.roll(entry, vc, root, desired, hash);
        entry = out.entry;
        rolled = !out.failure;
        rollFailed = out.failure;
      }
    }
    if (!entry) {
      entry = { ...(await this.start(vc, root, desired)), hash, settings: desired.components };
      this.running.set(root, entry);
      entry.unwatch = watchCrashes(entry, (component) => this.exitListeners.forEach((l) => l(root, component)));
      writeFileSync(join(this.dir(root), 'spec-hash'), hash + '\n');
    }
    if (entry.hash === hash) this.failedRolls.delete(root);
    const cp = entry.cp;
    const certificates = await this.renewCertificates(cp, vc);
    const fwd = entry.forwarder;
    const view = entry.dnsView;
    return {
      ready: true,
      rolled,
      ...(rollFailed && { rollFailed }),
      result: {
        certificates,
        kubeconfig: readFileSync(cp.kubeconfigPath, 'utf8'),
        kubeletClientCertFingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
        apiserverEndpoint: fwd
          ? { host: fwd.opts.host, port: fwd.port }
          : { host: '127.0.0.1', port: cp.ports.apiserver },
        ...(view && { dnsApiEndpoint: { host: view.opts.host, port: view.port } }),
      },
    };
  }

  /**
   * renewCertificates renews the apiserver serving certificate once renewFraction of its life has passed (the
   * apiserver reloads it without a restart) and reports the certificates it watches with their validity. The other
   * certificates of the tenant's PKI are not renewed yet.
   */
  private async renewCertificates(cp: LocalControlPlane, vc: VirtualCluster): Promise<IssuedCertificate[]> {
    const pkiDir = join(cp.dir, 'pki');
    const read = (): IssuedCertificate => {
      const x = new X509Certificate(readFileSync(join(pkiDir, PKI_FILES.apiserver.cert), 'utf8'));
      return { name: 'kube-apiserver serving', notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) };
    };
    if (dueForRenewal([read()], new Date(), DEFAULT_RENEW_FRACTION).length) {
      const days =
        this.options.certificates?.servingValidityDays ?? vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays;
      await reissueServingCert(pkiDir, days);
      log.info({ tenant: cp.name }, 'apiserver serving certificate renewed');
    }
    return [read()];
  }

  /**
   * settings are what each component of the tenant is started with (flags: the ClusterVersion's under the tenant's,
   * as the native provisioner merges them), checked against the allow-list before any process runs.
   */
  private settings(vc: VirtualCluster, limits: ProvisionLimits): LocalSettings {
    const cv = limits.clusterVersion?.spec;
    const api = { ...cv?.apiServer?.extraArgs, ...vc.spec.apiServer?.extraArgs };
    const kcm = { ...cv?.controllerManager?.extraArgs, ...vc.spec.controllerManager?.extraArgs };
    // The controller hands over only what the TenantPolicy grants; this is the second line, before any process runs.
    assertFlagsAllowed({ apiServer: api, controllerManager: kcm });
    assertLocalExpose(vc);
    const etcdBytes = limits.etcdBytes ?? DEFAULT_QUOTA_BACKEND_BYTES;
    const version = { name: vc.spec.clusterVersionName, kubernetes: cv?.kubernetesVersion };
    const cidr = vc.spec.serviceCidr;
    return {
      etcdBytes,
      apiserverArgs: api,
      controllerManagerArgs: kcm,
      components: {
        etcd: { etcdBytes },
        // only when set, so that tenants made before the option keep their settings (and are not restarted) without it
        'kube-apiserver': { cidr, api, version, ...(this.options.kubeletCAFile && { ca: this.options.kubeletCAFile }) },
        'kube-controller-manager': { cidr, kcm, version },
      },
    };
  }

  /**
   * planRoll lists the components a call of ensure with this spec would restart, in order (none for a tenant this
   * provisioner does not run, or whose last roll to this very spec failed).
   */
  async planRoll(vc: VirtualCluster, root: string, limits: ProvisionLimits = {}): Promise<RollComponent[]> {
    const entry = this.running.get(root);
    if (!entry) return [];
    const desired = this.settings(vc, limits);
    const hash = settingsHash(desired);
    if (entry.hash === hash || this.failedRolls.get(root)?.hash === hash) return [];
    return planRoll(entry.settings, desired.components);
  }

  /**
   * roll restarts the tenant's changed components in order (core/dev/provisioner/roll.ts) with their health checked
   * after each. A step that fails is remembered with the spec's hash and reported; what serves is kept.
   */
  private async roll(
    entry: Running,
    vc: VirtualCluster,
    root: string,
    desired: LocalSettings,
    hash: string,
  ): Promise<{ entry: Running; failure?: RollFailure }> {
    const plan = planRoll(entry.settings, desired.components);
    log.info({ tenant: root, plan }, 'spec changed; rolling the control plane');
    entry.unwatch?.();
    const out = await rollLocal(entry, plan, {
      etcd: { quotaBackendBytes: desired.etcdBytes, name: `${root}/etcd` },
      cp: this.controlPlaneOptions(vc, root, entry.cp.opts.etcd, entry.cp.opts.cgroupDir, desired),
    });
    const failure = out.failure;
    // What now runs: the new settings of the components that rolled, the old ones of those that did not.
    const settings = { ...entry.settings };
    const done = failure ? plan.slice(0, plan.indexOf(failure.component)) : plan;
    for (const c of done) settings[c] = desired.components[c];
    const next: Running = {
      ...entry,
      ...out.parts,
      settings,
      hash: failure ? settingsHash({ ...desired, components: settings }) : hash,
    };
    next.unwatch = watchCrashes(next, (component) => this.exitListeners.forEach((l) => l(root, component)));
    this.running.set(root, next);
    if (failure) {
      log.warn({ tenant: root, ...failure }, 'roll stopped');
      this.failedRolls.set(root, { hash, failure });
    } else writeFileSync(join(this.dir(root), 'spec-hash'), hash + '\n');
    return { entry: next, ...(failure && { failure }) };
  }

  private start(vc: VirtualCluster, root: string, desired: LocalSettings): Promise<Parts> {
    let p = this.starting.get(root);
    if (!p) {
      p = this.startComponents(vc, root, desired).finally(() => this.starting.delete(root));
      this.starting.set(root, p);
    }
    return p;
  }

  /** controlPlaneOptions are the options of the tenant's LocalControlPlane with the settings `desired`. */
  private controlPlaneOptions(
    vc: VirtualCluster,
    root: string,
    etcd: EtcdEndpoint,
    cgroupDir: string | undefined,
    desired: LocalSettings,
  ): ControlPlaneOptions {
    return {
      name: root,
      dir: this.dir(root),
      ...(cgroupDir && { cgroupDir }),
      etcd,
      serviceCidr: vc.spec.serviceCidr ?? TENANT_DEFAULTS.serviceCidr,
      controllers: TENANT_CONTROLLERS,
      restart: true,
      pkiValidityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
      // The policy refuses kubelet-certificate-authority in a tenant's extraArgs: only the platform sets it.
      apiserverExtraArgs: localApiserverArgs(
        this.options.kubeletCAFile
          ? { ...desired.apiserverArgs, 'kubelet-certificate-authority': this.options.kubeletCAFile }
          : desired.apiserverArgs,
      ),
      controllerManagerExtraArgs: desired.controllerManagerArgs,
      ...(this.options.podAddress && { apiserverIPs: [this.options.podAddress] }),
    };
  }

  private async startComponents(vc: VirtualCluster, root: string, desired: LocalSettings): Promise<Parts> {
    const etcdBytes = desired.etcdBytes;
    const dir = this.dir(root);
    // A tenant made before tenants had their own etcd (a control plane without an etcd directory) keeps its data in
    // the shared etcd: starting it on an empty one would lose everything it has.
    const legacy = existsSync(join(dir, 'pki/ca.crt')) && !existsSync(join(dir, ETCD_DIR));
    const own = this.options.etcd !== 'shared' && !legacy;
    if (legacy) log.warn({ tenant: root }, 'tenant created on the shared etcd stays there: no storage quota');
    const etcd = own
      ? await LocalEtcd.start({
          dir: join(dir, ETCD_DIR),
          restart: true,
          quotaBackendBytes: etcdBytes,
          name: `${root}/etcd`,
        })
      : undefined;
    let confinement: NetConfinement | undefined;
    try {
      const confined = this.options.confine && (await this.confine(root, dir, etcd ?? this.etcd));
      confinement = confined?.confinement;
      const cp = await LocalControlPlane.start({
        ...this.controlPlaneOptions(vc, root, etcd ?? this.etcd, confined?.confinement.cgroupDir, desired),
        ...(confined && { ports: { apiserver: confined.apiserverPort } }),
      });
      const pod = this.options.podAddress;
      let forwarder: TcpForwarder | undefined;
      let dnsView: DnsView | undefined;
      try {
        forwarder = pod ? await this.startForwarder(dir, pod, cp) : undefined;
        dnsView = pod ? await this.startDnsView(dir, pod, cp, vc) : undefined;
      } catch (e) {
        await forwarder?.stop();
        await cp.stop();
        throw e;
      }
      return {
        cp,
        ...(etcd && { etcd }),
        ...(forwarder && { forwarder }),
        ...(dnsView && { dnsView }),
        ...(confinement && { confinement }),
      };
    } catch (e) {
      await confinement?.remove();
      await etcd?.stop();
      throw e;
    }
  }

  /**
   * confine sets up the network confinement of a tenant's control plane before it starts: its apiserver port (kept
   * across restarts in ports.json, as the control plane keeps it) and its etcd's are its only loopback destinations.
   */
  private async confine(
    root: string,
    dir: string,
    etcd: EtcdEndpoint,
  ): Promise<{ confinement: NetConfinement; apiserverPort: number }> {
    const cgroups = cgroup2Root();
    if (!cgroups) throw new Error('confining a local control plane needs a cgroup v2 hierarchy on this host');
    const file = join(dir, 'ports.json');
    const saved = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { apiserver?: number }) : {};
    const apiserverPort = saved.apiserver ?? (await freePorts(1))[0]!;
    const etcdPort = Number(new URL(etcd.endpoint).port);
    const confinement = new NetConfinement(
      root,
      { ...this.options.confine!, loopbackPorts: [etcdPort, apiserverPort] },
      cgroups,
    );
    await confinement.apply();
    confinement.keep();
    return { confinement, apiserverPort };
  }

  /** startDnsView serves the DNS view of the tenant apiserver on host, with a certificate of the tenant CA. */
  private async startDnsView(dir: string, host: string, cp: LocalControlPlane, vc: VirtualCluster): Promise<DnsView> {
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
      DnsView.start({ host, port, certPem: serving.certPem, keyPem: serving.keyPem, target });
    const v = await start(kept).catch((e: unknown) => {
      if (!kept) throw e;
      return start(0);
    });
    writeFileSync(file, `${v.port}\n`);
    return v;
  }

  /** startForwarder relays podAddress:<the tenant's kept port, or a free one> to the tenant apiserver. */
  private async startForwarder(dir: string, host: string, cp: LocalControlPlane): Promise<TcpForwarder> {
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

  /** components reports the tenant's processes (core/dev/provisioner/components.ts); undefined if it runs none. */
  async components(_vc: VirtualCluster, root: string): Promise<ComponentReport[] | undefined> {
    const r = this.running.get(root);
    return r && localComponents(r);
  }

  /** onComponentExit calls listener with the tenant's root and the component each time one of its processes dies. */
  onComponentExit(listener: (root: string, component: string) => void): () => void {
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** tenantEtcd returns the running etcd of a tenant that has its own (tests fill it). */
  tenantEtcd(root: string): LocalEtcd | undefined {
    return this.running.get(root)?.etcd;
  }

  /** controlPlane returns the running control plane of a tenant (tests use it to crash components). */
  controlPlane(root: string): LocalControlPlane | undefined {
    return this.running.get(root)?.cp;
  }

  async remove(_vc: VirtualCluster, root: string): Promise<void> {
    const entry = this.running.get(root);
    this.running.delete(root);
    if (entry) await stopRunning(entry);
    const deleted = await deleteEtcdPrefix(this.etcd.endpoint, `/${root}`);
    if (existsSync(this.dir(root))) rmSync(this.dir(root), { recursive: true, force: true });
    log.info({ tenant: root, etcdKeys: deleted }, 'tenant control plane removed');
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.values()].map(stopRunning));
    this.running.clear();
  }
}

/** stopRunning stops a tenant's control plane, then its etcd. */
async function stopRunning(r: Parts & { unwatch?: () => void }): Promise<void> {
  r.unwatch?.();
  await r.dnsView?.stop();
  await r.forwarder?.stop();
  await r.cp.stop();
  await r.confinement?.remove();
  await r.etcd?.stop();
}

/**
 * assertLocalExpose refuses an exposure the local provisioner has no means for. Its apiservers listen on 127.0.0.1
 * of the manager's host (and, with podAddress, on a forwarder for the real nodes' Pods): there is no Service to make
 * NodePort or LoadBalancer, and a certificate with more names would name addresses it does not listen on. So only
 * ClusterIP, which here means "reached from the manager's host", and no extra names; a platform front door on the
 * host is used with `vc kubeconfig NAME --server URL`.
 */
export function assertLocalExpose(vc: VirtualCluster): void {
  const e = vc.spec.apiServer?.expose;
  const why =
    "the local provisioner runs the apiserver on 127.0.0.1 of the manager's host; it serves only ClusterIP " +
    '(reached from that host; use `vc kubeconfig --server URL` for a front door there) or use the native provisioner';
  if (e?.type && e.type !== 'ClusterIP')
    throw new ProvisionRefused('ExposeUnsupported', `spec.apiServer.expose.type ${e.type}: ${why}`);
  for (const key of ['extraDNSNames', 'extraIPs'] as const)
    if (e?.[key]?.length) throw new ProvisionRefused('ExposeUnsupported', `spec.apiServer.expose.${key}: ${why}`);
}

/**
 * settingsHash identifies what a tenant's components run with (every spec field start passes to them, and the storage
 * quota); pkiExpireDays is left out because a restart keeps the certificates it was first made with.
 */
function settingsHash(s: LocalSettings): string {
  return createHash('sha256').update(stableJson(s.components)).digest('hex').slice(0, 16);
}
