import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { type MutatorPlugin, PLUGIN_API_VERSION, type ResourcePlugin, type TenantView } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import configmaps from '../../plugins/configmaps/index.ts';
import namespaces from '../../plugins/namespaces/index.ts';
import pods from '../../plugins/pods/index.ts';
import storageclasses from '../../plugins/storageclasses/index.ts';
import { planKey, type Plan, type PlanHost } from './plan.ts';
import { UP_OWNER_LABEL } from './placement.ts';

/**
 * Planner tables: initial tenant state + initial super state -> expected steps, effects, skip and requeue, for every
 * direction (only tenant, both, only super, up), as vcluster's SyncTest and the original syncer's RunDownwardSync do.
 */

const tenant = testTenant();
const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' });
const names = testContext({ tenant }).names;
const SNS = names.superNamespace('default');

/** noMutators is a PlanHost with no mutators where every plugin is enabled. */
const noMutators: PlanHost = { mutatorsOf: () => [], enabledFor: () => true };

const provenance = (t: TenantView, ns: string, name: string, uid: string) => ({
  labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: t.key },
  annotations: {
    [ANN.cluster]: t.key,
    [ANN.namespace]: ns,
    [ANN.name]: name,
    [ANN.uid]: uid,
    [ANN.vcName]: t.vcName,
    [ANN.vcNamespace]: t.vcNamespace,
    [ANN.vcUid]: t.vcUid,
  },
});

const superNamespaceObj = (owner: TenantView | undefined, name = SNS): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, uid: 'ns-uid', ...(owner ? provenance(owner, '', 'default', 'tenant-ns-uid') : {}) },
});

const tenantCM = (data: Record<string, string>, uid = 'cm-uid'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: 'default', name: 'app', uid, resourceVersion: '10' },
  data,
});

const superCM = (
  data: Record<string, string>,
  meta: Record<string, unknown> = provenance(tenant, 'default', 'app', 'cm-uid'),
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: SNS, name: 'app', uid: 'super-cm-uid', resourceVersion: '20', ...meta },
  data,
});

const tenantPod = (spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: 'default', name: 'web', uid: 'pod-uid', resourceVersion: '5' },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
  status,
});

const superPod = (spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    namespace: SNS,
    name: 'web',
    uid: 'super-pod-uid',
    resourceVersion: '7',
    ...provenance(tenant, 'default', 'web', 'pod-uid'),
  },
  spec: { containers: [{ name: 'c', image: 'nginx' }], automountServiceAccountToken: false, ...spec },
  status,
});

const publicSC = (provisioner: string): KubeObject => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: 'fast', uid: 'super-sc-uid', resourceVersion: '3', labels: { [LABEL.public]: 'true' } },
  provisioner,
});

const tenantSC = (provisioner: string, managed = true): KubeObject => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: {
    name: 'fast',
    uid: 'tenant-sc-uid',
    resourceVersion: '4',
    ...(managed ? { labels: { [LABEL.managedBy]: MANAGER, [LABEL.public]: 'true' } } : {}),
  },
  provisioner,
});

/** summary keeps what a table asserts: each step as `op namespace/name` (or the created object's), effects by type. */
function summary(p: Plan): {
  steps: string[];
  effects: string[];
  afterEffects?: string[];
  skip?: string;
  requeueAfterMs?: number;
} {
  const line = (s: Plan['steps'][number]) => {
    const m = 'obj' in s ? s.obj.metadata : s;
    const extra = 'uid' in s ? ` uid=${s.uid}` : '';
    return `${s.op} ${m?.namespace ?? ''}/${m?.name ?? ''}${extra}`;
  };
  return {
    steps: p.steps.map(line),
    effects: p.effects.map((e) => e.type),
    ...(p.afterEffects?.length && { afterEffects: p.afterEffects.map(line) }),
    ...(p.skip && { skip: p.skip.reason }),
    ...(p.requeueAfterMs !== undefined && { requeueAfterMs: p.requeueAfterMs }),
  };
}

