// Over 500 lines, on purpose: one TenantPolicy's evaluation (defaults, quota, exposure, flags, plugins) over one
// spec reads in order here, as one table of field-by-field checks; the flag allow-list (allowlist.ts), the grants
// (grants.ts) and exposure (expose.ts) are already apart.
import type { TenantPolicySpec as GeneratedPolicySpec } from '../api/generated.ts';
import { isIP } from 'node:net';
import { formatErrors, validate } from '../../schemas/validate.ts';
import type { KubeObject } from '../kube/client.ts';
import type { ExposeType, ProvisionerType, VirtualCluster } from '../api/virtualcluster.ts';
import { checkFlags, FLAG_COMPONENTS, refusalText, type FlagComponent } from './allowlist.ts';
import {
  DEFAULT_BYTE_RATE,
  DEFAULT_CREATE_RATE,
  MAX_BYTE_RATE,
  type ByteRate,
  type ControlPlaneCpu,
  DEFAULT_CONTROL_PLANE_CPU,
  MAX_CONTROL_PLANE_CPU,
  type CreateRate,
} from '../api/tenantpolicy.ts';
import type {
  CopiedMetadataView,
  ForcedPlacementView,
  LimitRangeItem,
  NodeTotals,
  NodesView,
  ObjectCaps,
  QuotaPolicyView,
  ServiceAccountTokenMode,
  TolerationRule,
} from '../../plugins/sdk/src/contract.ts';
import { DEFAULT_COPIED_METADATA } from '../../plugins/sdk/src/meta.ts';
import { SUPER_INTERNAL_CIDRS } from '../../plugins/sdk/src/wellknown.ts';
import { DEFAULT_TOLERATIONS } from '../../plugins/sdk/src/pods/policy.ts';
import type { PodSecurityLevel } from './tenant.ts';
import { exposeViolations, type ExposePolicy } from './expose.ts';
import { grantViolations, subjectOf, GRANTED_BY_CONTROLLER, type GrantsSpec, type GrantSubject } from './grants.ts';

export type { ExposePolicy } from './expose.ts';

/**
 * The TenantPolicy: what the platform decides for the VirtualClusters that use it (issue 11). A VirtualCluster may
 * ask for less than its policy allows, never more; evaluatePolicy turns the two into the settings the provisioner
 * and the syncer get, or into the list of what the VirtualCluster asked for beyond its policy.
 */

/** DEFAULT_POLICY_ANNOTATION marks the TenantPolicy of every VirtualCluster that names none (one policy at most). */
export const DEFAULT_POLICY_ANNOTATION = 'tenancy.x-k8s.io/is-default-policy';

/** TenantPolicySpec mirrors the spec of schemas/tenantpolicy.schema.json. */
export interface TenantPolicySpec {
  controlPlane?: {
    apiServer?: { extraArgs?: Record<string, string> };
    controllerManager?: { extraArgs?: Record<string, string> };
    tenantSettableArgs?: { apiServer?: string[]; controllerManager?: string[] };
    expose?: ExposePolicy;
    /** the most spec.controlPlane.replicas a VirtualCluster may ask for */
    maxReplicas?: number;
    /** the most CPU and memory any request or limit of each native control-plane component may be */
    maxResources?: ControlPlaneMaxResources;
  };
  podSecurity?: { allowedLevels?: PodSecurityLevel[]; defaultLevel?: PodSecurityLevel };
  pods?: {
    priorityClasses?: string[];
    tolerations?: TolerationRule[];
    schedulerNames?: string[];
    hostPorts?: boolean;
    hostAccess?: boolean;
    volumeTypes?: string[];
    preloadedImages?: string[];
    registries?: string[];
    internalRegistries?: string[];
    nodeLabelKeys?: string[];
    forced?: ForcedPlacementView;
    serviceAccountTokens?: ServiceAccountTokenMode;
    maxPodsPerNode?: number;
    maxTerminationGracePeriodSeconds?: number;
    createRate?: { perSecond?: number; burst?: number };
  };
  runtimeClasses?: { handlers?: string[]; required?: string };
  nodes?: { view?: NodesView; totals?: NodeTotals };
  copiedMetadata?: CopiedMetadataView;
  network?: { internalCIDRs?: string[] };
  services?: { nodePort?: ServiceTypePolicy; loadBalancer?: LoadBalancerPolicy };
  ingresses?: { hosts?: string[]; classes?: string[]; annotations?: string[] };
  endpoints?: { allowedCIDRs?: string[] };
  quota?: {
    resourceQuota?: { hard?: Record<string, string> };
    limitRange?: { limits?: LimitRangeItem[] };
    objects?: Record<string, ObjectCaps>;
    compute?: { hard?: Record<string, string>; defaultRequests?: Record<string, string> };
    etcdBytes?: number;
    byteRate?: { perSecond?: number; burst?: number };
    controlPlaneCPU?: { millicores?: number; shares?: number };
  };
  weight?: { max?: number; default?: number };
  provisioners?: { allowed?: ProvisionerType[] };
  grants?: GrantsSpec;
  plugins?: { enforced?: string[]; allowedOptIn?: string[] };
  pluginConfig?: Record<string, unknown>;
  /** snapshots, retention and deletion of the tenants under the policy (core/lifecycle/backuppolicy.ts) */
  backup?: GeneratedPolicySpec['backup'];
  /** what a sleep does with a tenant's own etcd and its super workloads, and whether they keep a tenant awake */
  sleep?: { etcd?: SleepEtcd; workloads?: SleepWorkloads; maxWakesPerHour?: number };
}

