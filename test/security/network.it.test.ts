/**
 * Network isolation objects (issue 12, Services and network): every super namespace of a tenant carries the tenant
 * isolation NetworkPolicy, and tenant NetworkPolicies reach the super cluster only in a form that cannot select
 * anything outside the tenant. A hostile tenant (cluster-admin on its own apiserver) tries to widen its policies to
 * another tenant or the super cluster, and to replace or remove the isolation policy. The syncer writes as the
 * manager identity. The objects are checked here; which packets flow is the real-nodes suite's to test. Selectors
 * are evaluated by the super apiserver itself (a label-selector list of its namespaces), not by a re-implementation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LABEL, MANAGER, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { managerIdentity } from '../../core/dev/embedded/embedded.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { NOT_MANAGED, REFUSED, RESERVED_NAME } from '../../plugins/networkpolicies/index.ts';
import { INGRESS_NAMESPACE_LABEL, isolationPolicy } from '@virtualcluster-ts/plugin-sdk/network';
import type { LabelSelector, NetworkPolicy, NetworkPolicySpec } from '@virtualcluster-ts/plugin-sdk/network';
import { builtinPlugins } from '../../plugins/registry.ts';
import { SUPER_INTERNAL_CIDRS, TENANT_ISOLATION_POLICY } from '../../plugins/sdk/src/index.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

interface Event extends KubeObject {
  involvedObject: { uid?: string };
  reason?: string;
  message?: string;
}

const NAME = 'kubernetes.io/metadata.name';

/** selectorString writes a LabelSelector in the list API's labelSelector syntax. */
function selectorString(s: LabelSelector): string {
  const parts = Object.entries(s.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of s.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

const np = (namespace: string, name: string, spec: NetworkPolicySpec): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace, name },
  spec,
});