interface Row {
  name: string;
  plugin: ResourcePlugin;
  key: { namespace: string; name: string };
  tenantState: Array<[typeof R.configmaps, KubeObject[]]>;
  superState: Array<[typeof R.configmaps, KubeObject[]]>;
  want: ReturnType<typeof summary>;
}

const cmKey = { namespace: 'default', name: 'app' };
const podKey = { namespace: 'default', name: 'web' };
const scKey = { namespace: '', name: 'fast' };

const rows: Row[] = [
  // ---- only tenant: create ----
  {
    name: 'only tenant: creates the super object',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.namespaces, [superNamespaceObj(tenant)]]],
    want: { steps: [`createSuper ${SNS}/app`], effects: [] },
  },
  {
    name: 'only tenant: a skip with its event and no write',
    plugin: configmaps,
    key: { namespace: 'default', name: 'tenant-kube-root-ca.crt' },
    tenantState: [
      [
        R.configmaps,
        [{ ...tenantCM({}), metadata: { namespace: 'default', name: 'tenant-kube-root-ca.crt', uid: 'x' } }],
      ],
    ],
    superState: [],
    want: { steps: [], effects: ['event'], skip: 'ReservedName' },
  },
  // ---- only tenant: the super namespace must be this tenant's ----
  {
    name: 'only tenant, super namespace not in the cache yet: waits, creates nothing',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [],
    want: { steps: [], effects: [], skip: 'WaitingForNamespace', requeueAfterMs: 1000 },
  },
  {
    name: 'only tenant, super namespace owned by another tenant: refused with an event',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.namespaces, [superNamespaceObj(other)]]],
    want: { steps: [], effects: ['event'], skip: 'NamespaceNotOwned' },
  },
  {
    name: 'only tenant, super namespace hand-made (no provenance): refused with an event',
    plugin: pods,
    key: podKey,
    tenantState: [[R.pods, [tenantPod()]]],
    superState: [[R.namespaces, [superNamespaceObj(undefined)]]],
    want: { steps: [], effects: ['event'], skip: 'NamespaceNotOwned' },
  },
  {
    name: 'only tenant, super namespace this tenant wrote for another of its namespaces: refused',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [
      [
        R.namespaces,
        [
          {
            ...superNamespaceObj(tenant),
            metadata: { ...superNamespaceObj(tenant).metadata, ...provenance(tenant, '', 'kube-system', 'x') },
          },
        ],
      ],
    ],
    want: { steps: [], effects: ['event'], skip: 'NamespaceNotOwned' },
  },
  {
    name: 'only tenant, super namespace with this key but another VirtualCluster uid: refused',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.namespaces, [superNamespaceObj(testTenant({ vcUid: 'someone-else' }))]]],
    want: { steps: [], effects: ['event'], skip: 'NamespaceNotOwned' },
  },
  {
    name: 'only tenant, cluster-scoped (the namespace itself): no namespace to check; its isolation policy is asked for',
    plugin: namespaces,
    key: { namespace: '', name: 'default' },
    tenantState: [
      [R.namespaces, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default', uid: 'tenant-ns-uid' } }]],
    ],
    superState: [],
    want: { steps: [`createSuper /${SNS}`], effects: ['superNetworkPolicy'] },
  },
  // ---- both: patch, ownership ----
  {
    name: 'both, in sync: nothing',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.configmaps, [superCM({ a: '1' })]]],
    want: { steps: [], effects: [] },
  },
  {
    name: 'both, drifted: patches the super object',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '2' })]]],
    superState: [[R.configmaps, [superCM({ a: '1' })]]],
    want: { steps: [`patchSuper ${SNS}/app`], effects: [] },
  },
  {
    name: 'both, super object written for another tenant: NameCollision',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.configmaps, [superCM({ a: '1' }, provenance(other, 'default', 'app', 'cm-uid'))]]],
    want: { steps: [], effects: [], skip: 'NameCollision' },
  },
  {
    name: 'both, super object written for another object of this tenant: NameCollision',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.configmaps, [superCM({ a: '1' }, provenance(tenant, 'default', 'other', 'other-uid'))]]],
    want: { steps: [], effects: [], skip: 'NameCollision' },
  },
  {
    name: 'both, super object not managed, namespace not this tenant: NotManaged',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [[R.configmaps, [superCM({ a: '1' }, {})]]],
    want: { steps: [], effects: [], skip: 'NotManaged' },
  },
  {
    name: 'both, super object not managed inside a super namespace of this tenant: adopted (patched)',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' })]]],
    superState: [
      [R.configmaps, [superCM({ a: '1' }, {})]],
      [R.namespaces, [superNamespaceObj(tenant)]],
    ],
    want: { steps: [`patchSuper ${SNS}/app`], effects: [] },
  },
  {
    name: 'both, tenant object deleted and recreated under the same name: the old super object goes first',
    plugin: configmaps,
    key: cmKey,
    tenantState: [[R.configmaps, [tenantCM({ a: '1' }, 'new-uid')]]],
    superState: [[R.configmaps, [superCM({ a: '1' })]]],
    want: { steps: [`deleteSuper ${SNS}/app uid=super-cm-uid`], effects: [], requeueAfterMs: 200 },
  },
  {
    name: 'both (pods): status flows up once the tenant Pod is bound',
    plugin: pods,
    key: podKey,
    tenantState: [[R.pods, [tenantPod({ nodeName: 'node-1' }, { phase: 'Pending' })]]],
    superState: [[R.pods, [superPod({ nodeName: 'node-1' }, { phase: 'Running', podIP: '10.0.0.5' })]]],
    want: { steps: ['patchTenantStatus default/web'], effects: [] },
  },
  {
    name: 'both (pods): a scheduled super Pod asks for a bind, and the status follows it in the same pass',
    plugin: pods,
    key: podKey,
    tenantState: [[R.pods, [tenantPod({}, { phase: 'Pending' })]]],
    superState: [[R.pods, [superPod({ nodeName: 'node-1' }, { phase: 'Running' })]]],
    want: { steps: [], effects: ['bind'], afterEffects: ['patchTenantStatus default/web'] },
  },
  {
    name: 'both (pods): a bind whose tenant status is already right writes no status',
    plugin: pods,
    key: podKey,
    tenantState: [[R.pods, [tenantPod({}, { phase: 'Running' })]]],
    superState: [[R.pods, [superPod({ nodeName: 'node-1' }, { phase: 'Running' })]]],
    want: { steps: [], effects: ['bind'] },
  },
  // ---- only super: delete ----
  {
    name: 'only super: deletes the super object this tenant wrote, with its uid',
    plugin: configmaps,
    key: cmKey,
    tenantState: [],
    superState: [[R.configmaps, [superCM({ a: '1' })]]],
    want: { steps: [`deleteSuper ${SNS}/app uid=super-cm-uid`], effects: [] },
  },
  {
    name: "only super: leaves another tenant's object alone",
    plugin: configmaps,
    key: cmKey,
    tenantState: [],
    superState: [[R.configmaps, [superCM({ a: '1' }, provenance(other, 'default', 'app', 'cm-uid'))]]],
    want: { steps: [], effects: [] },
  },
  {
    name: 'only super: leaves an object already being deleted alone',
    plugin: configmaps,
    key: cmKey,
    tenantState: [],
    superState: [
      [
        R.configmaps,
        [{ ...superCM({}), metadata: { ...superCM({}).metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }],
      ],
    ],
    want: { steps: [], effects: [] },
  },
  {
    name: 'neither side: nothing',
    plugin: configmaps,
    key: cmKey,
    tenantState: [],
    superState: [],
    want: { steps: [], effects: [] },
  },
  // ---- up: the super object is the truth ----
  {
    name: 'up: creates the tenant mirror',
    plugin: storageclasses,
    key: scKey,
    tenantState: [],
    superState: [[R.storageclasses, [publicSC('csi.a')]]],
    want: { steps: ['createTenant /fast'], effects: [] },
  },
  {
    name: 'up: patches a drifted tenant mirror',
    plugin: storageclasses,
    key: scKey,
    tenantState: [[R.storageclasses, [tenantSC('csi.old')]]],
    superState: [[R.storageclasses, [publicSC('csi.a')]]],
    want: { steps: ['patchTenant /fast'], effects: [] },
  },
  {
    name: 'up: deletes the tenant mirror when the super object is gone, with its uid',
    plugin: storageclasses,
    key: scKey,
    tenantState: [[R.storageclasses, [tenantSC('csi.a')]]],
    superState: [],
    want: { steps: ['deleteTenant /fast uid=tenant-sc-uid'], effects: [] },
  },
  {
    name: 'up: never deletes a tenant object the syncer did not write',
    plugin: storageclasses,
    key: scKey,
    tenantState: [[R.storageclasses, [tenantSC('csi.a', false)]]],
    superState: [],
    want: { steps: [], effects: [] },
  },
];

