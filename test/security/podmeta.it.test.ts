/**
 * Hostile tenant placement and metadata (issue 12, Pods): a tenant with cluster-admin on its own apiserver tries to
 * leave the node pool the platform forces on its Pods, and to put labels and annotations on its super Namespaces,
 * Pods and Services that super-side NetworkPolicies, admission webhooks and add-ons act on. Each attempt must be
 * refused with a reason on the Pod, or leave no trace of the keys in the super cluster. A Pod refused under one policy
 * syncs, and shows VCSynced=True, once the platform widens the policy. Runs the real syncer against a real local
 * super cluster and one tenant control plane.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import type { PodsPolicyView } from '../../core/plugins/contract.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { formatMap, wholeMapKey } from '../../plugins/pods/downward.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';
import { Attempts } from './attempts.ts';

interface Pod extends KubeObject {
  spec: { nodeSelector?: Record<string, string>; tolerations?: Array<Record<string, unknown>> };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

interface Event extends KubeObject {
  involvedObject: { uid?: string };
  reason?: string;
  message?: string;
}

const POOL_TOLERATION = { key: 'pool', operator: 'Equal', value: 'tenants', effect: 'NoSchedule' } as const;

/** policy is the tenant's pods policy: the platform forces its tenant pool and lets Pods select by pool and os. */
const policy = (nodeLabelKeys: string[]): PodsPolicyView => ({
  nodeLabelKeys,
  forced: { nodeSelector: { pool: 'tenants' }, tolerations: [POOL_TOLERATION] },
});

const pod = (name: string, spec: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', ...meta },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
});

/** tenantKeys are the keys of a super object's labels or annotations that the syncer did not write itself. */
const tenantKeys = (m: Record<string, string> | undefined): string[] =>
  Object.keys(m ?? {})
    .filter((k) => !k.startsWith('tenancy.x-k8s.io/') && !k.startsWith('transparency.tenancy.x-k8s.io/'))
    .sort();

