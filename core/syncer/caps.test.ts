import { describe, expect, it } from 'vitest';
import { ApiError, type KubeObject } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import type { ObjectCaps, TenantView } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testContext, testTenant } from '../plugins/testing.ts';
import secrets from '../../plugins/secrets/index.ts';
import {
  ANY_RESOURCE,
  capRefusal,
  checkCaps,
  PENDING_TTL_MS,
  PendingCreates,
  sizeOf,
  superQuotaRefusal,
} from './caps.ts';
import { planKey } from './plan.ts';

const tenant = testTenant();
const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' });

/** superSecret is a super Secret the syncer wrote for `owner`'s tenant Secret `ns/name`, with `bytes` of data. */
const superSecret = (owner: TenantView, ns: string, name: string, bytes: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    namespace: `${owner.key}-${ns}`,
    name,
    labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: owner.key },
    annotations: { [ANN.cluster]: owner.key, [ANN.namespace]: ns, [ANN.name]: name },
  },
  data: { d: 'x'.repeat(bytes) },
});

const tenantSecret = (ns: string, name: string, bytes: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { namespace: ns, name, uid: `${name}-uid` },
  data: { d: 'x'.repeat(bytes) },
});

interface Row {
  name: string;
  caps: ObjectCaps | undefined;
  existing: KubeObject[];
  pending?: Array<[string, number]>;
  /** the write: a create when `before` is absent */
  desired: KubeObject;
  before?: KubeObject;
  /** the cap named in the refusal, or undefined when the write fits */
  refusedBy: string | undefined;
}

const mine = [superSecret(tenant, 'default', 'a', 100), superSecret(tenant, 'other', 'b', 100)];
const theirs = [superSecret(other, 'default', 'x', 100), superSecret(other, 'default', 'y', 100)];
const desired = superSecret(tenant, 'default', 'new', 100);
const size = sizeOf(desired);

const rows: Row[] = [
  { name: 'no caps for the resource', caps: undefined, existing: mine, desired, refusedBy: undefined },
  { name: 'under the count', caps: { count: 3 }, existing: [...mine, ...theirs], desired, refusedBy: undefined },
  {
    name: 'at the count, over all the tenant namespaces (other tenants do not count)',
    caps: { count: 2 },
    existing: [...mine, ...theirs],
    desired,
    refusedBy: 'quota.objects.secrets.count',
  },
  {
    name: 'creates on their way into the cache count',
    caps: { count: 3 },
    existing: mine,
    pending: [['default/in-flight', 10]],
    desired,
    refusedBy: 'quota.objects.secrets.count',
  },
  {
    name: 'a pending create already in the cache counts once',
    caps: { count: 3 },
    existing: mine,
    pending: [['default/a', 100]],
    desired,
    refusedBy: undefined,
  },
  {
    name: 'an update is not a new object for the count',
    caps: { count: 2 },
    existing: mine,
    before: mine[0],
    desired: superSecret(tenant, 'default', 'a', 200),
    refusedBy: undefined,
  },
  {
    name: 'over the per-object size',
    caps: { maxBytes: size - 1 },
    existing: [],
    desired,
    refusedBy: 'quota.objects.secrets.maxBytes',
  },
  {
    name: 'an update growing past the per-object size',
    caps: { maxBytes: sizeOf(mine[0]!) },
    existing: mine,
    before: mine[0],
    desired: superSecret(tenant, 'default', 'a', 200),
    refusedBy: 'quota.objects.secrets.maxBytes',
  },
  {
    name: 'an object over a lowered cap may shrink',
    caps: { maxBytes: 10 },
    existing: mine,
    before: mine[0],
    desired: superSecret(tenant, 'default', 'a', 50),
    refusedBy: undefined,
  },
  {
    name: 'the byte total of the tenant objects',
    caps: { totalBytes: sizeOf(mine[0]!) + sizeOf(mine[1]!) + size - 1 },
    existing: [...mine, ...theirs],
    desired,
    refusedBy: 'quota.objects.secrets.totalBytes',
  },
  {
    name: 'exactly at the byte total',
    caps: { totalBytes: sizeOf(mine[0]!) + sizeOf(mine[1]!) + size },
    existing: [...mine, ...theirs],
    desired,
    refusedBy: undefined,
  },
];

