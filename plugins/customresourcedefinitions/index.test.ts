import { describe, expect, it } from 'vitest';
import { LABEL, MANAGER } from '../../core/names/names.ts';
import type { Decision, RouteContext } from '../../core/plugins/contract.ts';
import { MapCache, testTenant } from '../../core/plugins/testing.ts';
import plugin, { customresourcedefinitionsPlugin, type CustomResourceDefinition } from './index.ts';

const tenants = [testTenant(), testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' })];

const names = { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wg'] };
const versions = [
  {
    name: 'v1',
    served: true,
    storage: true,
    schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object' } } } },
    subresources: { status: {} },
  },
  { name: 'v1beta1', served: true, storage: false, deprecated: true, schema: { openAPIV3Schema: { type: 'object' } } },
];
const webhook = {
  strategy: 'Webhook',
  webhook: {
    conversionReviewVersions: ['v1'],
    clientConfig: { service: { namespace: 'widgets-system', name: 'conv', path: '/convert' } },
  },
};

const superCrd = (
  labels: Record<string, string>,
  conversion: Record<string, unknown> = { strategy: 'None' },
): CustomResourceDefinition => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: 'widgets.example.com',
    uid: 'super-crd-uid',
    resourceVersion: '40',
    generation: 3,
    labels,
    annotations: { 'docs.example.com/url': 'https://x' },
  },
  spec: { group: 'example.com', names, scope: 'Namespaced', versions, conversion },
  status: { acceptedNames: names, storedVersions: ['v1'], conditions: [{ type: 'Established', status: 'True' }] },
});
const publicCrd = (conversion?: Record<string, unknown>) =>
  superCrd({ [LABEL.public]: 'true', app: 'widgets' }, conversion);

const tenantCrd: CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: 'widgets.example.com',
    uid: 'tenant-crd-uid',
    resourceVersion: '9',
    labels: { [LABEL.managedBy]: MANAGER },
  },
  spec: { group: 'example.com', names, scope: 'Namespaced', versions: [versions[0]], conversion: { strategy: 'None' } },
  status: { storedVersions: ['v1', 'v1beta1'] },
};

const newCopy = (): CustomResourceDefinition => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: 'widgets.example.com',
    labels: { app: 'widgets' },
    annotations: { 'docs.example.com/url': 'https://x' },
  },
  spec: { group: 'example.com', names, scope: 'Namespaced', versions, conversion: { strategy: 'None' } },
});

const cases: Array<{
  name: string;
  superObj: CustomResourceDefinition | undefined;
  tenantObj?: CustomResourceDefinition;
  want: Decision<CustomResourceDefinition>;
}> = [
  {
    name: 'public CRD: group, names, scope, versions, None conversion copied; no status',
    superObj: publicCrd(),
    want: { object: newCopy() },
  },
  {
    name: 'conversion webhook not copied: strategy None instead',
    superObj: publicCrd(webhook),
    want: { object: newCopy() },
  },
  {
    name: 'existing tenant copy: versions updated, managed-by and the tenant status kept',
    superObj: publicCrd(webhook),
    tenantObj: tenantCrd,
    want: {
      object: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: {
          name: 'widgets.example.com',
          uid: 'tenant-crd-uid',
          resourceVersion: '9',
          labels: { app: 'widgets', [LABEL.managedBy]: MANAGER },
          annotations: { 'docs.example.com/url': 'https://x' },
        },
        spec: { group: 'example.com', names, scope: 'Namespaced', versions, conversion: { strategy: 'None' } },
        status: { storedVersions: ['v1', 'v1beta1'] },
      },
    },
  },
  { name: 'CRD without the public label: not copied', superObj: superCrd({ app: 'widgets' }), want: { object: null } },
  {
    name: 'CRD that lost the public label: deleted',
    superObj: superCrd({ app: 'widgets' }),
    tenantObj: tenantCrd,
    want: { object: null },
  },
  { name: 'super CRD gone: deleted', superObj: undefined, tenantObj: tenantCrd, want: { object: null } },
];

describe('customresourcedefinitions toTenant', () => {
  it.each(cases)('$name', (c) => {
    const before = structuredClone([c.superObj, c.tenantObj]);
    expect(customresourcedefinitionsPlugin.toTenant(c.superObj, c.tenantObj)).toStrictEqual(c.want);
    expect([c.superObj, c.tenantObj]).toEqual(before);
  });
});

const rctx: RouteContext = {
  tenants,
  superCache: new MapCache(),
  tenantsBy: () => [],
  tenantOfNamespace: () => undefined,
};

describe('customresourcedefinitions against a tenant that edits its copy', () => {
  it('puts back strategy None and the super versions over a conversion webhook and a schema the tenant wrote', () => {
    // The tenant apiserver would call the webhook (from where it runs) on every read of a widget, the syncer's too.
    const edited: CustomResourceDefinition = {
      ...tenantCrd,
      spec: {
        ...tenantCrd.spec,
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
        conversion: {
          strategy: 'Webhook',
          webhook: { clientConfig: { url: 'https://10.96.0.1:443/convert' }, conversionReviewVersions: ['v1'] },
        },
      },
    };
    const got = customresourcedefinitionsPlugin.toTenant(publicCrd(), edited);
    expect(got.object?.spec?.conversion).toEqual({ strategy: 'None' });
    expect(got.object?.spec?.versions).toEqual(publicCrd().spec?.versions);
    expect(JSON.stringify(got.object)).not.toContain('10.96.0.1');
  });
});

describe('customresourcedefinitions route', () => {
  it.each([
    {
      name: 'public CRD -> every tenant',
      crd: publicCrd(),
      want: [
        { tenant: 'team-a-1a2b3c-dev', namespace: '', name: 'widgets.example.com' },
        { tenant: 'team-b-4d5e6f-prod', namespace: '', name: 'widgets.example.com' },
      ],
    },
    { name: 'CRD without the public label -> nobody', crd: superCrd({}), want: [] },
  ])('$name', ({ crd, want }) => {
    expect(customresourcedefinitionsPlugin.route(crd, rctx)).toEqual(want);
  });
});

describe('customresourcedefinitions manifest', () => {
  it('is an opt-in up plugin of cluster-scoped CRDs and the default export', () => {
    expect(plugin).toBe(customresourcedefinitionsPlugin);
    expect(plugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'customresourcedefinitions',
      version: '0.1.0',
      description: expect.any(String),
      resource: {
        group: 'apiextensions.k8s.io',
        version: 'v1',
        resource: 'customresourcedefinitions',
        kind: 'CustomResourceDefinition',
        namespaced: false,
      },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
      optIn: true,
    });
  });
});