describe('hostile tenant placement and metadata against the forced pool and the allow-lists', () => {
  const attempts = new Attempts();
  let t: SharedTestSuper;
  let a: KubeClient;
  let tenant: Tenant;
  let registry: MutableTenantRegistry;
  let syncer: Syncer;
  let sns: string;
  let superDefaultNs: KubeObject;

  const refusedWithReason = async (name: string, field: string): Promise<string> => {
    const p = await eventually(async () => {
      const got = await a.get<Pod>(R.pods, 'default', name);
      const c = got.status?.conditions?.find((x) => x.type === 'VCSynced');
      expect(c).toMatchObject({ status: 'False', reason: 'PodPolicyViolation' });
      expect(c?.message).toContain(field);
      return got;
    });
    const events = await eventually(async () => {
      const list = (await a.list<Event>(R.events, { namespace: 'default' })).items.filter(
        (e) => e.involvedObject.uid === p.metadata?.uid && e.reason === 'PodPolicyViolation',
      );
      expect(list.length).toBeGreaterThan(0);
      return list;
    });
    expect(await t.client.getOrNull(R.pods, sns, name)).toBeNull();
    return events[0]!.message ?? '';
  };

  beforeAll(async () => {
    t = await sharedTestSuper();
    superDefaultNs = await t.client.get(R.namespaces, undefined, 'default');
    const cp = await t.sc.addControlPlane('tenant-m', { controllers: TENANT_CONTROLLERS });
    a = await cp.client();
    tenant = tenantFor(cp, 'team-m', 'm', randomUUID(), {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      pods: policy(['kubernetes.io/os', 'pool']),
    });
    sns = superNamespace(tenant.key, 'default');
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    registry = new MutableTenantRegistry([tenant]);
    // No patrol: a Pod refused before a policy change must come back because the tenant's settings changed.
    syncer = new Syncer({ superClient: t.client, host, registry, patrolIntervalMs: 0, workers: 4 });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(true));
    await eventually(() => a.get(R.serviceaccounts, 'default', 'default'), 90_000);
  }, 240_000);

  afterAll(async () => {
    attempts.report('placement and metadata');
    await syncer?.stop();
    await t?.stop();
  });

  it('refuses a Pod selecting another value of a forced node label, naming the field', async () => {
    await attempts.attempt('nodeSelector pool=platform against the forced pool=tenants', async () => {
      await a.create(R.pods, pod('other-pool', { nodeSelector: { pool: 'platform' } }));
      const reason = await refusedWithReason('other-pool', 'spec.nodeSelector["pool"]');
      expect(reason).toContain('pods.forced.nodeSelector');
      return reason;
    });
  });

  it('puts the forced selector and toleration on a Pod that names no pool', async () => {
    await attempts.attempt('a Pod without nodeSelector, to land outside the tenant pool', async () => {
      await a.create(R.pods, pod('no-pool', { nodeSelector: { 'kubernetes.io/os': 'linux' } }));
      const sp = await eventually(() => t.client.get<Pod>(R.pods, sns, 'no-pool'), 90_000);
      expect(sp.spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux', pool: 'tenants' });
      expect(sp.spec.tolerations).toContainEqual(POOL_TOLERATION);
      return `super Pod selects ${JSON.stringify(sp.spec.nodeSelector)} and tolerates the pool taint`;
    });
  });

  it('keeps keys super policies act on off the super Namespace', async () => {
    await attempts.attempt(
      'Namespace labelled for sidecar injection, privileged, renamed, owned elsewhere',
      async () => {
        await a.create(R.namespaces, {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: {
            name: 'shop',
            labels: {
              'istio-injection': 'enabled',
              'pod-security.kubernetes.io/enforce': 'privileged',
              'kubernetes.io/metadata.name': 'kube-system',
              [LABEL.cluster]: 'another-tenant',
              team: 'a',
              'app.kubernetes.io/part-of': 'shop',
            },
            annotations: {
              'scheduler.alpha.kubernetes.io/node-selector': 'pool=platform',
              'openshift.io/node-selector': 'pool=platform',
              owner: 'alice',
            },
          },
        });
        const name = superNamespace(tenant.key, 'shop');
        const ns = await eventually(async () => {
          const got = await t.client.get(R.namespaces, undefined, name);
          expect(got.metadata?.labels?.[LABEL.cluster]).toBe(tenant.key);
          return got;
        });
        const labels = ns.metadata?.labels ?? {};
        expect(tenantKeys(labels)).toEqual([
          'app.kubernetes.io/part-of',
          'kubernetes.io/metadata.name',
          'pod-security.kubernetes.io/audit',
          'pod-security.kubernetes.io/enforce',
          'pod-security.kubernetes.io/warn',
        ]);
        expect(labels['kubernetes.io/metadata.name']).toBe(name);
        expect(labels['pod-security.kubernetes.io/enforce']).toBe('baseline');
        expect(tenantKeys(ns.metadata?.annotations)).toEqual([]);
        return 'super Namespace carries only app.kubernetes.io/part-of of the tenant keys; PSA baseline, own name';
      },
    );
  });

  it('keeps webhook and ownership keys off the super Pod, and its selector labels on it', async () => {
    await attempts.attempt(
      'Pod labelled and annotated for sidecar injection, cloud identity, another owner',
      async () => {
        await a.create(
          R.pods,
          pod(
            'labelled',
            {},
            {
              labels: { app: 'web', 'sidecar.istio.io/inject': 'true', [LABEL.cluster]: 'another-tenant' },
              annotations: {
                'sidecar.istio.io/inject': 'true',
                'iam.amazonaws.com/role': 'platform-admin',
                [ANN.uid]: 'forged',
                note: 'mine',
              },
            },
          ),
        );
        const sp = await eventually(() => t.client.get<Pod>(R.pods, sns, 'labelled'), 90_000);
        expect(tenantKeys(sp.metadata?.labels)).toEqual(['app']);
        expect(sp.metadata?.labels?.[LABEL.cluster]).toBe(tenant.key);
        expect(tenantKeys(sp.metadata?.annotations)).toEqual(['note']);
        const tp = await a.get(R.pods, 'default', 'labelled');
        expect(sp.metadata?.annotations?.[ANN.uid]).toBe(tp.metadata?.uid);
        return 'super Pod keeps app and note; no istio, IAM or forged ownership key';
      },
    );
  });

  it('keeps them off when the tenant relabels a running Pod, while its allow-listed keys and downward file follow', async () => {
    await attempts.attempt(
      'Pod relabelled with ownership keys, another owner and a forged downward-volume file',
      async () => {
        const volumes = [
          { name: 'd', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        ];
        await a.create(R.pods, pod('relabelled', { volumes }, { labels: { app: 'web' } }));
        await eventually(() => t.client.get<Pod>(R.pods, sns, 'relabelled'), 90_000);
        const labels = { app: 'api', 'sidecar.istio.io/inject': 'true', [LABEL.cluster]: 'another-tenant' };
        await a.patch(
          R.pods,
          'default',
          'relabelled',
          {
            metadata: {
              labels,
              annotations: {
                [ANN.uid]: 'forged',
                [ANN.cluster]: 'another-tenant',
                [wholeMapKey('labels')]: 'role="admin"',
                note: 'changed',
              },
            },
          },
          'merge',
        );
        const sp = await eventually(async () => {
          const got = await t.client.get<Pod>(R.pods, sns, 'relabelled');
          expect(got.metadata?.labels?.app).toBe('api');
          return got;
        }, 90_000);
        const tp = await a.get(R.pods, 'default', 'relabelled');
        expect(tenantKeys(sp.metadata?.labels)).toEqual(['app']);
        expect(sp.metadata?.labels?.[LABEL.cluster]).toBe(tenant.key);
        expect(sp.metadata?.annotations?.[ANN.uid]).toBe(tp.metadata?.uid);
        expect(sp.metadata?.annotations?.[ANN.cluster]).toBe(tenant.key);
        expect(tenantKeys(sp.metadata?.annotations).filter((k) => !k.startsWith('downward.'))).toEqual(['note']);
        // the file the kubelet writes is the tenant Pod's labels, as a kubelet of the tenant would write it
        expect(sp.metadata?.annotations?.[wholeMapKey('labels')]).toBe(formatMap(tp.metadata?.labels ?? {}));
        expect(formatMap(tp.metadata?.labels ?? {})).toContain(formatMap(labels));
        return 'super Pod follows app and note; no istio, forged ownership or forged downward file';
      },
    );
  });

  it('keeps load-balancer and address-pool annotations off the super Service', async () => {
    await attempts.attempt('Service annotated for an internal load balancer and a platform address pool', async () => {
      await a.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name: 'web',
          namespace: 'default',
          labels: { app: 'web', 'service.kubernetes.io/service-proxy-name': 'platform-proxy' },
          annotations: {
            'service.beta.kubernetes.io/aws-load-balancer-internal': 'true',
            'metallb.universe.tf/address-pool': 'platform',
            [ANN.tenantClusterIP]: '10.0.0.1',
          },
        },
        spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
      });
      const tenantSvc = await a.get<KubeObject & { spec: { clusterIP?: string } }>(R.services, 'default', 'web');
      const ss = await eventually(() => t.client.get(R.services, sns, 'web'));
      expect(tenantKeys(ss.metadata?.labels)).toEqual(['app']);
      expect(tenantKeys(ss.metadata?.annotations)).toEqual([]);
      expect(ss.metadata?.annotations?.[ANN.tenantClusterIP]).toBe(tenantSvc.spec.clusterIP);
      return 'super Service keeps app and the syncer-written tenant cluster IP, nothing else';
    });
  });

  it('syncs a Pod refused under the old policy once the platform widens it, and clears its VCSynced refusal', async () => {
    await a.create(R.pods, pod('later', { nodeSelector: { 'topology.kubernetes.io/zone': 'a' } }));
    await refusedWithReason('later', 'spec.nodeSelector["topology.kubernetes.io/zone"]');
    registry.upsert({ ...tenant, pods: policy(['kubernetes.io/os', 'pool', 'topology.kubernetes.io/*']) });
    const sp = await eventually(() => t.client.get<Pod>(R.pods, sns, 'later'), 60_000);
    expect(sp.spec.nodeSelector).toEqual({ 'topology.kubernetes.io/zone': 'a', pool: 'tenants' });
    await eventually(async () => {
      const p = await a.get<Pod>(R.pods, 'default', 'later');
      expect(p.status?.conditions?.find((c) => c.type === 'VCSynced')).toMatchObject({
        status: 'True',
        reason: 'Synced',
      });
    });
  });

  it("changed nothing of the super's own namespaces, and counts every attempt refused", async () => {
    const now = await t.client.get(R.namespaces, undefined, 'default');
    expect(now.metadata?.labels).toEqual(superDefaultNs.metadata?.labels);
    expect(now.metadata?.annotations).toEqual(superDefaultNs.metadata?.annotations);
    const mine = (await t.client.list(R.pods, { labelSelector: `${LABEL.cluster}=${tenant.key}` })).items
      .map((p) => p.metadata?.name)
      .sort();
    expect(mine).toEqual(['labelled', 'later', 'no-pool', 'relabelled']);
    expect(attempts.summary()).toBe('attempts 6, refused 6, succeeded 0');
  });
});