describe('planKey', () => {
  it.each(rows)('$name', (row) => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache(row.tenantState),
      superCache: new MapCache(row.superState),
    });
    expect(summary(planKey(noMutators, row.plugin, ctx, row.key))).toEqual(row.want);
  });

  it('with an up owner, records the super cluster on what flows up, also on a mirror that lacks or differs in it', () => {
    const ctx = (tenantSCs: KubeObject[]) =>
      testContext({
        tenant,
        tenantCache: new MapCache([[R.storageclasses, tenantSCs]]),
        superCache: new MapCache([[R.storageclasses, [publicSC('csi.a')]]]),
      });
    const [create] = planKey(noMutators, storageclasses, ctx([]), scKey, undefined, 'r2').steps;
    expect(create?.op === 'createTenant' && create.obj.metadata?.labels?.[UP_OWNER_LABEL]).toBe('r2');
    const owned = tenantSC('csi.a');
    owned.metadata!.labels = { ...owned.metadata!.labels, [UP_OWNER_LABEL]: 'r1' };
    expect(summary(planKey(noMutators, storageclasses, ctx([owned]), scKey, undefined, 'r2'))).toEqual({
      steps: ['patchTenant /fast'],
      effects: [],
    });
    // Without an owner (one super cluster, or no placement filter) nothing is recorded.
    const [plain] = planKey(noMutators, storageclasses, ctx([]), scKey).steps;
    expect(plain?.op === 'createTenant' && plain.obj.metadata?.labels?.[UP_OWNER_LABEL]).toBeUndefined();
  });

  // The copy of the tenant's DNS namespace on a super cluster the tenant has left (placement.ts): planned as if the
  // tenant object were gone, down only, and only what carries the tenant's provenance is deleted.
  it.each([
    {
      name: "the tenant's own copy is deleted though the tenant object exists",
      superObj: superCM({ a: '1' }),
      placed: { follow: true, remove: true } as const,
      want: [`deleteSuper ${SNS}/app`],
    },
    {
      name: "another tenant's object of that name is left",
      superObj: superCM({ a: '1' }, provenance(other, 'default', 'app', 'cm-uid')),
      placed: { follow: true, remove: true } as const,
      want: [],
    },
    {
      name: 'nothing there: nothing to do',
      superObj: undefined,
      placed: { follow: true, remove: true } as const,
      want: [],
    },
    {
      name: 'followed (not left): patched from the tenant object',
      superObj: superCM({ a: '1' }),
      placed: { follow: true } as const,
      want: [`patchSuper ${SNS}/app`],
    },
  ])('$name', ({ superObj, placed, want }) => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.configmaps, [tenantCM({ a: '2' })]]]),
      superCache: new MapCache([[R.configmaps, superObj ? [superObj] : []]]),
    });
    const out = planKey(noMutators, configmaps, ctx, cmKey, undefined, 'r2', placed);
    expect(out.steps.map((st) => `${st.op} ${'obj' in st ? '' : `${st.namespace}/${st.name}`}`)).toEqual(want);
    expect(out.effects.filter((e) => e.type === 'event' && e.side === 'tenant')).toEqual([]);
  });

  it('creates the super object with ownership stamped and server fields stripped', () => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.configmaps, [tenantCM({ a: '1' })]]]),
      superCache: new MapCache([[R.namespaces, [superNamespaceObj(tenant)]]]),
    });
    const [step] = planKey(noMutators, configmaps, ctx, cmKey).steps;
    expect(step?.op).toBe('createSuper');
    const obj = step?.op === 'createSuper' ? step.obj : undefined;
    expect(obj?.metadata?.annotations).toMatchObject({ [ANN.cluster]: tenant.key, [ANN.uid]: 'cm-uid' });
    expect(obj?.metadata?.resourceVersion).toBeUndefined();
    expect(obj?.metadata?.uid).toBeUndefined();
  });

  it('names the refused namespace in the tenant event', () => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.pods, [tenantPod()]]]),
      superCache: new MapCache([[R.namespaces, [superNamespaceObj(other)]]]),
    });
    const p = planKey(noMutators, pods, ctx, podKey);
    expect(p.steps).toEqual([]);
    expect(p.effects).toEqual([
      expect.objectContaining({
        type: 'event',
        side: 'tenant',
        eventType: 'Warning',
        reason: 'NamespaceNotOwned',
        regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'web', uid: 'pod-uid' },
        message: `super namespace ${SNS} of tenant namespace default is owned by another tenant: nothing is created in it`,
      }),
    ]);
  });

  it("lifts no tenant key the super acts on, whatever transparentMetaPrefixes a VirtualCluster's author sets", () => {
    // transparentMetaPrefixes is the author's to set: it names super keys to carry up, never tenant keys to carry down.
    const author = testTenant({
      transparentMetaPrefixes: ['tenancy.x-k8s.io/', 'node-role.kubernetes.io/', 'pod-security.kubernetes.io/', 'a'],
    });
    const forged = tenantCM({ a: '2' });
    forged.metadata!.labels = {
      [LABEL.cluster]: other.key,
      'node-role.kubernetes.io/control-plane': '',
      'pod-security.kubernetes.io/enforce': 'privileged',
      'topology.kubernetes.io/zone': 'z9',
    };
    forged.metadata!.annotations = { [ANN.cluster]: other.key, [ANN.uid]: 'forged-uid' };
    for (const supers of [
      [superNamespaceObj(author)],
      [superNamespaceObj(author), superCM({ a: '1' }, provenance(author, 'default', 'app', 'cm-uid'))],
    ]) {
      const ctx = testContext({
        tenant: author,
        tenantCache: new MapCache([[R.configmaps, [forged]]]),
        superCache: new MapCache([
          [R.namespaces, supers.slice(0, 1)],
          [R.configmaps, supers.slice(1)],
        ]),
      });
      const [step] = planKey(noMutators, configmaps, ctx, cmKey).steps;
      const written = JSON.stringify(step);
      expect(step?.op).toBe(supers.length === 1 ? 'createSuper' : 'patchSuper');
      for (const bad of [other.key, 'forged-uid', 'node-role', 'pod-security', 'topology.kubernetes.io'])
        expect(written).not.toContain(bad);
    }
  });

  it('guards every patch with the resourceVersion of the object it read', () => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.configmaps, [tenantCM({ a: '2' })]]]),
      superCache: new MapCache([[R.configmaps, [superCM({ a: '1' })]]]),
    });
    const [step] = planKey(noMutators, configmaps, ctx, cmKey).steps;
    expect(step?.op === 'patchSuper' && step.ops[0]).toEqual({
      op: 'test',
      path: '/metadata/resourceVersion',
      value: '20',
    });
  });
});

