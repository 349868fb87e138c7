// Over 500 lines, on purpose: the local provisioner is one class over the tenants' running processes, and its ensure,
// sleep and wake, snapshot and restore, and delete all start, stop and swap the same entries. The processes themselves
// (local/controlplane.ts, etcd.ts), the front door (frontdoor.ts), components (components.ts) and the snapshot and
// restore steps (core/backup) live apart.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_QUOTA_BACKEND_BYTES, deleteEtcdPrefix, type EtcdEndpoint, LocalEtcd } from '../local/etcd.ts';
import { LocalControlPlane } from '../local/controlplane.ts';
import { cgroup2Root, type Confinement, NetConfinement } from '../local/netconfine.ts';
import { freePorts } from '../local/process.ts';
import { TcpForwarder } from '../local/forwarder.ts';
import { FrontDoor } from '../local/frontdoor.ts';
import { withServer } from '../../pki/kubeconfig.ts';
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
  type FrontDoorActivity,
  type Sleeper,
  type SleepAnswer,
} from '../../provisioners/provisioner.ts';
import { localComponents, watchCrashes } from './components.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import type { Snapshotter } from '../../backup/backup.ts';
import { saveEtcdSnapshot, type SnapshotFile } from '../../backup/etcdsnapshot.ts';
import { restoreDataDir } from '../../backup/restore.ts';
import { ensureEtcdutl } from '../../toolchain/etcdutl.ts';

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
  hash: string;
  /** the (effective) VirtualCluster and storage quota it was started with: a wake starts it with them again */
  vc: VirtualCluster;
  etcdBytes: number;
}

/** Asleep is a sleeping tenant: what it is woken with, and the stopping of its processes (a wake waits for it). */
interface Asleep {
  vc: VirtualCluster;
  etcdBytes: number;
  hash: string;
  stopped: Promise<void>;
}

/** Parts are the processes start runs for a tenant. */
type Parts = Omit<Running, 'hash' | 'vc' | 'etcdBytes'>;

/** POD_PORT_FILE keeps a tenant's forwarder port: its Pods carry it in their environment. */
const POD_PORT_FILE = 'pod-port';
/** DNS_PORT_FILE keeps a tenant's DNS view port: its DNS server's kubeconfig names it. */
const DNS_PORT_FILE = 'dns-view-port';
/** FRONT_PORT_FILE keeps a tenant's front door port: its kubeconfig Secret names it. */
const FRONT_PORT_FILE = 'front-port';

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
export class LocalProvisioner implements Provisioner, ComponentSource, Sleeper, Snapshotter {
  readonly type = 'local';
  private readonly running = new Map<string, Running>();
  private readonly exitListeners = new Set<(root: string, component: string) => void>();
  private readonly starting = new Map<string, Promise<Parts>>();
  /** front doors of tenants with spec.sleep, by root; `opening` holds those being started */
  private readonly doors = new Map<string, FrontDoor>();
  private readonly opening = new Map<string, Promise<FrontDoor>>();
  private readonly sleeping = new Map<string, Asleep>();
  private readonly waking = new Map<string, Promise<Parts>>();
  private readonly wakeListeners = new Set<(root: string, tookMs: number) => void>();
  /** restores in progress: ensure waits for them instead of starting the tenant on a data directory being swapped */
  private readonly restoring = new Map<string, Promise<void>>();

  constructor(
    private readonly stateDir: string,
    private readonly etcd: EtcdEndpoint,
    private readonly options: LocalProvisionerOptions = {},
  ) {}

  private dir(root: string): string {
    return join(this.stateDir, root);
  }

