import { isIP } from 'node:net';
import type { ClusterVersionSpec } from '../api/generated.ts';
import type { ControlPlaneCpu } from '../api/tenantpolicy.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import type { ControlPlaneMaxResources } from '../tenancy/policy.ts';
import type { RollComponent, RollFailure } from './roll.ts';

/** Provisioned describes a tenant control plane that answers. */
export interface Provisioned {
  /** admin kubeconfig (YAML) reachable from the manager */
  kubeconfig: string;
  /** SHA-256 of the client certificate the tenant apiserver presents to kubelets (the vn-agent checks it) */
  kubeletClientCertFingerprint?: string;
  /**
   * the other kubelet client certificates the vn-agent must accept while that one is renewed (a renewed one before the
   * apiserver is given it, the replaced one until it expires); a provisioner that renews it reports [] when none
   */
  rotatingKubeletClientCertFingerprints?: string[];
  /** where workloads reach the apiserver */
  apiserverEndpoint?: { host: string; port: number };
  /**
   * where the tenant's DNS server reads Services from, when not the apiserverEndpoint: a read-only view of the tenant
   * apiserver that shows each Service with its super cluster IP (core/provisioners/dnsview.ts); tlsServerName is the name
   * the DNS server asks for there (a view shared by several tenants routes by it)
   */
  dnsApiEndpoint?: { host: string; port: number; tlsServerName?: string };
  /** how people outside the super cluster reach the apiserver, where the provisioner exposes it */
  externalAccess?: ExternalAccess;
  /**
   * the certificates the provisioner issued, with their validity (CertificatesValid condition, expiry metric); manual
   * ones it does not renew by itself (the CAs, rotated by a command)
   */
  certificates?: Array<{ name: string; notBefore: Date; notAfter: Date; manual?: boolean }>;
  /** the share of a certificate's life after which the provisioner renews it (default DEFAULT_RENEW_FRACTION) */
  certificateRenewFraction?: number;
  /** the CA rotation step the VirtualCluster's ca-rotation annotation asks for, and whether it is done or refused */
  caRotation?: { step: string; refused?: string };
}

/**
 * ExternalAccess is how people outside the super cluster reach a tenant apiserver (spec.apiServer.expose), where a
 * provisioner exposes it: the Service type, and once known the server and an admin kubeconfig naming it; while the
 * super cluster has not given an address yet, what is awaited (a CamelCase reason and a message).
 */
export interface ExternalAccess {
  type: string;
  server?: string;
  /** the admin kubeconfig with `server` in place of the manager's; absent when the manager's is the one to use */
  kubeconfig?: string;
  waiting?: { reason: string; message: string };
}

/**
 * ProvisionState is the answer of ensure: ready with its details, or still working (with what it waits for). A ready
 * control plane says whether this call rolled it to a changed spec (`rolled`), or where the roll stopped (`rollFailed`:
 * then it serves what it could keep, and the same spec is not rolled again until it changes).
 */
export type ProvisionState =
  | { ready: true; result: Provisioned; rolled?: boolean; rollFailed?: RollFailure }
  | { ready: false; waitingFor: string };

/** RemoveWaiting is remove's answer while part of the control plane is still going away. */
export interface RemoveWaiting {
  waitingFor: string;
}

/** ProvisionLimits are what the tenant's policy caps in its control plane, for the provisioners that can enforce it. */
export interface ProvisionLimits {
  /** storage quota of the tenant's etcd, in bytes (the local provisioner gives each tenant an etcd of its own) */
  etcdBytes?: number;
  /**
   * the CPU of the tenant's own control plane (the policy's quota.controlPlaneCPU): the local provisioner runs its
   * processes in a cpu cgroup with this limit
   */
  controlPlaneCpu?: ControlPlaneCpu;
  /** the Secrets the tenant's policy grants the import provisioner (spec.grants.importSecrets); absent: none */
  importSecrets?: ReadonlyArray<{ namespace: string; name: string }>;
  /** the ClusterVersion the tenant names, as the controller's cache has it (the local provisioner takes its flags) */
  clusterVersion?: { spec?: ClusterVersionSpec };
  /**
   * called by a provisioner after it judged a roll to be an upgrade to the next Kubernetes minor and before it
   * restarts anything (the controller snapshots the tenant's etcd into the backup store); a throw stops the upgrade
   */
  beforeUpgrade?: (from: string, to: string) => Promise<void>;
  /**
   * what a sleep does with the tenant's own etcd (the policy's sleep.etcd): Stop (default) or Keep it running, which
   * costs its memory while asleep and spares its start on the wake
   */
  sleepEtcd?: 'Stop' | 'Keep';
  /**
   * the most each control-plane component's container may request or be limited to (the policy's
   * controlPlane.maxResources) and the policy that says so; the native provisioner refuses a ClusterVersion over it
   */
  maxResources?: { policyName: string; max: ControlPlaneMaxResources };
}