describe('mutator chain', () => {
  const downPlugin: ResourcePlugin = {
    manifest: {
      apiVersion: PLUGIN_API_VERSION,
      name: 'things',
      version: '0.1.0',
      resource: { ...R.configmaps },
      direction: 'down',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
    },
    toSuper: (t, _s, ctx) => ({
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: ctx.names.superNamespace('default'), name: t.metadata?.name },
      },
    }),
  };
  const labeller = (name: string, out: 'label' | 'skip' | 'null' = 'label'): MutatorPlugin => ({
    manifest: {
      apiVersion: PLUGIN_API_VERSION,
      name,
      version: '0.1.0',
      direction: 'mutator',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
      mutates: 'things',
    },
    mutate: (d) => {
      if (out === 'skip') return { object: d, skip: { reason: `SkippedBy-${name}`, message: name } };
      if (out === 'null') return { object: null };
      return {
        object: { ...d, metadata: { ...d.metadata, labels: { ...d.metadata?.labels, [`by-${name}`]: 'yes' } } },
      };
    },
  });
  const run = async (mutators: MutatorPlugin[], t: TenantView) => {
    const host = await PluginHost.load({ process: 'manager', builtins: [downPlugin, ...mutators] });
    const ctx = testContext({
      tenant: t,
      tenantCache: new MapCache([[R.configmaps, [tenantCM({})]]]),
      superCache: new MapCache([[R.namespaces, [superNamespaceObj(t)]]]),
    });
    return planKey(host, downPlugin, ctx, cmKey);
  };
  const labelsOf = (p: Plan) =>
    p.steps[0]?.op === 'createSuper'
      ? Object.keys(p.steps[0].obj.metadata?.labels ?? {}).filter((k) => k.startsWith('by-'))
      : [];

  it('runs every enabled mutator in load order', async () => {
    expect(labelsOf(await run([labeller('first'), labeller('second')], tenant))).toEqual(['by-first', 'by-second']);
  });

  it('passes over a disabled mutator and still runs the ones after it', async () => {
    const t = testTenant({ plugins: { disable: ['first'] } });
    expect(labelsOf(await run([labeller('first'), labeller('second')], t))).toEqual(['by-second']);
  });

  it('passes over an opt-in mutator the tenant has not enabled', async () => {
    const optIn = { ...labeller('first'), manifest: { ...labeller('first').manifest, optIn: true } };
    expect(labelsOf(await run([optIn, labeller('second')], tenant))).toEqual(['by-second']);
  });

  it('stops the chain at a skip', async () => {
    const p = await run([labeller('first', 'skip'), labeller('second')], tenant);
    expect(summary(p)).toEqual({ steps: [], effects: [], skip: 'SkippedBy-first' });
  });

  it('stops the chain at a null object', async () => {
    expect(summary(await run([labeller('first', 'null'), labeller('second')], tenant))).toEqual({
      steps: [],
      effects: [],
    });
  });
});