  async ensure(vc: VirtualCluster, root: string, limits: ProvisionLimits = {}): Promise<ProvisionState> {
    // The controller hands over only what the TenantPolicy grants; this is the second line, before any process runs.
    assertFlagsAllowed({
      apiServer: vc.spec.apiServer?.extraArgs,
      controllerManager: vc.spec.controllerManager?.extraArgs,
    });
    assertLocalExpose(vc);
    await this.restoring.get(root)?.catch(() => undefined);
    const etcdBytes = limits.etcdBytes ?? DEFAULT_QUOTA_BACKEND_BYTES;
    const hash = specHash(vc, etcdBytes, this.options.kubeletCAFile);
    // ensure wants the tenant awake: a wake its front door began is awaited, a sleeping tenant starts (with this spec).
    await this.waking.get(root)?.catch(() => undefined);
    const asleep = this.sleeping.get(root);
    if (asleep) {
      this.sleeping.delete(root);
      await asleep.stopped;
    }
    let entry = this.running.get(root);
    let rolled = false;
    if (entry && entry.hash !== hash) {
      log.info({ tenant: root }, 'spec changed; restarting the control plane');
      await stopRunning(entry);
      this.running.delete(root);
      entry = undefined;
      rolled = true;
    }
    if (!entry) entry = this.install(root, { ...(await this.start(vc, root, etcdBytes)), hash, vc, etcdBytes });
    const door = vc.spec.sleep ? await this.openDoor(root, Date.now()) : await this.closeDoor(root);
    const cp = entry.cp;
    const fwd = entry.forwarder;
    const view = entry.dnsView;
    return {
      ready: true,
      rolled,
      result: {
        kubeconfig: readFileSync(cp.kubeconfigPath, 'utf8'),
        kubeletClientCertFingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
        apiserverEndpoint: fwd
          ? { host: fwd.opts.host, port: fwd.port }
          : { host: '127.0.0.1', port: cp.ports.apiserver },
        ...(view && { dnsApiEndpoint: { host: view.opts.host, port: view.port } }),
        ...(door && { externalAccess: frontDoorAccess(door, readFileSync(cp.kubeconfigPath, 'utf8')) }),
      },
    };
  }

  /** install makes entry the tenant's running control plane. */
  private install(root: string, entry: Running): Running {
    this.running.set(root, entry);
    watchCrashes(entry, (component) => this.exitListeners.forEach((l) => l(root, component)));
    writeFileSync(join(this.dir(root), 'spec-hash'), entry.hash + '\n');
    return entry;
  }

  /**
   * sleep stops a tenant's processes (its own etcd too: a sleeping tenant costs its front door only) and keeps its
   * front door, unless spec.sleep is unset (no front door: its kubeconfig names the apiserver itself) or the front
   * door had a client after sinceMs or has one now. A tenant not running here (after a manager restart) is recorded
   * asleep with its front door opened: the spec it is woken with is vc.
   */
  async sleep(vc: VirtualCluster, root: string, sinceMs: number, limits: ProvisionLimits = {}): Promise<SleepAnswer> {
    if (!vc.spec.sleep)
      return {
        asleep: false,
        reason: 'NoFrontDoor',
        message: 'spec.sleep is not set: its kubeconfig names the apiserver itself, so nothing would wake it',
      };
    if (this.sleeping.has(root)) return { asleep: true };
    await this.waking.get(root)?.catch(() => undefined);
    const door = await this.openDoor(root, 0);
    const a = door.activity();
    if (a.open > 0 || a.lastActiveMs > sinceMs || this.starting.has(root))
      return { asleep: false, reason: 'Busy', message: 'a client used the front door since the sleep was asked for' };
    const entry = this.running.get(root);
    this.running.delete(root);
    const etcdBytes = entry?.etcdBytes ?? limits.etcdBytes ?? DEFAULT_QUOTA_BACKEND_BYTES;
    const stopped = entry ? stopRunning(entry) : Promise.resolve();
    this.sleeping.set(root, {
      vc: entry?.vc ?? vc,
      etcdBytes,
      hash: entry?.hash ?? specHash(vc, etcdBytes, this.options.kubeletCAFile),
      stopped,
    });
    await stopped;
    log.info({ tenant: root }, 'tenant asleep');
    return { asleep: true };
  }

  /** activity is what the tenant's front door saw; undefined without one. */
  activity(root: string): FrontDoorActivity | undefined {
    return this.doors.get(root)?.activity();
  }

