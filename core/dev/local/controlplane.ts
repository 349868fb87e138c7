// Over 500 lines: one control plane's processes, state directory (PKI, kubeconfigs, ports) and readiness checks belong
// together; the flags are rendered in provisioners/native/flags.ts and the network confinement lives in netconfine.ts.
import { randomBytes, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import https from 'node:https';
import {
  firstServiceIP,
  generateControlPlanePKI,
  issueCert,
  PKI_FILES,
  renderKubeconfig,
  writePKI,
} from '../../pki/pki.ts';
import { RENEWED_LEAVES, signingCa, SIGNING_CERT, writeLeafKubeconfig, writeSigningCert } from './renewal.ts';
import { KubeClient } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';
import { apiserverFlags, controllerManagerFlags, pkiPaths } from '../../provisioners/native/flags.ts';
import { binaryPath, toolchainDir } from '../../toolchain/toolchain.ts';
import type { EtcdEndpoint } from './etcd.ts';
import { freePorts, ManagedProcess, stopGraceMs, waitFor, type StopOptions } from './process.ts';

/** ControlPlaneOptions configure one local Kubernetes control plane on a shared etcd. */
export interface ControlPlaneOptions {
  /** cluster name; also the etcd prefix `/<name>` unless etcdPrefix is given */
  name: string;
  /** etcd key prefix; another control plane's prefix makes this apiserver a replica of it */
  etcdPrefix?: string;
  /** run kube-controller-manager (default true; false for an apiserver replica) */
  controllerManager?: boolean;
  /** state directory of this control plane (PKI, kubeconfigs, logs, ports) */
  dir: string;
  etcd: EtcdEndpoint;
  /** service CIDR; the first address is the `kubernetes` Service */
  serviceCidr?: string;
  /** run kube-scheduler (super clusters do; tenant control planes do not, their Pods are scheduled in the super) */
  scheduler?: boolean;
  /** run kwok with this many fake nodes (0: no kwok) */
  kwokNodes?: number;
  /** kube-controller-manager --controllers value */
  controllers?: string;
  /** kube-apiserver flags by name that replace or add to the defaults */
  apiserverExtraArgs?: ExtraArgs;
  /** kube-controller-manager flags by name that replace or add to the defaults */
  controllerManagerExtraArgs?: ExtraArgs;
  /** how long the apiserver may take to answer /readyz (default APISERVER_READY_MS, 4 minutes) */
  readyTimeoutMs?: number;
  /** environment of kube-apiserver in addition to this process's (Go runtime settings such as GOMEMLIMIT) */
  apiserverEnv?: Record<string, string>;
  /** environment of kube-controller-manager in addition to this process's */
  controllerManagerEnv?: Record<string, string>;
  /** restart crashed components */
  restart?: boolean;
  /** certificate lifetime (the CAs', and the leaves' without leafValidityDays) */
  pkiValidityDays?: number;
  /** lifetime of the leaf certificates when it differs from the CAs' (a platform that renews them often) */
  leafValidityDays?: number;
  /** fixed ports (reuse across restarts); free ports otherwise */
  ports?: Partial<Ports>;
  /**
   * further IP SANs of the apiserver's serving certificate: addresses clients reach it at other than 127.0.0.1 (a
   * forwarder on a real node's bridge for Pods). Added to an existing PKI by re-issuing the serving certificate alone.
   */
  apiserverIPs?: readonly string[];
  /**
   * the address the apiserver advertises as the `kubernetes` Service's endpoint (default 127.0.0.1). It still listens
   * on 127.0.0.1 only: whoever sets this relays advertiseAddress:<apiserver port> to it (a super cluster with real
   * nodes does, on the first node's bridge gateway, so Pods there reach it by in-cluster configuration).
   */
  advertiseAddress?: string;
  /** a cgroup (v2) directory the apiserver and controller manager run in: a NetConfinement's cgroupDir */
  cgroupDir?: string;
  /** a cpu cgroup directory the apiserver and controller manager run in: a CpuCgroup's dir (cpulimit.ts) */
  cpuCgroupDir?: string;
  /**
   * the kube-apiserver and kube-controller-manager executables (a tenant of another Kubernetes version,
   * core/toolchain/minors.ts); default: the pinned toolchain's
   */
  binaries?: { apiserver?: string; controllerManager?: string };
}

/** RunHooks follow a control plane's start. */
export interface RunHooks {
  /** called once the apiserver answers /readyz, while the controller manager (and the rest) may still be starting */
  apiserverReady?: (cp: LocalControlPlane) => void;
  /**
   * Only for a control plane started again on data it bootstrapped before (a wake): called, before apiserverReady,
   * once the apiserver's /readyz passes but for BOOTSTRAP_HOOKS, which then only check objects that are already there.
   */
  apiserverServing?: (cp: LocalControlPlane) => void;
}

/**
 * BOOTSTRAP_HOOKS are the apiserver's post-start hooks that create the objects every cluster starts with: the RBAC
 * roles and bindings, the system priority classes. On the data of a cluster that ran before they find each object
 * there and change nothing, yet they are the last checks of /readyz to pass (their many requests go through the
 * apiserver's own loopback client). Until they pass the apiserver already serves: it authorizes from the roles its
 * informers read from etcd, and /readyz's informer-sync check says those have synced.
 */
export const BOOTSTRAP_HOOKS = [
  'poststarthook/rbac/bootstrap-roles',
  'poststarthook/scheduling/bootstrap-system-priority-classes',
] as const;

/** WAKE_PROBE_MS is how often a wake probes the apiserver's readiness (a start otherwise: waitFor's 200 ms). */
export const WAKE_PROBE_MS = 50;

/**
 * APISERVER_READY_MS is how long a start waits for the apiserver's /readyz before it gives up, as kubeadm waits four
 * minutes for its control plane: an apiserver spends 2-10 CPU-s becoming ready, so on two busy cores with several
 * starting at once (a manager bringing its tenants back, a test run) a minute and more is progress, not a hang, and a
 * start that gave up earlier would be done again from the beginning. A process that exits fails the wait at once.
 */
export const APISERVER_READY_MS = 240_000;

/** COMPONENT_HEALTHY_MS is the same for the controller manager's and the scheduler's /healthz, once /readyz passed. */
const COMPONENT_HEALTHY_MS = 120_000;

/** SERVING_READYZ is /readyz less BOOTSTRAP_HOOKS. */
const SERVING_READYZ = `/readyz?${BOOTSTRAP_HOOKS.map((h) => `exclude=${h}`).join('&')}`;

/** cgroupProcsOf are the cgroup.procs files the apiserver and controller manager enter: the network's, the CPU's. */
function cgroupProcsOf(opts: ControlPlaneOptions): string[] {
  // one directory when both are the same v2 cgroup
  const dirs = new Set([opts.cgroupDir, opts.cpuCgroupDir].filter((d): d is string => !!d));
  return [...dirs].map((d) => join(d, 'cgroup.procs'));
}

/** Ports are the loopback ports of one control plane. */
export interface Ports {
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  kwok: number;
}

const CA_FILE = 'pki/ca.crt';
/** KWOK_SERVING_CERT is kwok's kubelet serving certificate, signed by the cluster CA. */
const KWOK_SERVING_CERT = 'pki/kwok-serving.crt';

/**
 * LocalControlPlane is a real kube-apiserver, kube-controller-manager and optionally kube-scheduler and kwok, as
 * processes on 127.0.0.1. Its admin kubeconfig (client certificate, system:masters) is `<dir>/admin.kubeconfig`.
 */
export class LocalControlPlane {
  /** the apiserver process; a roll may hand a running one over from the previous control plane (adopt) */
  apiserver: ManagedProcess;
  /** the controller manager process; a roll may hand a running one over from the previous control plane (adopt) */
  controllerManager?: ManagedProcess;
  readonly scheduler?: ManagedProcess;
  readonly kwok?: ManagedProcess;
  private clientCache?: Promise<KubeClient>;

  private constructor(
    readonly opts: ControlPlaneOptions,
    readonly ports: Ports,
    readonly adminToken: string,
  ) {
    const d = opts.dir;
    const restart = opts.restart ?? false;
    const log = (n: string) => join(d, 'logs', `${n}.log`);
    const serviceCidr = opts.serviceCidr ?? '10.96.0.0/16';
    this.apiserver = new ManagedProcess({
      name: `${opts.name}/kube-apiserver`,
      command: opts.binaries?.apiserver ?? binaryPath('kube-apiserver'),
      logFile: log('kube-apiserver'),
      restart,
      env: opts.apiserverEnv,
      cgroupProcs: cgroupProcsOf(opts),
      args: apiserverFlags({
        paths: pkiPaths(join(d, 'pki'), {
          kubeconfig: join(d, 'controller-manager.kubeconfig'),
          tokenFile: join(d, 'tokens.csv'),
        }),
        etcdServers: opts.etcd.endpoint,
        etcdPrefix: opts.etcdPrefix ?? `/${opts.name}`,
        bindAddress: '127.0.0.1',
        advertiseAddress: opts.advertiseAddress ?? '127.0.0.1',
        securePort: ports.apiserver,
        serviceCidr,
        extraArgs: opts.apiserverExtraArgs,
      }),
    });
    if (opts.controllerManager !== false)
      this.controllerManager = new ManagedProcess({
        name: `${opts.name}/kube-controller-manager`,
        command: opts.binaries?.controllerManager ?? binaryPath('kube-controller-manager'),
        logFile: log('kube-controller-manager'),
        restart,
        env: opts.controllerManagerEnv,
        cgroupProcs: cgroupProcsOf(opts),
        args: controllerManagerFlags({
          paths: {
            ...pkiPaths(join(d, 'pki'), { kubeconfig: join(d, 'controller-manager.kubeconfig') }),
            signingCert: join(d, 'pki', SIGNING_CERT),
          },
          bindAddress: '127.0.0.1',
          securePort: ports.controllerManager,
          clusterName: opts.name,
          serviceCidr,
          controllers: opts.controllers ?? '*',
          extraArgs: opts.controllerManagerExtraArgs,
        }),
      });
    if (opts.scheduler) {
      this.scheduler = new ManagedProcess({
        name: `${opts.name}/kube-scheduler`,
        command: binaryPath('kube-scheduler'),
        logFile: log('kube-scheduler'),
        restart,
        args: [
          `--kubeconfig=${join(d, 'scheduler.kubeconfig')}`,
          `--authentication-kubeconfig=${join(d, 'scheduler.kubeconfig')}`,
          `--authorization-kubeconfig=${join(d, 'scheduler.kubeconfig')}`,
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${ports.scheduler}`,
          '--profiling=false',
          '--v=1',
        ],
      });
    }
    if (opts.kwokNodes) {
      this.kwok = new ManagedProcess({
        name: `${opts.name}/kwok`,
        command: binaryPath('kwok'),
        logFile: log('kwok'),
        restart,
        args: [
          `--kubeconfig=${join(d, 'admin.kubeconfig')}`,
          `--config=${join(d, 'kwok.yaml')}`,
          '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
          '--node-ip=127.0.0.1',
          `--node-port=${ports.kwok}`,
          `--server-address=127.0.0.1:${ports.kwok}`,
          `--tls-cert-file=${join(d, KWOK_SERVING_CERT)}`,
          `--tls-private-key-file=${join(d, 'pki/kwok-serving.key')}`,
          '--cidr=10.244.0.0/16',
          '--node-lease-duration-seconds=40',
        ],
      });
    }
  }

  /**
   * LocalControlPlane.start prepares the state directory (PKI and kubeconfigs are generated once and reused), starts
   * every component, and waits until the apiserver is ready, the controllers run and kwok's nodes are Ready.
   */
  static async start(opts: ControlPlaneOptions, hooks: RunHooks = {}): Promise<LocalControlPlane> {
    const cp = await LocalControlPlane.prepare(opts);
    await cp.run(hooks);
    return cp;
  }

  /**
   * run starts every component of a prepared control plane and waits as start does; hooks.apiserverReady is called
   * as soon as the apiserver is ready, before the other components are. If it fails, every component is stopped.
   */
  async run(hooks: RunHooks = {}): Promise<void> {
    try {
      await this.startComponents(hooks);
    } catch (e) {
      // A control plane that never became ready must not leave its processes behind: nobody else holds it.
      await this.stop().catch(() => undefined);
      throw e;
    }
  }

  /**
   * LocalControlPlane.prepare prepares the state directory as start does and returns the control plane with none of
   * its processes started: a roll starts them one at a time (startApiserver, startControllerManager) or adopts the
   * running ones of the control plane it replaces.
   */
  static async prepare(opts: ControlPlaneOptions): Promise<LocalControlPlane> {
    const d = opts.dir;
    mkdirSync(join(d, 'logs'), { recursive: true });
    const ports = await resolvePorts(d, opts.ports);
    const token = await prepareStateDir(opts, ports);
    return new LocalControlPlane(opts, ports, token);
  }

  /**
   * adopt takes over `from`'s running process of one component instead of its own unstarted one: a roll that
   * restarts only the other component keeps it running. `from` must not stop it afterwards (see release).
   */
  adopt(component: 'apiserver' | 'controllerManager', from: LocalControlPlane): void {
    if (component === 'apiserver') this.apiserver = from.apiserver;
    else this.controllerManager = from.controllerManager;
  }

  /** release closes the shared client without stopping any process: a control plane replaced by a roll. */
  async release(): Promise<void> {
    if (this.clientCache) (await this.clientCache).close();
    this.clientCache = undefined;
  }

  /** name is the cluster name. */
  get name(): string {
    return this.opts.name;
  }

  /** dir is the state directory. */
  get dir(): string {
    return this.opts.dir;
  }

  /** server is the apiserver URL. */
  get server(): string {
    return `https://127.0.0.1:${this.ports.apiserver}`;
  }

  /** kubeconfigPath is the admin kubeconfig. */
  get kubeconfigPath(): string {
    return join(this.opts.dir, 'admin.kubeconfig');
  }

  /** caPem is the cluster CA certificate. */
  get caPem(): string {
    return readFileSync(join(this.opts.dir, CA_FILE), 'utf8');
  }

  /** client returns a shared admin client. */
  client(): Promise<KubeClient> {
    this.clientCache ??= KubeClient.fromFile(this.kubeconfigPath);
    return this.clientCache;
  }

  private async startComponents(hooks: RunHooks): Promise<void> {
    await this.startApiserver(hooks.apiserverServing && (() => hooks.apiserverServing!(this)));
    hooks.apiserverReady?.(this);
    this.controllerManager?.start();
    this.scheduler?.start();
    // kwok needs only the apiserver: its nodes become Ready while the controller manager and scheduler start.
    await Promise.all([
      this.controllerManager &&
        this.waitHealthz('kube-controller-manager', this.ports.controllerManager, this.controllerManager),
      this.scheduler && this.waitHealthz('kube-scheduler', this.ports.scheduler, this.scheduler),
      this.kwok && this.startKwok(this.kwok),
    ]);
  }

  /**
   * startApiserver (re)starts only the apiserver on its port and waits for /readyz; given serving, it calls it first,
   * once /readyz passes but for BOOTSTRAP_HOOKS (RunHooks.apiserverServing).
   */
  async startApiserver(serving?: () => void): Promise<void> {
    this.apiserver.start();
    const budgetMs = this.opts.readyTimeoutMs ?? APISERVER_READY_MS;
    const deadline = Date.now() + budgetMs;
    // A wake (serving given) has a client waiting on the answer: it probes every 50 ms, so the front door relays at
    // most that long after the apiserver serves (a probe before it listens is a refused connection, and costs little).
    const ready = (path: string) =>
      waitFor(`${this.name} kube-apiserver ${path}`, () => this.probe(this.ports.apiserver, path, this.adminToken), {
        timeoutMs: Math.max(0, deadline - Date.now()),
        budgetMs,
        process: this.apiserver,
        ...(serving && { intervalMs: WAKE_PROBE_MS }),
      });
    if (serving) {
      await ready(SERVING_READYZ);
      serving();
    }
    await ready('/readyz');
  }

  /** startControllerManager (re)starts only the controller manager and waits for its /healthz. */
  async startControllerManager(): Promise<void> {
    if (!this.controllerManager) return;
    this.controllerManager.start();
    await this.waitHealthz('kube-controller-manager', this.ports.controllerManager, this.controllerManager);
  }

  /**
   * restartControllerManager stops and starts the controller manager, which reads its kubeconfig (and the client
   * certificate in it) only at start; the apiserver serves on meanwhile.
   */
  async restartControllerManager(): Promise<void> {
    if (!this.controllerManager) return;
    await this.controllerManager.stop();
    await this.startControllerManager();
  }

  /**
   * renewClient makes client() read the admin kubeconfig again (its certificate was renewed). The previous client is
   * closed a minute later, not now: a caller may be in the middle of a request with it, and its certificate is valid.
   */
  renewClient(): void {
    const old = this.clientCache;
    this.clientCache = undefined;
    if (old) setTimeout(() => void old.then((c) => c.close()).catch(() => undefined), 60_000).unref();
  }

  /** stopApiserver stops only the apiserver (tests use it to simulate an outage). */
  stopApiserver(): Promise<void> {
    return this.apiserver.stop();
  }

  private waitHealthz(what: string, port: number, p: ManagedProcess): Promise<void> {
    return waitFor(`${this.name} ${what} /healthz`, () => this.probe(port, '/healthz'), {
      timeoutMs: COMPONENT_HEALTHY_MS,
      process: p,
    });
  }

  private probe(port: number, path: string, token?: string): Promise<boolean> {
    return new Promise((resolve) => {
      const req = https.get(
        {
          host: '127.0.0.1',
          port,
          path,
          rejectUnauthorized: false,
          timeout: 2000,
          headers: token ? { Authorization: `Bearer ${token}` } : {},
        },
        (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
    });
  }

  /** kwokNodeNames are the names of the simulated nodes this control plane runs. */
  get kwokNodeNames(): string[] {
    return Array.from({ length: this.opts.kwokNodes ?? 0 }, (_, i) => `${this.name}-node-${i}`);
  }

  /** ca is the cluster CA certificate and key, which signs this cluster's client certificates. */
  get ca(): { certPem: string; keyPem: string } {
    return { certPem: this.caPem, keyPem: readFileSync(join(this.opts.dir, 'pki/ca.key'), 'utf8') };
  }

  /** startKwok creates the simulated nodes, starts kwok and waits until they are Ready. */
  private async startKwok(kwok: ManagedProcess): Promise<void> {
    const c = await this.client();
    for (const name of this.kwokNodeNames) {
      if (await c.getOrNull(R.nodes, undefined, name)) continue;
      await c.create(R.nodes, kwokNode(name));
    }
    kwok.start();
    await this.waitNodesReady();
  }

  private async waitNodesReady(): Promise<void> {
    const c = await this.client();
    const want = this.opts.kwokNodes ?? 0;
    await waitFor(
      `${want} kwok nodes Ready`,
      async () => {
        const nodes = await c.list<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(R.nodes, {
          labelSelector: 'type=kwok',
        });
        const ready = nodes.items.filter((n) =>
          n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
        );
        return ready.length >= want;
      },
      { timeoutMs: 60_000, process: this.kwok },
    );
  }

  /** processes lists every running component. */
  processes(): ManagedProcess[] {
    return [this.apiserver, this.controllerManager, this.scheduler, this.kwok].filter((p): p is ManagedProcess => !!p);
  }

  /** rssBytes is the resident memory of all components (etcd excluded: it is shared). */
  rssBytes(): number {
    return this.processes().reduce((s, p) => s + p.rssBytes(), 0);
  }

  /**
   * stop stops every component, kwok and controllers first, the apiserver last. With `discard` (the caller removes
   * this control plane's state next, as tests do) each is killed at once: the apiserver's graceful shutdown, which
   * drains requests and watches for clients about to go away with it, took about 2 s of every test file's teardown.
   */
  async stop(o: StopOptions = {}): Promise<void> {
    if (this.clientCache) (await this.clientCache).close();
    this.clientCache = undefined;
    const grace = stopGraceMs(o);
    await Promise.all([this.kwok?.stop(grace), this.scheduler?.stop(grace), this.controllerManager?.stop(grace)]);
    await this.apiserver.stop(grace);
  }
}

async function resolvePorts(dir: string, fixed: Partial<Ports> = {}): Promise<Ports> {
  const file = join(dir, 'ports.json');
  const saved: Partial<Ports> = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<Ports>) : {};
  const [a, b, c, k] = await freePorts(4);
  const ports: Ports = {
    apiserver: fixed.apiserver ?? saved.apiserver ?? a!,
    controllerManager: fixed.controllerManager ?? b!,
    scheduler: fixed.scheduler ?? c!,
    kwok: fixed.kwok ?? k!,
  };
  writeFileSync(file, JSON.stringify(ports, null, 2) + '\n');
  return ports;
}

/** prepareStateDir writes PKI (once), the token file and kubeconfigs, and returns the admin token. */
async function prepareStateDir(opts: ControlPlaneOptions, ports: Ports): Promise<string> {
  const d = opts.dir;
  if (!existsSync(join(d, 'pki/ca.crt'))) {
    const pki = await generateControlPlanePKI({
      clusterName: opts.name,
      apiserverDnsNames: ['localhost'],
      apiserverIPs: ['127.0.0.1', ...(opts.apiserverIPs ?? [])],
      serviceIP: firstServiceIP(opts.serviceCidr ?? '10.96.0.0/16'),
      validityDays: opts.leafValidityDays ?? opts.pkiValidityDays ?? 365,
      caValidityDays: opts.pkiValidityDays ?? 365,
      // A tenant's local provisioner renews it with the leaves (core/dev/provisioner/certs.ts).
      kubeletClientValidityDays: opts.leafValidityDays ?? opts.pkiValidityDays ?? 365,
    });
    writePKI(join(d, 'pki'), pki);
  } else if (opts.apiserverIPs?.length) {
    await addServingIPs(join(d, 'pki'), opts.apiserverIPs, opts.leafValidityDays ?? opts.pkiValidityDays ?? 365);
  }
  writeSigningCert(join(d, 'pki'));
  const tokenFile = join(d, 'tokens.csv');
  let token: string;
  if (existsSync(tokenFile)) {
    token = readFileSync(tokenFile, 'utf8').split(',')[0]!;
  } else {
    token = randomBytes(24).toString('hex');
    writeFileSync(tokenFile, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
  }
  const server = `https://127.0.0.1:${ports.apiserver}`;
  const caPem = readFileSync(join(d, CA_FILE), 'utf8');
  for (const leaf of RENEWED_LEAVES) writeLeafKubeconfig(d, leaf, { clusterName: opts.name, server, caPem });
  writeFileSync(
    join(d, 'admin-token.kubeconfig'),
    renderKubeconfig({ clusterName: opts.name, server, caPem, user: 'admin-token', token }),
    { mode: 0o600 },
  );
  if (opts.kwokNodes) {
    writeFileSync(join(d, 'kwok.yaml'), kwokConfig(d));
    // kwok's kubelet server serves with a certificate of the cluster CA, as a real kubelet's: its clients (the
    // vn-agent) verify it instead of skipping verification. Made once, like the rest of the PKI.
    if (!existsSync(join(d, KWOK_SERVING_CERT))) {
      const ca = { certPem: caPem, keyPem: readFileSync(join(d, 'pki/ca.key'), 'utf8') };
      const leaf = await issueCert(ca, {
        commonName: `${opts.name}-kwok-kubelet`,
        ipAddresses: ['127.0.0.1'],
        usages: ['server'],
        validityDays: opts.pkiValidityDays ?? 365,
      });
      writeFileSync(join(d, 'pki/kwok-serving.key'), leaf.keyPem, { mode: 0o600 });
      writeFileSync(join(d, KWOK_SERVING_CERT), leaf.certPem);
    }
  }
  return token;
}

/**
 * addServingIPs re-issues the apiserver serving certificate in pkiDir from the cluster CA with its SANs and the given
 * IPs, when one of them is missing; every other certificate and key stays as it is.
 */
async function addServingIPs(pkiDir: string, ips: readonly string[], validityDays: number): Promise<void> {
  const current = new X509Certificate(readFileSync(join(pkiDir, PKI_FILES.apiserver.cert), 'utf8'));
  if (ips.every((ip) => sansOf(current).ipAddresses.includes(ip))) return;
  await reissueServingCert(pkiDir, validityDays, ips);
}

/** sansOf reads a certificate's DNS and IP subject alternative names. */
function sansOf(c: X509Certificate): { dnsNames: string[]; ipAddresses: string[] } {
  const sans = (c.subjectAltName ?? '').split(', ');
  return {
    dnsNames: sans.filter((x) => x.startsWith('DNS:')).map((x) => x.slice(4)),
    ipAddresses: sans.filter((x) => x.startsWith('IP Address:')).map((x) => x.slice(11)),
  };
}

/**
 * reissueServingCert issues the apiserver serving certificate in pkiDir again from the cluster CA, with a new key,
 * its SANs and `extraIPs`, for validityDays. kube-apiserver reloads its serving certificate files while it runs, so a
 * renewal needs no restart: connections made after it are served the new certificate.
 */
export async function reissueServingCert(
  pkiDir: string,
  validityDays: number,
  extraIPs: readonly string[] = [],
): Promise<void> {
  const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
  const { dnsNames, ipAddresses } = sansOf(new X509Certificate(read(PKI_FILES.apiserver.cert)));
  const serving = await issueCert(signingCa(pkiDir, 'ca'), {
    commonName: 'kube-apiserver',
    dnsNames,
    ipAddresses: [...ipAddresses, ...extraIPs.filter((ip) => !ipAddresses.includes(ip))],
    usages: ['server'],
    validityDays,
  });
  // The key first: the apiserver reloads when either file changes, and must find a matching pair.
  writeFileSync(join(pkiDir, PKI_FILES.apiserver.key), serving.keyPem, { mode: 0o600 });
  writeFileSync(join(pkiDir, PKI_FILES.apiserver.cert), serving.certPem, { mode: 0o644 });
}

/**
 * kwokConfig concatenates the upstream Stage documents shipped with the kwok build and a ClusterLogs document that makes
 * kwok's kubelet server (`--server-address`) serve `<dir>/kwok/container.log` (written here, in the CRI log format) as
 * every container's log. There is deliberately no ClusterExec, ClusterAttach or ClusterPortForward: kwok would run
 * exec commands on this host as the user running kwok and connect port-forwards to host processes, so exec, attach and
 * port-forward to a simulated Pod are refused by kwok (and, before that, by the vn-agent).
 */
function kwokConfig(dir: string): string {
  const stages = join(toolchainDir(), 'kwok-stages');
  const work = join(dir, 'kwok');
  mkdirSync(work, { recursive: true });
  const logFile = join(work, 'container.log');
  const at = new Date().toISOString();
  const lines = ['kwok fake container log line 1', 'kwok fake container log line 2', 'kwok fake container log line 3'];
  writeFileSync(logFile, lines.map((l) => `${at} stdout F ${l}\n`).join(''));
  // JSON is YAML: no YAML library needed for this document.
  const logs = JSON.stringify(
    {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'ClusterLogs',
      metadata: { name: 'vc-logs' },
      spec: { logs: [{ logsFile: logFile, previousLogsFile: logFile }] },
    },
    null,
    2,
  );
  return ['node-initialize', 'node-heartbeat-with-lease', 'pod-ready', 'pod-complete', 'pod-delete']
    .map((s) => readFileSync(join(stages, `${s}.yaml`), 'utf8').trim())
    .concat(logs)
    .join('\n---\n')
    .concat('\n');
}

/** kwokNode is a fake Node that kwok manages: untainted, with the usual os/arch/hostname labels and capacity. */
export function kwokNode(name: string): Record<string, unknown> {
  const capacity = { cpu: '32', memory: '256Gi', pods: '110', 'ephemeral-storage': '1Ti' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'node-role.kubernetes.io/agent': '',
        type: 'kwok',
      },
    },
    spec: {},
    status: {
      capacity,
      allocatable: capacity,
      nodeInfo: { architecture: 'amd64', operatingSystem: 'linux', kubeletVersion: 'fake' },
    },
  };
}
