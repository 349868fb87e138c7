import { describe, expect, it } from 'vitest';
import {
  ANN,
  type KubeObject,
  LABEL,
  MANAGER,
  R,
  type Resource,
  superClusterName,
  type TenantView,
} from '@virtualcluster-ts/plugin-sdk';
import { runTransforms, testContext, testNaming, testTenant } from '@virtualcluster-ts/plugin-sdk/testing';
import { builtinPlugins } from '../registry.ts';
import { type GenericSyncConfig, genericPlugins } from './index.ts';

const widgets: Resource = {
  group: 'example.com',
  version: 'v1',
  resource: 'widgets',
  kind: 'Widget',
  namespaced: true,
};
const gadgets: Resource = {
  group: 'example.com',
  version: 'v1',
  resource: 'gadgets',
  kind: 'Gadget',
  namespaced: false,
};
const tenant = testTenant();
const root = tenant.key;

/** build returns the one plugin of an entry, failing the test when the entry is refused. */
function build(e: Partial<GenericSyncConfig>) {
  const { plugins, failures } = genericPlugins(
    [{ name: 'widgets', resource: widgets, direction: 'down', ...e } as GenericSyncConfig],
    builtinPlugins,
  );
  expect(failures).toEqual([]);
  return plugins[0]!;
}

const widget = (ns: string | undefined, name: string, body: Record<string, unknown> = {}, extra = {}): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, ...(ns && { namespace: ns }), uid: `uid-${name}`, ...extra },
  ...body,
});

describe('generic sync down', () => {
  const rows: Array<[string, Partial<GenericSyncConfig>, KubeObject, KubeObject | undefined, unknown]> = [
    [
      'copies spec (the default) into the super namespace, without status',
      {},
      widget('web', 'w', { spec: { size: 3 }, status: { ready: true } }, { labels: { app: 'w' } }),
      undefined,
      widget(`${root}-web`, 'w', { spec: { size: 3 } }, { labels: { app: 'w' }, uid: undefined }),
    ],
    [
      'copies, drops and translates the configured paths, with prefixed names',
      {
        names: { prefix: 't-' },
        fields: {
          copy: ['spec', 'data'],
          drop: ['spec.secretRef', 'spec.targets[].port'],
          translate: [
            { path: 'spec.targets[].namespace', to: 'namespace' },
            { path: 'spec.peer', to: 'name' },
          ],
        },
      },
      widget('web', 'w', {
        spec: { secretRef: 's', peer: 'other', targets: [{ namespace: 'db', port: 1 }] },
        data: { a: '1' },
        other: 'kept on the tenant only',
      }),
      undefined,
      widget(
        `${root}-web`,
        't-w',
        {
          spec: { peer: 't-other', targets: [{ namespace: `${root}-db` }] },
          data: { a: '1' },
        },
        { uid: undefined },
      ),
    ],
    [
      'builds on the super object: fields it defaulted stay, copied fields follow the tenant',
      {},
      widget('web', 'w', { spec: { size: 1 } }),
      widget(`${root}-web`, 'w', { spec: { size: 3, defaulted: true }, status: { ready: true } }),
      widget(`${root}-web`, 'w', { spec: { size: 1 }, status: { ready: true } }),
    ],
    [
      'a namespace outside the selection: the super copy must not exist',
      { namespaces: ['team-*'] },
      widget('web', 'w', { spec: {} }),
      undefined,
      null,
    ],
    [
      'a namespace inside the selection syncs',
      { namespaces: ['team-*'] },
      widget('team-x', 'w', { spec: {} }),
      undefined,
      widget(`${root}-team-x`, 'w', { spec: {} }, { uid: undefined }),
    ],
  ];
  it.each(rows)('%s', (_, cfg, tenantObj, superObj, want) => {
    const p = build(cfg);
    const d = runTransforms(p, { tenant, tenantObj, ...(superObj && { superObj }) }).down!;
    expect(d.object).toEqual(want);
  });

  it('says where every object lands: the super namespace of its own namespace, a prefixed name', () => {
    const p = build({ names: { prefix: 'a-', suffix: '-b' } });
    const ctx = testContext({ tenant });
    expect(p.superName!('web', 'w', ctx)).toEqual({ namespace: `${root}-web`, name: 'a-w-b' });
  });

  it('statusUp makes the plugin both-ways and copies only the status up', () => {
    const p = build({ statusUp: true });
    expect(p.manifest.direction).toBe('both');
    const t = widget('web', 'w', { spec: { size: 1 } });
    const s = widget(`${root}-web`, 'w', { spec: { size: 9 }, status: { phase: 'Ready' } });
    expect(runTransforms(p, { tenant, tenantObj: t, superObj: s }).up?.object).toEqual({
      ...t,
      status: { phase: 'Ready' },
    });
  });

  it('a cluster-scoped resource the platform allows lands under the tenant root, never a bare name', () => {
    const p = build({ resource: gadgets, allowClusterScoped: true });
    const d = runTransforms(p, { tenant, tenantObj: widget(undefined, 'g', { spec: {} }) }).down!;
    expect(d.object?.metadata?.name).toBe(superClusterName(root, 'g'));
    expect(d.object?.metadata?.namespace).toBeUndefined();
  });

  it('a super name over 253 characters is skipped with a reason', () => {
    const p = build({ names: { suffix: 'x'.repeat(40) } });
    const d = runTransforms(p, { tenant, tenantObj: widget('web', 'w'.repeat(220), { spec: {} }) }).down!;
    expect(d.skip?.reason).toBe('NameTooLong');
  });
});

