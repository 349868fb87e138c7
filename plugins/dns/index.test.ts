import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { Decision } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import type { Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import plugin, { dnsPlugin, waitingMessage } from './index.ts';

const base = testContext();
const SNS = base.names.superNamespace('web');
const SUPER_KS = base.names.superNamespace('kube-system');

const svc = (namespace: string, clusterIP?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'kube-dns', namespace },
  spec: clusterIP === undefined ? {} : { clusterIP },
});

const tenantPod = (spec: Partial<PodSpec> = {}, annotations?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'web', uid: 't-uid', ...(annotations ? { annotations } : {}) },
  spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
});

const desiredPod = (spec: Partial<PodSpec> = {}, uid?: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: SNS, ...(uid ? { uid } : {}) },
  spec: { containers: [{ name: 'c', image: 'i' }], automountServiceAccountToken: false, ...spec },
});

const OURS = {
  nameservers: ['10.96.0.53'],
  searches: ['web.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
  options: [{ name: 'ndots', value: '5' }],
};

/** WAITING_EVENT is the tenant Event a Pod waiting for its tenant's DNS gets. */
const WAITING_EVENT = {
  type: 'event' as const,
  side: 'tenant' as const,
  regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'web', name: 'p', uid: 't-uid' },
  eventType: 'Warning' as const,
  reason: 'WaitingForDNS',
  message: expect.any(String) as unknown as string,
};

interface Case {
  name: string;
  /** the tenant's kube-system/kube-dns Service exists */
  tenantDns?: boolean;
  /** cluster IP of the super copy of kube-dns; null: no super copy */
  superIP?: string | null;
  clusterDomain?: string;
  tenant: Pod;
  desired: Pod;
  want: Decision<Pod>;
}

const cases: Case[] = [
  {
    name: 'ClusterFirst (unset) points the Pod at the tenant kube-dns with the tenant search path',
    tenant: tenantPod(),
    desired: desiredPod(),
    want: { object: desiredPod({ dnsPolicy: 'None', dnsConfig: OURS }) },
  },
  {
    name: 'explicit ClusterFirst is mutated too',
    tenant: tenantPod({ dnsPolicy: 'ClusterFirst' }),
    desired: desiredPod({ dnsPolicy: 'ClusterFirst' }),
    want: { object: desiredPod({ dnsPolicy: 'None', dnsConfig: OURS }) },
  },
  {
    name: 'the tenant cluster domain is used in the search path',
    clusterDomain: 'tenant.example',
    tenant: tenantPod(),
    desired: desiredPod(),
    want: {
      object: desiredPod({
        dnsPolicy: 'None',
        dnsConfig: { ...OURS, searches: ['web.svc.tenant.example', 'svc.tenant.example', 'tenant.example'] },
      }),
    },
  },
  {
    name: 'the tenant dnsConfig is merged after ours (same-named options override, duplicate searches dropped)',
    tenant: tenantPod(),
    desired: desiredPod({
      dnsConfig: {
        nameservers: ['1.1.1.1'],
        searches: ['corp.example', 'svc.cluster.local'],
        options: [{ name: 'edns0' }, { name: 'ndots', value: '2' }],
      },
    }),
    want: {
      object: desiredPod({
        dnsPolicy: 'None',
        dnsConfig: {
          nameservers: ['10.96.0.53', '1.1.1.1'],
          searches: [...OURS.searches, 'corp.example'],
          options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
        },
      }),
    },
  },
  {
    name: 'hostNetwork with ClusterFirstWithHostNet is mutated',
    tenant: tenantPod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }),
    desired: desiredPod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }),
    want: { object: desiredPod({ hostNetwork: true, dnsPolicy: 'None', dnsConfig: OURS }) },
  },
  {
    name: 'hostNetwork with ClusterFirst (which means host DNS) is left alone',
    tenant: tenantPod({ hostNetwork: true }),
    desired: desiredPod({ hostNetwork: true }),
    want: { object: desiredPod({ hostNetwork: true }) },
  },
  {
    name: 'dnsPolicy Default is left alone',
    tenant: tenantPod({ dnsPolicy: 'Default' }),
    desired: desiredPod({ dnsPolicy: 'Default' }),
    want: { object: desiredPod({ dnsPolicy: 'Default' }) },
  },
  {
    name: 'dnsPolicy None is left alone',
    tenant: tenantPod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['8.8.8.8'] } }),
    desired: desiredPod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['8.8.8.8'] } }),
    want: { object: desiredPod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['8.8.8.8'] } }) },
  },
  {
    name: 'the opt-out annotation on the tenant Pod keeps its DNS settings',
    tenant: tenantPod({}, { 'tenancy.x-k8s.io/disable.dnsPolicyMutation': 'true' }),
    desired: desiredPod(),
    want: { object: desiredPod() },
  },
  {
    name: 'an opt-out annotation other than "true" does not opt out',
    tenant: tenantPod({}, { 'tenancy.x-k8s.io/disable.dnsPolicyMutation': 'false' }),
    desired: desiredPod(),
    want: { object: desiredPod({ dnsPolicy: 'None', dnsConfig: OURS }) },
  },
  {
    name: 'a tenant without kube-system/kube-dns keeps the Pod unchanged',
    tenantDns: false,
    tenant: tenantPod(),
    desired: desiredPod(),
    want: { object: desiredPod() },
  },
  {
    name: 'the super copy of kube-dns has no cluster IP yet: wait (the spec is immutable once created)',
    superIP: undefined,
    tenant: tenantPod(),
    desired: desiredPod(),
    want: {
      object: desiredPod(),
      skip: { reason: 'WaitingForDNS', message: expect.any(String) as unknown as string },
      effects: [WAITING_EVENT],
      requeueAfterMs: 1000,
    },
  },
  {
    name: 'the super copy of kube-dns does not exist yet: wait',
    superIP: null,
    tenant: tenantPod(),
    desired: desiredPod(),
    want: {
      object: desiredPod(),
      skip: { reason: 'WaitingForDNS', message: expect.any(String) as unknown as string },
      effects: [WAITING_EVENT],
      requeueAfterMs: 1000,
    },
  },
  {
    name: 'a desired Pod built on an existing super Pod (it has a uid) is never mutated',
    tenant: tenantPod(),
    desired: desiredPod({}, 'super-uid'),
    want: { object: desiredPod({}, 'super-uid') },
  },
];

