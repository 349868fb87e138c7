import { describe, expect, it } from 'vitest';
import { PLUGIN_API_VERSION, type ResourcePlugin } from './contract.ts';
import { buildOn, copyFields, downMeta, isPublic, keepSuperOwned, routeToAllTenants } from './helpers.ts';
import type { KubeObject } from './kube.ts';
import { allowDown, DEFAULT_COPIED_METADATA, metaKeyMatches, PUBLIC_LABEL, stripDown } from './meta.ts';
import { testTenant } from './testing.ts';

interface Thing extends KubeObject {
  data?: Record<string, string>;
  immutable?: boolean;
}

describe('copyFields', () => {
  it.each([
    {
      name: 'copies what the source has',
      src: { data: { a: '1' }, immutable: true },
      dst: {},
      want: { data: { a: '1' }, immutable: true },
    },
    { name: 'deletes what the source lacks', src: {}, dst: { data: { old: 'x' }, immutable: false }, want: {} },
    { name: 'an absent source clears the fields', src: undefined, dst: { data: { old: 'x' } }, want: {} },
    {
      name: 'leaves other fields alone',
      src: { data: { a: '1' } },
      dst: { kind: 'ConfigMap' },
      want: { kind: 'ConfigMap', data: { a: '1' } },
    },
  ])('$name', ({ src, dst, want }) => {
    const out: Thing = structuredClone(dst);
    copyFields<Thing, 'data' | 'immutable'>(src, out, ['data', 'immutable']);
    expect(out).toStrictEqual(want);
  });

  it('copies deeply: the destination shares nothing with the source', () => {
    const src: Thing = { data: { a: '1' } };
    const out: Thing = {};
    copyFields(src, out, ['data']);
    out.data!.a = '2';
    expect(src.data!.a).toBe('1');
  });
});

describe('buildOn', () => {
  it('builds on the existing object, keeping what its apiserver set, or starts one of the kind of `like`', () => {
    const existing: Thing = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'old' },
      immutable: false,
      data: { a: '1' },
    };
    expect(
      buildOn<Thing>(existing, { apiVersion: 'x/v1', kind: 'Other' }, { name: 'c' }, { data: { b: '2' } }),
    ).toStrictEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      immutable: false,
      data: { b: '2' },
    });
    expect(buildOn<Thing>(undefined, { apiVersion: 'v1', kind: 'ConfigMap' }, { name: 'c' })).toStrictEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
    });
    expect(existing.metadata).toStrictEqual({ name: 'old' });
  });
});

describe('keepSuperOwned', () => {
  const owned = (k: string) => k.startsWith('scheduler.alpha.kubernetes.io/');
  const rows: Array<{
    name: string;
    desired?: Record<string, string>;
    sup?: Record<string, string>;
    want?: Record<string, string>;
  }> = [
    {
      name: 'drops tenant values of owned keys and keeps the super values',
      desired: { a: '1', 'scheduler.alpha.kubernetes.io/node-selector': 'evil' },
      sup: { 'scheduler.alpha.kubernetes.io/node-selector': 'pool=a', b: 'super-only' },
      want: { a: '1', 'scheduler.alpha.kubernetes.io/node-selector': 'pool=a' },
    },
    {
      name: 'nothing left is undefined',
      desired: { 'scheduler.alpha.kubernetes.io/x': 'y' },
      sup: undefined,
      want: undefined,
    },
    { name: 'no input at all', desired: undefined, sup: undefined, want: undefined },
  ];
  it.each(rows)('$name', ({ desired, sup, want }) => {
    expect(keepSuperOwned(desired, sup, owned)).toStrictEqual(want);
  });
});

describe('public mirrors', () => {
  const pub = (v?: string): KubeObject => ({
    metadata: { name: 'fast', ...(v === undefined ? {} : { labels: { [PUBLIC_LABEL]: v } }) },
  });
  it('isPublic needs the label set to "true"', () => {
    expect([pub('true'), pub('false'), pub()].map(isPublic)).toEqual([true, false, false]);
  });
  it('routeToAllTenants names the object in every tenant', () => {
    const tenants = [testTenant({ key: 'a' }), testTenant({ key: 'b' })];
    expect(routeToAllTenants(pub('true'), { tenants })).toEqual([
      { tenant: 'a', namespace: '', name: 'fast' },
      { tenant: 'b', namespace: '', name: 'fast' },
    ]);
  });
});

describe('downMeta and the reserved prefixes', () => {
  it('keeps the super finalizers on an existing object and drops the reserved and opaque tenant keys', () => {
    const tenant = testTenant({ opaqueMetaPrefixes: ['secret.example/'] });
    const tenantObj: KubeObject = {
      metadata: {
        name: 'x',
        labels: { app: 'x', 'tenancy.x-k8s.io/cluster': 'forged', 'secret.example/k': 'v' },
        finalizers: ['tenant/f'],
      },
    };
    const superObj: KubeObject = {
      metadata: { name: 'x', namespace: 'ns', finalizers: ['kubernetes.io/pvc-protection'], uid: 'u' },
    };
    expect(downMeta(tenantObj, superObj, { tenant }, { namespace: 'ns', name: 'x' })).toStrictEqual({
      name: 'x',
      namespace: 'ns',
      uid: 'u',
      labels: { app: 'x' },
      finalizers: ['kubernetes.io/pvc-protection'],
    });
    expect(downMeta(tenantObj, undefined, { tenant }, { name: 'x' })).toStrictEqual({
      name: 'x',
      labels: { app: 'x' },
    });
  });

  it('treats subdomains of the project prefix as reserved', () => {
    expect(
      stripDown({ 'transparency.tenancy.x-k8s.io/x': '1', 'tenancy.x-k8s.io.evil/x': '2', plain: '3' }),
    ).toStrictEqual({ 'tenancy.x-k8s.io.evil/x': '2', plain: '3' });
  });
});

