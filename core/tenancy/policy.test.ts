import { describe, expect, it } from 'vitest';
import { SUPER_INTERNAL_CIDRS } from '../../plugins/sdk/src/wellknown.ts';
import { loadSchema } from '../../schemas/validate.ts';
import type { VirtualClusterSpec } from '../api/virtualcluster.ts';
import {
  BUILTIN_POLICY_NAME,
  DEFAULT_POLICY,
  DEFAULT_POLICY_ANNOTATION,
  checkPolicies,
  evaluatePolicy,
  formatViolations,
  resolvePolicy,
  type EffectiveSettings,
  type ManagerDefaults,
  type PolicyViolation,
  type TenantPolicy,
  type TenantPolicySpec,
} from './policy.ts';

const vc = (spec: VirtualClusterSpec = {}) => ({ metadata: { namespace: 'team-a', name: 'dev' }, spec });
const BAD_CIDRS = ['10.0.0.0/8', '10.0.0.0/33', '999.1.1.1/8', 'fd00::/129'];
const policy = (name: string, spec: TenantPolicySpec = {}, isDefault = false): TenantPolicy => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name, ...(isDefault && { annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } }) },
  spec: { grants: { subjects: [{ kind: 'Namespace', name: 'team-a' }] }, ...spec },
});
const manager: ManagerDefaults = {
  pluginConfig: { vnAgent: { port: 10550 }, dns: { ndots: 5 } },
  provisioner: 'local',
};

const gold = policy('gold', {
  controlPlane: {
    apiServer: { extraArgs: { 'max-requests-inflight': '800' } },
    controllerManager: { extraArgs: { 'kube-api-qps': '50' } },
    tenantSettableArgs: {
      apiServer: ['v', 'max-requests-inflight', 'etcd-prefix'],
      controllerManager: ['concurrent-deployment-syncs'],
    },
  },
  podSecurity: { allowedLevels: ['privileged', 'baseline'], defaultLevel: 'privileged' },
  weight: { max: 100, default: 5 },
  provisioners: { allowed: ['local', 'import'] },
  plugins: { enforced: ['pods', 'sandbox'], allowedOptIn: ['ingresses', 'sandbox'] },
  pluginConfig: { sandbox: { runtimeClassName: 'kata' }, vnAgent: { port: 10551 } },
  pods: {
    priorityClasses: ['batch-low'],
    tolerations: [{ key: 'dedicated', effect: 'NoSchedule' }],
    createRate: { perSecond: 5 },
  },
  runtimeClasses: { handlers: ['runc', 'kata'], required: 'kata' },
  nodes: { view: 'schedulable', totals: 'withheld' },
  network: { internalCIDRs: ['10.0.0.0/8', 'fd00::/8'] },
  services: { nodePort: { allowed: true, max: 2 } },
  ingresses: { hosts: ['*.gold.example.com'], classes: ['nginx'] },
  endpoints: { allowedCIDRs: ['192.0.2.0/24'] },
  quota: {
    resourceQuota: { hard: { pods: '20' } },
    limitRange: { limits: [] },
    objects: { secrets: { count: 10 }, pods: {} },
    compute: { hard: { 'requests.cpu': '8' } },
    etcdBytes: 67108864,
    byteRate: { perSecond: 2097152 },
    controlPlaneCPU: { millicores: 500 },
  },
});

/** builtinQuota is the quota section of the built-in defaults, written out. */
const builtinQuota = {
  resourceQuota: {
    pods: '500',
    services: '100',
    secrets: '1000',
    configmaps: '500',
    persistentvolumeclaims: '50',
    'requests.storage': '1Ti',
  },
  limitRange: [],
  objects: {
    namespaces: { count: 100, maxBytes: 65536, totalBytes: 1048576 },
    pods: { count: 5000, maxBytes: 262144, totalBytes: 134217728 },
    services: { count: 500, maxBytes: 65536, totalBytes: 8388608 },
    persistentvolumeclaims: { count: 200, maxBytes: 65536, totalBytes: 4194304 },
    secrets: { count: 2000, maxBytes: 1048576, totalBytes: 67108864 },
    configmaps: { count: 2000, maxBytes: 1048576, totalBytes: 67108864 },
    '*': { count: 1000, maxBytes: 262144, totalBytes: 16777216 },
  },
  compute: {
    hard: { pods: '5000', 'requests.cpu': '500', 'requests.memory': '2Ti', 'requests.storage': '10Ti' },
    defaultRequests: { cpu: '100m', memory: '256Mi' },
  },
  etcdBytes: 2147483648,
  controlPlaneCPU: { millicores: 1000, shares: 4096 },
};

