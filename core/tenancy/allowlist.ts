import type { ExtraArgs } from '../api/controlplane.ts';

/**
 * The global flag allow-list. Every extra flag of a tenant control plane passes it, whoever wrote it: a TenantPolicy
 * or ClusterVersion (the platform) as much as a VirtualCluster (the tenant). A flag that touches etcd, files on the
 * manager's host, authentication, authorization, admission, the service-account issuer or the controller list is
 * refused with its category, so that nobody can point a tenant apiserver at another etcd prefix (which, with the
 * local provisioner, holds the super cluster and every other tenant) or at the manager's own files. Any other flag
 * must be on the list below.
 */

/** FLAG_COMPONENTS are the control-plane components whose flags a policy or a tenant may set. */
export const FLAG_COMPONENTS = ['apiServer', 'controllerManager'] as const;
/** FlagComponent is one of FLAG_COMPONENTS. */
export type FlagComponent = (typeof FLAG_COMPONENTS)[number];
/**
 * CHECKED_COMPONENTS are every component whose flags the allow-list covers: FLAG_COMPONENTS, and etcd, whose flags
 * only a ClusterVersion sets (its listeners, data directory and certificates are the provisioner's).
 */
export const CHECKED_COMPONENTS = [...FLAG_COMPONENTS, 'etcd'] as const;
/** CheckedComponent is one of CHECKED_COMPONENTS. */
export type CheckedComponent = (typeof CHECKED_COMPONENTS)[number];

/** FLAG_CATEGORIES are the reasons a flag is refused. */
export const FLAG_CATEGORIES = [
  'etcd',
  'authentication',
  'authorization',
  'admission',
  'service-account issuer',
  'controllers',
  'host files',
  'not allow-listed',
] as const;
/** FlagCategory is one of FLAG_CATEGORIES. */
export type FlagCategory = (typeof FLAG_CATEGORIES)[number];

/** Rule matches a flag name exactly, every name starting with it when it ends in `*`, ending with it when it starts so. */
type Rule = string;

function matches(rule: Rule, name: string): boolean {
  if (rule.endsWith('*')) return name.startsWith(rule.slice(0, -1));
  if (rule.startsWith('*')) return name.endsWith(rule.slice(1));
  return name === rule;
}

/** REFUSED lists, in the order they are checked, the flags refused whatever the allow-list says. */
const REFUSED: ReadonlyArray<readonly [Exclude<FlagCategory, 'not allow-listed'>, readonly Rule[]]> = [
  ['etcd', ['etcd-*', 'storage-*', 'encryption-provider-config*', 'watch-cache-*-prefix']],
  [
    'authentication',
    [
      'authentication-*',
      'oidc-*',
      'token-auth-file',
      'anonymous-auth',
      'client-ca-file',
      'requestheader-*',
      'service-account-key-file',
      'service-account-lookup',
      'enable-bootstrap-token-auth',
      'tls-*',
      'proxy-client-*',
      'kubelet-client-*',
      'kubelet-certificate-authority',
      'cluster-signing-*',
      'root-ca-file',
      'use-service-account-credentials',
      'egress-selector-config-file',
    ],
  ],
  ['authorization', ['authorization-*', 'always-allow-*']],
  ['admission', ['enable-admission-plugins', 'disable-admission-plugins', 'admission-control*', 'allow-privileged']],
  ['service-account issuer', ['service-account-*', 'api-audiences']],
  ['controllers', ['controllers', 'cloud-provider', 'cloud-config', 'external-cloud-volume-plugin']],
];

/** HOST_FILES name flags by their shape; runtime-config, on the allow-list, is the one that is not a file. */
const HOST_FILES: readonly Rule[] = [
  '*-file',
  '*-dir',
  '*-path',
  '*-config',
  '*-kubeconfig',
  'kubeconfig',
  'cert-dir',
  '*-directory',
];

/**
 * ALLOWED_FLAGS are the flags a policy may set or let tenants set, per component. feature-gates and runtime-config
 * are on it because platforms need them; they switch on alpha APIs and behaviour of the tenant's own apiserver only
 * (the syncer copies only the kinds its plugins know), and a platform that lets tenants set them accepts that risk.
 */