/** SleepEtcd is what a sleep does with the tenant's own etcd: stop it, or keep it running. */
export type SleepEtcd = 'Stop' | 'Keep';

/**
 * SleepWorkloads is what a tenant's Pods in the super cluster do to a sleep and a sleep to them: nothing (Ignore: they
 * run on), keep it from sleeping when idle (KeepAwake), or deleted once it sleeps, made again by their controllers at
 * the wake (ScaleToZero).
 */
export type SleepWorkloads = 'Ignore' | 'KeepAwake' | 'ScaleToZero';

/** ServiceTypePolicy is one Service type's entry in spec.services: allowed or not, and how many per tenant. */
export interface ServiceTypePolicy {
  allowed?: boolean;
  max?: number;
  maxPorts?: number;
  /** the super copy asks for the node ports the tenant's apiserver gave (one try; the super's if refused) */
  keepTenantPorts?: boolean;
}

/** LoadBalancerPolicy is spec.services.loadBalancer: a ServiceTypePolicy and the load balancer classes tenants may name. */
export interface LoadBalancerPolicy extends ServiceTypePolicy {
  classes?: string[];
}

/** TenantPolicy is the cluster-scoped, platform-owned object a VirtualCluster names in spec.policyName. */
export interface TenantPolicy extends KubeObject {
  spec: TenantPolicySpec;
}

/**
 * DEFAULT_POLICY is the restrictive built-in policy, for VirtualClusters when no TenantPolicy applies and for every
 * field a TenantPolicy leaves out: the `default` keywords of schemas/tenantpolicy.schema.json (policy.test.ts holds
 * the table to the schema). No extra flags, no tenant-settable flag, no privileged Pods, weight at most 10, no import.
 */
export const DEFAULT_POLICY = {
  apiServerArgs: {},
  controllerManagerArgs: {},
  tenantSettableArgs: { apiServer: [], controllerManager: [] },
  allowedLevels: ['baseline', 'restricted'],
  defaultLevel: 'baseline',
  weightMax: 10,
  weightDefault: 1,
  provisioners: ['local', 'native'],
  enforcedPlugins: ['namespaces', 'pods', 'dns'],
  allowedOptIn: ['ingresses', 'priorityclasses', 'customresourcedefinitions'],
  podPriorityClasses: [],
  podTolerations: [...DEFAULT_TOLERATIONS],
  podSchedulerNames: ['default-scheduler'],
  podHostPorts: false,
  podHostAccess: false,
  podVolumeTypes: [],
  podPreloadedImages: [],
  podRegistries: ['*'],
  podInternalRegistries: [],
  podNodeLabelKeys: ['kubernetes.io/os', 'kubernetes.io/arch', 'topology.kubernetes.io/*'],
  runtimeClassHandlers: ['runc'],
  podForced: {},
  podServiceAccountTokens: 'shared',
  podMaxTerminationGracePeriodSeconds: 3600,
  podCreateRate: { perSecond: DEFAULT_CREATE_RATE.perSecond, burst: DEFAULT_CREATE_RATE.burst },
  nodesView: 'withPods',
  nodesTotals: 'scaled',
  copiedMetadata: DEFAULT_COPIED_METADATA,
  networkInternalCIDRs: SUPER_INTERNAL_CIDRS,
  serviceNodePort: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false },
  serviceLoadBalancer: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false, classes: [] },
  ingressHosts: [],
  ingressClasses: [],
  ingressAnnotations: [],
  endpointsAllowedCIDRs: [],
  quotaResourceQuota: {
    pods: '500',
    services: '100',
    secrets: '1000',
    configmaps: '500',
    persistentvolumeclaims: '50',
    'requests.storage': '1Ti',
  },
  quotaLimitRange: [],
  // Every synced kind has a count and a size: those not named here fall under '*' (see schemas/tenantpolicy).
  quotaObjects: {
    namespaces: { count: 100, maxBytes: 65536, totalBytes: 1048576 },
    pods: { count: 5000, maxBytes: 262144, totalBytes: 134217728 },
    services: { count: 500, maxBytes: 65536, totalBytes: 8388608 },
    persistentvolumeclaims: { count: 200, maxBytes: 65536, totalBytes: 4194304 },
    secrets: { count: 2000, maxBytes: 1048576, totalBytes: 67108864 },
    configmaps: { count: 2000, maxBytes: 1048576, totalBytes: 67108864 },
    '*': { count: 1000, maxBytes: 262144, totalBytes: 16777216 },
  },
  quotaComputeHard: { pods: '5000', 'requests.cpu': '500', 'requests.memory': '2Ti', 'requests.storage': '10Ti' },
  quotaComputeDefaultRequests: { cpu: '100m', memory: '256Mi' },
  quotaEtcdBytes: 2147483648,
  quotaByteRate: { perSecond: DEFAULT_BYTE_RATE.perSecond, burst: DEFAULT_BYTE_RATE.burst },
  quotaControlPlaneCpu: { millicores: DEFAULT_CONTROL_PLANE_CPU.millicores, shares: DEFAULT_CONTROL_PLANE_CPU.shares },
  sleepEtcd: 'Stop',
  sleepWorkloads: 'Ignore',
  sleepMaxWakesPerHour: 12,
  exposeAllowedTypes: ['ClusterIP'],
  exposeExtraNames: false,
  exposeFixedNodePort: false,
  controlPlaneMaxReplicas: 1,
} as const satisfies {
  apiServerArgs: Record<string, string>;
  controllerManagerArgs: Record<string, string>;
  tenantSettableArgs: Record<FlagComponent, readonly string[]>;
  allowedLevels: readonly PodSecurityLevel[];
  defaultLevel: PodSecurityLevel;
  weightMax: number;
  weightDefault: number;
  provisioners: readonly ProvisionerType[];
  enforcedPlugins: readonly string[];
  allowedOptIn: readonly string[];
  podPriorityClasses: readonly string[];
  podTolerations: readonly TolerationRule[];
  podSchedulerNames: readonly string[];
  podHostPorts: boolean;
  podHostAccess: boolean;
  podVolumeTypes: readonly string[];
  podPreloadedImages: readonly string[];
  podRegistries: readonly string[];
  podInternalRegistries: readonly string[];
  podNodeLabelKeys: readonly string[];
  runtimeClassHandlers: readonly string[];
  podForced: ForcedPlacementView;
  podServiceAccountTokens: ServiceAccountTokenMode;
  podMaxTerminationGracePeriodSeconds: number;
  podCreateRate: CreateRate;
  nodesView: NodesView;
  nodesTotals: NodeTotals;
  copiedMetadata: Required<CopiedMetadataView>;
  networkInternalCIDRs: readonly string[];
  serviceNodePort: Required<ServiceTypePolicy>;
  serviceLoadBalancer: Required<LoadBalancerPolicy>;
  ingressHosts: readonly string[];
  ingressClasses: readonly string[];
  ingressAnnotations: readonly string[];
  endpointsAllowedCIDRs: readonly string[];
  quotaResourceQuota: Record<string, string>;
  quotaLimitRange: readonly LimitRangeItem[];
  quotaObjects: Record<string, ObjectCaps>;
  quotaComputeHard: Record<string, string>;
  quotaComputeDefaultRequests: Record<string, string>;
  quotaEtcdBytes: number;
  quotaByteRate: ByteRate;
  quotaControlPlaneCpu: ControlPlaneCpu;
  sleepEtcd: SleepEtcd;
  sleepWorkloads: SleepWorkloads;
  sleepMaxWakesPerHour: number;
  exposeAllowedTypes: readonly ExposeType[];
  exposeExtraNames: boolean;
  exposeFixedNodePort: boolean;
  controlPlaneMaxReplicas: number;
};