/** PLATFORM_ONLY is the refusal of a plugin setting in PLATFORM_PLUGIN_CONFIG, naming the policy. */
const PLATFORM_ONLY = (policy: string): string =>
  `is set by the platform only (manager defaultPluginConfig or ${policy} pluginConfig), even where it sets nothing: ` +
  'it widens what the tenant sees of the super cluster or where its control plane connects';

describe('evaluatePolicy', () => {
  it.each<[TenantPolicySpec, string, string]>([
    [{}, 'Stop', 'Ignore'],
    [{ sleep: {} }, 'Stop', 'Ignore'],
    [{ sleep: { etcd: 'Keep' } }, 'Keep', 'Ignore'],
    [{ sleep: { etcd: 'Stop', workloads: 'KeepAwake' } }, 'Stop', 'KeepAwake'],
    [{ sleep: { workloads: 'Ignore' } }, 'Stop', 'Ignore'],
  ])("policy %j: a sleep does %s with the tenant's etcd, running workloads: %s", (spec, etcd, workloads) => {
    expect(evaluatePolicy(vc(), policy('p', spec), manager).effective.sleep).toEqual({
      etcd,
      workloads,
      maxWakesPerHour: DEFAULT_POLICY.sleepMaxWakesPerHour,
    });
  });

  it("takes the policy's sleep.maxWakesPerHour", () => {
    const spec: TenantPolicySpec = { sleep: { maxWakesPerHour: 3 } };
    expect(evaluatePolicy(vc(), policy('p', spec), manager).effective.sleep.maxWakesPerHour).toBe(3);
  });

  it('gives a VirtualCluster that asks for nothing the restrictive built-in defaults', () => {
    expect(evaluatePolicy(vc(), undefined, manager)).toEqual({
      effective: {
        policyName: BUILTIN_POLICY_NAME,
        provisioner: 'local',
        apiServerArgs: {},
        controllerManagerArgs: {},
        podSecurityLevel: 'baseline',
        weight: 1,
        plugins: { enable: [], disable: [] },
        pluginConfig: { vnAgent: { port: 10550 }, dns: { ndots: 5 } },
        pods: {
          priorityClasses: [],
          tolerations: [
            { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
            { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
            { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' },
            { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' },
            { key: 'node.kubernetes.io/pid-pressure', effect: 'NoSchedule' },
            { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
          ],
          schedulerNames: ['default-scheduler'],
          hostPorts: false,
          hostAccess: false,
          volumeTypes: [],
          preloadedImages: [],
          registries: ['*'],
          internalRegistries: [],
          nodeLabelKeys: ['kubernetes.io/os', 'kubernetes.io/arch', 'topology.kubernetes.io/*'],
          serviceAccountTokens: 'shared',
          maxTerminationGracePeriodSeconds: 3600,
        },
        podCreateRate: { perSecond: 20, burst: 10 },
        byteRate: { perSecond: 524288, burst: 2097152 },
        runtimeClasses: { handlers: ['runc'] },
        nodes: { view: 'withPods', totals: 'scaled' },
        network: { internalCIDRs: [...SUPER_INTERNAL_CIDRS] },
        services: {
          nodePort: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false },
          loadBalancer: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false, classes: [] },
        },
        ingresses: { hosts: [], classes: [], annotations: [] },
        endpoints: { allowedCIDRs: [] },
        importSecrets: [],
        sleep: { etcd: 'Stop', workloads: 'Ignore', maxWakesPerHour: 12 },
        quota: builtinQuota,
      },
      violations: [],
    });
  });

  it('treats an empty TenantPolicy exactly like the built-in defaults, but under its name', () => {
    const spec: VirtualClusterSpec = { weight: 11, podSecurityLevel: 'privileged', provisioner: { type: 'import' } };
    const builtin = evaluatePolicy(vc(spec), undefined);
    const empty = evaluatePolicy(vc(spec), policy('empty'));
    expect(empty.violations.map((v) => v.field)).toEqual(builtin.violations.map((v) => v.field));
    expect(empty.violations[0]!.message).toMatch(/policy "empty"/);
    expect(builtin.violations[0]!.message).toMatch(/the \(built-in defaults\)/);
  });

  it('applies what a policy grants: its flags, the settable flags, its defaults and its plugin settings', () => {
    const r = evaluatePolicy(
      vc({
        apiServer: { extraArgs: { v: '4', 'max-requests-inflight': '900' } },
        controllerManager: { extraArgs: { 'concurrent-deployment-syncs': '7' } },
        provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'k' } } },
        plugins: { enable: ['sandbox'], disable: ['dns'] },
        pluginConfig: { sandbox: { extra: true }, mine: { a: 1 } },
      }),
      gold,
      manager,
    );
    expect(r.violations).toEqual([]);
    expect(r.effective).toEqual({
      policyName: 'gold',
      provisioner: 'import',
      apiServerArgs: { 'max-requests-inflight': '900', v: '4' },
      controllerManagerArgs: { 'kube-api-qps': '50', 'concurrent-deployment-syncs': '7' },
      podSecurityLevel: 'privileged',
      weight: 5,
      plugins: { enable: ['sandbox'], disable: ['dns'] },
      pluginConfig: {
        vnAgent: { port: 10551 },
        dns: { ndots: 5 },
        sandbox: { extra: true, runtimeClassName: 'kata' },
        mine: { a: 1 },
      },
      pods: {
        priorityClasses: ['batch-low'],
        tolerations: [{ key: 'dedicated', effect: 'NoSchedule' }],
        schedulerNames: ['default-scheduler'],
        hostPorts: false,
        hostAccess: false,
        volumeTypes: [],
        preloadedImages: [],
        registries: ['*'],
        internalRegistries: [],
        nodeLabelKeys: ['kubernetes.io/os', 'kubernetes.io/arch', 'topology.kubernetes.io/*'],
        serviceAccountTokens: 'shared',
        maxTerminationGracePeriodSeconds: 3600,
      },
      podCreateRate: { perSecond: 5, burst: 10 },
      byteRate: { perSecond: 2097152, burst: 2097152 },
      runtimeClasses: { handlers: ['runc', 'kata'], required: 'kata' },
      nodes: { view: 'schedulable', totals: 'withheld' },
      network: { internalCIDRs: ['10.0.0.0/8', 'fd00::/8'] },
      services: {
        nodePort: { allowed: true, max: 2, maxPorts: 5, keepTenantPorts: false },
        loadBalancer: { allowed: false, max: 5, maxPorts: 5, keepTenantPorts: false, classes: [] },
      },
      ingresses: { hosts: ['*.gold.example.com'], classes: ['nginx'], annotations: [] },
      endpoints: { allowedCIDRs: ['192.0.2.0/24'] },
      importSecrets: [],
      sleep: { etcd: 'Stop', workloads: 'Ignore', maxWakesPerHour: 12 },
      // hard and limits replace the defaults whole; objects replaces the entries it names ({} lifts the caps)
      quota: {
        resourceQuota: { pods: '20' },
        limitRange: [],
        objects: { ...builtinQuota.objects, secrets: { count: 10 }, pods: {} },
        // compute.hard replaces the default whole; defaultRequests left out keeps the default
        compute: { hard: { 'requests.cpu': '8' }, defaultRequests: builtinQuota.compute.defaultRequests },
        etcdBytes: 67108864,
        // millicores from the policy, shares left out keeps the default
        controlPlaneCPU: { millicores: 500, shares: 4096 },
      },
    });
  });

  it.each<[string, VirtualClusterSpec, TenantPolicy | undefined, PolicyViolation[]]>([
    [
      'a policy whose internal ranges are not CIDRs (the isolation policy is built from them)',
      {},
      policy('net', { network: { internalCIDRs: BAD_CIDRS } }),
      [1, 2, 3].map((i) => ({
        field: 'spec.policyName',
        message: `TenantPolicy "net" spec.network.internalCIDRs[${i}]: ${JSON.stringify(BAD_CIDRS[i])} is not a CIDR`,
      })),
    ],
    [
      'a flag no policy grants',
      { apiServer: { extraArgs: { 'max-requests-inflight': '1000' } } },
      undefined,
      [
        {
          field: 'spec.apiServer.extraArgs.max-requests-inflight',
          message: 'not settable under the (built-in defaults) (tenantSettableArgs)',
        },
      ],
    ],
    [
      'the confirmed attack: another etcd prefix',
      { apiServer: { extraArgs: { 'etcd-prefix': '/registry' } } },
      undefined,
      [
        {
          field: 'spec.apiServer.extraArgs.etcd-prefix',
          message: '--etcd-prefix is refused by the flag allow-list (etcd)',
        },
      ],
    ],
    [
      'an etcd prefix even where the policy lists it as settable',
      { apiServer: { extraArgs: { 'etcd-prefix': '/registry' } } },
      gold,
      [
        {
          field: 'spec.apiServer.extraArgs.etcd-prefix',
          message: '--etcd-prefix is refused by the flag allow-list (etcd)',
        },
      ],
    ],
    [
      'etcd servers, a token file, an authorization mode, admission plugins and the issuer',
      {
        apiServer: {
          extraArgs: {
            'etcd-servers': 'http://10.0.0.1:2379',
            'token-auth-file': '/etc/passwd',
            'authorization-mode': 'AlwaysAllow',
            'enable-admission-plugins': 'AlwaysAdmit',
            'service-account-issuer': 'https://evil',
          },
        },
      },
      gold,
      [
        {
          field: 'spec.apiServer.extraArgs.etcd-servers',
          message: '--etcd-servers is refused by the flag allow-list (etcd)',
        },
        {
          field: 'spec.apiServer.extraArgs.token-auth-file',
          message: '--token-auth-file is refused by the flag allow-list (authentication)',
        },
        {
          field: 'spec.apiServer.extraArgs.authorization-mode',
          message: '--authorization-mode is refused by the flag allow-list (authorization)',
        },
        {
          field: 'spec.apiServer.extraArgs.enable-admission-plugins',
          message: '--enable-admission-plugins is refused by the flag allow-list (admission)',
        },
        {
          field: 'spec.apiServer.extraArgs.service-account-issuer',
          message: '--service-account-issuer is refused by the flag allow-list (service-account issuer)',
        },
      ],
    ],
    [
      'the controller list',
      { controllerManager: { extraArgs: { controllers: '*' } } },
      gold,
      [
        {
          field: 'spec.controllerManager.extraArgs.controllers',
          message: '--controllers is refused by the flag allow-list (controllers)',
        },
      ],
    ],
    [
      'a settable apiserver flag on the controller-manager',
      { controllerManager: { extraArgs: { v: '9' } } },
      gold,
      [
        {
          field: 'spec.controllerManager.extraArgs.v',
          message: 'not settable under policy "gold" (tenantSettableArgs)',
        },
      ],
    ],
    [
      'privileged Pods under the defaults',
      { podSecurityLevel: 'privileged' },
      undefined,
      [
        {
          field: 'spec.podSecurityLevel',
          message:
            'Pod Security level "privileged" is not allowed under the (built-in defaults) (podSecurity.allowedLevels: baseline, restricted)',
        },
      ],
    ],
    [
      'restricted where the policy allows only privileged and baseline',
      { podSecurityLevel: 'restricted' },
      gold,
      [
        {
          field: 'spec.podSecurityLevel',
          message:
            'Pod Security level "restricted" is not allowed under policy "gold" (podSecurity.allowedLevels: privileged, baseline)',
        },
      ],
    ],
    [
      'a weight above the ceiling',
      { weight: 11 },
      undefined,
      [{ field: 'spec.weight', message: 'weight 11 is above the ceiling 10 of the (built-in defaults) (weight.max)' }],
    ],
    [
      'three control-plane members under the defaults',
      { provisioner: { type: 'native' }, controlPlane: { replicas: 3 } },
      undefined,
      [
        {
          field: 'spec.controlPlane.replicas',
          message: '3 members are more than the 1 the (built-in defaults) allows (controlPlane.maxReplicas)',
        },
      ],
    ],
    [
      'five control-plane members where the policy allows three',
      { provisioner: { type: 'native' }, controlPlane: { replicas: 5 } },
      policy('ha', { controlPlane: { maxReplicas: 3 } }),
      [
        {
          field: 'spec.controlPlane.replicas',
          message: '5 members are more than the 3 policy "ha" allows (controlPlane.maxReplicas)',
        },
      ],
    ],
    [
      'three members of a local tenant',
      { provisioner: { type: 'local' }, controlPlane: { replicas: 3 } },
      policy('ha', { controlPlane: { maxReplicas: 3 } }),
      [
        {
          field: 'spec.controlPlane.replicas',
          message: '3 members need the native provisioner; the local provisioner runs one member of each component',
        },
      ],
    ],
    [
      'the import provisioner under the defaults',
      { provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'k' } } } },
      undefined,
      [
        {
          field: 'spec.provisioner.type',
          message:
            'provisioner "import" is not allowed under the (built-in defaults) (provisioners.allowed: local, native)',
        },
      ],
    ],
    [
      'the native provisioner where the policy allows local and import',
      { provisioner: { type: 'native' } },
      gold,
      [
        {
          field: 'spec.provisioner.type',
          message: 'provisioner "native" is not allowed under policy "gold" (provisioners.allowed: local, import)',
        },
      ],
    ],
    [
      'disabling an enforced plugin',
      { plugins: { disable: ['pods', 'events'] } },
      undefined,
      [
        {
          field: 'spec.plugins.disable',
          message: 'plugin "pods" is enforced by the (built-in defaults) (plugins.enforced)',
        },
      ],
    ],
    [
      'disabling a mutator the policy enforces',
      { plugins: { disable: ['sandbox'] } },
      gold,
      [{ field: 'spec.plugins.disable', message: 'plugin "sandbox" is enforced by policy "gold" (plugins.enforced)' }],
    ],
    [
      'enabling an opt-in plugin the policy does not offer',
      { plugins: { enable: ['priorityclasses'] } },
      gold,
      [
        {
          field: 'spec.plugins.enable',
          message: 'plugin "priorityclasses" is not an opt-in plugin policy "gold" allows (plugins.allowedOptIn)',
        },
      ],
    ],
    [
      'setting the vn-agent the tenant apiserver connects to',
      { pluginConfig: { vnAgent: { port: 1 } } },
      undefined,
      [{ field: 'spec.pluginConfig.vnAgent', message: PLATFORM_ONLY('the (built-in defaults)') }],
    ],
    [
      'widening the super node labels a vNode shows, where the platform set none',
      { pluginConfig: { nodes: { extraLabels: ['node-role.kubernetes.io/'], gracePeriodSeconds: 5 } } },
      gold,
      [{ field: 'spec.pluginConfig.nodes.extraLabels', message: PLATFORM_ONLY('policy "gold"') }],
    ],
    [
      'pointing its vNodes at another vn-agent',
      { pluginConfig: { nodes: { vnAgent: { host: '10.0.0.1' } } } },
      undefined,
      [{ field: 'spec.pluginConfig.nodes.vnAgent', message: PLATFORM_ONLY('the (built-in defaults)') }],
    ],
    [
      "overriding the policy's plugin setting",
      { pluginConfig: { sandbox: { runtimeClassName: 'runc' } } },
      gold,
      [
        {
          field: 'spec.pluginConfig.sandbox.runtimeClassName',
          message: 'overrides the platform\'s setting (manager defaultPluginConfig or policy "gold" pluginConfig)',
        },
      ],
    ],
    [
      'replacing a platform setting that is not an object',
      { pluginConfig: { dns: 'off' } },
      undefined,
      [
        {
          field: 'spec.pluginConfig.dns',
          message:
            'overrides the platform\'s setting of plugin "dns" (manager defaultPluginConfig or the (built-in defaults) pluginConfig)',
        },
      ],
    ],
  ])('refuses %s, naming the field', (_, spec, p, want) => {
    expect(evaluatePolicy(vc(spec), p, manager).violations).toEqual(want);
  });

  it.each<[string, VirtualClusterSpec]>([
    ['three members of a native tenant', { provisioner: { type: 'native' }, controlPlane: { replicas: 3 } }],
    ['one member of a local tenant', { provisioner: { type: 'local' }, controlPlane: { replicas: 1 } }],
  ])('accepts %s where the policy allows three', (_, spec) => {
    expect(evaluatePolicy(vc(spec), policy('ha', { controlPlane: { maxReplicas: 3 } }), manager).violations).toEqual(
      [],
    );
  });

  it('refuses, on spec.policyName, a policy whose own flags or defaults break the rules', () => {
    const bad = policy('bad', {
      controlPlane: {
        apiServer: { extraArgs: { 'etcd-prefix': '/registry', v: '2' } },
        controllerManager: { extraArgs: { kubeconfig: '/root/.kube/config' } },
      },
      podSecurity: { allowedLevels: ['restricted'], defaultLevel: 'baseline' },
      weight: { max: 3, default: 5 },
    });
    expect(evaluatePolicy(vc(), bad).violations).toEqual([
      {
        field: 'spec.policyName',
        message:
          'TenantPolicy "bad" spec.controlPlane.apiServer.extraArgs.etcd-prefix: --etcd-prefix is refused by the flag allow-list (etcd)',
      },
      {
        field: 'spec.policyName',
        message:
          'TenantPolicy "bad" spec.controlPlane.controllerManager.extraArgs.kubeconfig: --kubeconfig is refused by the flag allow-list (host files)',
      },
      {
        field: 'spec.policyName',
        message:
          'TenantPolicy "bad" spec.podSecurity.defaultLevel "baseline" is not allowed under policy "bad" (podSecurity.allowedLevels: restricted)',
      },
      { field: 'spec.policyName', message: 'weight 5 is above the ceiling 3 of policy "bad" (weight.max)' },
    ]);
  });

  it('lets a VirtualCluster ask for less: a lower weight, a stricter level, fewer plugins', () => {
    const r = evaluatePolicy(
      vc({ weight: 2, podSecurityLevel: 'restricted', plugins: { disable: ['events'] } }),
      undefined,
    );
    expect(r.violations).toEqual([]);
    expect(r.effective).toMatchObject({ weight: 2, podSecurityLevel: 'restricted', plugins: { disable: ['events'] } });
  });
});