describe('statusAfterBind', () => {
  it('sets the whole status under a uid precondition, since the Binding moved the resourceVersion', () => {
    const plan = planKey(
      noMutators,
      pods,
      testContext({
        tenant,
        tenantCache: new MapCache([[R.pods, [tenantPod({}, { phase: 'Pending' })]]]),
        superCache: new MapCache([
          [R.pods, [superPod({ nodeName: 'node-1' }, { phase: 'Running', podIP: '10.0.0.5' })]],
        ]),
      }),
      podKey,
    );
    expect(plan.afterEffects?.[0]).toEqual({
      op: 'patchTenantStatus',
      namespace: 'default',
      name: 'web',
      ops: [
        { op: 'test', path: '/metadata/uid', value: 'pod-uid' },
        { op: 'add', path: '/status', value: { phase: 'Running', podIP: '10.0.0.5' } },
      ],
    });
  });

  // The Binding sets PodScheduled=True itself: a super Pod scheduled but not started has nothing more to say, and its
  // status waits for the kubelet's next change instead of costing a second status write per Pod.
  const scheduled = (extra: Record<string, unknown> = {}) => ({
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    ...extra,
  });
  it.each([
    { name: 'scheduled, not started: the bind says it all', superStatus: scheduled(), write: false },
    { name: 'scheduled with a host IP: written', superStatus: scheduled({ hostIP: '10.0.0.1' }), write: true },
    { name: 'Running: written', superStatus: scheduled({ phase: 'Running' }), write: true },
  ])('$name', ({ superStatus, write }) => {
    const plan = planKey(
      noMutators,
      pods,
      testContext({
        tenant,
        tenantCache: new MapCache([[R.pods, [tenantPod({}, { phase: 'Pending' })]]]),
        superCache: new MapCache([[R.pods, [superPod({ nodeName: 'node-1' }, superStatus)]]]),
      }),
      podKey,
    );
    expect(plan.effects.map((e) => e.type)).toEqual(['bind']);
    expect(!!plan.afterEffects?.length).toBe(write);
  });
});