/**
 * PLATFORM_PLUGIN_CONFIG are plugin settings only the platform writes (manager defaultPluginConfig, TenantPolicy
 * pluginConfig), never a VirtualCluster, whether or not the platform set them; `*` is the whole entry. They widen what
 * the tenant sees of the super cluster (`nodes.extraLabels`: more super node labels on vNodes) or name where the
 * tenant's control plane connects (the vn-agent's host and port, also under the older top-level `vnAgent`).
 */
export const PLATFORM_PLUGIN_CONFIG: Readonly<Record<string, readonly string[]>> = {
  nodes: ['extraLabels', 'vnAgent'],
  vnAgent: ['*'],
};

/** BUILTIN_POLICY_NAME is how messages name the built-in defaults. */
export const BUILTIN_POLICY_NAME = '(built-in defaults)';

/** ManagerDefaults are the settings of the manager's configuration a policy is layered over. */
export interface ManagerDefaults {
  /** plugin settings of every tenant (the manager's defaultPluginConfig) */
  pluginConfig?: Record<string, unknown>;
  /** placement forced onto every tenant Pod platform-wide (the manager's tenantDefaults.pods.forced) */
  podsForced?: ForcedPlacementView;
  /** images every node holds from the platform, pulled IfNotPresent (the manager's tenantDefaults.pods.preloadedImages) */
  podsPreloadedImages?: readonly string[];
  /** the image that rewrites /etc/hosts of Pods with a subdomain (the manager's tenantDefaults.pods.etcHostsImage) */
  podsEtcHostsImage?: string;
  /** the platform-wide label and annotation allow-lists (the manager's tenantDefaults.copiedMetadata) */
  copiedMetadata?: CopiedMetadataView;
  /**
   * the provisioner of a VirtualCluster that names none (defaultProvisioner of core/tenancy/defaults.ts); unknown
   * outside the manager (`vc create`, a GitOps dry run), where such a VirtualCluster's provisioner is not checked
   */
  provisioner?: ProvisionerType;
}

