import { describe, expect, it } from 'vitest';
import { ANN } from '../../core/names/names.ts';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext } from '../../core/plugins/testing.ts';
import {
  checkDownwardVolumes,
  downwardAnnotations,
  downwardKey,
  resolveTenantFieldRefs,
  superFieldPath,
  tenantFieldValue,
  translateDownwardVolumes,
} from './downward.ts';
import { podsPlugin } from './index.ts';
import type { Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

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
  it('turns the fieldRefs the super Pod would answer differently into literals, in init containers too', () => {
    const ref = (fieldPath: string) => ({ fieldRef: { fieldPath } });
    const spec = {
      initContainers: [{ name: 'i', env: [{ name: 'NS', valueFrom: ref('metadata.namespace') }] }],
      containers: [
        {
          name: 'c',
          env: [
            { name: 'IDX', valueFrom: ref("metadata.annotations['batch.kubernetes.io/job-completion-index']") },
            { name: 'NAME', valueFrom: ref('metadata.name') },
            { name: 'IP', valueFrom: ref('status.podIP') },
            { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } },
            { name: 'PLAIN', value: 'x' },
          ],
        },
      ],
    };
    resolveTenantFieldRefs(spec, tenantPod);
    expect(spec).toEqual({
      initContainers: [{ name: 'i', env: [{ name: 'NS', value: 'team' }] }],
      containers: [
        {
          name: 'c',
          env: [
            { name: 'IDX', value: '3' },
            { name: 'NAME', valueFrom: ref('metadata.name') },
            { name: 'IP', valueFrom: ref('status.podIP') },
            { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } },
            { name: 'PLAIN', value: 'x' },
          ],
        },
      ],
    });
  });
});

const item = (fieldPath: string, path = 'f') => ({ path, fieldRef: { apiVersion: 'v1', fieldPath } });
const annotation = (key: string) => `metadata.annotations['${key}']`;

describe('superFieldPath', () => {
  it.each([
    ['metadata.name', annotation(ANN.name)],
    ['metadata.namespace', annotation(ANN.namespace)],
    ['metadata.uid', annotation(ANN.uid)],
    ["metadata.labels['app']", annotation(downwardKey('labels', 'app'))],
    ["metadata.annotations['app']", annotation(downwardKey('annotations', 'app'))],
    ['metadata.labels', undefined],
    ['spec.nodeName', undefined],
  ])('%s -> %s', (path, want) => {
    expect(superFieldPath(path)).toBe(want);
  });

  it('keeps labels and annotations of one key apart, and the key is a reserved annotation', () => {
    expect(downwardKey('labels', 'x')).not.toBe(downwardKey('annotations', 'x'));
    expect(downwardKey('labels', 'x')).toMatch(/^downward\.tenancy\.x-k8s\.io\/l-[0-9a-f]{20}$/);
  });
});

describe('checkDownwardVolumes', () => {
  const withItems = (items: unknown[], projected = false): PodSpec => ({
    containers: [{ name: 'c' }],
    volumes: [
      projected
        ? { name: 'p', projected: { sources: [{ configMap: { name: 'cm' } }, { downwardAPI: { items } }] } }
        : { name: 'd', downwardAPI: { items } },
    ],
  });
  it.each([
    ['one label', withItems([item("metadata.labels['app']")]), undefined],
    ['namespace and uid', withItems([item('metadata.namespace'), item('metadata.uid')]), undefined],
    ['all labels', withItems([item('metadata.labels')]), 'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath'],
    [
      'all annotations, projected',
      withItems([item('metadata.name'), item('metadata.annotations')], true),
      'spec.volumes[0].projected.sources[1].downwardAPI.items[1].fieldRef.fieldPath',
    ],
  ])('%s', (_name, spec, field) => {
    const r = checkDownwardVolumes(spec);
    expect(r?.field).toBe(field);
    if (field) expect(r?.message).toContain('name the keys one by one');
  });
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

  it('the pods plugin refuses a volume of all labels with a VCSynced=False condition', () => {
    const tp: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      ...tenantPod,
      spec: {
        containers: [{ name: 'c' }],
        volumes: [{ name: 'd', downwardAPI: { items: [item('metadata.labels')] } }],
      },
    };
    const d = podsPlugin.toSuper!(tp, undefined, ctx);
    expect(d.object).toBeNull();
    expect(d.skip?.message).toContain('metadata.labels is refused');
  });
});