describe('generic sync up', () => {
  const up = (e: Partial<GenericSyncConfig> = {}) =>
    build({ direction: 'up', fields: { copy: ['spec'], translate: [{ path: 'spec.ns', to: 'namespace' }] }, ...e });
  const other: TenantView = testTenant({ key: 'team-b-4d5e6f-qa' });

  it('routes a super object in a tenant super namespace to that tenant, name unmapped', () => {
    const p = up({ names: { prefix: 'p-' } });
    const rctx = {
      tenants: [tenant, other],
      superCache: testContext().superCache,
      tenantsBy: () => [],
      tenantOfNamespace: (sns: string) => {
        const ns = testNaming(tenant).tenantNamespace(sns);
        return ns === undefined ? undefined : { tenant: root, namespace: ns };
      },
    };
    expect(p.route!(widget(`${root}-web`, 'p-w'), rctx)).toEqual([{ tenant: root, namespace: 'web', name: 'w' }]);
    expect(p.route!(widget(`${root}-web`, 'q-w'), rctx)).toEqual([]);
    expect(p.route!(widget('kube-system', 'p-w'), rctx)).toEqual([]);
    // What a syncer wrote (provenance) never flows back up.
    const written = widget(
      `${root}-web`,
      'p-w',
      {},
      { annotations: { [ANN.cluster]: root }, labels: { [LABEL.managedBy]: MANAGER } },
    );
    expect(p.route!(written, rctx)).toEqual([]);
  });

  it.each([
    ['a translated namespace of the tenant maps back', `${root}-db`, 'db'],
    ["another tenant's namespace is left out", `${other.key}-db`, undefined],
    ['a platform namespace is left out', 'kube-system', undefined],
  ])('%s', (_, value, want) => {
    const s = widget(`${root}-web`, 'w', { spec: { ns: value, size: 2 }, status: { ok: true } });
    const d = runTransforms(up(), { tenant, superObj: s }).up!;
    expect(d.object).toMatchObject({ metadata: { namespace: 'web', name: 'w' }, spec: { size: 2 } });
    expect((d.object as { spec: { ns?: string } }).spec.ns).toBe(want);
    expect(d.object).not.toHaveProperty('status');
    expect(d.object?.metadata?.labels).toBeUndefined();
  });

  it('copies status too with statusUp, and deletes the tenant copy when the super object is gone', () => {
    const s = widget(`${root}-web`, 'w', { spec: {}, status: { ok: true } });
    expect(runTransforms(up({ statusUp: true }), { tenant, superObj: s }).up?.object).toHaveProperty('status', {
      ok: true,
    });
    expect(runTransforms(up(), { tenant, tenantObj: widget('web', 'w') }).up?.object).toBeNull();
  });

  it('a cluster-scoped resource goes up only when labelled public', () => {
    const p = build({ direction: 'up', resource: gadgets, allowClusterScoped: true });
    const plain = widget(undefined, 'g', { spec: { a: 1 } });
    const pub = widget(undefined, 'g', { spec: { a: 1 } }, { labels: { 'tenancy.x-k8s.io/super.public': 'true' } });
    expect(runTransforms(p, { tenant, superObj: plain }).up?.object).toBeNull();
    expect(runTransforms(p, { tenant, superObj: pub }).up?.object).toMatchObject({ metadata: { name: 'g' } });
  });
});