/**
 * Provisioner makes and removes tenant control planes. ensure is idempotent and level-triggered: called with the
 * same VirtualCluster twice it changes nothing the second time; a changed spec rolls the control plane.
 */
export interface Provisioner {
  readonly type: string;
  ensure(vc: VirtualCluster, rootNamespace: string, limits?: ProvisionLimits): Promise<ProvisionState>;
  /**
   * remove deletes the control plane and all its data; a missing one is not an error. It may answer what it still
   * waits for (e.g. a Pod to stop before its data goes): the caller then calls it again a moment later.
   */
  remove(vc: VirtualCluster, rootNamespace: string): Promise<void | RemoveWaiting>;
  /** stop releases what this process runs without deleting data (manager shutdown) */
  stop?(): Promise<void>;
}

/**
 * ProvisionRefused is thrown by ensure for a spec this provisioner cannot serve as asked (e.g. an exposure it has no
 * means for): the controller shows the reason and message in the VirtualCluster's status and an event, and looks
 * again later without a retry storm; nothing is started.
 */
export class ProvisionRefused extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'ProvisionRefused';
  }
}

/**
 * ComponentReport is what a provisioner knows of one control-plane component it runs: whether its process or
 * workload is up, how often it was restarted after dying, and where it says so, why it is down.
 */
export interface ComponentReport {
  /** etcd, kube-apiserver or kube-controller-manager */
  name: string;
  running: boolean;
  /** the component's own health check, where the provisioner asks one (a local etcd's /health); absent: not asked */
  healthy?: boolean;
  restarts: number;
  message?: string;
}

/**
 * ComponentSource is the optional ability of a provisioner to report its components (type guard hasComponents).
 * components answers undefined for a tenant it does not run; onComponentExit, where offered, calls back as soon as a
 * component dies, so that the health monitor looks at once instead of at its next round.
 */
export interface ComponentSource {
  components(vc: VirtualCluster, root: string): Promise<ComponentReport[] | undefined>;
  onComponentExit?(listener: (root: string, component: string) => void): () => void;
}

/** hasComponents reports whether the provisioner can report its components. */
export function hasComponents(p: Provisioner | undefined): p is Provisioner & ComponentSource {
  return typeof (p as Partial<ComponentSource> | undefined)?.components === 'function';
}

/** SleepAnswer is what Sleeper.sleep did: the tenant sleeps, or why it does not. */
export type SleepAnswer = { asleep: true } | { asleep: false; reason: 'Busy' | 'NoFrontDoor'; message: string };

/** FrontDoorActivity is what a tenant's front door saw: open client connections and when one last opened or spoke. */
export interface FrontDoorActivity {
  open: number;
  lastActiveMs: number;
}

/**
 * Sleeper is the optional ability of a provisioner to put an idle tenant to sleep (type guard canSleep): its
 * apiserver and controller manager stop while a front door keeps its address answering, and the first connection to
 * the front door wakes it. sleep refuses a tenant whose front door saw a connection after `sinceMs` (a request that
 * raced the decision) or that has none. ensure wakes a sleeping tenant. onWake is called after each wake the front
 * door started, with how long the tenant took to serve and the times of its phases.
 */
export interface Sleeper {
  sleep(vc: VirtualCluster, root: string, sinceMs: number, limits?: ProvisionLimits): Promise<SleepAnswer>;
  activity(root: string): FrontDoorActivity | undefined;
  onWake(listener: (root: string, tookMs: number, phases: WakePhases) => void): () => void;
}