describe('status up after the bind', () => {
  const bound = (status: Record<string, unknown>) => tenantPod({ nodeName: 'node-1' }, status);
  const podScheduled = (at: string) => ({ type: 'PodScheduled', status: 'True', lastTransitionTime: at });
  it.each([
    {
      name: 'only the times of the conditions differ: no write',
      tenant: { phase: 'Pending', conditions: [podScheduled('2026-01-01T00:00:05Z')] },
      super: { phase: 'Pending', conditions: [podScheduled('2026-01-01T00:00:00Z')] },
      write: false,
    },
    {
      name: 'a condition changes status: the whole status, with the super times',
      tenant: { phase: 'Pending', conditions: [podScheduled('2026-01-01T00:00:05Z')] },
      super: {
        phase: 'Pending',
        conditions: [podScheduled('2026-01-01T00:00:00Z'), { type: 'Ready', status: 'False', reason: 'X' }],
      },
      write: true,
    },
    {
      name: 'the phase changes: written',
      tenant: { phase: 'Pending', conditions: [podScheduled('2026-01-01T00:00:05Z')] },
      super: { phase: 'Running', conditions: [podScheduled('2026-01-01T00:00:00Z')] },
      write: true,
    },
  ])('$name', (c) => {
    const plan = planKey(
      noMutators,
      pods,
      testContext({
        tenant,
        tenantCache: new MapCache([[R.pods, [bound(c.tenant)]]]),
        superCache: new MapCache([[R.pods, [superPod({ nodeName: 'node-1' }, c.super)]]]),
      }),
      podKey,
    );
    expect(plan.steps.filter((x) => x.op === 'patchTenantStatus').length).toBe(c.write ? 1 : 0);
  });
});