describe('checkCaps', () => {
  it.each(rows)('$name', (row) => {
    const view = testTenant({
      quota: { resourceQuota: {}, limitRange: [], objects: row.caps ? { secrets: row.caps } : {} },
    });
    const ctx = testContext({ tenant: view, superCache: new MapCache([[R.secrets, row.existing]]) });
    const pending = new PendingCreates();
    for (const [k, b] of row.pending ?? []) pending.add(view.key, 'secrets', k, b);
    const p = row.desired.metadata?.annotations?.[ANN.name] ?? '';
    const got = checkCaps({
      ctx,
      resource: R.secrets,
      tenantObj: tenantSecret(row.desired.metadata?.annotations?.[ANN.namespace] ?? '', p, 0),
      desired: row.desired,
      superObj: row.before,
      pending,
    });
    if (row.refusedBy === undefined) expect(got).toBeUndefined();
    else expect(got).toContain(row.refusedBy);
  });

  it('holds the caps of "*" for a resource the policy does not name, and a named entry wins over them', () => {
    const check = (objects: Record<string, ObjectCaps>) =>
      checkCaps({
        ctx: testContext({
          tenant: testTenant({ quota: { resourceQuota: {}, limitRange: [], objects } }),
          superCache: new MapCache([[R.secrets, mine]]),
        }),
        resource: R.secrets,
        tenantObj: tenantSecret('default', 'new', 0),
        desired,
        superObj: undefined,
      });
    expect(check({ [ANY_RESOURCE]: { count: 2 } })).toBe(
      'the tenant has 2 secrets in the super cluster already, the cap (TenantPolicy quota.objects["*"].count, ' +
        'which holds for secrets)',
    );
    expect(check({ [ANY_RESOURCE]: { maxBytes: 10 } })).toContain('quota.objects["*"].maxBytes');
    expect(check({ [ANY_RESOURCE]: { count: 2 }, secrets: {} })).toBeUndefined();
    expect(check({ [ANY_RESOURCE]: { count: 2 }, secrets: { count: 3 } })).toBeUndefined();
  });

  it('sets no caps for a tenant without a quota section (static tenants)', () => {
    const ctx = testContext({ tenant, superCache: new MapCache([[R.secrets, mine]]) });
    expect(
      checkCaps({ ctx, resource: R.secrets, tenantObj: tenantSecret('default', 'n', 0), desired, superObj: undefined }),
    ).toBe(undefined);
  });
});

describe('PendingCreates', () => {
  it('forgets creates after their time, on failure and for a removed tenant', () => {
    let now = 0;
    const p = new PendingCreates(() => now);
    p.add('t', 'secrets', 'ns/a', 1);
    p.add('t', 'secrets', 'ns/b', 2);
    p.add('u', 'secrets', 'ns/c', 3);
    p.remove('t', 'secrets', 'ns/a');
    expect(p.pending('t', 'secrets')).toEqual([{ key: 'ns/b', bytes: 2 }]);
    p.forget('u');
    expect(p.pending('u', 'secrets')).toEqual([]);
    now = PENDING_TTL_MS + 1;
    expect(p.pending('t', 'secrets')).toEqual([]);
  });
});

describe('superQuotaRefusal', () => {
  it('recognises a create the super ResourceQuota refused, and keeps only the quota part of the answer', () => {
    const msg =
      'POST /api/v1/namespaces/vc-1-ns/pods: 403 pods "web" is forbidden: exceeded quota: vc-tenant-quota, ' +
      'requested: pods=1, used: pods=2, limited: pods=2';
    expect(superQuotaRefusal(new ApiError(403, 'Forbidden', msg))).toBe(
      'the ResourceQuota of its super namespace refuses it (exceeded quota: vc-tenant-quota, requested: pods=1, ' +
        'used: pods=2, limited: pods=2)',
    );
    expect(superQuotaRefusal(new ApiError(403, 'Forbidden', 'POST x: 403 forbidden: RBAC'))).toBeUndefined();
    expect(superQuotaRefusal(new Error('exceeded quota:'))).toBeUndefined();
  });
});

describe('capRefusal', () => {
  it('tells the tenant with a Warning event, and a VCSynced condition where the kind has conditions', () => {
    const s = capRefusal(R.secrets, tenantSecret('default', 'big', 0), 'too big');
    expect(s.skip).toEqual({
      reason: 'QuotaExceeded',
      message: 'Secret default/big is not copied to the super cluster: too big',
    });
    expect(s.effects.map((e) => e.type)).toEqual(['event']);
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'default', name: 'p', uid: 'u' } };
    expect(capRefusal(R.pods, pod, 'too many').effects.map((e) => e.type)).toEqual(['event', 'tenantCondition']);
  });
});

describe('the planner with caps', () => {
  it('refuses a create beyond the count with a skip and an event, and writes nothing', async () => {
    const host = await PluginHost.load({ process: 'manager', builtins: [secrets] });
    const view = testTenant({ quota: { resourceQuota: {}, limitRange: [], objects: { secrets: { count: 2 } } } });
    const base = testContext({ tenant: view });
    const ns: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: base.names.superNamespace('default'),
        labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: view.key },
        annotations: {
          [ANN.cluster]: view.key,
          [ANN.namespace]: '',
          [ANN.name]: 'default',
          [ANN.uid]: 'ns-uid',
          [ANN.vcUid]: view.vcUid,
        },
      },
    };
    const ctx = testContext({
      tenant: view,
      tenantCache: new MapCache([
        [R.secrets, [tenantSecret('default', 'new', 10)]],
        [R.namespaces, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default', uid: 'ns-uid' } }]],
      ]),
      superCache: new MapCache([
        [R.namespaces, [ns]],
        [R.secrets, [superSecret(view, 'default', 'a', 1), superSecret(view, 'other', 'b', 1)]],
      ]),
    });
    const plan = planKey(host, secrets, ctx, { namespace: 'default', name: 'new' });
    expect(plan.steps).toEqual([]);
    expect(plan.skip?.reason).toBe('QuotaExceeded');
    expect(plan.effects.map((e) => e.type)).toEqual(['event']);
  });
});