describe('the allow-list of copied labels and annotations', () => {
  it.each<[string, string, boolean]>([
    ['*', 'app', true],
    ['*', 'pod-template-hash', true],
    ['*', 'app.kubernetes.io/name', false],
    ['*', 'kubernetes.io/metadata.name', false],
    ['app.kubernetes.io/*', 'app.kubernetes.io/name', true],
    ['app.kubernetes.io/*', 'app.kubernetes.io/', true],
    ['app.kubernetes.io/*', 'xapp.kubernetes.io/name', false],
    ['app.kubernetes.io/*', 'app.kubernetes.io.evil/name', false],
    ['app.kubernetes.io/*', 'app', false],
    ['*.example.com/*', 'team.example.com/cost', true],
    ['*.example.com/*', 'example.com/cost', false],
    ['*.example.com/*', 'a/b.example.com/cost', false],
    ['statefulset.kubernetes.io/pod-name', 'statefulset.kubernetes.io/pod-name', true],
    ['statefulset.kubernetes.io/pod-name', 'statefulset.kubernetes.io/pod-names', false],
    ['app.kubernetes.io/name', 'appXkubernetes.io/name', false],
    ['*/*', 'pod-security.kubernetes.io/enforce', true],
  ])('pattern %s matches %s: %s', (pattern, key, want) => {
    expect(metaKeyMatches(pattern, key)).toBe(want);
  });

  it('allowDown keeps what a pattern allows, never a reserved key, never an opaque one', () => {
    const m = {
      app: 'web',
      'app.kubernetes.io/name': 'web',
      'sidecar.istio.io/inject': 'true',
      'tenancy.x-k8s.io/cluster': 'forged',
      'secret.example.com/k': 'v',
    };
    expect(allowDown(m, ['*', 'app.kubernetes.io/*'])).toStrictEqual({ app: 'web', 'app.kubernetes.io/name': 'web' });
    expect(allowDown(m, ['*', '*/*'], ['secret.example.com/'])).toStrictEqual({
      app: 'web',
      'app.kubernetes.io/name': 'web',
      'sidecar.istio.io/inject': 'true',
    });
    expect(allowDown(m, [])).toBeUndefined();
    expect(allowDown(undefined, ['*'])).toBeUndefined();
  });

  const tenantObj: KubeObject = {
    metadata: {
      name: 'x',
      labels: { app: 'x', 'istio-injection': 'enabled', 'app.kubernetes.io/part-of': 'shop', 'example.com/l': '1' },
      annotations: { note: 'hi', 'sidecar.istio.io/inject': 'true', 'iam.amazonaws.com/role': 'admin' },
    },
  };

  it('downMeta applies the object lists by default and the namespace lists to Namespaces', () => {
    const tenant = testTenant();
    expect(downMeta(tenantObj, undefined, { tenant }, { namespace: 'ns', name: 'x' })).toStrictEqual({
      name: 'x',
      namespace: 'ns',
      labels: { app: 'x', 'istio-injection': 'enabled', 'app.kubernetes.io/part-of': 'shop' },
      annotations: { note: 'hi' },
    });
    expect(downMeta(tenantObj, undefined, { tenant }, { name: 'x' }, {}, { namespace: true })).toStrictEqual({
      name: 'x',
      labels: { 'app.kubernetes.io/part-of': 'shop' },
    });
  });

  it("downMeta takes the tenant's lists, each one it leaves out from the defaults", () => {
    const tenant = testTenant({ copiedMetadata: { labels: ['example.com/*'] } });
    expect(downMeta(tenantObj, undefined, { tenant }, { namespace: 'ns', name: 'x' })).toStrictEqual({
      name: 'x',
      namespace: 'ns',
      labels: { 'example.com/l': '1' },
      annotations: { note: 'hi' },
    });
    expect(DEFAULT_COPIED_METADATA.annotations).toEqual(['*', 'app.kubernetes.io/*']);
  });

  it("downMeta always keeps the plugin's own labels and annotations, whatever the lists say", () => {
    const tenant = testTenant({ copiedMetadata: { labels: [], annotations: [] } });
    expect(
      downMeta(
        tenantObj,
        undefined,
        { tenant },
        { namespace: 'ns', name: 'x' },
        { 'tenancy.x-k8s.io/secret-type': 't' },
        { extraLabels: { 'kubernetes.io/service-name': 'web' } },
      ),
    ).toStrictEqual({
      name: 'x',
      namespace: 'ns',
      labels: { 'kubernetes.io/service-name': 'web' },
      annotations: { 'tenancy.x-k8s.io/secret-type': 't' },
    });
  });
});

describe('the contract version', () => {
  it('is v1 of the plugin API group, and a plugin states it in its manifest', () => {
    const p: ResourcePlugin = {
      manifest: {
        apiVersion: PLUGIN_API_VERSION,
        name: 'x',
        version: '1.0.0',
        direction: 'down',
        sourceOfTruth: 'tenant',
        processes: ['manager'],
      },
      toSuper: (o) => ({ object: o }),
    };
    expect(p.manifest.apiVersion).toBe('plugins.tenancy.x-k8s.io/v1');
  });
});