  /** onWake calls listener after each wake a front door started, with how long the processes took to answer. */
  onWake(listener: (root: string, tookMs: number) => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  /** upstream is where the front door relays to: the running apiserver, woken first when the tenant sleeps. */
  private async upstream(root: string): Promise<{ host: string; port: number }> {
    const parts = this.running.get(root) ?? (await this.wake(root));
    return { host: '127.0.0.1', port: parts.cp.ports.apiserver };
  }

  /** wake starts a sleeping tenant once, however many connections wait for it. */
  private wake(root: string): Promise<Parts> {
    const have = this.waking.get(root) ?? this.starting.get(root);
    if (have) return have;
    const s = this.sleeping.get(root);
    if (!s) return Promise.reject(new Error(`tenant ${root} is neither running nor asleep here`));
    const t0 = Date.now();
    const w = (async () => {
      await s.stopped;
      const parts = await this.start(s.vc, root, s.etcdBytes);
      if (this.sleeping.get(root) === s) {
        this.sleeping.delete(root);
        this.install(root, { ...parts, hash: s.hash, vc: s.vc, etcdBytes: s.etcdBytes });
        log.info({ tenant: root, ms: Date.now() - t0 }, 'tenant woken by a request');
        this.wakeListeners.forEach((l) => l(root, Date.now() - t0));
      }
      return parts;
    })().finally(() => this.waking.delete(root));
    this.waking.set(root, w);
    return w;
  }

  /**
   * openDoor starts the tenant's front door on 127.0.0.1 (the apiserver certificate names it) at its kept port, or a
   * free one when that is taken; its idle time counts from activeSinceMs.
   */
  private openDoor(root: string, activeSinceMs: number): Promise<FrontDoor> {
    const have = this.doors.get(root);
    if (have) return Promise.resolve(have);
    let p = this.opening.get(root);
    if (!p) {
      const file = join(this.dir(root), FRONT_PORT_FILE);
      const kept = existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
      const start = (port: number) =>
        FrontDoor.start({ host: '127.0.0.1', port, activeSinceMs, upstream: () => this.upstream(root) });
      p = start(kept)
        .catch((e: unknown) => {
          if (!kept) throw e;
          return start(0);
        })
        .then((door) => {
          writeFileSync(file, `${door.port}\n`);
          this.doors.set(root, door);
          return door;
        })
        .finally(() => this.opening.delete(root));
      this.opening.set(root, p);
    }
    return p;
  }

  /** closeDoor stops the tenant's front door, if it has one (spec.sleep was removed); it answers undefined. */
  private async closeDoor(root: string): Promise<undefined> {
    const door = this.doors.get(root);
    this.doors.delete(root);
    await door?.stop();
    return undefined;
  }

  /** snapshotTenant streams a snapshot of the tenant's own etcd into path (core/backup/etcdsnapshot.ts). */
  snapshotTenant(_vc: VirtualCluster, root: string, path: string): Promise<SnapshotFile> {
    const etcd = this.running.get(root)?.etcd;
    if (!etcd) return Promise.reject(new Error(`tenant ${root} is not running on an etcd of its own on this host`));
    return saveEtcdSnapshot(etcd.endpoint, path);
  }

  /**
   * restoreTenant replaces a running tenant's etcd data with a snapshot. The new data directory is made by etcdutl
   * while the tenant still runs (so a snapshot etcdutl refuses stops nothing); then the tenant's processes stop, the
   * directories are swapped and the tenant starts on the restored data, with the same ports, PKI and spec. If it
   * cannot start, its previous data is put back and started, and the error is thrown.
   */
  restoreTenant(vc: VirtualCluster, root: string, path: string): Promise<void> {
    if (this.restoring.has(root)) return Promise.reject(new Error(`tenant ${root}: a restore is already running`));
    const p = this.swapData(vc, root, path).finally(() => this.restoring.delete(root));
    this.restoring.set(root, p);
    return p;
  }

  private async swapData(vc: VirtualCluster, root: string, snapshot: string): Promise<void> {
    const entry = this.running.get(root);
    if (!entry?.etcd) throw new Error(`tenant ${root} is not running on an etcd of its own on this host`);
    const etcdDir = join(this.dir(root), ETCD_DIR);
    const data = join(etcdDir, 'data');
    const fresh = join(etcdDir, 'data.restored');
    const before = join(etcdDir, 'data.before-restore');
    rmSync(fresh, { recursive: true, force: true });
    const member = { name: 'local', peerUrl: `http://127.0.0.1:${entry.etcd.peerPort}` };
    await restoreDataDir(await ensureEtcdutl(), snapshot, fresh, member);
    const bytes = entry.etcd.quotaBackendBytes;
    this.running.delete(root);
    await stopRunning(entry);
    rmSync(before, { recursive: true, force: true });
    renameSync(data, before);
    renameSync(fresh, data);
    const relaunch = async () =>
      this.install(root, { ...(await this.start(vc, root, bytes)), hash: entry.hash, vc: entry.vc, etcdBytes: bytes });
    try {
      await relaunch();
    } catch (e) {
      log.error({ tenant: root, err: e instanceof Error ? e.message : String(e) }, 'restored data did not start');
      rmSync(data, { recursive: true, force: true });
      renameSync(before, data);
      await relaunch();
      throw e;
    }
    rmSync(before, { recursive: true, force: true });
    log.info({ tenant: root, snapshot }, 'tenant etcd restored from a snapshot');
  }

  private start(vc: VirtualCluster, root: string, etcdBytes: number): Promise<Parts> {
    let p = this.starting.get(root);
    if (!p) {
      p = this.startComponents(vc, root, etcdBytes).finally(() => this.starting.delete(root));
      this.starting.set(root, p);
    }
    return p;
  }

  private async startComponents(vc: VirtualCluster, root: string, etcdBytes: number): Promise<Parts> {
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
        name: root,
        dir,
        ...(confined && { cgroupDir: confined.confinement.cgroupDir, ports: { apiserver: confined.apiserverPort } }),
        etcd: etcd ?? this.etcd,
        serviceCidr: vc.spec.serviceCidr ?? TENANT_DEFAULTS.serviceCidr,
        controllers: TENANT_CONTROLLERS,
        restart: true,
        pkiValidityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
        // The policy refuses kubelet-certificate-authority in a tenant's extraArgs: only the platform sets it.
        apiserverExtraArgs: localApiserverArgs(
          this.options.kubeletCAFile
            ? { ...vc.spec.apiServer?.extraArgs, 'kubelet-certificate-authority': this.options.kubeletCAFile }
            : vc.spec.apiServer?.extraArgs,
        ),
        controllerManagerExtraArgs: vc.spec.controllerManager?.extraArgs,
        ...(this.options.podAddress && { apiserverIPs: [this.options.podAddress] }),
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
    await this.sleeping.get(root)?.stopped;
    this.sleeping.delete(root);
    await this.closeDoor(root);
    const deleted = await deleteEtcdPrefix(this.etcd.endpoint, `/${root}`);
    if (existsSync(this.dir(root))) rmSync(this.dir(root), { recursive: true, force: true });
    log.info({ tenant: root, etcdKeys: deleted }, 'tenant control plane removed');
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.values()].map(stopRunning));
    this.running.clear();
    await Promise.all([...this.sleeping.values()].map((s) => s.stopped));
    this.sleeping.clear();
    await Promise.all([...this.doors.keys()].map((root) => this.closeDoor(root)));
  }
}

