import type { PodsPolicyView, TenantView, TolerationRule } from '../contract.ts';
import type { PodSpec } from './types.ts';

/**
 * POD_POLICY_VIOLATION is the skip, event and condition reason of a tenant Pod its policy refuses, and the terminated
 * reason of an ephemeral container it refuses.
 */
export const POD_POLICY_VIOLATION = 'PodPolicyViolation';

/** SYNCED_CONDITION is the tenant Pod condition that says why the Pod has no super copy. */
export const SYNCED_CONDITION = 'VCSynced';

/** SYSTEM_PRIORITY_PREFIX starts the names of the super's own priority classes; no tenant Pod may name them. */
export const SYSTEM_PRIORITY_PREFIX = 'system-';

/**
 * DEFAULT_TOLERATIONS are the tolerations a tenant Pod may carry when its policy names none: those the tenant
 * apiserver's DefaultTolerationSeconds admission adds to every Pod, and the NoSchedule ones of node conditions and
 * cordoning the tenant's DaemonSet controller adds to every daemon Pod (not network-unavailable, which it adds only to
 * host-network Pods). They tolerate what the node lifecycle controller and `kubectl cordon` set, never a taint the
 * platform puts on its nodes to keep tenants off or apart.
 */
export const DEFAULT_TOLERATIONS: readonly TolerationRule[] = [
  { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
];

/**
 * RESTRICTED_VOLUME_TYPES are volume types a tenant Pod uses only when its policy lists them: those the kubelet mounts
 * as root against arbitrary servers, and inline CSI volumes, whose driver acts with the node's credentials on
 * attributes the tenant chooses.
 */
export const RESTRICTED_VOLUME_TYPES = ['nfs', 'iscsi', 'rbd', 'cephfs', 'flexVolume', 'gitRepo', 'csi'] as const;

const volumeRisk = (t: (typeof RESTRICTED_VOLUME_TYPES)[number]): string =>
  t === 'csi'
    ? "an inline CSI volume has its driver act with the node's credentials on attributes the tenant chooses"
    : `the kubelet mounts ${t} volumes as root against any server`;

/**
 * DEFAULT_PODS_POLICY is the built-in pods policy: no priority class, only the default tolerations, the default
 * scheduler, no host ports, no host access, none of RESTRICTED_VOLUME_TYPES, nothing forced, no preloaded image, every
 * registry host outside the platform but no internal registry, service account tokens shared per ServiceAccount, no
 * per-node share of Pods, no /etc/hosts image.
 */
export const DEFAULT_PODS_POLICY = {
  priorityClasses: [],
  tolerations: DEFAULT_TOLERATIONS,
  schedulerNames: ['default-scheduler'],
  hostPorts: false,
  hostAccess: false,
  volumeTypes: [],
  preloadedImages: [],
  registries: ['*'],
  internalRegistries: [],
  nodeLabelKeys: ['kubernetes.io/os', 'kubernetes.io/arch', 'topology.kubernetes.io/*'],
  forced: {},
  serviceAccountTokens: 'shared',
  maxTerminationGracePeriodSeconds: 3600,
} as const satisfies Required<Omit<PodsPolicyView, 'maxPodsPerNode' | 'etcHostsImage'>>;

const keyAllowed = (patterns: readonly string[], key: string): boolean =>
  patterns.some((p) => (p.endsWith('*') ? key.startsWith(p.slice(0, -1)) : p === key));

interface NodeSelectorTerm {
  matchExpressions?: Array<{ key?: string }>;
}

interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
  preferredDuringSchedulingIgnoredDuringExecution?: Array<{ preference?: NodeSelectorTerm }>;
}

interface NodeKey {
  field: string;
  key: string;
  /** the key comes from spec.nodeSelector */
  selector?: boolean;
}

const nodeSelectorOf = (spec: PodSpec): Record<string, string> =>
  spec.nodeSelector && typeof spec.nodeSelector === 'object' ? (spec.nodeSelector as Record<string, string>) : {};

/**
 * nodeKeys lists the node label keys a Pod spec selects nodes by, each with the field that names it. Node fields
 * (`matchFields`) are checked against the tenant's vNodes, which the policy does not know (nodepin.ts).
 */
function nodeKeys(spec: PodSpec): NodeKey[] {
  const out: NodeKey[] = [];
  for (const key of Object.keys(nodeSelectorOf(spec)))
    out.push({ field: `spec.nodeSelector["${key}"]`, key, selector: true });
  const na = ((spec.affinity as { nodeAffinity?: NodeAffinity } | undefined)?.nodeAffinity ?? {}) as NodeAffinity;
  const term = (t: NodeSelectorTerm | undefined, at: string): void => {
    for (const [i, e] of (t?.matchExpressions ?? []).entries())
      out.push({ field: `${at}.matchExpressions[${i}].key`, key: e.key ?? '' });
  };
  const req = 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms';
  for (const [i, t] of (na.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []).entries())
    term(t, `${req}[${i}]`);
  const pref = 'spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution';
  for (const [i, p] of (na.preferredDuringSchedulingIgnoredDuringExecution ?? []).entries())
    term(p.preference, `${pref}[${i}].preference`);
  return out;
}