describe('hostile tenant NetworkPolicies against the tenant isolation policy', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let syncer: Syncer;

  const snsA = (ns: string): string => superNamespace(tenantA.key, ns);
  const superNP = (ns: string, name: string): Promise<NetworkPolicy | null> =>
    t.client.getOrNull<NetworkPolicy>(R.networkpolicies, ns, name);

  /** selected lists the super namespaces a namespaceSelector of a synced policy matches, as the super apiserver sees it. */
  const selected = async (sel: LabelSelector): Promise<KubeObject[]> =>
    (await t.client.list(R.namespaces, { labelSelector: selectorString(sel) })).items;

  /** onlyTenantA checks that every namespaceSelector of a super policy matches only tenant A's namespaces. */
  const onlyTenantA = async (p: NetworkPolicy): Promise<number> => {
    const peers = [
      ...(p.spec?.ingress ?? []).flatMap((r) => r.from ?? []),
      ...(p.spec?.egress ?? []).flatMap((r) => r.to ?? []),
    ];
    let n = 0;
    for (const peer of peers.filter((x) => x.namespaceSelector)) {
      for (const ns of await selected(peer.namespaceSelector!)) {
        expect(ns.metadata?.labels?.[LABEL.cluster]).toBe(tenantA.key);
        expect(ns.metadata?.labels?.[INGRESS_NAMESPACE_LABEL]).toBeUndefined();
        expect(ns.metadata?.labels?.[LABEL.managedBy]).toBe(MANAGER);
        n++;
      }
    }
    return n;
  };

  /** refusedEvent waits for the Warning event the syncer records on a tenant NetworkPolicy it does not sync. */
  const refusedEvent = async (ns: string, name: string, reason: string): Promise<string> => {
    const uid = (await a.get(R.networkpolicies, ns, name)).metadata?.uid;
    const ev = await eventually(async () => {
      const e = (await a.list<Event>(R.events, { namespace: ns })).items.find(
        (x) => x.involvedObject.uid === uid && x.reason === reason,
      );
      expect(e).toBeDefined();
      return e!;
    });
    return `${ev.reason}: ${ev.message}`;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    [cpA, cpB] = await Promise.all([t.sc.addControlPlane('tenant-a'), t.sc.addControlPlane('tenant-b')]);
    [a, b] = await Promise.all([cpA.client(), cpB.client()]);
    tenantA = tenantFor(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000a1', {
      apiserverEndpoint: { host: '127.0.0.1', port: 6443 },
    });
    // Tenant B's policy narrows the super-internal ranges: its isolation policy follows it.
    tenantB = tenantFor(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000b2', {
      network: { internalCIDRs: ['10.0.0.0/8'] },
    });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    expect(host.failures).toEqual([]);
    // The syncer writes as the manager (deploy/manager RBAC, deploy/policy admission), as it does in a deployment.
    syncer = new Syncer({
      superClient: await KubeClient.fromString(await managerIdentity(t.sc, 'kube-system')),
      host,
      registry: new MutableTenantRegistry([tenantA, tenantB]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
    await a.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'app', labels: { team: 'web' } },
    });
    await eventually(() => t.client.get(R.networkpolicies, snsA('app'), TENANT_ISOLATION_POLICY), 60_000);
  }, 240_000);

  afterAll(async () => {
    attempts.report('network boundary');
    await syncer?.stop();
    await t?.stop();
  });

  it('keeps the isolation policy in every super namespace of each tenant, selecting only that tenant', async () => {
    for (const [tenant, namespaces] of [
      [tenantA, ['default', 'kube-system', 'app']],
      [tenantB, ['default', 'kube-system']],
    ] as const) {
      for (const ns of namespaces) {
        const sns = superNamespace(tenant.key, ns);
        const p = await eventually(async () => {
          const got = await superNP(sns, TENANT_ISOLATION_POLICY);
          expect(got).not.toBeNull();
          return got!;
        });
        expect(p.metadata?.labels).toEqual({ [LABEL.managedBy]: MANAGER, [LABEL.cluster]: tenant.key });
        expect(p.spec).toMatchObject(isolationPolicy(tenant).spec!);
        // Ingress comes only from namespaces labelled with this tenant's key: its own, and this one is among them.
        const from = p.spec?.ingress?.[0]?.from?.[0]?.namespaceSelector;
        expect(from).toEqual({ matchLabels: { [LABEL.cluster]: tenant.key } });
        const names = (await selected(from!)).map((n) => n.metadata?.name);
        expect(names).toContain(sns);
        for (const n of names) expect(n!.startsWith(tenant.key)).toBe(true);
        // The platform's ingress controllers come from namespaces only the platform labels: no tenant's.
        const ingressFrom = p.spec?.ingress?.[0]?.from?.[1]?.namespaceSelector;
        expect(ingressFrom).toEqual({ matchLabels: { [INGRESS_NAMESPACE_LABEL]: 'true' } });
        for (const n of await selected(ingressFrom!)) expect(n.metadata?.labels?.[LABEL.cluster]).toBeUndefined();
      }
    }
    // Tenant A's apiserver is reached at an address: one egress rule for it, and nothing internal beyond it.
    const egress = (await superNP(snsA('default'), TENANT_ISOLATION_POLICY))!.spec!.egress!;
    expect(egress).toContainEqual({
      to: [{ ipBlock: { cidr: '127.0.0.1/32' } }],
      ports: [{ protocol: 'TCP', port: 6443 }],
    });
    expect(egress.at(-1)?.to?.[0]?.ipBlock?.except).toEqual(SUPER_INTERNAL_CIDRS.filter((c) => !c.includes(':')));
    const egressB = (await superNP(superNamespace(tenantB.key, 'default'), TENANT_ISOLATION_POLICY))!.spec!.egress!;
    expect(egressB.at(-1)?.to?.[0]?.ipBlock).toEqual({ cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] });
  });

  it('syncs a tenant policy with its namespace names translated to super names of the tenant', async () => {
    await a.create(
      R.networkpolicies,
      np('app', 'from-default', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { [NAME]: 'default' } } }],
            ports: [{ protocol: 'TCP', port: 5432 }],
          },
        ],
      }),
    );
    const p = await eventually(async () => {
      const got = await superNP(snsA('app'), 'from-default');
      expect(got).not.toBeNull();
      return got!;
    });
    expect(p.spec?.podSelector).toEqual({ matchLabels: { app: 'db' } });
    const sel = p.spec!.ingress![0]!.from![0]!.namespaceSelector!;
    expect(sel.matchLabels).toEqual({ [NAME]: snsA('default') });
    expect((await selected(sel)).map((n) => n.metadata?.name)).toEqual([snsA('default')]);
  });

  it('confines a policy admitting all namespaces to the tenant', async () => {
    await attempts.attempt('ingress from namespaceSelector {} (every namespace)', async () => {
      await a.create(
        R.networkpolicies,
        np('app', 'from-all', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {} }] }] }),
      );
      const p = await eventually(
        async () => (await superNP(snsA('app'), 'from-all')) ?? Promise.reject(new Error('not synced')),
      );
      const n = await onlyTenantA(p);
      expect(n).toBeGreaterThanOrEqual(3);
      return `synced confined: selects ${n} namespaces, all tenant A's`;
    });
  });

  it("cannot select the other tenant's namespaces by their super name or by its tenant key", async () => {
    const victim = superNamespace(tenantB.key, 'default');
    await attempts.attempt("ingress from the other tenant's super namespace by name", async () => {
      await a.create(
        R.networkpolicies,
        np('app', 'from-victim', {
          podSelector: {},
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { [NAME]: victim } } }] }],
        }),
      );
      const p = await eventually(
        async () => (await superNP(snsA('app'), 'from-victim')) ?? Promise.reject(new Error('not synced')),
      );
      expect(await onlyTenantA(p)).toBe(0);
      return 'synced confined: selects no namespace';
    });
    await attempts.attempt("egress to namespaces labelled with the other tenant's key", async () => {
      await a.create(
        R.networkpolicies,
        np('app', 'to-victim', {
          podSelector: {},
          policyTypes: ['Egress'],
          egress: [{ to: [{ namespaceSelector: { matchLabels: { [LABEL.cluster]: tenantB.key } } }] }],
        }),
      );
      const p = await eventually(
        async () => (await superNP(snsA('app'), 'to-victim')) ?? Promise.reject(new Error('not synced')),
      );
      expect(await onlyTenantA(p)).toBe(0);
      return 'synced confined: selects no namespace';
    });
    await attempts.attempt(
      "label a tenant namespace with the other tenant's key and as an ingress controller's",
      async () => {
        await a.patch(
          R.namespaces,
          undefined,
          'app',
          {
            metadata: {
              labels: {
                [LABEL.cluster]: tenantB.key,
                [INGRESS_NAMESPACE_LABEL]: 'true',
                'app.kubernetes.io/part-of': 'shop',
              },
            },
          },
          'merge',
        );
        // The harmless label (allowed for namespaces by the copied-metadata defaults) arrives; the forged keys do not.
        const ns = await eventually(async () => {
          const got = await t.client.get(R.namespaces, undefined, snsA('app'));
          expect(got.metadata?.labels?.['app.kubernetes.io/part-of']).toBe('shop');
          return got;
        });
        expect(ns.metadata?.labels?.[LABEL.cluster]).toBe(tenantA.key);
        expect(ns.metadata?.labels?.[INGRESS_NAMESPACE_LABEL]).toBeUndefined();
        return 'reserved label stripped on the way down';
      },
    );
  });

  it('clips egress to everywhere and refuses egress into the super ranges, with a reason', async () => {
    await attempts.attempt('egress to every address (0.0.0.0/0) and every destination', async () => {
      await a.create(
        R.networkpolicies,
        np('app', 'to-anywhere', {
          podSelector: {},
          policyTypes: ['Egress'],
          egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }, {}],
        }),
      );
      const p = await eventually(
        async () => (await superNP(snsA('app'), 'to-anywhere')) ?? Promise.reject(new Error('not synced')),
      );
      const blocks = p.spec!.egress!.flatMap((r) => r.to ?? []).flatMap((x) => (x.ipBlock ? [x.ipBlock] : []));
      expect(p.spec!.egress!.every((r) => (r.to ?? []).length > 0)).toBe(true);
      for (const blk of blocks)
        for (const c of SUPER_INTERNAL_CIDRS.filter((x) => x.includes(':') === blk.cidr.includes(':')))
          expect(blk.except).toContain(c);
      await onlyTenantA(p);
      return 'synced clipped: super-internal ranges excepted';
    });
    await attempts.attempt('egress to the cloud metadata address 169.254.169.254/32', async () => {
      await a.create(
        R.networkpolicies,
        np('app', 'to-metadata', {
          podSelector: {},
          policyTypes: ['Egress'],
          egress: [{ to: [{ ipBlock: { cidr: '169.254.169.254/32' } }] }],
        }),
      );
      const reason = await refusedEvent('app', 'to-metadata', REFUSED);
      expect(reason).toContain('spec.egress[0].to[0].ipBlock.cidr');
      expect(await superNP(snsA('app'), 'to-metadata')).toBeNull();
      return reason;
    });
  });

  it('cannot replace or remove the isolation policy through its apiserver', async () => {
    const before = (await superNP(snsA('default'), TENANT_ISOLATION_POLICY))!;
    await attempts.attempt(`create a NetworkPolicy named ${TENANT_ISOLATION_POLICY} admitting everything`, async () => {
      await a.create(
        R.networkpolicies,
        np('default', TENANT_ISOLATION_POLICY, {
          podSelector: {},
          policyTypes: ['Ingress', 'Egress'],
          ingress: [{}],
          egress: [{}],
        }),
      );
      const reason = await refusedEvent('default', TENANT_ISOLATION_POLICY, RESERVED_NAME);
      const after = (await superNP(snsA('default'), TENANT_ISOLATION_POLICY))!;
      expect(after.metadata?.uid).toBe(before.metadata?.uid);
      expect(after.spec).toEqual(before.spec);
      expect(after.metadata?.annotations).toBeUndefined();
      return reason;
    });
    await attempts.attempt(`delete its NetworkPolicy named ${TENANT_ISOLATION_POLICY}`, async () => {
      await a.delete(R.networkpolicies, 'default', TENANT_ISOLATION_POLICY);
      // Another tenant write, synced after the delete, shows the syncer has seen it.
      await a.create(R.networkpolicies, np('default', 'marker', { podSelector: {} }));
      await eventually(async () => expect(await superNP(snsA('default'), 'marker')).not.toBeNull());
      const after = await superNP(snsA('default'), TENANT_ISOLATION_POLICY);
      expect(after?.metadata?.uid).toBe(before.metadata?.uid);
      return 'isolation policy kept';
    });
  });

  it('cannot take over a policy the platform put in its super namespace', async () => {
    const platform = np(snsA('app'), 'platform-allow', {
      podSelector: { matchLabels: { app: 'metrics' } },
      ingress: [{ ports: [{ protocol: 'TCP', port: 9100 }] }],
    });
    const made = await t.client.create<NetworkPolicy>(R.networkpolicies, platform);
    await attempts.attempt('create a NetworkPolicy named like a platform policy in its super namespace', async () => {
      await a.create(
        R.networkpolicies,
        np('app', 'platform-allow', { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] }),
      );
      const reason = await refusedEvent('app', 'platform-allow', NOT_MANAGED);
      const after = (await superNP(snsA('app'), 'platform-allow'))!;
      expect(after.metadata?.resourceVersion).toBe(made.metadata?.resourceVersion);
      expect(after.spec).toEqual(made.spec);
      return reason;
    });
  });

  it('puts the isolation policy back when it is deleted in the super cluster', async () => {
    const sns = superNamespace(tenantB.key, 'default');
    const old = (await superNP(sns, TENANT_ISOLATION_POLICY))!;
    await t.client.delete(R.networkpolicies, sns, TENANT_ISOLATION_POLICY);
    const back = await eventually(async () => {
      const got = await superNP(sns, TENANT_ISOLATION_POLICY);
      expect(got?.metadata?.uid).toBeDefined();
      expect(got?.metadata?.uid).not.toBe(old.metadata?.uid);
      return got!;
    });
    expect(back.spec).toEqual(old.spec);
    // Tenant B saw none of tenant A's attempts.
    expect((await b.list(R.networkpolicies)).items).toEqual([]);
    expect((await t.client.list(R.networkpolicies, { namespace: sns })).items.map((p) => p.metadata?.name)).toEqual([
      TENANT_ISOLATION_POLICY,
    ]);
  });

  it('prints the attempt count', () => {
    expect(attempts.summary()).toBe(`attempts 9, refused 9, succeeded 0`);
  });
});
