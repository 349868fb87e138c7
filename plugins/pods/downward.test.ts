import { describe, expect, it } from 'vitest';
import { resolveTenantFieldRefs, tenantFieldValue } from './downward.ts';
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