describe('planner: a plugin note (Decision.remember) on the plan', () => {
  const noter: ResourcePlugin = {
    manifest: {
      apiVersion: PLUGIN_API_VERSION,
      name: 'noter',
      version: '0.1.0',
      resource: { ...R.storageclasses },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
    },
    toTenant: (s, t, ctx) => ({ object: t ?? null, remember: `${s?.metadata?.name} after ${ctx.remembered ?? '-'}` }),
  };
  const planOf = (remembered?: string) => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.storageclasses, [tenantSC('csi.a')]]]),
      superCache: new MapCache([[R.storageclasses, [publicSC('csi.a')]]]),
    });
    if (remembered !== undefined) ctx.remembered = remembered;
    return planKey(noMutators, noter, ctx, { namespace: '', name: 'fast' });
  };

  it("carries an up plugin's note, and hands the plugin the one it is given", () => {
    expect(planOf().remember).toBe('fast after -');
    expect(planOf('fast after -').remember).toBe('fast after fast after -');
    expect(planOf().steps).toEqual([]);
  });

  it("carries a down plugin's note on a create, and none once the super object exists", () => {
    const asker: ResourcePlugin = {
      manifest: { ...noter.manifest, name: 'asker', direction: 'down', sourceOfTruth: 'tenant' },
      toSuper: (t, sup) => ({ object: { ...t, metadata: { name: t.metadata!.name } }, remember: sup ? 'x' : 'asked' }),
    };
    const planWith = (superObjs: KubeObject[]) =>
      planKey(
        noMutators,
        asker,
        testContext({
          tenant,
          tenantCache: new MapCache([[R.storageclasses, [tenantSC('csi.a')]]]),
          superCache: new MapCache([[R.storageclasses, superObjs]]),
        }),
        { namespace: '', name: 'fast' },
      );
    const create = planWith([]);
    expect(create.steps.map((x) => x.op)).toEqual(['createSuper']);
    expect(create.remember).toBe('asked');
    expect(planWith([publicSC('csi.a')])).not.toHaveProperty('remember');
  });

  it('has no note when the plugin gives none', () => {
    const plan = planKey(
      noMutators,
      storageclasses,
      testContext({
        tenant,
        tenantCache: new MapCache([[R.storageclasses, [tenantSC('csi.a')]]]),
        superCache: new MapCache([[R.storageclasses, [publicSC('csi.a')]]]),
      }),
      { namespace: '', name: 'fast' },
    );
    expect(plan).not.toHaveProperty('remember');
  });
});
