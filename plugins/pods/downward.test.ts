import { describe, expect, it } from 'vitest';
import { ANN } from '../../core/names/names.ts';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext } from '../../core/plugins/testing.ts';
import {
  downwardAnnotations,
  downwardKey,
  formatMap,
  goQuote,
  resolveTenantFieldRefs,
  superFieldPath,
  tenantFieldValue,
  translateDownwardVolumes,
  wholeMapKey,
} from './downward.ts';
import { podsPlugin } from './index.ts';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';

const tenantPod: Pod = {
  metadata: {
    name: 'job-0-x',
    namespace: 'team',
    uid: 'u-1',
    labels: { app: 'web' },
    annotations: { 'batch.kubernetes.io/job-completion-index': '3' },
  },
  spec: { serviceAccountName: 'builder', containers: [{ name: 'c' }] },
};

const annotation = (key: string) => `metadata.annotations['${key}']`;

describe('tenantFieldValue', () => {
  it.each([
    ['metadata.namespace', 'team'],
    ['metadata.uid', 'u-1'],
    ['spec.serviceAccountName', 'builder'],
    ["metadata.labels['app']", 'web'],
    ["metadata.annotations['batch.kubernetes.io/job-completion-index']", '3'],
    ["metadata.annotations['absent']", ''],
    ['metadata.name', undefined],
    ['spec.nodeName', undefined],
    ['status.podIP', undefined],
  ])('%s -> %s', (path, want) => {
    expect(tenantFieldValue(tenantPod, path)).toBe(want);
  });

  it("defaults the ServiceAccount to the tenant's default", () => {
    expect(tenantFieldValue({ metadata: {}, spec: { containers: [] } }, 'spec.serviceAccountName')).toBe('default');
  });
});

describe('resolveTenantFieldRefs', () => {
  const ref = (fieldPath: string) => ({ fieldRef: { fieldPath } });
  const spec = () => ({
    initContainers: [{ name: 'i', env: [{ name: 'NS', valueFrom: ref('metadata.namespace') }] }],
    containers: [
      {
        name: 'c',
        env: [
          { name: 'IDX', valueFrom: ref("metadata.annotations['batch.kubernetes.io/job-completion-index']") },
          { name: 'APP', valueFrom: ref("metadata.labels['app']") },
          { name: 'NAME', valueFrom: ref('metadata.name') },
          { name: 'IP', valueFrom: ref('status.podIP') },
          { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } },
          { name: 'PLAIN', value: 'x' },
        ],
      },
    ],
  });
  const untouched = [
    { name: 'NAME', valueFrom: ref('metadata.name') },
    { name: 'IP', valueFrom: ref('status.podIP') },
    { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } },
    { name: 'PLAIN', value: 'x' },
  ];

  it('follows a tenant label or annotation through its downward annotation; the rest become literals', () => {
    const s = spec();
    resolveTenantFieldRefs(s, tenantPod, true);
    expect(s).toEqual({
      initContainers: [{ name: 'i', env: [{ name: 'NS', value: 'team' }] }],
      containers: [
        {
          name: 'c',
          env: [
            {
              name: 'IDX',
              valueFrom: ref(annotation(downwardKey('annotations', 'batch.kubernetes.io/job-completion-index'))),
            },
            { name: 'APP', valueFrom: ref(annotation(downwardKey('labels', 'app'))) },
            ...untouched,
          ],
        },
      ],
    });
    // the annotations those refs read carry the tenant's values
    expect(downwardAnnotations({ ...tenantPod, spec: spec() })).toEqual({
      [downwardKey('annotations', 'batch.kubernetes.io/job-completion-index')]: '3',
      [downwardKey('labels', 'app')]: 'web',
    });
  });

  it('writes literals without follow (ephemeral containers start once)', () => {
    const s = spec();
    resolveTenantFieldRefs(s, tenantPod, false);
    expect(s.containers[0]!.env.slice(0, 2)).toEqual([
      { name: 'IDX', value: '3' },
      { name: 'APP', value: 'web' },
    ]);
    expect(s.initContainers[0]!.env).toEqual([{ name: 'NS', value: 'team' }]);
  });

  it('a ref to a super annotation of the syncer reads the tenant key of that name, never the super value', () => {
    const s = { containers: [{ name: 'c', env: [{ name: 'X', valueFrom: ref(annotation(ANN.uid)) }] }] };
    resolveTenantFieldRefs(s, tenantPod, true);
    expect(s.containers[0]!.env[0]!.valueFrom.fieldRef.fieldPath).toBe(annotation(downwardKey('annotations', ANN.uid)));
  });
});

