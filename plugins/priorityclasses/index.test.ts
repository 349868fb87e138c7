import { describe, expect, it } from 'vitest';
import { LABEL, MANAGER } from '../../core/names/names.ts';
import type { Decision, RouteContext } from '../../core/plugins/contract.ts';
import { MapCache, testTenant } from '../../core/plugins/testing.ts';
import plugin, { priorityclassesPlugin, type PriorityClass } from './index.ts';

const tenants = [testTenant(), testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' })];

const superClass = (
  labels: Record<string, string>,
  over: Partial<PriorityClass> = {},
  name = 'batch-high',
): PriorityClass => ({
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name, uid: 'super-pc-uid', resourceVersion: '8', labels, annotations: { owner: 'platform' } },
  value: 100000,
  globalDefault: false,
  preemptionPolicy: 'Never',
  description: 'batch jobs that must finish',
  ...over,
});
const publicClass = (over: Partial<PriorityClass> = {}, name?: string) =>
  superClass({ [LABEL.public]: 'true' }, over, name);

const tenantClass: PriorityClass = {
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name: 'batch-high', uid: 'tenant-pc-uid', resourceVersion: '2', labels: { [LABEL.managedBy]: MANAGER } },
  value: 5,
  globalDefault: true,
  preemptionPolicy: 'PreemptLowerPriority',
  description: 'old',
};

const tenantOwn: PriorityClass = {
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name: 'system-cluster-critical', uid: 'tenant-builtin-uid' },
  value: 2000000000,
};

const cases: Array<{
  name: string;
  superObj: PriorityClass | undefined;
  tenantObj?: PriorityClass;
  want: Decision<PriorityClass>;
}> = [
  {
    name: 'public class: value, preemptionPolicy, description copied, public label stripped',
    superObj: publicClass(),
    want: {
      object: {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name: 'batch-high', annotations: { owner: 'platform' } },
        value: 100000,
        globalDefault: false,
        preemptionPolicy: 'Never',
        description: 'batch jobs that must finish',
      },
    },
  },
  {
    name: 'super global default: globalDefault forced false in the tenant',
    superObj: publicClass({ globalDefault: true }),
    want: {
      object: {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name: 'batch-high', annotations: { owner: 'platform' } },
        value: 100000,
        globalDefault: false,
        preemptionPolicy: 'Never',
        description: 'batch jobs that must finish',
      },
    },
  },
  {
    name: 'existing tenant copy: built on it, brought back to the super values, globalDefault false, managed-by kept',
    superObj: publicClass({ description: undefined }),
    tenantObj: tenantClass,
    want: {
      object: {
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: {
          name: 'batch-high',
          uid: 'tenant-pc-uid',
          resourceVersion: '2',
          labels: { [LABEL.managedBy]: MANAGER },
          annotations: { owner: 'platform' },
        },
        value: 100000,
        globalDefault: false,
        preemptionPolicy: 'Never',
      },
    },
  },
  { name: 'class without the public label: not copied', superObj: superClass({}), want: { object: null } },
  {
    name: 'class that lost the public label: deleted',
    superObj: superClass({}),
    tenantObj: tenantClass,
    want: { object: null },
  },
  { name: 'super class gone: deleted', superObj: undefined, tenantObj: tenantClass, want: { object: null } },
  {
    name: 'public system- class: skipped, the tenant keeps its own built-in',
    superObj: publicClass({}, 'system-cluster-critical'),
    tenantObj: tenantOwn,
    want: {
      object: tenantOwn,
      skip: { reason: 'ReservedName', message: 'priority class system-cluster-critical is built into every apiserver' },
    },
  },
];

describe('priorityclasses toTenant', () => {
  it.each(cases)('$name', (c) => {
    const before = structuredClone([c.superObj, c.tenantObj]);
    expect(priorityclassesPlugin.toTenant(c.superObj, c.tenantObj)).toEqual(c.want);
    expect([c.superObj, c.tenantObj]).toEqual(before);
  });
});

const rctx: RouteContext = {
  tenants,
  superCache: new MapCache(),
  tenantsBy: () => [],
  tenantOfNamespace: () => undefined,
};

describe('priorityclasses route', () => {
  it.each([
    {
      name: 'public class -> every tenant',
      pc: publicClass(),
      want: [
        { tenant: 'team-a-1a2b3c-dev', namespace: '', name: 'batch-high' },
        { tenant: 'team-b-4d5e6f-prod', namespace: '', name: 'batch-high' },
      ],
    },
    { name: 'class without the public label -> nobody', pc: superClass({}), want: [] },
    { name: 'public system- class -> nobody', pc: publicClass({}, 'system-node-critical'), want: [] },
  ])('$name', ({ pc, want }) => {
    expect(priorityclassesPlugin.route(pc, rctx)).toEqual(want);
  });
});

describe('priorityclasses manifest', () => {
  it('is an opt-in up plugin of cluster-scoped PriorityClasses and the default export', () => {
    expect(plugin).toBe(priorityclassesPlugin);
    expect(plugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'priorityclasses',
      version: '0.1.0',
      description: expect.any(String),
      resource: {
        group: 'scheduling.k8s.io',
        version: 'v1',
        resource: 'priorityclasses',
        kind: 'PriorityClass',
        namespaced: false,
      },
      direction: 'up',
      sourceOfTruth: 'super',
      processes: ['manager'],
      optIn: true,
    });
  });
});