export const ALLOWED_FLAGS: Readonly<Record<CheckedComponent, readonly Rule[]>> = {
  apiServer: [
    'v',
    'vmodule',
    'max-requests-inflight',
    'max-mutating-requests-inflight',
    'default-watch-cache-size',
    'watch-cache-sizes',
    'event-ttl',
    'request-timeout',
    'min-request-timeout',
    'goaway-chance',
    'enable-priority-and-fairness',
    'profiling',
    'default-not-ready-toleration-seconds',
    'default-unreachable-toleration-seconds',
    'service-node-port-range',
    'delete-collection-workers',
    'enable-garbage-collector',
    'feature-gates',
    'runtime-config',
    'audit-log-maxage',
    'audit-log-maxbackup',
    'audit-log-maxsize',
  ],
  controllerManager: [
    'v',
    'vmodule',
    'concurrent-*',
    'kube-api-qps',
    'kube-api-burst',
    'terminated-pod-gc-threshold',
    'horizontal-pod-autoscaler-*',
    'enable-garbage-collector',
    'profiling',
    'feature-gates',
    // Leader election on the tenant's own Lease kube-system/kube-controller-manager, which tenant health reads: a
    // controller manager that hangs stops renewing it. Its resource name, namespace and lock stay off the list, so
    // the Lease is always where health looks; a native tenant with more than one replica keeps it on regardless.
    'leader-elect',
    'leader-elect-lease-duration',
    'leader-elect-renew-deadline',
    'leader-elect-retry-period',
  ],
  // Tuning only: where etcd listens and advertises, its data and WAL, its members and its TLS stay the provisioner's
  // (a listener on 0.0.0.0 or a data directory elsewhere on the manager's host is what a flag here could otherwise do).
  etcd: [
    'quota-backend-bytes',
    'snapshot-count',
    'heartbeat-interval',
    'election-timeout',
    'auto-compaction-mode',
    'auto-compaction-retention',
    'max-request-bytes',
    'max-txn-ops',
    'max-snapshots',
    'max-wals',
    'grpc-keepalive-min-time',
    'grpc-keepalive-interval',
    'grpc-keepalive-timeout',
    'backend-batch-limit',
    'backend-batch-interval',
    'log-level',
  ],
};

/** FlagRefusal is one flag the allow-list refuses and why. */
export interface FlagRefusal {
  flag: string;
  category: FlagCategory;
}

/** flagCategory returns why a flag of a component is refused, or undefined when the allow-list lets it through. */
export function flagCategory(component: CheckedComponent, name: string): FlagCategory | undefined {
  for (const [category, rules] of REFUSED) if (rules.some((r) => matches(r, name))) return category;
  if (ALLOWED_FLAGS[component].some((r) => matches(r, name))) return undefined;
  return HOST_FILES.some((r) => matches(r, name)) ? 'host files' : 'not allow-listed';
}

/** checkFlags returns the refused flags of one component's extra arguments, in name order. */
export function checkFlags(component: CheckedComponent, args: ExtraArgs | undefined): FlagRefusal[] {
  const out: FlagRefusal[] = [];
  for (const flag of Object.keys(args ?? {}).sort()) {
    const category = flagCategory(component, flag);
    if (category) out.push({ flag, category });
  }
  return out;
}

/** refusalText says in words why a flag is refused: `--etcd-prefix is refused by the flag allow-list (etcd)`. */
export function refusalText(r: FlagRefusal): string {
  return `--${r.flag} is refused by the flag allow-list (${r.category})`;
}

/**
 * assertFlagsAllowed throws when any extra argument of the control plane is refused; the provisioners call it on the
 * flags they are about to run, a second line behind the policy evaluation.
 */
export function assertFlagsAllowed(args: Partial<Record<CheckedComponent, ExtraArgs | undefined>>): void {
  const refused = CHECKED_COMPONENTS.flatMap((c) => checkFlags(c, args[c]).map((r) => `${c}: ${refusalText(r)}`));
  if (refused.length) throw new Error(`refusing to start the control plane: ${refused.join('; ')}`);
}