/** PodRefusal names the field of a tenant Pod its policy refuses, and why. */
export interface PodRefusal {
  field: string;
  message: string;
}

interface Toleration {
  key?: string;
  operator?: string;
  effect?: string;
}

const allows = (rule: TolerationRule, t: Toleration): boolean =>
  (rule.key ?? '') === (t.key ?? '') && (rule.effect === undefined || rule.effect === t.effect);

const describe = (t: Toleration): string =>
  `{key: "${t.key ?? ''}", operator: ${t.operator ?? 'Equal'}, effect: ${t.effect ?? '(all)'}}`;

/**
 * checkPodPolicy returns the first field of a tenant Pod spec the tenant's pods policy refuses, or undefined.
 * Priority class names starting `system-` are refused whatever the policy says.
 */
export function checkPodPolicy(
  spec: PodSpec,
  policy: PodsPolicyView | undefined,
  policyName = 'the TenantPolicy',
  level: TenantView['podSecurityLevel'] = 'baseline',
): PodRefusal | undefined {
  const first = checkPriorityAndTolerations(spec, policy, policyName);
  if (first) return first;
  const schedulers: readonly string[] = policy?.schedulerNames ?? DEFAULT_PODS_POLICY.schedulerNames;
  const scheduler = typeof spec.schedulerName === 'string' ? spec.schedulerName : '';
  if (scheduler && !schedulers.includes(scheduler)) {
    return {
      field: 'spec.schedulerName',
      message: `spec.schedulerName "${scheduler}" is not allowed by ${policyName} (pods.schedulerNames: ${schedulers.join(', ') || 'none'})`,
    };
  }
  const grace = checkGracePeriod(spec, policy, policyName);
  if (grace) return grace;
  const nodeLabelKeys: readonly string[] = policy?.nodeLabelKeys ?? DEFAULT_PODS_POLICY.nodeLabelKeys;
  const conflict = forcedConflict(spec, policy);
  if (conflict) return conflict;
  const forcedKeys = policy?.forced?.nodeSelector ?? {};
  for (const k of nodeKeys(spec)) {
    if (keyAllowed(nodeLabelKeys, k.key)) continue;
    if (k.selector && Object.hasOwn(forcedKeys, k.key)) continue;
    return {
      field: k.field,
      message: `${k.field}: node label key "${k.key}" is not allowed by ${policyName} (pods.nodeLabelKeys: ${nodeLabelKeys.join(', ') || 'none'})`,
    };
  }
  const hostAccess = (policy?.hostAccess ?? DEFAULT_PODS_POLICY.hostAccess) && level === 'privileged';
  const hostWhy = `needs pods.hostAccess in ${policyName} and Pod Security level privileged (the tenant's is ${level})`;
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (spec[f] === true && !hostAccess) return { field: `spec.${f}`, message: `spec.${f}: ${hostWhy}` };
  }
  const volumeTypes: readonly string[] = policy?.volumeTypes ?? DEFAULT_PODS_POLICY.volumeTypes;
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (v.hostPath !== undefined && !hostAccess)
      return { field: `spec.volumes[${i}].hostPath`, message: `spec.volumes[${i}].hostPath: ${hostWhy}` };
    const t = RESTRICTED_VOLUME_TYPES.find((k) => v[k] !== undefined && !volumeTypes.includes(k));
    if (t) {
      return {
        field: `spec.volumes[${i}].${t}`,
        message:
          `spec.volumes[${i}].${t}: ${volumeRisk(t)}; not allowed by ` +
          `${policyName} (pods.volumeTypes: ${volumeTypes.join(', ') || 'none'})`,
      };
    }
  }
  if (!(policy?.hostPorts ?? DEFAULT_PODS_POLICY.hostPorts)) {
    const groups = [
      ['containers', spec.containers],
      ['initContainers', spec.initContainers ?? []],
    ] as const;
    for (const [where, cs] of groups) {
      for (const [i, c] of cs.entries()) {
        const ports = Array.isArray(c.ports) ? (c.ports as Array<{ hostPort?: number }>) : [];
        const j = ports.findIndex((p) => p.hostPort !== undefined && p.hostPort !== 0);
        if (j >= 0) {
          return {
            field: `spec.${where}[${i}].ports[${j}].hostPort`,
            message: `spec.${where}[${i}].ports[${j}].hostPort ${ports[j]!.hostPort}: host ports are not allowed by ${policyName} (pods.hostPorts)`,
          };
        }
      }
    }
  }
  return undefined;
}

