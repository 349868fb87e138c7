// Over 500 lines, on purpose: LocalProvisioner is one provisioner's ensure, roll, sleep, snapshot restore and remove
// over the same running processes of each tenant; starting the components is start.ts, the roll's order roll.ts and
// upgrades upgrade.ts.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_QUOTA_BACKEND_BYTES, deleteEtcdPrefix, type EtcdEndpoint, type LocalEtcd } from '../local/etcd.ts';
import { kubeletClientStatus, renewCertificates, renewFraction, rotateCaAsked } from './certs.ts';
import type { LocalControlPlane } from '../local/controlplane.ts';
import { planRoll, stableJson, type RollComponent, type RollFailure } from '../../provisioners/roll.ts';
import { rollLocal } from './roll.ts';
import {
  controlPlaneOptions,
  ETCD_DIR,
  etcdSettings,
  startComponents,
  stopRunning,
  type LocalProvisionerOptions,
  type LocalSettings,
  type Parts,
  type Running,
  type StartContext,
  type StartHooks,
} from './start.ts';
import { assertFlagsAllowed } from '../../tenancy/allowlist.ts';
import { childLogger } from '../../log.ts';
import {
  ProvisionRefused,
  type ComponentReport,
  type ComponentSource,
  type ProvisionLimits,
  type Provisioner,
  type ProvisionState,
  type FrontDoorActivity,
  type PodAddressFollower,
  type Sleeper,
  type SleepAnswer,
  type TenantPodAddresses,
  type WakePhases,
} from '../../provisioners/provisioner.ts';
import { localComponents, watchCrashes } from './components.ts';
import { FrontDoors, frontDoorAccess } from './frontdoors.ts';
import type { Snapshotter } from '../../backup/backup.ts';
import { saveEtcdSnapshot, type SnapshotFile } from '../../backup/etcdsnapshot.ts';
import { releaseWalSpace } from '../local/walspace.ts';
import { restoreDataDir } from '../../backup/restore.ts';
import { restoreRekeyed } from './rekeyrestore.ts';
import { ensureEtcdutl } from '../../toolchain/etcdutl.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { upgradeVerdict } from '../../provisioners/upgrade.ts';
import { DEFAULT_CONTROL_PLANE_CPU } from '../../api/tenantpolicy.ts';
import { CpuCgroup, cpuHierarchy } from '../local/cpulimit.ts';
import {
  assertStartable,
  binariesOf,
  judgeChange,
  kubernetesOf,
  prepareBinaries,
  recordedVersion,
  recordVersion,
  UPGRADE_SNAPSHOT_FAILED,
} from './upgrade.ts';

export { ETCD_DIR, localApiserverArgs, type LocalProvisionerOptions } from './start.ts';

const log = childLogger({ controller: 'provisioner-local' });

/** Asleep is a sleeping tenant: what it is woken with, and the stopping of its processes (a wake waits for it). */
interface Asleep {
  vc: VirtualCluster;
  desired: LocalSettings;
  hash: string;
  stopped: Promise<void>;
  /** the tenant's own etcd, kept running through the sleep (ProvisionLimits.sleepEtcd Keep) */
  etcd?: LocalEtcd;
}

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
export class LocalProvisioner implements Provisioner, ComponentSource, Sleeper, Snapshotter, PodAddressFollower {
  readonly type = 'local';
  private readonly running = new Map<string, Running>();
  private readonly exitListeners = new Set<(root: string, component: string) => void>();
  private readonly starting = new Map<string, Promise<Parts>>();
  /** the hash of the spec whose roll failed, per tenant, and how: not tried again until the spec changes */
  private readonly failedRolls = new Map<string, { hash: string; failure: RollFailure }>();
  /** front doors of tenants with spec.sleep */
  private readonly doors = new FrontDoors(
    (root) => this.dir(root),
    (root) => this.upstream(root),
  );
  private readonly sleeping = new Map<string, Asleep>();
  private readonly waking = new Map<string, Promise<Parts>>();
  /** the apiserver port of a waking tenant, known once its apiserver is ready (before the wake as a whole ends) */
  private readonly wakeServing = new Map<string, Promise<number>>();
  private readonly wakeListeners = new Set<(root: string, tookMs: number, phases: WakePhases) => void>();
  /** restores in progress: ensure waits for them instead of starting the tenant on a data directory being swapped */
  private readonly restoring = new Map<string, Promise<void>>();
  /** the super cluster's Pod addresses per tenant, which confined control planes may reach (followPodAddresses) */
  private podFeed?: TenantPodAddresses;
  private unfollow?: () => void;

