import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, provenanceOf, superNamespace } from '../../core/names/names.ts';
import type { PluginHost } from '../../core/plugins/host.ts';
import { pluginHostFromConfig } from '../../core/programs/plugins.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from '../security/attempts.ts';

/**
 * The generic sync of a CRD, end to end on real processes: the Widget CRD is installed in the tenant and the super
 * cluster, the manager's `plugins.generic` names it, and a tenant Widget appears translated in the super namespace,
 * its status flows up, and deleting it removes the super copy. A Gizmo CRD synced up reaches the tenant only from the
 * tenant's own super namespaces, with values naming anything not the tenant's left out. A Widget whose copied fields
 * carry what only the syncer or the platform sets (provenance keys or owner references in a template, a namespace that
 * is not the tenant's) is refused by name (hostile-tenant attempts).
 */

const widgets: Resource = {
  group: 'example.com',
  version: 'v1',
  resource: 'widgets',
  kind: 'Widget',
  namespaced: true,
};

/** widgetCRD is the CRD of a namespaced example.com/v1 Widget with a status subresource. */
const widgetCRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  size: { type: 'integer' },
                  secretRef: { type: 'string' },
                  peer: { type: 'string' },
                  targetNamespace: { type: 'string' },
                  template: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                  targets: {
                    type: 'array',
                    items: { type: 'object', properties: { namespace: { type: 'string' }, port: { type: 'integer' } } },
                  },
                },
              },
              status: { type: 'object', properties: { phase: { type: 'string' }, replicas: { type: 'integer' } } },
            },
          },
        },
      },
    ],
  },
};

const gizmos: Resource = { ...widgets, resource: 'gizmos', kind: 'Gizmo' };

/** gizmoCRD is the CRD of a namespaced example.com/v1 Gizmo, which a super-side controller owns (synced up). */
const gizmoCRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gizmos.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { ns: { type: 'string' }, size: { type: 'integer' } } },
              status: { type: 'object', properties: { phase: { type: 'string' } } },
            },
          },
        },
      },
    ],
  },
};

interface Widget extends KubeObject {
  spec?: { size?: number; secretRef?: string; peer?: string; targets?: Array<{ namespace?: string; port?: number }> };
  status?: { phase?: string; replicas?: number };
}