const item = (fieldPath: string, path = 'f') => ({ path, fieldRef: { apiVersion: 'v1', fieldPath } });

describe('superFieldPath', () => {
  it.each([
    ['metadata.name', annotation(ANN.name)],
    ['metadata.namespace', annotation(ANN.namespace)],
    ['metadata.uid', annotation(ANN.uid)],
    ["metadata.labels['app']", annotation(downwardKey('labels', 'app'))],
    ["metadata.annotations['app']", annotation(downwardKey('annotations', 'app'))],
    ['metadata.labels', annotation(wholeMapKey('labels'))],
    ['metadata.annotations', annotation(wholeMapKey('annotations'))],
    ['spec.nodeName', undefined],
  ])('%s -> %s', (path, want) => {
    expect(superFieldPath(path)).toBe(want);
  });

  it('keeps labels and annotations of one key apart, and the key is a reserved annotation', () => {
    expect(downwardKey('labels', 'x')).not.toBe(downwardKey('annotations', 'x'));
    expect(downwardKey('labels', 'x')).toMatch(/^downward\.tenancy\.x-k8s\.io\/l-[0-9a-f]{20}$/);
  });
});

describe('formatMap', () => {
  // what the kubelet writes for a volume item of all labels or annotations (fieldpath.FormatMap: sorted, key=%q)
  it.each<[string, Record<string, string>, string]>([
    ['nothing', {}, ''],
    ['sorted keys, one per line, no newline after the last', { b: '2', a: '1' }, 'a="1"\nb="2"'],
    ['quotes and backslashes escaped', { k: 'say "hi" \\ bye' }, 'k="say \\"hi\\" \\\\ bye"'],
    ['control characters as Go escapes them', { k: 'a\nb\tc\u0001\u007f' }, 'k="a\\nb\\tc\\x01\\x7f"'],
    ['printable Unicode kept, a no-break space escaped', { k: 'é\u00a0😀' }, 'k="é\\u00a0😀"'],
  ])('%s', (_name, m, want) => expect(formatMap(m)).toBe(want));

  it('quotes a value as Go %q', () => expect(goQuote('')).toBe('""'));
});