/** EffectiveSettings are what a VirtualCluster gets under its policy: the provisioner runs them, the syncer uses them. */
export interface EffectiveSettings {
  /** the TenantPolicy's name, or BUILTIN_POLICY_NAME */
  policyName: string;
  /** undefined only when the VirtualCluster names none and the caller knows no default (ManagerDefaults.provisioner) */
  provisioner: ProvisionerType | undefined;
  /** kube-apiserver extra flags: the policy's, then those the tenant may set */
  apiServerArgs: Record<string, string>;
  /** kube-controller-manager extra flags: the policy's, then those the tenant may set */
  controllerManagerArgs: Record<string, string>;
  podSecurityLevel: PodSecurityLevel;
  weight: number;
  plugins: { enable: string[]; disable: string[] };
  /** the manager's defaults, the policy's settings over them, and the keys the tenant added */
  pluginConfig: Record<string, unknown>;
  /** what the tenant's Pods may ask for (the pods plugin reads it through the TenantView) */
  pods: {
    priorityClasses: string[];
    tolerations: TolerationRule[];
    schedulerNames: string[];
    hostPorts: boolean;
    hostAccess: boolean;
    volumeTypes: string[];
    /** images tenant containers run from the node's image store instead of pulling them */
    preloadedImages: string[];
    /** the image that rewrites /etc/hosts of Pods with a subdomain; absent, the kubelet's file is kept */
    etcHostsImage?: string;
    /** registry hosts tenant images may name at all (pods.registries; `*` any) */
    registries: string[];
    /** registry hosts inside the platform that tenant images may name (pods.internalRegistries) */
    internalRegistries: string[];
    nodeLabelKeys: string[];
    /** the manager's forced placement with the policy's over it; absent when neither forces anything */
    forced?: ForcedPlacementView;
    /** whether the admission's token is one Secret per ServiceAccount (`shared`) or one per Pod bound to it */
    serviceAccountTokens: ServiceAccountTokenMode;
    /** most Pods of the tenant on one super node; absent, no share */
    maxPodsPerNode?: number;
    /** longest terminationGracePeriodSeconds a tenant Pod may ask for */
    maxTerminationGracePeriodSeconds: number;
  };
  /** how fast the syncer creates the tenant's super Pods (pods.createRate; the syncer paces, not the pods plugin) */
  podCreateRate: CreateRate;
  /** how fast the syncer writes the tenant's objects into the super cluster, in bytes (quota.byteRate; the syncer paces) */
  byteRate: ByteRate;
  /** the handlers the tenant's own RuntimeClasses may name and the class its Pods must run in (the runtimeclasses plugin) */
  runtimeClasses: { handlers: string[]; required?: string };
  /** which super nodes the tenant sees as vNodes (the nodes plugin), and what of their totals (the vn-agent too) */
  nodes: { view: NodesView; totals: NodeTotals };
  /** the manager's allow-lists with the policy's over them, list by list; absent: the SDK's defaults */
  copiedMetadata?: CopiedMetadataView;
  /** the super-internal address ranges of the tenant isolation policy (the networkpolicies plugin reads them) */
  network: { internalCIDRs: string[] };
  /** which Service types beyond ClusterIP and ExternalName the tenant may have, and how many (the services plugin) */
  services: { nodePort: Required<ServiceTypePolicy>; loadBalancer: Required<LoadBalancerPolicy> };
  /** the hosts, classes and annotation keys tenant Ingresses may use (the ingresses plugin) */
  ingresses: { hosts: string[]; classes: string[]; annotations: string[] };
  /** where Endpoints of selectorless tenant Services may point besides the tenant's own Pods (the endpoints plugin) */
  endpoints: { allowedCIDRs: string[] };
  /** the tenant's quota: namespace objects and per-tenant caps (the syncer), etcd storage (the local provisioner) */
  quota: QuotaSettings;
  /** the Secrets the policy grants the import provisioner (spec.grants.importSecrets); it reads no other */
  importSecrets: Array<{ namespace: string; name: string }>;
  /**
   * what a sleep does with the tenant's own etcd (the local provisioner), and the most wakes in an hour after which
   * the tenant is kept awake instead of put to sleep again
   */
  sleep: { etcd: SleepEtcd; workloads: SleepWorkloads; maxWakesPerHour: number };
  /** the most each native control-plane component's container may request or be limited to; absent: no bound */
  controlPlaneMaxResources?: ControlPlaneMaxResources;
}

/** ComponentMaximum is the most CPU and memory (quantities) any request or limit of one component's container may be. */
export interface ComponentMaximum {
  cpu?: string;
  memory?: string;
}

/** ControlPlaneMaxResources are a TenantPolicy's spec.controlPlane.maxResources, by ClusterVersion component field. */
export interface ControlPlaneMaxResources {
  etcd?: ComponentMaximum;
  apiServer?: ComponentMaximum;
  controllerManager?: ComponentMaximum;
}

/** QuotaSettings are the quota section of a tenant's effective policy. */
export interface QuotaSettings extends QuotaPolicyView {
  /** --quota-backend-bytes of the tenant's own etcd, where the local provisioner runs the control plane */
  etcdBytes: number;
  /** the CPU of the tenant's own control plane, where the local provisioner runs it (quota.controlPlaneCPU) */
  controlPlaneCPU: ControlPlaneCpu;
}

/** PolicyViolation is one thing a VirtualCluster (or its policy) asks for beyond what the policy allows. */
export interface PolicyViolation {
  /** the VirtualCluster field, dotted (`spec.apiServer.extraArgs.etcd-prefix`); spec.policyName for the policy's own faults */
  field: string;
  message: string;
}

/** PolicyEvaluation is evaluatePolicy's answer: effective settings are only to be used when violations is empty. */
export interface PolicyEvaluation {
  effective: EffectiveSettings;
  violations: PolicyViolation[];
}

