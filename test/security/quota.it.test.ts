/**
 * Hostile tenant quotas (issue 12, Quotas): a tenant with cluster-admin on its own apiserver tries to take more of the
 * shared super cluster and storage than its policy gives: by multiplying namespaces, with an oversized Secret, with
 * more Secrets than the cap spread over namespaces, with ConfigMaps past the byte total, by overriding its quota from
 * inside, and by filling its etcd. Each attempt is refused with a reason the tenant can see, and the super cluster and
 * the other tenant still take writes. Runs the real syncer on a real local super cluster and two tenant control planes
 * made by the local provisioner, each on an etcd of its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { LABEL, provenanceOf, rootNamespace, superNamespace } from '../../core/names/names.ts';
import type { QuotaPolicyView } from '../../core/plugins/contract.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { managerIdentity } from '../../core/dev/embedded/embedded.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { ANY_RESOURCE } from '../../core/syncer/caps.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { QUOTA_OBJECT_NAME } from '../../plugins/sdk/src/wellknown.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

interface Event extends KubeObject {
  involvedObject: { kind?: string; name?: string; namespace?: string };
  reason?: string;
  message?: string;
}

const MiB = 1024 * 1024;
/** ETCD_BYTES is tenant A's etcd quota: small, so the fill takes seconds. */
const ETCD_BYTES = 32 * MiB;
const SECRET_COUNT = 5;
const MAX_BYTES = 64 * 1024;
const CONFIGMAP_TOTAL = 150_000;

const UID_A = '33333333-aaaa-4aaa-8aaa-0000000000a3';
const UID_B = '44444444-bbbb-4bbb-8bbb-0000000000b4';

const vcObject = (namespace: string, name: string, uid: string): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { namespace, name, uid },
  spec: {},
});

const secret = (namespace: string, name: string, bytes: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { namespace, name },
  data: { blob: Buffer.alloc(bytes, 7).toString('base64') },
});

const configMap = (namespace: string, name: string, chars: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name },
  data: { blob: 'x'.repeat(chars) },
});