/**
 * checkGracePeriod refuses a terminationGracePeriodSeconds beyond the policy's bound. The kubelet lets a deleted Pod
 * run that long (a container that ignores SIGTERM, a preStop hook that sleeps), and the namespace controller waits for
 * it: without a bound, a tenant's Pods outlive the tenant's deletion by years, holding node resources, and the super
 * namespace and the VirtualCluster's deletion wait as long.
 */
function checkGracePeriod(
  spec: PodSpec,
  policy: PodsPolicyView | undefined,
  policyName: string,
): PodRefusal | undefined {
  const grace = spec.terminationGracePeriodSeconds;
  const max = policy?.maxTerminationGracePeriodSeconds ?? DEFAULT_PODS_POLICY.maxTerminationGracePeriodSeconds;
  if (typeof grace !== 'number' || grace <= max) return undefined;
  return {
    field: 'spec.terminationGracePeriodSeconds',
    message:
      `spec.terminationGracePeriodSeconds ${grace}: a deleted Pod (and every Pod of a deleted tenant) may run this ` +
      `long after the deletion; ${policyName} allows at most ${max} (pods.maxTerminationGracePeriodSeconds)`,
  };
}

/**
 * forcedConflict refuses a tenant nodeSelector entry whose key the platform forces to another value: overwriting it
 * would put the Pod where the tenant did not ask, silently. An entry with the forced value is allowed; node affinity
 * is not compared, as the scheduler requires it and the forced selector both.
 */
function forcedConflict(spec: PodSpec, policy: PodsPolicyView | undefined): PodRefusal | undefined {
  const forced = policy?.forced?.nodeSelector ?? {};
  for (const [key, value] of Object.entries(nodeSelectorOf(spec))) {
    if (!Object.hasOwn(forced, key) || forced[key] === value) continue;
    const field = `spec.nodeSelector["${key}"]`;
    return {
      field,
      message:
        `${field} "${value}" conflicts with ${key}=${forced[key]}, which the platform sets on every Pod of this ` +
        `tenant (pods.forced.nodeSelector); remove the entry or select "${forced[key]}"`,
    };
  }
  return undefined;
}

/**
 * applyForcedPlacement adds the platform's forced node selector entries and tolerations to a new super Pod spec
 * (checkPodPolicy has refused conflicting selector entries); a toleration the Pod already carries is not repeated.
 */
export function applyForcedPlacement(spec: PodSpec, policy: PodsPolicyView | undefined): void {
  const forced = policy?.forced;
  if (forced?.nodeSelector && Object.keys(forced.nodeSelector).length)
    spec.nodeSelector = { ...nodeSelectorOf(spec), ...forced.nodeSelector };
  if (forced?.tolerations?.length) {
    const own = Array.isArray(spec.tolerations) ? (spec.tolerations as Toleration[]) : [];
    const seen = new Set(own.map(tolerationId));
    const added = forced.tolerations.filter((t) => !seen.has(tolerationId(t))).map((t) => ({ ...t }));
    spec.tolerations = [...own, ...added];
  }
}

const tolerationId = (t: Toleration & { value?: string; tolerationSeconds?: number }): string =>
  JSON.stringify([t.key ?? '', t.operator ?? 'Equal', t.value ?? '', t.effect ?? '', t.tolerationSeconds ?? null]);

function checkPriorityAndTolerations(
  spec: PodSpec,
  policy: PodsPolicyView | undefined,
  policyName: string,
): PodRefusal | undefined {
  const priorityClasses = policy?.priorityClasses ?? DEFAULT_PODS_POLICY.priorityClasses;
  const rules = policy?.tolerations ?? DEFAULT_PODS_POLICY.tolerations;
  const pc = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : '';
  if (pc.startsWith(SYSTEM_PRIORITY_PREFIX)) {
    return {
      field: 'spec.priorityClassName',
      message:
        `spec.priorityClassName "${pc}": priority classes starting "${SYSTEM_PRIORITY_PREFIX}" belong to the ` +
        `platform and are never available to tenant Pods`,
    };
  }
  if (pc && !priorityClasses.includes(pc)) {
    return {
      field: 'spec.priorityClassName',
      message: `spec.priorityClassName "${pc}" is not allowed by ${policyName} (pods.priorityClasses: ${priorityClasses.join(', ') || 'none'})`,
    };
  }
  const tolerations = Array.isArray(spec.tolerations) ? (spec.tolerations as Toleration[]) : [];
  for (const [i, t] of tolerations.entries()) {
    if (rules.some((r) => allows(r, t))) continue;
    const allowed = rules.map((r) => `${r.key ?? '(any key)'}:${r.effect ?? '(any effect)'}`).join(', ') || 'none';
    return {
      field: `spec.tolerations[${i}]`,
      message: `spec.tolerations[${i}] ${describe(t)} is not allowed by ${policyName} (pods.tolerations: ${allowed})`,
    };
  }
  return undefined;
}