/** isCidr tells an IPv4 or IPv6 address with a prefix length that fits it. */
function isCidr(text: string): boolean {
  const [ip = '', len = '', ...rest] = text.split('/');
  const family = isIP(ip);
  return family !== 0 && !rest.length && /^\d{1,3}$/.test(len) && Number(len) <= (family === 4 ? 32 : 128);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * evaluatePolicy checks a VirtualCluster against its policy (undefined: the built-in defaults) and returns the
 * settings it gets and every violation, each naming the VirtualCluster field. Flags the policy itself sets pass the
 * global allow-list too; a policy at fault is reported on spec.policyName. It reads nothing but its arguments.
 */
export function evaluatePolicy(
  vc: Pick<VirtualCluster, 'spec'>,
  policy: TenantPolicy | undefined,
  defaults: ManagerDefaults = {},
): PolicyEvaluation {
  const p = policy?.spec ?? {};
  const name = policy?.metadata?.name ?? BUILTIN_POLICY_NAME;
  const quoted = policy ? `policy "${name}"` : `the ${BUILTIN_POLICY_NAME}`;
  const s = vc.spec ?? {};
  const violations: PolicyViolation[] = [];
  const refuse = (field: string, message: string) => violations.push({ field, message });

  const args: Record<FlagComponent, Record<string, string>> = { apiServer: {}, controllerManager: {} };
  for (const c of FLAG_COMPONENTS) {
    const platform = p.controlPlane?.[c]?.extraArgs ?? {};
    for (const r of checkFlags(c, platform))
      refuse('spec.policyName', `TenantPolicy "${name}" spec.controlPlane.${c}.extraArgs.${r.flag}: ${refusalText(r)}`);
    const settable: readonly string[] = p.controlPlane?.tenantSettableArgs?.[c] ?? DEFAULT_POLICY.tenantSettableArgs[c];
    const tenant: Record<string, string> = s[c]?.extraArgs ?? {};
    const refused = new Map(checkFlags(c, tenant).map((r) => [r.flag, r]));
    const own: Record<string, string> = {};
    for (const [flag, value] of Object.entries(tenant)) {
      const field = `spec.${c}.extraArgs.${flag}`;
      const r = refused.get(flag);
      if (r) refuse(field, refusalText(r));
      else if (!settable.includes(flag)) refuse(field, `not settable under ${quoted} (tenantSettableArgs)`);
      else own[flag] = value;
    }
    args[c] = { ...platform, ...own };
  }

  const allowedLevels: readonly PodSecurityLevel[] = p.podSecurity?.allowedLevels ?? DEFAULT_POLICY.allowedLevels;
  const defaultLevel = p.podSecurity?.defaultLevel ?? DEFAULT_POLICY.defaultLevel;
  const level = s.podSecurityLevel ?? defaultLevel;
  if (!allowedLevels.includes(level)) {
    const field = s.podSecurityLevel ? 'spec.podSecurityLevel' : 'spec.policyName';
    const what = s.podSecurityLevel
      ? `Pod Security level "${level}"`
      : `TenantPolicy "${name}" spec.podSecurity.defaultLevel "${level}"`;
    refuse(field, `${what} is not allowed under ${quoted} (podSecurity.allowedLevels: ${allowedLevels.join(', ')})`);
  }

  const weightMax = p.weight?.max ?? DEFAULT_POLICY.weightMax;
  const weight = s.weight ?? p.weight?.default ?? DEFAULT_POLICY.weightDefault;
  if (weight > weightMax) {
    const field = s.weight !== undefined ? 'spec.weight' : 'spec.policyName';
    refuse(field, `weight ${weight} is above the ceiling ${weightMax} of ${quoted} (weight.max)`);
  }

  const provisioner = s.provisioner?.type ?? defaults.provisioner;
  const provisioners: readonly ProvisionerType[] = p.provisioners?.allowed ?? DEFAULT_POLICY.provisioners;
  if (provisioner && !provisioners.includes(provisioner)) {
    const what = s.provisioner ? `provisioner "${provisioner}"` : `the manager's default provisioner "${provisioner}"`;
    refuse(
      'spec.provisioner.type',
      `${what} is not allowed under ${quoted} (provisioners.allowed: ${provisioners.join(', ') || 'none'})`,
    );
  }

  const replicas = s.controlPlane?.replicas;
  const maxReplicas = p.controlPlane?.maxReplicas ?? DEFAULT_POLICY.controlPlaneMaxReplicas;
  if (replicas !== undefined && replicas > 1) {
    if (replicas > maxReplicas)
      refuse(
        'spec.controlPlane.replicas',
        `${replicas} members are more than the ${maxReplicas} ${quoted} allows (controlPlane.maxReplicas)`,
      );
    else if (provisioner && provisioner !== 'native')
      refuse(
        'spec.controlPlane.replicas',
        `${replicas} members need the native provisioner; the ${provisioner} provisioner runs one member of each component`,
      );
  }

  for (const v of exposeViolations(s.apiServer?.expose, p.controlPlane?.expose, quoted, {
    allowedTypes: DEFAULT_POLICY.exposeAllowedTypes,
    extraNames: DEFAULT_POLICY.exposeExtraNames,
    fixedNodePort: DEFAULT_POLICY.exposeFixedNodePort,
  }))
    refuse(v.field, v.message);

  const enforced: readonly string[] = p.plugins?.enforced ?? DEFAULT_POLICY.enforcedPlugins;
  const optIn: readonly string[] = p.plugins?.allowedOptIn ?? DEFAULT_POLICY.allowedOptIn;
  const disable = s.plugins?.disable ?? [];
  const enable = s.plugins?.enable ?? [];
  for (const plugin of disable)
    if (enforced.includes(plugin))
      refuse('spec.plugins.disable', `plugin "${plugin}" is enforced by ${quoted} (plugins.enforced)`);
  for (const plugin of enable)
    if (!optIn.includes(plugin))
      refuse(
        'spec.plugins.enable',
        `plugin "${plugin}" is not an opt-in plugin ${quoted} allows (plugins.allowedOptIn)`,
      );

  const internalCIDRs = [...(p.network?.internalCIDRs ?? DEFAULT_POLICY.networkInternalCIDRs)];
  internalCIDRs.forEach((c, i) => {
    if (!isCidr(c))
      refuse(
        'spec.policyName',
        `TenantPolicy "${name}" spec.network.internalCIDRs[${i}]: ${JSON.stringify(c)} is not a CIDR`,
      );
  });

  const pluginConfig = layerPluginConfig(defaults.pluginConfig ?? {}, p.pluginConfig ?? {});
  for (const [plugin, value] of Object.entries(s.pluginConfig ?? {})) {
    const only = Object.hasOwn(PLATFORM_PLUGIN_CONFIG, plugin) ? PLATFORM_PLUGIN_CONFIG[plugin]! : [];
    const reserved = only.includes('*')
      ? ['']
      : isObject(value)
        ? Object.keys(value).filter((k) => only.includes(k))
        : [];
    if (reserved.length) {
      for (const k of reserved)
        refuse(
          `spec.pluginConfig.${plugin}${k ? `.${k}` : ''}`,
          `is set by the platform only (manager defaultPluginConfig or ${quoted} pluginConfig), even where it ` +
            `sets nothing: it widens what the tenant sees of the super cluster or where its control plane connects`,
        );
      continue;
    }
    const platform = pluginConfig[plugin];
    if (platform === undefined) {
      pluginConfig[plugin] = value;
      continue;
    }
    if (!isObject(platform) || !isObject(value)) {
      refuse(
        `spec.pluginConfig.${plugin}`,
        `overrides the platform's setting of plugin "${plugin}" (manager defaultPluginConfig or ${quoted} pluginConfig)`,
      );
      continue;
    }
    const taken = Object.keys(value).filter((k) => k in platform);
    for (const k of taken)
      refuse(
        `spec.pluginConfig.${plugin}.${k}`,
        `overrides the platform's setting (manager defaultPluginConfig or ${quoted} pluginConfig)`,
      );
    if (!taken.length) pluginConfig[plugin] = { ...value, ...platform };
  }

  return {
    effective: {
      policyName: name,
      provisioner,
      apiServerArgs: args.apiServer,
      controllerManagerArgs: args.controllerManager,
      podSecurityLevel: level,
      weight,
      plugins: { enable: [...enable], disable: [...disable] },
      pluginConfig,
      pods: {
        priorityClasses: [...(p.pods?.priorityClasses ?? DEFAULT_POLICY.podPriorityClasses)],
        tolerations: (p.pods?.tolerations ?? DEFAULT_POLICY.podTolerations).map((t) => ({ ...t })),
        schedulerNames: [...(p.pods?.schedulerNames ?? DEFAULT_POLICY.podSchedulerNames)],
        hostPorts: p.pods?.hostPorts ?? DEFAULT_POLICY.podHostPorts,
        hostAccess: p.pods?.hostAccess ?? DEFAULT_POLICY.podHostAccess,
        volumeTypes: [...(p.pods?.volumeTypes ?? DEFAULT_POLICY.podVolumeTypes)],
        preloadedImages: [
          ...new Set([
            ...(p.pods?.preloadedImages ?? DEFAULT_POLICY.podPreloadedImages),
            ...(defaults.podsPreloadedImages ?? []),
          ]),
        ],
        ...optional('etcHostsImage', defaults.podsEtcHostsImage),
        registries: [...(p.pods?.registries ?? DEFAULT_POLICY.podRegistries)],
        internalRegistries: [...(p.pods?.internalRegistries ?? DEFAULT_POLICY.podInternalRegistries)],
        nodeLabelKeys: [...(p.pods?.nodeLabelKeys ?? DEFAULT_POLICY.podNodeLabelKeys)],
        ...optional('forced', mergeForced(defaults.podsForced, p.pods?.forced)),
        serviceAccountTokens: p.pods?.serviceAccountTokens ?? DEFAULT_POLICY.podServiceAccountTokens,
        ...optional('maxPodsPerNode', p.pods?.maxPodsPerNode),
        maxTerminationGracePeriodSeconds:
          p.pods?.maxTerminationGracePeriodSeconds ?? DEFAULT_POLICY.podMaxTerminationGracePeriodSeconds,
      },
      podCreateRate: { ...DEFAULT_POLICY.podCreateRate, ...p.pods?.createRate },
      byteRate: byteRateOf(p.quota?.byteRate),
      runtimeClasses: {
        handlers: [...(p.runtimeClasses?.handlers ?? DEFAULT_POLICY.runtimeClassHandlers)],
        ...(p.runtimeClasses?.required !== undefined && { required: p.runtimeClasses.required }),
      },
      nodes: { view: p.nodes?.view ?? DEFAULT_POLICY.nodesView, totals: p.nodes?.totals ?? DEFAULT_POLICY.nodesTotals },
      ...optional('copiedMetadata', mergeCopiedMetadata(defaults.copiedMetadata, p.copiedMetadata)),
      network: { internalCIDRs },
      services: {
        nodePort: { ...DEFAULT_POLICY.serviceNodePort, ...p.services?.nodePort },
        loadBalancer: { ...DEFAULT_POLICY.serviceLoadBalancer, ...p.services?.loadBalancer },
      },
      ingresses: {
        hosts: [...(p.ingresses?.hosts ?? DEFAULT_POLICY.ingressHosts)],
        classes: [...(p.ingresses?.classes ?? DEFAULT_POLICY.ingressClasses)],
        annotations: [...(p.ingresses?.annotations ?? DEFAULT_POLICY.ingressAnnotations)],
      },
      endpoints: { allowedCIDRs: [...(p.endpoints?.allowedCIDRs ?? DEFAULT_POLICY.endpointsAllowedCIDRs)] },
      quota: quotaSettings(p.quota),
      importSecrets: (p.grants?.importSecrets ?? []).map((x) => ({ namespace: x.namespace, name: x.name })),
      sleep: {
        etcd: p.sleep?.etcd ?? DEFAULT_POLICY.sleepEtcd,
        workloads: p.sleep?.workloads ?? DEFAULT_POLICY.sleepWorkloads,
        maxWakesPerHour: p.sleep?.maxWakesPerHour ?? DEFAULT_POLICY.sleepMaxWakesPerHour,
      },
      ...optional('controlPlaneMaxResources', p.controlPlane?.maxResources),
    },
    violations,
  };
}

const optional = <K extends string, V>(key: K, v: V | undefined): Partial<Record<K, V>> =>
  v === undefined ? {} : ({ [key]: v } as Record<K, V>);

/**
 * mergeForced lays a policy's forced placement over the manager's platform-wide one: node selector entries key by
 * key (the policy's value wins), tolerations added up. Undefined when nothing is forced.
 */
export function mergeForced(
  manager: ForcedPlacementView | undefined,
  policy: ForcedPlacementView | undefined,
): ForcedPlacementView | undefined {
  const nodeSelector = { ...manager?.nodeSelector, ...policy?.nodeSelector };
  const tolerations = [...(manager?.tolerations ?? []), ...(policy?.tolerations ?? [])].map((t) => ({ ...t }));
  const out: { nodeSelector?: Record<string, string>; tolerations?: ForcedPlacementView['tolerations'] } = {};
  if (Object.keys(nodeSelector).length) out.nodeSelector = nodeSelector;
  if (tolerations.length) out.tolerations = tolerations;
  return Object.keys(out).length ? out : undefined;
}

/** mergeCopiedMetadata lays a policy's allow-lists over the manager's, list by list. Undefined when neither sets one. */
export function mergeCopiedMetadata(
  manager: CopiedMetadataView | undefined,
  policy: CopiedMetadataView | undefined,
): CopiedMetadataView | undefined {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries({ ...manager, ...policy })) if (v) out[k] = [...v];
  return Object.keys(out).length ? out : undefined;
}

