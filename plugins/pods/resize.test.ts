import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '@virtualcluster-ts/plugin-sdk/pods';
import { testContext } from '../../core/plugins/testing.ts';
import { podsPlugin } from './index.ts';
import { resizeContainers } from './resize.ts';

const c = (name: string, resources?: Record<string, unknown>): Container => ({
  name,
  image: 'busybox',
  ...(resources && { resources }),
});

describe('resizeContainers', () => {
  it.each<[string, Container[], Container[], Container[], boolean]>([
    [
      'same values: nothing',
      [c('a', { requests: { cpu: '1' } })],
      [c('a', { requests: { cpu: '1' } })],
      [c('a', { requests: { cpu: '1' } })],
      false,
    ],
    [
      'cpu and memory the tenant changed move, in requests and limits',
      [c('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m' } })],
      [c('a', { requests: { cpu: '150m', memory: '32Mi' }, limits: { cpu: '300m' } })],
      [c('a', { requests: { cpu: '150m', memory: '32Mi' }, limits: { cpu: '300m' } })],
      true,
    ],
    [
      'limits the tenant adds are added',
      [c('a', { requests: { cpu: '100m' } })],
      [c('a', { requests: { cpu: '100m' }, limits: { memory: '128Mi' } })],
      [c('a', { requests: { cpu: '100m' }, limits: { memory: '128Mi' } })],
      true,
    ],
    [
      'what the tenant leaves unset stays as the super has it (a super LimitRange default)',
      [c('a', { requests: { cpu: '100m', memory: '10Mi' }, limits: { memory: '20Mi' } })],
      [c('a', { requests: { cpu: '200m' } })],
      [c('a', { requests: { cpu: '200m', memory: '10Mi' }, limits: { memory: '20Mi' } })],
      true,
    ],
    [
      'other resources are not resized in place: left alone',
      [c('a', { limits: { 'ephemeral-storage': '1Gi' } })],
      [c('a', { limits: { 'ephemeral-storage': '2Gi' } })],
      [c('a', { limits: { 'ephemeral-storage': '1Gi' } })],
      false,
    ],
    [
      'matched by name, not position; a container without a tenant twin is left alone',
      [c('x', { requests: { cpu: '1' } }), c('a', { requests: { cpu: '1' } })],
      [c('a', { requests: { cpu: '2' } })],
      [c('x', { requests: { cpu: '1' } }), c('a', { requests: { cpu: '2' } })],
      true,
    ],
  ])('%s', (_, supers, tenants, want, changed) => {
    expect(resizeContainers(supers, tenants)).toBe(changed);
    expect(supers).toEqual(want);
  });
});

describe('pods plugin: in-place resize', () => {
  it('toSuper gives the super Pod the tenant containers\u2019 new CPU and memory', () => {
    const ctx = testContext();
    const tenant: Pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'u', generation: 2 },
      spec: { containers: [c('a', { requests: { cpu: '300m' }, limits: { cpu: '300m' } })], nodeName: 'vnode' },
    };
    const sup: Pod = {
      metadata: { name: 'p', namespace: ctx.names.superNamespace('default'), generation: 1 },
      spec: { containers: [c('a', { requests: { cpu: '100m' }, limits: { cpu: '100m' } })], nodeName: 'node-1' },
    };
    const got = podsPlugin.toSuper!(tenant, sup, ctx).object as Pod;
    expect(got.spec?.containers[0]?.resources).toEqual({ requests: { cpu: '300m' }, limits: { cpu: '300m' } });
  });
});

describe('pods plugin: resize conditions', () => {
  it('toTenant drops PodResizeInProgress once the super kubelet removed it, and keeps the tenant\u2019s own conditions', () => {
    const ctx = testContext();
    const cond = (type: string) => ({ type, status: 'True' });
    const tenant: Pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'u', generation: 2 },
      spec: { containers: [c('a')], nodeName: 'vnode' },
      status: { conditions: [cond('Ready'), cond('PodResizeInProgress'), cond('PodResizePending'), cond('VCSynced')] },
    };
    const sup: Pod = {
      metadata: { name: 'p', namespace: ctx.names.superNamespace('default'), generation: 2 },
      spec: { containers: [c('a')], nodeName: 'node-1' },
      status: { conditions: [cond('Ready')] },
    };
    const got = podsPlugin.toTenant!(sup, tenant, ctx).object as Pod;
    expect(got.status?.conditions?.map((x) => x.type)).toEqual(['Ready', 'VCSynced']);
  });
});