describe('generic entries the host refuses', () => {
  const base: GenericSyncConfig = { name: 'x', resource: widgets, direction: 'down' };
  const rows: Array<[string, Partial<GenericSyncConfig>, string]> = [
    ['a resource a built-in owns', { resource: R.configmaps }, 'already synced by plugin configmaps'],
    ['RBAC', { resource: R.roles }, 'grants authority'],
    ['admission', { resource: R.validatingadmissionpolicies, allowClusterScoped: true }, 'grants authority'],
    ['CRDs', { resource: R.crds, allowClusterScoped: true }, 'grants authority'],
    ['the syncer quota', { resource: R.resourcequotas }, 'never synced generically'],
    ['cluster-scoped without the platform allowing it', { resource: gadgets }, 'set allowClusterScoped'],
    ['a path under metadata', { fields: { copy: ['metadata.namespace'] } }, 'belongs to the syncer'],
    [
      'a translate that would move an object',
      { fields: { translate: [{ path: 'metadata.namespace', to: 'namespace' }] } },
      'belongs to the syncer',
    ],
    ['status going down', { fields: { copy: ['spec', 'status'] } }, 'status belongs to the super cluster'],
    [
      'a translate outside copied fields',
      { fields: { copy: ['spec'], translate: [{ path: 'data.ns', to: 'namespace' }] } },
      'not inside a copied field',
    ],
    ['[] in a copy path', { fields: { copy: ['spec.items[]'] } }, 'for drop and translate only'],
    [
      'names on a cluster-scoped resource going up',
      { direction: 'up', resource: gadgets, allowClusterScoped: true, names: { prefix: 'a' } },
      'keeps the super names',
    ],
  ];
  it.each(rows)('%s', (_, e, why) => {
    const { plugins, failures } = genericPlugins([{ ...base, ...e }], builtinPlugins);
    expect(plugins).toEqual([]);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.reason).toContain(why);
  });

  it('a second entry for the same resource is refused, the first loads', () => {
    const { plugins, failures } = genericPlugins([base, { ...base, name: 'y' }], builtinPlugins);
    expect(plugins.map((p) => p.manifest.name)).toEqual(['x']);
    expect(failures[0]!.reason).toContain('already synced by plugin x');
  });
});

describe('generic sync down refuses what only the syncer or the platform sets', () => {
  const deployments: Resource = {
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    namespaced: true,
  };
  const p = () =>
    build({
      resource: deployments,
      fields: { copy: ['spec'], translate: [{ path: 'spec.target.namespace', to: 'namespace' }] },
    });
  const template = (metadata: Record<string, unknown>, spec: Record<string, unknown> = {}) => ({
    spec: { template: { metadata, spec: { containers: [{ name: 'c', image: 'i' }], ...spec } } },
  });
  const rows: Array<[string, Record<string, unknown>, string]> = [
    [
      "a provenance annotation in a template (another tenant's key)",
      template({ annotations: { [ANN.cluster]: 'team-b-4d5e6f-qa' } }),
      `spec.template.metadata.annotations["${ANN.cluster}"]: keys under tenancy.x-k8s.io are set by the syncer alone`,
    ],
    [
      'the managed-by label in a template',
      template({ labels: { [LABEL.managedBy]: MANAGER, app: 'w' } }),
      `spec.template.metadata.labels["${LABEL.managedBy}"]`,
    ],
    [
      'owner references in a template',
      template({ ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 's', uid: 'u' }] }),
      'spec.template.metadata.ownerReferences: ownerReferences of the super objects are set by the super cluster',
    ],
    [
      'finalizers in a template',
      template({ finalizers: ['example.com/hold'] }),
      'spec.template.metadata.finalizers: finalizers of the super objects',
    ],
    [
      'a platform namespace in an untranslated reference',
      { spec: { secretRef: { name: 's', namespace: 'kube-system' } } },
      'spec.secretRef.namespace: "kube-system" is not a namespace of this tenant',
    ],
    [
      "another tenant's super namespace in a field ending in Namespace",
      { spec: { targetNamespace: 'team-b-4d5e6f-qa-db' } },
      'spec.targetNamespace: "team-b-4d5e6f-qa-db" is not a namespace of this tenant',
    ],
    [
      'affinity across namespaces in a template',
      template(
        {},
        {
          affinity: {
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { topologyKey: 'k', namespaces: ['kube-system'], labelSelector: {} },
              ],
            },
          },
        },
      ),
      'requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]: "kube-system" is not a namespace of this tenant',
    ],
    [
      'a namespace selector, even an empty one',
      template(
        {},
        {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'k', namespaceSelector: {} }],
            },
          },
        },
      ),
      'namespaceSelector: a namespace selector reaches every namespace of the super cluster',
    ],
  ];
  it.each(rows)('%s', (_, body, why) => {
    const d = runTransforms(p(), {
      tenant,
      tenantObj: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'w', namespace: 'web' }, ...body },
    }).down!;
    expect(d.object).toBeNull();
    expect(d.skip?.reason).toBe('GenericFieldRefused');
    expect(d.skip?.message).toContain('Deployment web/w is not copied to the super cluster by plugin widgets');
    expect(d.skip?.message).toContain(why);
    expect(d.effects).toEqual([
      expect.objectContaining({ type: 'event', side: 'tenant', reason: 'GenericFieldRefused', eventType: 'Warning' }),
    ]);
  });

  it('a translated namespace, the object keys a tenant may set and labels without the reserved domain pass', () => {
    const d = runTransforms(p(), {
      tenant,
      tenantObj: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'w', namespace: 'web' },
        spec: {
          target: { namespace: 'db' },
          template: { metadata: { labels: { app: 'w' }, annotations: { 'example.com/a': 'b' } }, spec: {} },
        },
      },
    }).down!;
    expect(d.skip).toBeUndefined();
    expect(d.object).toMatchObject({
      metadata: { namespace: `${root}-web`, name: 'w' },
      spec: { target: { namespace: `${root}-db` }, template: { metadata: { labels: { app: 'w' } } } },
    });
  });
});