describe('resolvePolicy', () => {
  const def = policy('default', {}, true);
  it.each<[string, VirtualClusterSpec, TenantPolicy[], string | undefined | Error]>([
    ['the named policy', { policyName: 'gold' }, [def, gold], 'gold'],
    ['the default one when none is named', {}, [gold, def], 'default'],
    ['the built-in defaults when there is no default', {}, [gold], undefined],
    [
      'an error for a named policy that does not exist, never a fallback',
      { policyName: 'silver' },
      [def],
      new Error('TenantPolicy "silver" does not exist'),
    ],
    [
      'an error for two defaults',
      {},
      [policy('b', {}, true), policy('a', {}, true)],
      new Error('2 TenantPolicies are annotated default ("a", "b")'),
    ],
  ])('picks %s', (_, spec, policies, want) => {
    const r = resolvePolicy(vc(spec), policies);
    if (want instanceof Error) {
      expect('error' in r && r.error.field).toBe('spec.policyName');
      expect('error' in r && r.error.message).toContain(want.message);
    } else expect('policy' in r && r.policy?.metadata?.name).toBe(want ?? undefined);
  });
});

describe('evaluatePolicy: forced Pod placement and copied metadata', () => {
  const platform: ManagerDefaults = {
    podsForced: {
      nodeSelector: { pool: 'tenants', zone: 'a' },
      tolerations: [{ key: 'pool', value: 'tenants', effect: 'NoSchedule' }],
    },
    copiedMetadata: { labels: ['app.kubernetes.io/*'], annotations: [] },
  };
  it.each<[string, ManagerDefaults, TenantPolicySpec, EffectiveSettings['pods']['forced'], unknown]>([
    ['nothing forced, no lists: both absent (the SDK defaults apply)', {}, {}, undefined, undefined],
    ['the manager alone', platform, {}, platform.podsForced, { labels: ['app.kubernetes.io/*'], annotations: [] }],
    [
      'the policy over the manager: selector key by key, tolerations added up, lists replaced one by one',
      platform,
      {
        pods: {
          forced: { nodeSelector: { pool: 'gpu' }, tolerations: [{ key: 'gpu', operator: 'Exists' }] },
        },
        copiedMetadata: { labels: ['*'], namespaceLabels: [] },
      },
      {
        nodeSelector: { pool: 'gpu', zone: 'a' },
        tolerations: [
          { key: 'pool', value: 'tenants', effect: 'NoSchedule' },
          { key: 'gpu', operator: 'Exists' },
        ],
      },
      { labels: ['*'], annotations: [], namespaceLabels: [] },
    ],
  ])('%s', (_name, defaults, spec, forced, copied) => {
    const r = evaluatePolicy(vc(), policy('p', spec), defaults);
    expect(r.violations).toEqual([]);
    expect(r.effective.pods.forced).toStrictEqual(forced);
    expect(r.effective.copiedMetadata).toStrictEqual(copied);
  });
  it('is a policy the schema accepts, and one with a bad key pattern or toleration operator it refuses', () => {
    const good = policy('good', {
      pods: { forced: { nodeSelector: { pool: 'x' }, tolerations: [{ key: 'pool', operator: 'Exists' }] } },
      copiedMetadata: { labels: ['*', 'app.kubernetes.io/*', '*.example.com/*'] },
    });
    expect(checkPolicies(vc({ policyName: 'good' }), [good])).toHaveProperty('effective');
    const bad = policy('bad', {
      pods: { forced: { tolerations: [{ key: 'pool', operator: 'In' as string as 'Exists' }] } },
      copiedMetadata: { labels: ['has space'] },
    });
    const r = checkPolicies(vc({ policyName: 'bad' }), [bad]);
    const message = 'violations' in r ? r.violations.map((v) => v.message).join('\n') : '';
    expect(message).toContain('/spec/pods/forced/tolerations/0/operator must be one of');
    expect(message).toContain('/spec/copiedMetadata/labels/0 must match pattern');
  });
  it('hands controlPlane.maxResources to the provisioner as is, and the schema refuses a maximum that is no quantity', () => {
    const max = { etcd: { cpu: '1', memory: '4Gi' }, apiServer: { memory: '2Gi' } };
    const r = checkPolicies(vc({ policyName: 'sized' }), [policy('sized', { controlPlane: { maxResources: max } })]);
    expect('effective' in r && r.effective.controlPlaneMaxResources).toEqual(max);
    const none = checkPolicies(vc({ policyName: 'open' }), [policy('open', {})]);
    expect('effective' in none && none.effective).not.toHaveProperty('controlPlaneMaxResources');
    const bad = policy('bad', { controlPlane: { maxResources: { apiServer: { memory: 'lots' } } } });
    const refused = checkPolicies(vc({ policyName: 'bad' }), [bad]);
    const message = 'violations' in refused ? refused.violations.map((v) => v.message).join('\n') : '';
    expect(message).toContain('/spec/controlPlane/maxResources/apiServer/memory must match pattern');
  });
});