/**
 * quotaSettings lays a policy's quota section over the defaults: resourceQuota.hard and limitRange.limits replace the
 * default as a whole, objects replaces the default entry of each resource it names, compute.hard and
 * compute.defaultRequests each replace their default as a whole.
 */
function quotaSettings(q: TenantPolicySpec['quota']): QuotaSettings {
  const objects: Record<string, ObjectCaps> = {};
  for (const [r, caps] of Object.entries({ ...DEFAULT_POLICY.quotaObjects, ...q?.objects })) objects[r] = { ...caps };
  return {
    resourceQuota: { ...(q?.resourceQuota?.hard ?? DEFAULT_POLICY.quotaResourceQuota) },
    limitRange: structuredClone(q?.limitRange?.limits ?? DEFAULT_POLICY.quotaLimitRange) as LimitRangeItem[],
    objects,
    compute: {
      hard: { ...(q?.compute?.hard ?? DEFAULT_POLICY.quotaComputeHard) },
      defaultRequests: { ...(q?.compute?.defaultRequests ?? DEFAULT_POLICY.quotaComputeDefaultRequests) },
    },
    etcdBytes: q?.etcdBytes ?? DEFAULT_POLICY.quotaEtcdBytes,
    controlPlaneCPU: controlPlaneCpuOf(q?.controlPlaneCPU),
  };
}