/**
 * frontDoorAccess is how the tenant's users reach it through its front door: the admin kubeconfig naming the front
 * door (the kubeconfig Secret's `kubeconfig`; the manager keeps the direct one, so its own requests never count as use).
 */
function frontDoorAccess(door: FrontDoor, kubeconfig: string): { type: string; server: string; kubeconfig: string } {
  const server = `https://127.0.0.1:${door.port}`;
  return { type: 'FrontDoor', server, kubeconfig: withServer(kubeconfig, server) };
}

/** stopRunning stops a tenant's control plane, then its etcd. */
async function stopRunning(r: Parts): Promise<void> {
  await r.dnsView?.stop();
  await r.forwarder?.stop();
  await r.cp.stop();
  await r.confinement?.remove();
  await r.etcd?.stop();
}

/**
 * specHash covers every spec field start passes to a running control plane, and its storage quota; pkiExpireDays is
 * left out because a restart keeps the certificates it was first made with.
 */
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

function specHash(vc: VirtualCluster, etcdBytes: number, kubeletCAFile?: string): string {
  const s = vc.spec;
  const relevant = {
    cidr: s.serviceCidr,
    api: s.apiServer?.extraArgs ?? {},
    kcm: s.controllerManager?.extraArgs ?? {},
    version: s.clusterVersionName,
    etcdBytes,
    // only when set, so that tenants made before the option keep their hash (and are not restarted) without it
    ...(kubeletCAFile ? { kubeletCAFile } : {}),
  };
  return createHash('sha256').update(JSON.stringify(relevant)).digest('hex').slice(0, 16);
}