describe('DEFAULT_POLICY', () => {
  type Node = { default?: unknown; properties?: Record<string, Node>; $ref?: string };
  const doc = loadSchema('tenantPolicy') as { properties: { spec: Node }; $defs: Record<string, Node> };
  const spec = doc.properties.spec.properties!;
  const deref = (n: Node | undefined): Node | undefined =>
    n?.$ref ? { ...deref(doc.$defs[n.$ref.replace('#/$defs/', '')]), ...n } : n;
  it.each<[string, unknown]>([
    ['controlPlane.tenantSettableArgs.apiServer', DEFAULT_POLICY.tenantSettableArgs.apiServer],
    ['controlPlane.tenantSettableArgs.controllerManager', DEFAULT_POLICY.tenantSettableArgs.controllerManager],
    ['podSecurity.allowedLevels', DEFAULT_POLICY.allowedLevels],
    ['podSecurity.defaultLevel', DEFAULT_POLICY.defaultLevel],
    ['weight.max', DEFAULT_POLICY.weightMax],
    ['weight.default', DEFAULT_POLICY.weightDefault],
    ['provisioners.allowed', DEFAULT_POLICY.provisioners],
    ['plugins.enforced', DEFAULT_POLICY.enforcedPlugins],
    ['plugins.allowedOptIn', DEFAULT_POLICY.allowedOptIn],
    ['pods.priorityClasses', DEFAULT_POLICY.podPriorityClasses],
    ['pods.tolerations', DEFAULT_POLICY.podTolerations],
    ['pods.schedulerNames', DEFAULT_POLICY.podSchedulerNames],
    ['pods.hostPorts', DEFAULT_POLICY.podHostPorts],
    ['pods.hostAccess', DEFAULT_POLICY.podHostAccess],
    ['pods.volumeTypes', DEFAULT_POLICY.podVolumeTypes],
    ['pods.preloadedImages', DEFAULT_POLICY.podPreloadedImages],
    ['pods.registries', DEFAULT_POLICY.podRegistries],
    ['pods.internalRegistries', DEFAULT_POLICY.podInternalRegistries],
    ['pods.nodeLabelKeys', DEFAULT_POLICY.podNodeLabelKeys],
    ['runtimeClasses.handlers', DEFAULT_POLICY.runtimeClassHandlers],
    ['pods.forced', DEFAULT_POLICY.podForced],
    ['pods.serviceAccountTokens', DEFAULT_POLICY.podServiceAccountTokens],
    ['pods.maxTerminationGracePeriodSeconds', DEFAULT_POLICY.podMaxTerminationGracePeriodSeconds],
    ['pods.createRate.perSecond', DEFAULT_POLICY.podCreateRate.perSecond],
    ['pods.createRate.burst', DEFAULT_POLICY.podCreateRate.burst],
    ['nodes.view', DEFAULT_POLICY.nodesView],
    ['nodes.totals', DEFAULT_POLICY.nodesTotals],
    ['copiedMetadata.labels', DEFAULT_POLICY.copiedMetadata.labels],
    ['copiedMetadata.annotations', DEFAULT_POLICY.copiedMetadata.annotations],
    ['copiedMetadata.namespaceLabels', DEFAULT_POLICY.copiedMetadata.namespaceLabels],
    ['copiedMetadata.namespaceAnnotations', DEFAULT_POLICY.copiedMetadata.namespaceAnnotations],
    ['network.internalCIDRs', DEFAULT_POLICY.networkInternalCIDRs],
    ['services.nodePort.allowed', DEFAULT_POLICY.serviceNodePort.allowed],
    ['services.nodePort.max', DEFAULT_POLICY.serviceNodePort.max],
    ['services.loadBalancer.allowed', DEFAULT_POLICY.serviceLoadBalancer.allowed],
    ['services.loadBalancer.max', DEFAULT_POLICY.serviceLoadBalancer.max],
    ['services.loadBalancer.classes', DEFAULT_POLICY.serviceLoadBalancer.classes],
    ['services.nodePort.maxPorts', DEFAULT_POLICY.serviceNodePort.maxPorts],
    ['services.loadBalancer.maxPorts', DEFAULT_POLICY.serviceLoadBalancer.maxPorts],
    ['ingresses.hosts', DEFAULT_POLICY.ingressHosts],
    ['ingresses.classes', DEFAULT_POLICY.ingressClasses],
    ['ingresses.annotations', DEFAULT_POLICY.ingressAnnotations],
    ['endpoints.allowedCIDRs', DEFAULT_POLICY.endpointsAllowedCIDRs],
    ['quota.resourceQuota.hard', DEFAULT_POLICY.quotaResourceQuota],
    ['quota.limitRange.limits', DEFAULT_POLICY.quotaLimitRange],
    ['quota.objects', DEFAULT_POLICY.quotaObjects],
    ['quota.etcdBytes', DEFAULT_POLICY.quotaEtcdBytes],
    ['quota.byteRate.perSecond', DEFAULT_POLICY.quotaByteRate.perSecond],
    ['quota.byteRate.burst', DEFAULT_POLICY.quotaByteRate.burst],
    ['quota.controlPlaneCPU.millicores', DEFAULT_POLICY.quotaControlPlaneCpu.millicores],
    ['quota.controlPlaneCPU.shares', DEFAULT_POLICY.quotaControlPlaneCpu.shares],
    ['sleep.etcd', DEFAULT_POLICY.sleepEtcd],
    ['sleep.workloads', DEFAULT_POLICY.sleepWorkloads],
    ['sleep.maxWakesPerHour', DEFAULT_POLICY.sleepMaxWakesPerHour],
    ['controlPlane.expose.allowedTypes', DEFAULT_POLICY.exposeAllowedTypes],
    ['controlPlane.expose.extraNames', DEFAULT_POLICY.exposeExtraNames],
    ['controlPlane.expose.fixedNodePort', DEFAULT_POLICY.exposeFixedNodePort],
    ['controlPlane.maxReplicas', DEFAULT_POLICY.controlPlaneMaxReplicas],
  ])('spec.%s is the default the TenantPolicy schema states', (path, value) => {
    const parts = path.split('.');
    let node: Node | undefined = { properties: spec };
    for (const part of parts) node = deref(deref(node)?.properties?.[part]);
    expect(node?.default).toEqual(value);
  });
});