/**
 * WakePhases are the times of one wake, in ms from the first request that began it: waiting for the sleep's own stop
 * to end (stopWaitMs), each component healthy (by its name; the apiserver's /readyz whole), and the apiserver serving
 * (servingMs: its /readyz but for the hooks that create the bootstrap objects it already holds; from then on the front
 * door relays). A component that was not started (an etcd the tenant shares) has no entry.
 */
export interface WakePhases {
  stopWaitMs?: number;
  servingMs?: number;
  etcd?: number;
  'kube-apiserver'?: number;
  'kube-controller-manager'?: number;
}

/** canSleep reports whether the provisioner can put tenants to sleep. */
export function canSleep(p: Provisioner | undefined): p is Provisioner & Sleeper {
  return typeof (p as Partial<Sleeper> | undefined)?.sleep === 'function';
}

/**
 * RollPlanner is the optional ability of a provisioner to say, before ensure runs, which components a changed spec
 * restarts (type guard canPlanRoll): the controller announces Updating and holds the roll back by maxUnavailable.
 */
export interface RollPlanner {
  planRoll(vc: VirtualCluster, root: string, limits?: ProvisionLimits): Promise<RollComponent[]>;
}

/** canPlanRoll reports whether the provisioner can plan its rolls. */
export function canPlanRoll(p: Provisioner | undefined): p is Provisioner & RollPlanner {
  return typeof (p as Partial<RollPlanner> | undefined)?.planRoll === 'function';
}

/**
 * TenantPodAddresses tells the addresses of each tenant's Pods as the super cluster has them: the Pods the syncer made
 * for the tenant, running or about to (not terminating, not finished), with addresses the super cluster gave them.
 */
export interface TenantPodAddresses {
  /** of lists the addresses of the Pods of the tenant whose cluster key (root namespace) is `root` */
  of(root: string): string[];
  /** subscribe calls `changed` with each tenant whose addresses changed; it returns the unsubscribe */
  subscribe(changed: (root: string) => void): () => void;
}

/**
 * PodAddressFollower is the optional ability of a provisioner to confine its control planes' connections to the
 * addresses of their own tenant's Pods (type guard followsPodAddresses): the manager hands it the super cluster's.
 */
export interface PodAddressFollower {
  followPodAddresses(feed: TenantPodAddresses): void;
}

/** followsPodAddresses reports whether the provisioner follows its tenants' Pod addresses. */
export function followsPodAddresses(p: Provisioner | undefined): p is Provisioner & PodAddressFollower {
  return typeof (p as Partial<PodAddressFollower> | undefined)?.followPodAddresses === 'function';
}

/**
 * NodeAddressReader is the optional mark of a provisioner whose rendered objects depend on the Nodes' addresses of the
 * cluster it runs control planes in (the native apiserver egress leaves them out): the VirtualCluster controller
 * reconciles its tenants again when a Node joins, leaves or changes its addresses (type guard readsNodeAddresses).
 */
export interface NodeAddressReader {
  readonly readsNodeAddresses: true;
}

/** readsNodeAddresses reports whether the provisioner's objects depend on the Nodes' addresses. */
export function readsNodeAddresses(p: Provisioner | undefined): p is Provisioner & NodeAddressReader {
  return (p as Partial<NodeAddressReader> | undefined)?.readsNodeAddresses === true;
}

/** NodeWithAddresses is the part of a Node nodeAddressesChanged reads. */
export interface NodeWithAddresses {
  status?: { addresses?: Array<{ address?: string }> };
}

/** nodeIPs is a Node's IP addresses, sorted, each once; a name (a Hostname address) is not one. */
export function nodeIPs(n: NodeWithAddresses | undefined): string[] {
  const ips = (n?.status?.addresses ?? []).map((a) => a.address ?? '').filter((a) => isIP(a) !== 0);
  return [...new Set(ips)].sort();
}

/**
 * nodeAddressesChanged tells whether a Node event changes the addresses a NodeAddressReader renders from: a Node that
 * joins or leaves (one side undefined), or whose IP addresses differ. A heartbeat, a condition or a label does not.
 */
export function nodeAddressesChanged(a: NodeWithAddresses | undefined, b: NodeWithAddresses | undefined): boolean {
  return a === undefined || b === undefined || nodeIPs(a).join() !== nodeIPs(b).join();
}