describe('dns mutator', () => {
  it.each(cases)('$name', (c) => {
    const superIP = 'superIP' in c ? c.superIP : '10.96.0.53';
    const ctx = testContext({
      tenant: testTenant(c.clusterDomain ? { clusterDomain: c.clusterDomain } : {}),
      tenantCache: new MapCache([[R.services, c.tenantDns === false ? [] : [svc('kube-system', '10.0.0.10')]]]),
      superCache: new MapCache([[R.services, superIP === null ? [] : [svc(SUPER_KS, superIP), svc(SNS, '10.96.9.9')]]]),
    });
    const desired = structuredClone(c.desired);
    const got = dnsPlugin.mutate(desired, structuredClone(c.tenant), ctx);
    expect(got).toEqual(c.want);
    expect(desired).toEqual(c.desired);
  });

  it('tells a Pod on a named super cluster that the tenant DNS is being copied there, and how to run without', () => {
    expect(waitingMessage(undefined)).not.toMatch(/super cluster/);
    const m = waitingMessage('r2');
    expect(m).toMatch(/on super cluster r2;/);
    expect(m).toMatch(/being copied there/);
    expect(m).toMatch(/dnsPolicy: Default/);
    expect(m).toContain('tenancy.x-k8s.io/disable.dnsPolicyMutation');
    const ctx = testContext({
      superCluster: 'r2',
      tenantCache: new MapCache([[R.services, [svc('kube-system', '10.0.0.10')]]]),
      superCache: new MapCache([[R.services, []]]),
    });
    const got = dnsPlugin.mutate(desiredPod(), tenantPod(), ctx);
    expect(got.skip).toEqual({ reason: 'WaitingForDNS', message: m });
    expect(got.effects).toMatchObject([{ type: 'event', reason: 'WaitingForDNS', message: m }]);
  });

  it('mutates pods, runs in the manager and is the default export', () => {
    expect(dnsPlugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'dns',
      version: '0.1.0',
      description: expect.any(String),
      direction: 'mutator',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
      mutates: 'pods',
    });
    expect(plugin).toBe(dnsPlugin);
  });
});