describe('formatViolations', () => {
  it('names the object and the field on each line', () => {
    expect(
      formatViolations('VirtualCluster team-a/dev', [
        { field: 'spec.weight', message: 'too high' },
        { field: 'spec.podSecurityLevel', message: 'no' },
      ]),
    ).toBe('VirtualCluster team-a/dev: spec.weight: too high\nVirtualCluster team-a/dev: spec.podSecurityLevel: no');
  });
});

describe('checkPolicies', () => {
  it('resolves, checks the policy against its schema, and evaluates', () => {
    expect(checkPolicies(vc({ weight: 50 }), [gold])).toEqual({
      violations: [
        { field: 'spec.weight', message: 'weight 50 is above the ceiling 10 of the (built-in defaults) (weight.max)' },
      ],
    });
    expect(checkPolicies(vc({ weight: 50, policyName: 'gold' }), [gold])).toMatchObject({
      effective: { weight: 50, policyName: 'gold' },
    });
    const broken = { ...policy('broken', {}, true), spec: { weight: { max: 0 } } };
    const r = checkPolicies(vc(), [broken]);
    expect('violations' in r && r.violations[0]!.message).toMatch(
      /^TenantPolicy "broken" is invalid: TenantPolicy broken: \/spec\/weight\/max must be >= 1/,
    );
    // a node-totals mode the platform did not mean is refused by name, never read as one of the known ones
    const hidden = { ...policy('hidden', {}, true), spec: { nodes: { totals: 'hidden' } } } as unknown as TenantPolicy;
    const h = checkPolicies(vc(), [hidden]);
    expect('violations' in h && h.violations[0]!.message).toMatch(
      /^TenantPolicy "hidden" is invalid: TenantPolicy hidden: \/spec\/nodes\/totals must be one of "scaled", "withheld"$/,
    );
  });
});