/**
 * byteRateOf lays a policy's quota.byteRate over the default, held to the platform's maximum (MAX_BYTE_RATE; the schema
 * refuses more, this holds for a policy read without it).
 */
function byteRateOf(r: { perSecond?: number; burst?: number } | undefined): ByteRate {
  return {
    perSecond: Math.min(r?.perSecond ?? DEFAULT_POLICY.quotaByteRate.perSecond, MAX_BYTE_RATE.perSecond),
    burst: Math.min(r?.burst ?? DEFAULT_POLICY.quotaByteRate.burst, MAX_BYTE_RATE.burst),
  };
}

/**
 * controlPlaneCpuOf lays a policy's quota.controlPlaneCPU over the default, held to the platform's maximum
 * (MAX_CONTROL_PLANE_CPU; the schema refuses more, this holds for a policy read without it).
 */
function controlPlaneCpuOf(c: { millicores?: number; shares?: number } | undefined): ControlPlaneCpu {
  return {
    millicores: Math.min(
      c?.millicores ?? DEFAULT_POLICY.quotaControlPlaneCpu.millicores,
      MAX_CONTROL_PLANE_CPU.millicores,
    ),
    shares: Math.min(c?.shares ?? DEFAULT_POLICY.quotaControlPlaneCpu.shares, MAX_CONTROL_PLANE_CPU.shares),
  };
}

/** layerPluginConfig lays the policy's plugin settings over the manager's, key by key within each plugin. */
function layerPluginConfig(manager: Record<string, unknown>, policy: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...manager };
  for (const [plugin, value] of Object.entries(policy)) {
    const base = out[plugin];
    out[plugin] = isObject(base) && isObject(value) ? { ...base, ...value } : value;
  }
  return out;
}