describe('hostile tenant against its quotas and the shared storage', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let dir: string;
  let local: LocalProvisioner;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let syncer: Syncer;
  let registry: MutableTenantRegistry;
  let quota: QuotaPolicyView;
  let namespaceCap: number;

  /** superOf lists tenant A's super objects of a resource by tenant `namespace/name`. */
  const superOf = async (r: typeof R.secrets): Promise<string[]> =>
    (await t.client.list(r, { labelSelector: `${LABEL.cluster}=${tenantA.key}` })).items
      .map((o) => provenanceOf(o))
      .filter((p) => !!p)
      .map((p) => `${p.namespace}/${p.name}`)
      .sort();

  /** quotaEvent waits for the Warning QuotaExceeded event on a tenant object and returns its message. */
  const quotaEvent = (kind: string, namespace: string, name: string, cap: string): Promise<string> =>
    eventually(async () => {
      const list = (await a.list<Event>(R.events, { namespace: namespace || 'default' })).items;
      const e = list.find(
        (x) => x.reason === 'QuotaExceeded' && x.involvedObject.kind === kind && x.involvedObject.name === name,
      );
      expect(e?.message).toContain(cap);
      return e!.message!;
    }, 60_000);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    dir = mkdtempSync(join(tmpdir(), 'vc-quota-'));
    local = new LocalProvisioner(join(dir, 'tenants'), t.sc.etcd);
    const rootA = rootNamespace('team-a', 'qa', UID_A);
    const rootB = rootNamespace('team-b', 'qb', UID_B);
    const started = performance.now();
    await Promise.all([
      local.ensure(vcObject('team-a', 'qa', UID_A), rootA, { etcdBytes: ETCD_BYTES }),
      local.ensure(vcObject('team-b', 'qb', UID_B), rootB),
    ]);
    console.log(`two tenant control planes with their own etcd: ${Math.round(performance.now() - started)} ms`);
    const cpA = local.controlPlane(rootA)!;
    const cpB = local.controlPlane(rootB)!;
    a = await cpA.client();
    b = await cpB.client();
    // The namespaces the tenant starts with (default, kube-system, ...) plus two more are within the cap.
    const start = (await a.list(R.namespaces)).items.length;
    namespaceCap = start + 2;
    quota = {
      resourceQuota: { pods: '2', secrets: '20' },
      limitRange: [{ type: 'PersistentVolumeClaim', max: { storage: '10Gi' } }],
      objects: {
        namespaces: { count: namespaceCap },
        secrets: { count: SECRET_COUNT, maxBytes: MAX_BYTES },
        configmaps: { count: 100, maxBytes: MAX_BYTES, totalBytes: CONFIGMAP_TOTAL },
        // Every kind not named above (ServiceAccounts, Pods, NetworkPolicies, ...) has this size cap.
        [ANY_RESOURCE]: { maxBytes: MAX_BYTES },
      },
    };
    tenantA = tenantFor(cpA, 'team-a', 'qa', UID_A, { quota });
    const tenantB = tenantFor(cpB, 'team-b', 'qb', UID_B, { quota });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    // The syncer writes as the manager (deploy/manager RBAC, deploy/policy admission), as it does in a deployment.
    syncer = new Syncer({
      superClient: await KubeClient.fromString(await managerIdentity(t.sc, 'kube-system')),
      host,
      registry: (registry = new MutableTenantRegistry([tenantA, tenantB])),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
    await eventually(
      () => t.client.get(R.resourcequotas, superNamespace(tenantA.key, 'default'), QUOTA_OBJECT_NAME),
      60_000,
    );
  }, 240_000);

  afterAll(async () => {
    attempts.report('quota boundary');
    await syncer?.stop();
    await local?.stop();
    await t?.stop();
    if (dir && !process.env.KEEP_STATE) rmSync(dir, { recursive: true, force: true });
  });

  it('caps the namespaces, each with the policy quota, so namespaces do not multiply the quota', async () => {
    await attempts.attempt('namespace multiplication', async () => {
      const names = ['more-1', 'more-2', 'more-3', 'more-4'];
      const create = (n: string) =>
        a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });
      // Two fit under the cap; each super namespace carries the ResourceQuota and LimitRange of the policy.
      for (const n of names.slice(0, 2)) {
        await create(n);
        const sns = superNamespace(tenantA.key, n);
        const rq = await eventually(() => t.client.get(R.resourcequotas, sns, QUOTA_OBJECT_NAME), 60_000);
        expect((rq as { spec?: unknown }).spec).toEqual({ hard: quota.resourceQuota });
        expect(rq.metadata?.labels?.[LABEL.cluster]).toBe(tenantA.key);
        // the ResourceQuota is written before the LimitRange: the second may come a moment after the first is seen
        const lr = await eventually(() => t.client.get(R.limitranges, sns, QUOTA_OBJECT_NAME), 60_000);
        expect((lr as { spec?: { limits?: unknown } }).spec?.limits).toEqual(quota.limitRange);
      }
      for (const n of names.slice(2)) await create(n);
      await quotaEvent('Namespace', '', 'more-3', `quota.objects.namespaces.count`);
      const message = await quotaEvent('Namespace', '', 'more-4', `quota.objects.namespaces.count`);
      const mine = (await t.client.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${tenantA.key}` })).items;
      expect(mine).toHaveLength(namespaceCap);
      return message;
    });
  });

  it('keeps the quota of its super namespaces whatever the tenant writes inside', async () => {
    await attempts.attempt('ResourceQuota vc-tenant-quota written in the tenant', async () => {
      await a.create(R.resourcequotas, {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { namespace: 'default', name: QUOTA_OBJECT_NAME },
        spec: { hard: { pods: '100000', secrets: '100000' } },
      });
      await new Promise((r) => setTimeout(r, 2000));
      const rq = await t.client.get(R.resourcequotas, superNamespace(tenantA.key, 'default'), QUOTA_OBJECT_NAME);
      expect((rq as { spec?: unknown }).spec).toEqual({ hard: quota.resourceQuota });
      return 'ResourceQuotas are not synced: the super namespace keeps the policy quota';
    });
  });

  it('puts the quota objects back when they are deleted in the super cluster', async () => {
    const sns = superNamespace(tenantA.key, 'more-1');
    for (const r of [R.resourcequotas, R.limitranges]) {
      const before = await t.client.get(r, sns, QUOTA_OBJECT_NAME);
      await t.client.delete(r, sns, QUOTA_OBJECT_NAME);
      await eventually(async () => {
        const now = await t.client.get(r, sns, QUOTA_OBJECT_NAME);
        expect(now.metadata?.uid).not.toBe(before.metadata?.uid);
        expect((now as { spec?: unknown }).spec).toEqual((before as { spec?: unknown }).spec);
      }, 30_000);
    }
  });

  it('follows a policy change into every existing super namespace', async () => {
    const hard = { ...quota.resourceQuota, pods: '7' };
    registry.upsert({ ...tenantA, quota: { ...quota, resourceQuota: hard } });
    for (const ns of ['default', 'more-1', 'more-2'])
      await eventually(async () => {
        const rq = await t.client.get(R.resourcequotas, superNamespace(tenantA.key, ns), QUOTA_OBJECT_NAME);
        expect((rq as { spec?: unknown }).spec).toEqual({ hard });
      }, 30_000);
    registry.upsert(tenantA);
    await eventually(async () => {
      const rq = await t.client.get(R.resourcequotas, superNamespace(tenantA.key, 'default'), QUOTA_OBJECT_NAME);
      expect((rq as { spec?: unknown }).spec).toEqual({ hard: quota.resourceQuota });
    }, 30_000);
  });

  it('tells the tenant when the ResourceQuota of a super namespace refuses its Pod', async () => {
    await attempts.attempt('Pods beyond the namespace ResourceQuota', async () => {
      await eventually(() => a.get(R.serviceaccounts, 'more-2', 'default'), 60_000);
      const pod = (name: string): KubeObject => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { namespace: 'more-2', name },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      });
      for (const n of ['p-0', 'p-1']) await a.create(R.pods, pod(n));
      const sns = superNamespace(tenantA.key, 'more-2');
      await eventually(
        async () => expect((await t.client.list(R.pods, { namespace: sns })).items).toHaveLength(2),
        60_000,
      );
      await a.create(R.pods, pod('p-2'));
      const message = await quotaEvent('Pod', 'more-2', 'p-2', 'exceeded quota: vc-tenant-quota');
      await eventually(async () => {
        const p = await a.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(
          R.pods,
          'more-2',
          'p-2',
        );
        expect(p.status?.conditions?.find((c) => c.type === 'VCSynced')?.status).toBe('False');
      }, 30_000);
      expect(message).not.toContain(sns);
      expect((await t.client.list(R.pods, { namespace: sns })).items).toHaveLength(2);
      return message;
    });
  });

  it('holds the tenant to its compute quota over all its namespaces; Pods without requests count at the default', async () => {
    await attempts.attempt('Pods without requests over the tenant-wide requests.cpu', async () => {
      // more-2 holds p-0 and p-1 (100m each by default); p-2 waits for the namespace quota and is not wanted here.
      await a.delete(R.pods, 'more-2', 'p-2');
      const compute = { hard: { 'requests.cpu': '300m' }, defaultRequests: { cpu: '100m', memory: '64Mi' } };
      registry.upsert({ ...tenantA, quota: { ...quota, compute } });
      const pod = (namespace: string, name: string): KubeObject => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { namespace, name },
        spec: { containers: [{ name: 'c', image: 'nginx' }] },
      });
      await eventually(() => a.get(R.serviceaccounts, 'more-1', 'default'), 60_000);
      await a.create(R.pods, pod('default', 'c-0'));
      await eventually(async () => expect(await superOf(R.pods)).toContain('default/c-0'), 60_000);
      await a.create(R.pods, pod('more-1', 'c-1'));
      const message = await quotaEvent('Pod', 'more-1', 'c-1', 'quota.compute.hard["requests.cpu"]');
      expect(message).toContain('400m of requests.cpu');
      await eventually(async () => {
        const p = await a.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(
          R.pods,
          'more-1',
          'c-1',
        );
        expect(p.status?.conditions?.find((c) => c.type === 'VCSynced')?.status).toBe('False');
      }, 30_000);
      expect(await superOf(R.pods)).not.toContain('more-1/c-1');
      // One of the tenant's Pods goes: the refused one is copied on its next try.
      await a.delete(R.pods, 'more-2', 'p-0');
      await eventually(async () => expect(await superOf(R.pods)).toContain('more-1/c-1'), 60_000);
      registry.upsert(tenantA);
      return message;
    });
  });

  it('refuses an oversized Secret with an event naming the cap', async () => {
    await attempts.attempt('Secret over maxBytes', async () => {
      await a.create(R.secrets, secret('default', 'huge', 200 * 1024));
      const message = await quotaEvent('Secret', 'default', 'huge', 'quota.objects.secrets.maxBytes');
      expect(await superOf(R.secrets)).not.toContain('default/huge');
      return message;
    });
  });

  it('stops Secrets at the tenant-wide count, however they are spread over namespaces', async () => {
    await attempts.attempt('Secrets beyond the count cap over two namespaces', async () => {
      const names = Array.from({ length: SECRET_COUNT + 3 }, (_, i) => [i % 2 ? 'default' : 'more-1', `s-${i}`]);
      await Promise.all(names.map(([ns, n]) => a.create(R.secrets, secret(ns!, n!, 1024))));
      await eventually(async () => expect(await superOf(R.secrets)).toHaveLength(SECRET_COUNT), 60_000);
      const copied = new Set(await superOf(R.secrets));
      const refused = names.find(([ns, n]) => !copied.has(`${ns}/${n}`))!;
      const message = await quotaEvent('Secret', refused[0]!, refused[1]!, 'quota.objects.secrets.count');
      // Settled: no late create slipped past the cap.
      await new Promise((r) => setTimeout(r, 2000));
      expect(await superOf(R.secrets)).toHaveLength(SECRET_COUNT);
      return message;
    });
  });

  it('stops ConfigMaps at the tenant-wide byte total', async () => {
    await attempts.attempt('ConfigMaps beyond totalBytes', async () => {
      for (const n of ['c-0', 'c-1']) await a.create(R.configmaps, configMap('more-2', n, 60_000));
      await eventually(async () => expect(await superOf(R.configmaps)).toContain('more-2/c-1'), 60_000);
      await eventually(async () => expect(await superOf(R.configmaps)).toContain('more-2/c-0'), 60_000);
      await a.create(R.configmaps, configMap('more-2', 'c-2', 60_000));
      const message = await quotaEvent('ConfigMap', 'more-2', 'c-2', 'quota.objects.configmaps.totalBytes');
      const copied = await superOf(R.configmaps);
      expect(copied).toContain('more-2/c-0');
      expect(copied).toContain('more-2/c-1');
      expect(copied).not.toContain('more-2/c-2');
      return message;
    });
  });

  it('refuses an oversized object of a kind the policy does not name, by the caps of "*"', async () => {
    await attempts.attempt('NetworkPolicy over quota.objects["*"].maxBytes', async () => {
      // About 80 KB of label values: a kind with no entry of its own in quota.objects is no way around the caps.
      const values = Array.from({ length: 1200 }, (_, i) => `v${i}-${'x'.repeat(56)}`);
      const big = (name: string, n: number): KubeObject => ({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { namespace: 'default', name },
        spec: {
          podSelector: {},
          ingress: [
            {
              from: [
                { podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: values.slice(0, n) }] } },
              ],
            },
          ],
        },
      });
      await a.create(R.networkpolicies, big('small', 10));
      await a.create(R.networkpolicies, big('huge', values.length));
      await eventually(async () => expect(await superOf(R.networkpolicies)).toContain('default/small'), 60_000);
      const message = await quotaEvent('NetworkPolicy', 'default', 'huge', 'quota.objects["*"].maxBytes');
      expect(await superOf(R.networkpolicies)).not.toContain('default/huge');
      return message;
    });
  });

  it('fills its own etcd until refused, while the super cluster and the other tenant take writes', async () => {
    await attempts.attempt('fill the etcd', async () => {
      const etcd = local.tenantEtcd(rootNamespace('team-a', 'qa', UID_A))!;
      const rssBefore = etcd.process.rssBytes();
      const started = performance.now();
      let refusal = '';
      let written = 0;
      for (let i = 0; i < 200 && !refusal; i++) {
        try {
          await a.create(R.configmaps, configMap('default', `fill-${i}`, 900 * 1024));
          written++;
        } catch (e) {
          refusal = e instanceof Error ? e.message : String(e);
        }
      }
      console.log(
        `etcd fill: ${written} ConfigMaps of 900 KiB in ${Math.round(performance.now() - started)} ms before the ` +
          `refusal; tenant etcd RSS ${(rssBefore / MiB).toFixed(1)} -> ${(etcd.process.rssBytes() / MiB).toFixed(1)} MiB`,
      );
      expect(refusal).toMatch(/database space exceeded/);
      expect(written).toBeLessThan(ETCD_BYTES / (900 * 1024));
      // The super cluster and tenant B are untouched by it.
      await t.client.create(R.configmaps, configMap('default', 'after-fill', 1000));
      await b.create(R.configmaps, configMap('default', 'after-fill', 1000));
      expect(await t.sc.etcd.healthy()).toBe(true);
      return refusal;
    });
  }, 180_000);
});