  constructor(
    private readonly stateDir: string,
    private readonly etcd: EtcdEndpoint,
    private readonly options: LocalProvisionerOptions = {},
  ) {}

  private get ctx(): StartContext {
    return {
      dir: (root) => this.dir(root),
      etcd: this.etcd,
      options: this.options,
      podAddresses: (root) => this.podFeed?.of(root) ?? [],
    };
  }

  private dir(root: string): string {
    return join(this.stateDir, root);
  }

  async ensure(vc: VirtualCluster, root: string, limits: ProvisionLimits = {}): Promise<ProvisionState> {
    const running = this.running.get(root)?.settings['kube-apiserver'];
    const was = running ? kubernetesOf(running) : recordedVersion(this.dir(root));
    await prepareBinaries(was, limits.clusterVersion?.spec?.kubernetesVersion);
    const desired = this.settings(vc, limits);
    const hash = settingsHash(desired);
    await this.restoring.get(root)?.catch(() => undefined);
    // ensure wants the tenant awake: a wake its front door began is awaited, a sleeping tenant starts (with this spec).
    await this.waking.get(root)?.catch(() => undefined);
    const asleep = this.sleeping.get(root);
    let keptEtcd: LocalEtcd | undefined;
    if (asleep) {
      this.sleeping.delete(root);
      await asleep.stopped;
      // An etcd kept through the sleep serves on when its settings are still the desired ones, else it stops here.
      keptEtcd = asleep.etcd;
      if (keptEtcd && stableJson(asleep.desired.components.etcd) !== stableJson(desired.components.etcd)) {
        await keptEtcd.stop();
        keptEtcd = undefined;
      }
    }
    let entry = this.running.get(root);
    let rolled = false;
    let rollFailed: RollFailure | undefined;
    if (entry && entry.hash !== hash) {
      const failed = this.failedRolls.get(root);
      // A spec whose roll failed is not tried again until it changes: each try would restart a serving component.
      if (failed?.hash === hash) rollFailed = failed.failure;
      else {
        const [from, to] = [entry.settings, desired.components].map((s) => kubernetesOf(s['kube-apiserver']));
        rollFailed = await judgeChange(from!, to!, desired.bins!, limits.beforeUpgrade, vc.spec.clusterVersionName);
        // A refused version is not judged again until the spec changes; a snapshot that failed is tried again.
        if (rollFailed?.refused && rollFailed.refused !== UPGRADE_SNAPSHOT_FAILED)
          this.failedRolls.set(root, { hash, failure: rollFailed });
        if (!rollFailed) {
          const out = await this.roll(entry, vc, root, desired, hash);
          entry = out.entry;
          rolled = !out.failure;
          rollFailed = out.failure;
        }
      }
    }
    if (!entry) assertStartable(was, desired, vc.spec.clusterVersionName);
    entry ??= this.install(root, {
      ...(await this.start(vc, root, desired, keptEtcd && { etcd: keptEtcd })),
      hash,
      settings: desired.components,
      vc,
      desired,
    });
    if (entry.hash === hash) this.failedRolls.delete(root);
    // The CPU limit is no component setting: a changed one is written to the running processes' cgroup.
    if (entry.cpu && stableJson(entry.desired.controlPlaneCpu) !== stableJson(desired.controlPlaneCpu)) {
      entry.cpu.apply(desired.controlPlaneCpu!);
      entry.desired = { ...entry.desired, controlPlaneCpu: desired.controlPlaneCpu! };
      log.info({ tenant: root, cpu: desired.controlPlaneCpu }, 'control plane CPU limit changed');
    }
    const door = vc.spec.sleep ? await this.doors.open(root, Date.now()) : await this.doors.close(root);
    const cp = entry.cp;
    const caRotation = await rotateCaAsked(cp, vc, this.options);
    const certificates = await renewCertificates(cp, vc, this.options);
    const fwd = entry.forwarder;
    const view = entry.dnsView;
    return {
      ready: true,
      rolled,
      ...(rollFailed && { rollFailed }),
      result: {
        certificates,
        certificateRenewFraction: renewFraction(this.options),
        ...(caRotation && { caRotation }),
        kubeconfig: readFileSync(cp.kubeconfigPath, 'utf8'),
        ...kubeletClientStatus(join(cp.dir, 'pki')),
        apiserverEndpoint: fwd
          ? { host: fwd.opts.host, port: fwd.port }
          : { host: '127.0.0.1', port: cp.ports.apiserver },
        ...(view && { dnsApiEndpoint: { host: view.opts.host, port: view.port } }),
        ...(door && { externalAccess: frontDoorAccess(door, readFileSync(cp.kubeconfigPath, 'utf8')) }),
      },
    };
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
    assertFlagsAllowed({ apiServer: api, controllerManager: kcm, etcd: cv?.etcd?.extraArgs });
    assertLocalExpose(vc);
    const etcdBytes = limits.etcdBytes ?? DEFAULT_QUOTA_BACKEND_BYTES;
    const controlPlaneCpu = limits.controlPlaneCpu ?? DEFAULT_CONTROL_PLANE_CPU;
    const version = { name: vc.spec.clusterVersionName, kubernetes: cv?.kubernetesVersion };
    const cidr = vc.spec.serviceCidr;
    // The platform's etcd flags and Go memory limits; each only when set, like ca below.
    const etcdArgs = cv?.etcd?.extraArgs;
    const mem = {
      etcd: cv?.etcd?.goMemoryLimit,
      apiserver: cv?.apiServer?.goMemoryLimit,
      controllerManager: cv?.controllerManager?.goMemoryLimit,
    };
    const limit = (q: string | undefined) => q && { goMemoryLimit: q };
    // GOGC of each component, each only when set as the limits are
    const gc = {
      etcd: cv?.etcd?.goGCPercent,
      apiserver: cv?.apiServer?.goGCPercent,
      controllerManager: cv?.controllerManager?.goGCPercent,
    };
    const gcOf = (p: number | undefined) => p !== undefined && { goGCPercent: p };
    return {
      bins: binariesOf(cv?.kubernetesVersion, vc.spec.clusterVersionName),
      etcdBytes,
      controlPlaneCpu,
      ...(etcdArgs && { etcdArgs }),
      apiserverArgs: api,
      controllerManagerArgs: kcm,
      goMemoryLimits: mem,
      goGCPercents: gc,
      components: {
        etcd: { etcdBytes, ...(etcdArgs && { etcdArgs }), ...limit(mem.etcd), ...gcOf(gc.etcd) },
        // only when set, so that tenants made before the option keep their settings (and are not restarted) without it
        'kube-apiserver': {
          cidr,
          api,
          version,
          ...(this.options.kubeletCAFile && { ca: this.options.kubeletCAFile }),
          ...limit(mem.apiserver),
          ...gcOf(gc.apiserver),
        },
        'kube-controller-manager': {
          cidr,
          kcm,
          version,
          ...limit(mem.controllerManager),
          ...gcOf(gc.controllerManager),
        },
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
    // A version this provisioner will refuse is not announced as a roll: ensure reports the refusal.
    const [from, to] = [entry.settings, desired.components].map((s) => kubernetesOf(s['kube-apiserver']));
    if (desired.bins && 'problem' in desired.bins) return [];
    if (upgradeVerdict(from!, to!).kind === 'refused') return [];
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
      etcd: etcdSettings(root, desired, entry.cpu),
      cp: controlPlaneOptions(
        this.ctx,
        vc,
        root,
        entry.cp.opts.etcd,
        { net: entry.cp.opts.cgroupDir, cpu: entry.cpu },
        desired,
      ),
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
      ...(!failure && { vc, desired }),
    };
    next.unwatch = watchCrashes(next, (component) => this.exitListeners.forEach((l) => l(root, component)));
    this.running.set(root, next);
    if (failure) {
      log.warn({ tenant: root, ...failure }, 'roll stopped');
      this.failedRolls.set(root, { hash, failure });
    } else writeFileSync(join(this.dir(root), 'spec-hash'), hash + '\n');
    recordVersion(this.dir(root), kubernetesOf(settings['kube-apiserver']));
    return { entry: next, ...(failure && { failure }) };
  }

  /**
   * followPodAddresses lets each confined control plane reach the addresses of its own tenant's Pods, as `feed` tells
   * them, and no other address in the Pod CIDRs; until it is called they reach no Pod at all.
   */
  followPodAddresses(feed: TenantPodAddresses): void {
    this.unfollow?.();
    this.podFeed = feed;
    this.unfollow = feed.subscribe((root) => this.confineTo(root));
    for (const root of this.running.keys()) this.confineTo(root);
  }

  /** confineTo rewrites the tenant's confinement for its Pod addresses now (nothing when they did not change). */
  private confineTo(root: string): void {
    const c = this.running.get(root)?.confinement;
    if (!c || !this.podFeed) return;
    c.setPodAddresses(this.podFeed.of(root)).catch((e: unknown) =>
      log.error({ tenant: root, err: e instanceof Error ? e.message : String(e) }, 'confinement not updated'),
    );
  }

  /** install makes entry the tenant's running control plane (and catches its confinement up with its Pods). */
  private install(root: string, entry: Running): Running {
    this.running.set(root, entry);
    this.confineTo(root);
    entry.unwatch = watchCrashes(entry, (component) => this.exitListeners.forEach((l) => l(root, component)));
    writeFileSync(join(this.dir(root), 'spec-hash'), entry.hash + '\n');
    recordVersion(this.dir(root), kubernetesOf(entry.settings['kube-apiserver']));
    return entry;
  }

  /**
   * sleep stops a tenant's processes (its own etcd too, unless limits.sleepEtcd is Keep: a sleeping tenant then costs
   * its front door only) and keeps its front door, unless spec.sleep is unset (no front door: its kubeconfig names the apiserver itself) or the front
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
    const door = await this.doors.open(root, 0);
    const a = door.activity();
    if (a.open > 0 || a.lastActiveMs > sinceMs || this.starting.has(root))
      return { asleep: false, reason: 'Busy', message: 'a client used the front door since the sleep was asked for' };
    const entry = this.running.get(root);
    this.running.delete(root);
    const desired = entry?.desired ?? this.settings(vc, limits);
    const keep = limits.sleepEtcd === 'Keep' ? entry?.etcd : undefined;
    // The etcd it stopped gives back the space its write-ahead log preallocated (64 MB) before a wake may start it:
    // a wake waits for `stopped`.
    const stoppedEtcd = !keep && entry?.etcd;
    const stopped = entry
      ? stopRunning(entry, { keepEtcd: !!keep }).then(async () => {
          if (stoppedEtcd) await releaseWalSpace(join(stoppedEtcd.dir, 'data'));
        })
      : Promise.resolve();
    const hash = entry?.hash ?? settingsHash(desired);
    this.sleeping.set(root, { vc: entry?.vc ?? vc, desired, hash, stopped, ...(keep && { etcd: keep }) });
    await stopped;
    log.info({ tenant: root, etcdKept: !!keep }, 'tenant asleep');
    return { asleep: true };
  }

  /** activity is what the tenant's front door saw; undefined without one. */
  activity(root: string): FrontDoorActivity | undefined {
    return this.doors.activity(root);
  }

  /**
   * onWake calls listener after each wake a front door started, with how long the tenant took to serve (its
   * apiserver ready) and each phase's time (WakePhases).
   */
  onWake(listener: (root: string, tookMs: number, phases: WakePhases) => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  /** upstream is where the front door relays to: the running apiserver, or a sleeping tenant's once it serves. */
  private async upstream(root: string): Promise<{ host: string; port: number }> {
    const running = this.running.get(root);
    return { host: '127.0.0.1', port: running ? running.cp.ports.apiserver : await this.wake(root) };
  }

  /**
   * wake starts a sleeping tenant once, however many connections wait for it, and answers its apiserver's port as
   * soon as the apiserver is ready: the front door relays from then on while the controller manager still starts
   * (nothing a first request needs waits on it). The tenant counts as running, and onWake's listeners hear of it, once
   * every component is up; they get the time to serving and each component's time to health.
   */
  private wake(root: string): Promise<number> {
    const serving = this.wakeServing.get(root);
    if (serving) return serving;
    const have = this.waking.get(root) ?? this.starting.get(root);
    if (have) return have.then((p) => p.cp.ports.apiserver);
    const s = this.sleeping.get(root);
    if (!s) return Promise.reject(new Error(`tenant ${root} is neither running nor asleep here`));
    const t0 = Date.now();
    const phases: WakePhases = {};
    let served!: (port: number) => void;
    const serves = new Promise<number>((resolve) => (served = resolve));
    const w = (async () => {
      await s.stopped;
      phases.stopWaitMs = Date.now() - t0;
      // A kept etcd that died meanwhile is not passed on: the start brings up a new one on its data.
      const etcd = s.etcd?.process.running ? s.etcd : undefined;
      if (s.etcd && !etcd) await s.etcd.stop();
      const parts = await this.start(s.vc, root, s.desired, {
        ...(etcd && { etcd }),
        serving: (cp) => {
          phases.servingMs = Date.now() - t0;
          served(cp.ports.apiserver);
        },
        phase: (component, ms) => (phases[component] = phases.stopWaitMs! + ms),
      });
      if (this.sleeping.get(root) === s) {
        this.sleeping.delete(root);
        this.install(root, { ...parts, hash: s.hash, settings: s.desired.components, vc: s.vc, desired: s.desired });
        const took = phases.servingMs ?? Date.now() - t0;
        log.info({ tenant: root, ms: took, phases }, 'tenant woken by a request');
        this.wakeListeners.forEach((l) => l(root, took, { ...phases }));
      } else {
        // Removed or stopped while it woke (both wait for a wake, so this is a safety net): nothing may outlive it.
        await stopRunning(parts);
        throw new Error(`tenant ${root} was removed or stopped while it woke`);
      }
      return parts;
    })().finally(() => {
      this.waking.delete(root);
      this.wakeServing.delete(root);
    });
    // Who waits on the wake as a whole (ensure, sleep) handles its failure; this is for a wake nobody else awaits.
    w.catch((e: unknown) => log.warn({ tenant: root, err: e instanceof Error ? e.message : String(e) }, 'wake failed'));
    this.waking.set(root, w);
    const port = Promise.race([serves, w.then((p) => p.cp.ports.apiserver)]);
    this.wakeServing.set(root, port);
    return port;
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
  restoreTenant(_vc: VirtualCluster, root: string, path: string, sourceRoot?: string): Promise<void> {
    if (this.restoring.has(root)) return Promise.reject(new Error(`tenant ${root}: a restore is already running`));
    const p = this.swapData(root, path, sourceRoot).finally(() => this.restoring.delete(root));
    this.restoring.set(root, p);
    return p;
  }

  private async swapData(root: string, snapshot: string, sourceRoot?: string): Promise<void> {
    const entry = this.running.get(root);
    if (!entry?.etcd) throw new Error(`tenant ${root} is not running on an etcd of its own on this host`);
    const etcdDir = join(this.dir(root), ETCD_DIR);
    const [data, fresh, before] = ['data', 'data.restored', 'data.before-restore'].map((d) => join(etcdDir, d)) as [
      string,
      string,
      string,
    ];
    rmSync(fresh, { recursive: true, force: true });
    const member = { name: 'local', peerUrl: `http://127.0.0.1:${entry.etcd.peerPort}` };
    if (sourceRoot) await restoreRekeyed(await ensureEtcdutl(), snapshot, fresh, member, sourceRoot, root);
    else await restoreDataDir(await ensureEtcdutl(), snapshot, fresh, member);
    this.running.delete(root);
    await stopRunning(entry);
    rmSync(before, { recursive: true, force: true });
    renameSync(data, before);
    renameSync(fresh, data);
    const { vc, desired, hash, settings } = entry;
    const relaunch = async () =>
      this.install(root, { ...(await this.start(vc, root, desired)), hash, settings, vc, desired });
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

  private start(vc: VirtualCluster, root: string, desired: LocalSettings, hooks?: StartHooks): Promise<Parts> {
    let p = this.starting.get(root);
    if (!p) {
      p = startComponents(this.ctx, vc, root, desired, hooks).finally(() => this.starting.delete(root));
      this.starting.set(root, p);
    }
    return p;
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

  /** tenantEtcd returns the running etcd of a tenant that has its own, awake or kept through its sleep (tests fill it). */
  tenantEtcd(root: string): LocalEtcd | undefined {
    return this.running.get(root)?.etcd ?? this.sleeping.get(root)?.etcd;
  }

  /** controlPlane returns the running control plane of a tenant (tests use it to crash components). */
  controlPlane(root: string): LocalControlPlane | undefined {
    return this.running.get(root)?.cp;
  }

  async remove(_vc: VirtualCluster, root: string): Promise<void> {
    // A wake in progress ends first (its front door already relays to the apiserver): then it is stopped as running.
    await this.waking.get(root)?.catch(() => undefined);
    const entry = this.running.get(root);
    this.running.delete(root);
    if (entry) await stopRunning(entry);
    await this.sleeping.get(root)?.stopped;
    await this.sleeping.get(root)?.etcd?.stop();
    this.sleeping.delete(root);
    // the cpu cgroup a sleep kept for its etcd, now empty
    await cpuCgroupOf(root)?.remove();
    await this.doors.close(root);
    const deleted = await deleteEtcdPrefix(this.etcd.endpoint, `/${root}`);
    if (existsSync(this.dir(root))) rmSync(this.dir(root), { recursive: true, force: true });
    log.info({ tenant: root, etcdKeys: deleted }, 'tenant control plane removed');
  }

  async stop(): Promise<void> {
    this.unfollow?.();
    // Wakes in progress end first: their tenants are then running, and stopped with the others.
    await Promise.all([...this.waking.values()].map((w) => w.catch(() => undefined)));
    await Promise.all([...this.running.values()].map((r) => stopRunning(r)));
    this.running.clear();
    await Promise.all(
      [...this.sleeping].map(async ([root, s]) => {
        await s.stopped;
        await s.etcd?.stop();
        await cpuCgroupOf(root)?.remove();
      }),
    );
    this.sleeping.clear();
    await this.doors.closeAll();
  }
}

/** cpuCgroupOf is the cpu cgroup of the tenant `root`'s control plane on this host, if the host has a cpu controller. */
function cpuCgroupOf(root: string): CpuCgroup | undefined {
  const h = cpuHierarchy();
  return h && new CpuCgroup(root, h);
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