describe('generic sync of a CRD on a real super cluster and tenant', () => {
  let t: TestSuper;
  let a: KubeClient;
  let tenant: Tenant;
  let host: PluginHost;
  let syncer: Syncer;
  const attempts = new Attempts();

  const establish = async (c: KubeClient) => {
    for (const crd of [widgetCRD, gizmoCRD]) {
      await c.create(R.crds, crd);
      await eventually(async () => {
        const got = await c.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(
          R.crds,
          undefined,
          crd.metadata!.name!,
        );
        expect(got.status?.conditions?.find((x) => x.type === 'Established')?.status).toBe('True');
      });
    }
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    const cp = await t.sc.addControlPlane('tenant-a', { controllers: 'namespace,garbagecollector' });
    a = await cp.client();
    tenant = tenantFor(cp, 'team-a', 'a', '33333333-cccc-4ccc-8ccc-000000000003');
    await Promise.all([establish(a), establish(t.client)]);
    host = await pluginHostFromConfig(
      'manager',
      {
        generic: [
          {
            name: 'widgets',
            resource: widgets,
            direction: 'down',
            statusUp: true,
            names: { prefix: 'w-' },
            fields: {
              copy: ['spec'],
              drop: ['spec.secretRef', 'spec.targets[].port'],
              translate: [
                { path: 'spec.targets[].namespace', to: 'namespace' },
                { path: 'spec.peer', to: 'name' },
              ],
            },
          },
          {
            name: 'gizmos',
            resource: gizmos,
            direction: 'up',
            statusUp: true,
            fields: { copy: ['spec'], translate: [{ path: 'spec.ns', to: 'namespace' }] },
          },
          // Refused: a cluster-scoped kind the platform did not allow; the syncer goes on with the rest.
          {
            name: 'cluster-widgets',
            resource: { ...widgets, resource: 'clusterwidgets', kind: 'ClusterWidget', namespaced: false },
            direction: 'down',
          },
        ],
      },
      { logFailures: false },
    );
    expect(host.failures.map((f) => [f.plugin, f.source])).toEqual([['cluster-widgets', 'plugins.generic']]);
    expect(host.failures[0]!.reason).toContain('allowClusterScoped');
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([tenant]),
      patrolIntervalMs: 0,
      workers: 2,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(true));
  });

  afterAll(async () => {
    if (attempts.records.length) attempts.report('generic sync');
    await syncer?.stop();
    await t?.stop();
  });

  it('copies a tenant Widget into its super namespace translated, carries status up and deletes the copy', async () => {
    await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'web' } });
    const created = await a.create<Widget>(widgets, {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'one', namespace: 'web', labels: { app: 'one' } },
      spec: { size: 2, secretRef: 'creds', peer: 'two', targets: [{ namespace: 'db', port: 5432 }] },
    });
    const sns = superNamespace(tenant.key, 'web');
    const copy = await eventually(() => t.client.get<Widget>(widgets, sns, 'w-one'));
    expect(copy.spec).toEqual({ size: 2, peer: 'w-two', targets: [{ namespace: superNamespace(tenant.key, 'db') }] });
    expect(copy.metadata?.labels?.app).toBe('one');
    expect(provenanceOf(copy)).toMatchObject({
      cluster: tenant.key,
      namespace: 'web',
      name: 'one',
      uid: created.metadata?.uid,
    });

    // The super side's controller writes status; the tenant sees it on its own object.
    await t.client.patch(widgets, sns, 'w-one', { status: { phase: 'Ready', replicas: 2 } }, 'merge', {
      subresource: 'status',
    });
    await eventually(async () =>
      expect((await a.get<Widget>(widgets, 'web', 'one')).status).toEqual({ phase: 'Ready', replicas: 2 }),
    );

    // A spec change follows down; the super status stays.
    await a.patch(widgets, 'web', 'one', { spec: { size: 5 } }, 'merge');
    await eventually(async () => {
      const s = await t.client.get<Widget>(widgets, sns, 'w-one');
      expect(s.spec?.size).toBe(5);
      expect(s.status?.phase).toBe('Ready');
    });

    await a.delete(widgets, 'web', 'one');
    await eventually(async () => expect(await t.client.getOrNull(widgets, sns, 'w-one')).toBeNull());
  });

  it("copies super Gizmos from the tenant's super namespaces up, and nothing from elsewhere or about others", async () => {
    await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'up' } });
    const sns = superNamespace(tenant.key, 'up');
    await eventually(() => t.client.get(R.namespaces, undefined, sns));
    const gizmo = (namespace: string, name: string, ns: string) => ({
      apiVersion: 'example.com/v1',
      kind: 'Gizmo',
      metadata: { name, namespace },
      spec: { ns, size: 1 },
    });
    // The tenant's own, naming the tenant's namespace: up, translated back.
    await t.client.create(gizmos, gizmo(sns, 'own', superNamespace(tenant.key, 'web')));
    // The tenant's own, naming a platform namespace: up, without that value.
    await t.client.create(gizmos, gizmo(sns, 'leaky', 'kube-system'));
    // A platform object outside the tenant's namespaces: never up.
    await t.client.create(gizmos, gizmo('default', 'platform', sns));
    await t.client.patch(gizmos, sns, 'own', { status: { phase: 'Ready' } }, 'merge', { subresource: 'status' });

    await eventually(async () => {
      const own = await a.get<KubeObject & { spec?: { ns?: string }; status?: { phase?: string } }>(
        gizmos,
        'up',
        'own',
      );
      expect(own.spec).toEqual({ ns: 'web', size: 1 });
      expect(own.status).toEqual({ phase: 'Ready' });
    });
    const leaky = await eventually(() => a.get<KubeObject & { spec?: object }>(gizmos, 'up', 'leaky'));
    expect(leaky.spec).toEqual({ size: 1 });
    // Every Gizmo the tenant holds came from its own super namespace: the platform's is in none of its namespaces.
    const names = (await a.list(gizmos)).items.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();
    expect(names).toEqual(['up/leaky', 'up/own']);

    await t.client.delete(gizmos, sns, 'own');
    await eventually(async () => expect(await a.getOrNull(gizmos, 'up', 'own')).toBeNull());
  });

  it('refuses by name a Widget whose copied fields carry provenance, owner references or a foreign namespace', async () => {
    await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'forge' } });
    const sns = superNamespace(tenant.key, 'forge');
    await eventually(() => t.client.get(R.namespaces, undefined, sns));
    const other = 'team-b-4d5e6f-prod';
    const cases: Array<[string, string, Record<string, unknown>, string]> = [
      [
        "a template claiming another tenant's provenance",
        'prov',
        { template: { metadata: { annotations: { [ANN.cluster]: other } } } },
        `spec.template.metadata.annotations["${ANN.cluster}"]`,
      ],
      [
        'a template with owner references of its choosing',
        'owners',
        { template: { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 's', uid: 'u' }] } } },
        'spec.template.metadata.ownerReferences',
      ],
      [
        'a platform namespace in a field the entry does not translate',
        'ns',
        { targetNamespace: 'kube-system' },
        'spec.targetNamespace: "kube-system" is not a namespace of this tenant',
      ],
    ];
    for (const [what, name, spec, field] of cases) {
      await attempts.attempt(`generic sync: ${what}`, async () => {
        const w = await a.create<Widget>(widgets, {
          apiVersion: 'example.com/v1',
          kind: 'Widget',
          metadata: { name, namespace: 'forge' },
          spec: { size: 1, ...spec },
        });
        const event = await eventually(async () => {
          const e = (
            await a.list<KubeObject & { reason?: string; message?: string; involvedObject?: { uid?: string } }>(
              R.events,
              { namespace: 'forge' },
            )
          ).items.find((x) => x.involvedObject?.uid === w.metadata?.uid && x.reason === 'GenericFieldRefused');
          expect(e?.message).toContain(field);
          return e!.message!;
        }, 30_000);
        // decided and refused: the syncer wrote the event instead of the copy
        expect(await t.client.getOrNull(widgets, sns, `w-${name}`)).toBeNull();
        return event;
      });
    }
  });
});