/** PolicyResolution is the policy that applies to a VirtualCluster (undefined: built-in defaults) or why none can. */
export type PolicyResolution = { policy: TenantPolicy | undefined } | { error: PolicyViolation };

/**
 * resolvePolicy picks a VirtualCluster's TenantPolicy from the known ones: the one spec.policyName names (missing is
 * an error, never a fallback to something wider or narrower), else the one annotated default (two are an error),
 * else none, meaning the built-in defaults.
 */
export function resolvePolicy(vc: Pick<VirtualCluster, 'spec'>, policies: readonly TenantPolicy[]): PolicyResolution {
  const wanted = vc.spec?.policyName;
  if (wanted) {
    const p = policies.find((x) => x.metadata?.name === wanted);
    return p
      ? { policy: p }
      : { error: { field: 'spec.policyName', message: `TenantPolicy "${wanted}" does not exist` } };
  }
  const defaults = policies.filter(isDefaultPolicy);
  if (defaults.length > 1) {
    const names = defaults.map((x) => `"${x.metadata?.name}"`).sort();
    return {
      error: {
        field: 'spec.policyName',
        message: `no policy named and ${defaults.length} TenantPolicies are annotated default (${names.join(', ')}); the platform must keep one`,
      },
    };
  }
  return { policy: defaults[0] };
}

/** Admission is checkPolicies' answer: the effective settings, or the violations (never both). */
export type Admission = { effective: EffectiveSettings } | { violations: PolicyViolation[] };

/** AcceptedPolicy names the TenantPolicy a tenant's settings came from, as status.acceptedPolicy records it. */
export interface AcceptedPolicy {
  /** the TenantPolicy's name, or BUILTIN_POLICY_NAME */
  name: string;
  /** its metadata.generation when it was evaluated (none for the built-in defaults) */
  generation?: number;
}

/**
 * acceptedPolicyOf names the policy `effective` came from, with the generation `policies` hold of it: what a
 * VirtualCluster's status.acceptedPolicy records, and what the vn-agent compares with the policy it evaluates.
 */
export function acceptedPolicyOf(
  effective: Pick<EffectiveSettings, 'policyName'>,
  policies: readonly TenantPolicy[],
): AcceptedPolicy {
  const generation = policies.find((p) => p.metadata?.name === effective.policyName)?.metadata?.generation;
  return { name: effective.policyName, ...(generation !== undefined && { generation }) };
}

/**
 * judgeTenant is checkPolicies as the VirtualCluster controller records it: the effective settings and the policy
 * they came from (status.acceptedPolicy), or the violations as one message naming the VirtualCluster.
 */
export function judgeTenant(
  vc: VirtualCluster,
  policies: readonly TenantPolicy[],
  defaults: ManagerDefaults,
  subject: GrantSubject,
): { effective: EffectiveSettings; policy: AcceptedPolicy } | { refused: string } {
  const r = checkPolicies(vc, policies, defaults, subject);
  if (!('effective' in r))
    return { refused: formatViolations(`VirtualCluster ${vc.metadata?.namespace}/${vc.metadata?.name}`, r.violations) };
  return { effective: r.effective, policy: acceptedPolicyOf(r.effective, policies) };
}

/**
 * checkPolicies is what every entry point runs on a VirtualCluster (the controller, `vc create`, `vc validate` and
 * the GitOps plan): resolve its policy among the known ones, check that policy against its schema (an object written
 * past ajv must not widen anything), check that every name the VirtualCluster chose is granted to its subject
 * (core/tenancy/grants.ts; without a subject, the one its metadata gives, namespace labels unknown), and evaluate.
 */
export function checkPolicies(
  vc: Pick<VirtualCluster, 'spec'> & { metadata?: VirtualCluster['metadata'] },
  policies: readonly TenantPolicy[],
  defaults: ManagerDefaults = {},
  subject: GrantSubject | typeof GRANTED_BY_CONTROLLER = subjectOf(vc),
): Admission {
  const resolved = resolvePolicy(vc, policies);
  if ('error' in resolved) return { violations: [resolved.error] };
  const policy = resolved.policy;
  const invalid = policy ? validate('tenantPolicy', policy) : [];
  if (invalid.length) {
    const name = policy!.metadata?.name ?? '?';
    return {
      violations: [
        {
          field: 'spec.policyName',
          message: `TenantPolicy "${name}" is invalid: ${formatErrors(`TenantPolicy ${name}`, invalid).replaceAll('\n', '; ')}`,
        },
      ],
    };
  }
  const grants =
    subject === GRANTED_BY_CONTROLLER ? [] : grantViolations(vc, policy, !!policy && isDefaultPolicy(policy), subject);
  const { effective, violations } = evaluatePolicy(vc, policy, defaults);
  const all = [...grants, ...violations];
  return all.length ? { violations: all } : { effective };
}

/** isDefaultPolicy says whether a TenantPolicy carries DEFAULT_POLICY_ANNOTATION "true". */
export function isDefaultPolicy(p: TenantPolicy): boolean {
  return p.metadata?.annotations?.[DEFAULT_POLICY_ANNOTATION] === 'true';
}

/** formatViolations renders violations as `<where>: <field>: <message>` lines, e.g. where = `VirtualCluster ns/name`. */
export function formatViolations(where: string, violations: readonly PolicyViolation[]): string {
  return violations.map((v) => `${where}: ${v.field}: ${v.message}`).join('\n');
}