describe('downward volumes', () => {
  const pod = (): Pod => ({
    ...tenantPod,
    spec: {
      containers: [{ name: 'c' }],
      volumes: [
        {
          name: 'd',
          downwardAPI: {
            items: [
              item('metadata.namespace', 'ns'),
              item('metadata.uid', 'uid'),
              item('metadata.name', 'name'),
              item("metadata.labels['app']", 'app'),
              item("metadata.annotations['absent']", 'absent'),
              { path: 'cpu', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu' } },
            ],
          },
        },
        { name: 'p', projected: { sources: [{ downwardAPI: { items: [item('metadata.namespace', 'ns')] } }] } },
      ],
    },
  });

  it('translateDownwardVolumes points every item at the super annotations, in projections too', () => {
    const spec = pod().spec!;
    translateDownwardVolumes(spec);
    const paths = (spec.volumes![0]!.downwardAPI as { items: Array<{ fieldRef?: { fieldPath: string } }> }).items.map(
      (i) => i.fieldRef?.fieldPath,
    );
    expect(paths).toEqual([
      annotation(ANN.namespace),
      annotation(ANN.uid),
      annotation(ANN.name),
      annotation(downwardKey('labels', 'app')),
      annotation(downwardKey('annotations', 'absent')),
      undefined,
    ]);
    const projected = spec.volumes![1]!.projected!.sources![0]!.downwardAPI as { items: Array<{ fieldRef: unknown }> };
    expect(projected.items[0]!.fieldRef).toEqual({ apiVersion: 'v1', fieldPath: annotation(ANN.namespace) });
  });

  it('downwardAnnotations carries the tenant values the items name, empty for a missing key', () => {
    expect(downwardAnnotations(pod())).toEqual({
      [downwardKey('labels', 'app')]: 'web',
      [downwardKey('annotations', 'absent')]: '',
    });
    expect(downwardAnnotations(tenantPod)).toEqual({});
  });

  const superNs = testContext().names.superNamespace('team');
  const sa = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vc-tenant-pod', namespace: superNs } };
  const ctx = testContext({ superCache: new MapCache([[R.serviceaccounts, [sa]]]) });

  it('the pods plugin writes a super Pod whose files read the tenant values; an update follows a label', () => {
    const tp = { apiVersion: 'v1', kind: 'Pod', ...pod() };
    const created = podsPlugin.toSuper!(tp, undefined, ctx).object as Pod;
    expect(created.metadata?.annotations?.[downwardKey('labels', 'app')]).toBe('web');
    const items = (created.spec!.volumes![0]!.downwardAPI as { items: Array<{ fieldRef?: { fieldPath: string } }> })
      .items;
    expect(items[0]!.fieldRef!.fieldPath).toBe(annotation(ANN.namespace));
    const relabelled = { ...tp, metadata: { ...tp.metadata, labels: { app: 'api' } } };
    const updated = podsPlugin.toSuper!(relabelled, created, ctx).object as Pod;
    expect(updated.metadata?.annotations?.[downwardKey('labels', 'app')]).toBe('api');
    expect(updated.spec).toEqual(created.spec);
  });

  it("a container's env reads a tenant annotation through the super Pod, so a restart after a change sees it", () => {
    // upstream's "failing subpath expansion can be modified during the lifecycle of a container"
    const env = [{ name: 'ANNOTATION', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['mysubpath']" } } }];
    const tp: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      ...tenantPod,
      spec: { containers: [{ name: 'c', env }] },
    };
    const created = podsPlugin.toSuper!(tp, undefined, ctx).object as Pod;
    const key = downwardKey('annotations', 'mysubpath');
    expect(created.metadata?.annotations?.[key]).toBe('');
    expect(created.spec!.containers[0]!.env![0]!.valueFrom).toEqual({ fieldRef: { fieldPath: annotation(key) } });
    const set = { ...tp, metadata: { ...tp.metadata, annotations: { mysubpath: 'mypath' } } };
    const updated = podsPlugin.toSuper!(set, created, ctx).object as Pod;
    expect(updated.metadata?.annotations?.[key]).toBe('mypath');
    expect(updated.spec).toEqual(created.spec);
  });

  describe('an update that relabels the tenant Pod goes through the allow-list and reserved keys as at creation', () => {
    const tp: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      ...tenantPod,
      spec: {
        containers: [{ name: 'c' }],
        volumes: [{ name: 'd', downwardAPI: { items: [item('metadata.labels', 'l')] } }],
      },
    };
    const created = podsPlugin.toSuper!(tp, undefined, ctx).object as Pod;
    const update = (labels: Record<string, string>, annotations: Record<string, string>) =>
      podsPlugin.toSuper!({ ...tp, metadata: { ...tp.metadata, labels, annotations } }, created, ctx).object as Pod;

    interface Case {
      name: string;
      labels: Record<string, string>;
      annotations: Record<string, string>;
      super: { labels: Record<string, string>; annotations?: Record<string, string>; file: string };
    }
    it.each<Case>([
      {
        name: 'a label the tenant changes follows, and so does the file of all labels',
        labels: { app: 'api' },
        annotations: {},
        super: { labels: { app: 'api' }, file: 'app="api"' },
      },
      {
        name: 'a label off the allow-list stays off the super Pod, though the file shows it as the kubelet would',
        labels: { app: 'web', 'sidecar.istio.io/inject': 'true' },
        annotations: {},
        super: { labels: { app: 'web' }, file: 'app="web"\nsidecar.istio.io/inject="true"' },
      },
      {
        name: "the project's keys the tenant sets (ownership, the downward file itself) are dropped",
        labels: { app: 'web', 'tenancy.x-k8s.io/cluster': 'another-tenant' },
        annotations: {
          [ANN.uid]: 'forged',
          [wholeMapKey('labels')]: 'app="admin"',
          [downwardKey('labels', 'role')]: 'admin',
          note: 'mine',
        },
        super: {
          labels: { app: 'web' },
          annotations: { note: 'mine' },
          file: 'app="web"\ntenancy.x-k8s.io/cluster="another-tenant"',
        },
      },
    ])('$name', ({ labels, annotations, super: want }) => {
      const m = update(labels, annotations).metadata!;
      const own = (x: Record<string, string> | undefined) =>
        Object.fromEntries(Object.entries(x ?? {}).filter(([k]) => !k.includes('tenancy.x-k8s.io/')));
      expect(own(m.labels)).toEqual(want.labels);
      expect(own(m.annotations)).toEqual(want.annotations ?? {});
      expect(m.annotations?.[wholeMapKey('labels')]).toBe(want.file);
      expect(m.annotations?.[ANN.uid]).not.toBe('forged');
      expect(m.annotations?.[downwardKey('labels', 'role')]).toBeUndefined();
      expect(m.labels?.['tenancy.x-k8s.io/cluster']).not.toBe('another-tenant');
    });
  });

  it('the pods plugin copies a volume of all labels and annotations as the files the kubelet would write', () => {
    const opaqueCtx = testContext({
      tenant: { ...ctx.tenant, opaqueMetaPrefixes: ['secret.example.com/'] },
      superCache: new MapCache([[R.serviceaccounts, [sa]]]),
    });
    const tp: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      ...tenantPod,
      metadata: {
        ...tenantPod.metadata,
        annotations: { builder: 'bar', 'secret.example.com/token': 'x' },
      },
      spec: {
        containers: [{ name: 'c' }],
        volumes: [
          { name: 'd', downwardAPI: { items: [item('metadata.labels', 'labels')] } },
          { name: 'p', projected: { sources: [{ downwardAPI: { items: [item('metadata.annotations', 'ann')] } }] } },
        ],
      },
    };
    const created = podsPlugin.toSuper!(tp, undefined, opaqueCtx).object as Pod;
    expect(created.metadata?.annotations?.[wholeMapKey('labels')]).toBe('app="web"');
    // the tenant's opaque keys never reach the super cluster, not even inside this annotation
    expect(created.metadata?.annotations?.[wholeMapKey('annotations')]).toBe('builder="bar"');
    const items = (created.spec!.volumes![0]!.downwardAPI as { items: Array<{ fieldRef?: { fieldPath: string } }> })
      .items;
    expect(items[0]!.fieldRef!.fieldPath).toBe(annotation(wholeMapKey('labels')));
    const relabelled = { ...tp, metadata: { ...tp.metadata, labels: { app: 'web', tier: 'front' } } };
    const updated = podsPlugin.toSuper!(relabelled, created, opaqueCtx).object as Pod;
    expect(updated.metadata?.annotations?.[wholeMapKey('labels')]).toBe('app="web"\ntier="front"');
  });
});
