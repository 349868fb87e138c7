/**
 * Hostile tenant placements (issue 14): the scheduler's annotations live in the tenant's own apiserver, where the
 * tenant is cluster-admin. A tenant that writes scheduler.tenancy.x-k8s.io/placements or superCluster itself (or
 * copies a signature the scheduler wrote elsewhere) must never get an object synced to a super cluster it was not placed
 * on. Two real local super clusters, one syncer each with the placement filter on; the test places as the scheduler
 * does: it records each namespace's placements in the meta cluster (placementrecord.ts) and signs the annotations with
 * the scheduler's signing key.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LocalSuperCluster } from '../../core/dev/local/supercluster.ts';
import { createCA, fingerprintSha256, issueCert } from '../../core/pki/pki.ts';
import { startVnAgent, type VnAgent } from '../../core/vnagent/agent.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { InformerSuperView } from '../../core/vnagent/superview.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { PLACEMENTS, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { loadSigningKey, sign, SIGNATURE } from '../../core/scheduler/signature.ts';
import { PlacementRecords, RECORD_SELECTOR } from '../../core/scheduler/placementrecord.ts';
import { InformerFactory } from '../../core/kube/factory.ts';
import { recordedPlacements } from '../../core/syncer/placement.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

interface Pod extends KubeObject {
  status?: { phase?: string };
}

describe('hostile tenant placements against the placement filter', () => {
  const attempts = new Attempts();
  let r1: TestSuper;
  let r2: LocalSuperCluster;
  let c2: KubeClient;
  let t: KubeClient;
  let tenant: Tenant;
  let key: Buffer;
  let cp: LocalControlPlane;
  let records: PlacementRecords;
  const recordInformers: Array<{ stop(): Promise<void> }> = [];
  const syncers: Syncer[] = [];
  const agents: Record<string, VnAgent> = {};

  /** kubeletGet calls a super cluster's vn-agent as the tenant's apiserver does, with its kubelet client certificate. */
  const kubeletGet = (agent: VnAgent, path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: agent.port,
          path,
          rejectUnauthorized: false,
          agent: false,
          cert: readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8'),
          key: readFileSync(join(cp.dir, 'pki/kubelet-client.key'), 'utf8'),
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.setTimeout(20_000, () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });

  const annotate = (r: typeof R.pods, ns: string | undefined, name: string, annotations: Record<string, string>) =>
    t.patch(r, ns, name, { metadata: { annotations } }, 'merge');

  const place = async (ns: string, placements: string) => {
    const uid = (await t.get(R.namespaces, undefined, ns)).metadata!.uid!;
    const s = sign(key, { tenant: tenant.key, kind: 'Namespace', namespace: ns, name: ns, uid, value: placements });
    await records.set(tenant.key, ns, { uid, placements });
    await annotate(R.namespaces, undefined, ns, { [PLACEMENTS]: placements, [SIGNATURE]: s });
  };

  const schedule = async (ns: string, name: string, cluster: string) => {
    const uid = (await t.get(R.pods, ns, name)).metadata!.uid!;
    const s = sign(key, { tenant: tenant.key, kind: 'Pod', namespace: ns, name, uid, value: cluster });
    await annotate(R.pods, ns, name, { [SUPER_CLUSTER]: cluster, [SIGNATURE]: s });
  };

  const namespace = async (ns: string, annotations: Record<string, string> = {}) => {
    await t.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, annotations } });
    await eventually(() => t.get(R.serviceaccounts, ns, 'default'), 30_000);
    await t.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: ns },
      data: { a: '1' },
    });
  };

  const pod = (ns: string, name: string, annotations: Record<string, string> = {}) =>
    t.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, annotations },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });

  /** absentFrom checks, after the syncers had time to act, that nothing of the namespace reached a super cluster. */
  const absentFrom = async (c: KubeClient, ns: string, pods: string[] = []) => {
    await new Promise((r) => setTimeout(r, 2500));
    const sns = superNamespace(tenant.key, ns);
    expect(await c.getOrNull(R.configmaps, sns, 'cm')).toBeNull();
    for (const p of pods) expect(await c.getOrNull(R.pods, sns, p)).toBeNull();
  };

  /** recordedOn reads the placement records of the meta cluster (r1, where the syncers' manager would run). */
  const recordedOn = async (meta: KubeClient) => {
    const inf = new InformerFactory(meta, 'meta').informer<KubeObject>({
      resource: R.configmaps,
      namespace: 'kube-system',
      labelSelector: RECORD_SELECTOR,
    });
    const signed = recordedPlacements(key, inf, 'kube-system');
    inf.start();
    recordInformers.push(inf);
    await inf.waitForSync();
    return signed;
  };

  beforeAll(async () => {
    r1 = await startTestSuper({ nodes: 1, name: 'r1' });
    r2 = await LocalSuperCluster.start({ stateDir: `${r1.stateDir}/r2`, nodes: 1, name: 'r2' });
    c2 = await r2.cluster.client();
    cp = await r1.sc.addControlPlane('tenant-t', { controllers: TENANT_CONTROLLERS });
    t = await cp.client();
    tenant = tenantFor(cp, 'team-t', 't', '33333333-cccc-4ccc-8ccc-0000000000c3');
    key = await loadSigningKey(r1.client, 'kube-system');
    records = new PlacementRecords(r1.client, 'kube-system');
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    for (const [cluster, client] of [
      ['r1', r1.client],
      ['r2', c2],
    ] as const) {
      const s = new Syncer({
        superClient: client,
        host,
        registry: new MutableTenantRegistry([tenant]),
        patrolIntervalMs: 0,
        workers: 4,
        name: cluster,
        placement: { cluster, signed: await recordedOn(r1.client) },
      });
      syncers.push(s);
      await s.start();
    }
    await eventually(() => expect(syncers.every((s) => s.tenantReady(tenant.key))).toBe(true));
    // One vn-agent per super cluster, each seeing only its own super cluster's Pods.
    const serving = await issueCert(await createCA('vn-agent-serving-ca', 1), {
      commonName: 'vc-vn-agent',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 1,
    });
    const directory = new StaticTenantDirectory([
      {
        key: tenant.key,
        vcName: tenant.vcName,
        vcNamespace: tenant.vcNamespace,
        caPem: cp.caPem,
        fingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
      },
    ]);
    const agentPlugins = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
    for (const [name, cluster, client] of [
      ['r1', r1.sc.cluster, r1.client],
      ['r2', r2.cluster, c2],
    ] as const) {
      const kubelet = await issueCert(cluster.ca, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 1 });
      agents[name] = await startVnAgent({
        host: '127.0.0.1',
        port: 0,
        serving,
        directory,
        superView: new InformerSuperView({ client }),
        plugins: agentPlugins,
        kubelet: { certPem: kubelet.certPem, keyPem: kubelet.keyPem, insecureSkipVerify: true },
      });
    }
    // The control: a namespace the scheduler spread on both, with a Pod it put on r2, which runs there.
    await namespace('spread');
    await place('spread', '{"r1":1,"r2":1}');
    await pod('spread', 'legit');
    await schedule('spread', 'legit', 'r2');
    await eventually(
      async () => expect((await t.get<Pod>(R.pods, 'spread', 'legit')).status?.phase).toBe('Running'),
      90_000,
    );
    await eventually(() => r1.client.get(R.configmaps, superNamespace(tenant.key, 'spread'), 'cm'));
  }, 240_000);

  afterAll(async () => {
    attempts.report('placement boundary');
    for (const s of syncers) await s.stop();
    for (const i of recordInformers) await i.stop();
    for (const a of Object.values(agents)) await a.stop();
    await r2?.stop();
    await r1?.stop();
  });

  it('ignores placements a tenant writes on an unplaced namespace', async () => {
    await attempts.attempt('placements {"r1":1,"r2":1} written by the tenant', async () => {
      await namespace('forged', { [PLACEMENTS]: '{"r1":1,"r2":1}', [SIGNATURE]: 'v1.AAAA' });
      await pod('forged', 'p');
      await absentFrom(r1.client, 'forged', ['p']);
      await absentFrom(c2, 'forged', ['p']);
      expect((await t.get<Pod>(R.pods, 'forged', 'p')).status?.phase).toBe('Pending');
      return 'the signature does not verify: the namespace counts as unplaced and its Pod stays Pending';
    });
  });

  it('ignores a placement widened by the tenant under the signature of the narrower one', async () => {
    await attempts.attempt('placements widened from {"r1":1} to {"r1":1,"r2":1}', async () => {
      await namespace('narrow');
      await place('narrow', '{"r1":1}');
      await eventually(() => r1.client.get(R.configmaps, superNamespace(tenant.key, 'narrow'), 'cm'));
      await annotate(R.namespaces, undefined, 'narrow', { [PLACEMENTS]: '{"r1":1,"r2":1}' });
      await pod('narrow', 'p');
      await absentFrom(c2, 'narrow', ['p']);
      return 'the signature binds the value: a changed placement counts as none';
    });
  });

  it("ignores another namespace's signature copied with its placements", async () => {
    await attempts.attempt('signature of namespace spread copied to namespace copied', async () => {
      const src = (await t.get(R.namespaces, undefined, 'spread')).metadata!.annotations!;
      await namespace('copied', { [PLACEMENTS]: src[PLACEMENTS]!, [SIGNATURE]: src[SIGNATURE]! });
      await pod('copied', 'p');
      await absentFrom(r1.client, 'copied', ['p']);
      await absentFrom(c2, 'copied', ['p']);
      return 'the signature binds the namespace name and uid';
    });
  });

  it('ignores a signature replayed on a namespace deleted and created again', async () => {
    await attempts.attempt('namespace recreated with its old signed placements', async () => {
      await namespace('again');
      await place('again', '{"r2":1}');
      await eventually(() => c2.get(R.configmaps, superNamespace(tenant.key, 'again'), 'cm'));
      const old = (await t.get(R.namespaces, undefined, 'again')).metadata!.annotations!;
      await t.delete(R.namespaces, undefined, 'again');
      await eventually(async () => expect(await t.getOrNull(R.namespaces, undefined, 'again')).toBeNull(), 60_000);
      await eventually(async () =>
        expect(await c2.getOrNull(R.configmaps, superNamespace(tenant.key, 'again'), 'cm')).toBeNull(),
      );
      await namespace('again', { [PLACEMENTS]: old[PLACEMENTS]!, [SIGNATURE]: old[SIGNATURE]! });
      await absentFrom(c2, 'again');
      return 'the signature binds the namespace uid';
    });
  });

  it('ignores a signed placement the tenant kept and wrote back after the namespace moved', async () => {
    await attempts.attempt('placements {"r1":1} and their signature written back after a move to r2', async () => {
      await namespace('moved');
      await place('moved', '{"r1":1}');
      await eventually(() => r1.client.get(R.configmaps, superNamespace(tenant.key, 'moved'), 'cm'));
      const before = (await t.get(R.namespaces, undefined, 'moved')).metadata!.annotations!;
      await place('moved', '{"r2":1}');
      await eventually(() => c2.get(R.configmaps, superNamespace(tenant.key, 'moved'), 'cm'));
      await annotate(R.namespaces, undefined, 'moved', {
        [PLACEMENTS]: before[PLACEMENTS]!,
        [SIGNATURE]: before[SIGNATURE]!,
      });
      await t.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'after', namespace: 'moved' },
        data: { a: '1' },
      });
      await pod('moved', 'p');
      await eventually(() => c2.get(R.configmaps, superNamespace(tenant.key, 'moved'), 'after'));
      await new Promise((r) => setTimeout(r, 2500));
      const sns = superNamespace(tenant.key, 'moved');
      expect(await r1.client.getOrNull(R.configmaps, sns, 'after')).toBeNull();
      expect(await r1.client.getOrNull(R.pods, sns, 'p')).toBeNull();
      expect(await c2.getOrNull(R.pods, sns, 'p')).not.toBeNull();
      return "the signature still verifies, but the syncers follow the scheduler's record, which says r2";
    });
  });

  it("ignores a Pod's super cluster written by the tenant with another Pod's signature", async () => {
    await attempts.attempt('superCluster r2 with the signature of Pod legit', async () => {
      const src = (await t.get(R.pods, 'spread', 'legit')).metadata!.annotations!;
      await pod('spread', 'sneaky', { [SUPER_CLUSTER]: 'r2', [SIGNATURE]: src[SIGNATURE]! });
      await new Promise((r) => setTimeout(r, 2500));
      expect(await c2.getOrNull(R.pods, superNamespace(tenant.key, 'spread'), 'sneaky')).toBeNull();
      expect(await r1.client.getOrNull(R.pods, superNamespace(tenant.key, 'spread'), 'sneaky')).toBeNull();
      expect((await t.get<Pod>(R.pods, 'spread', 'sneaky')).status?.phase).toBe('Pending');
      return 'the signature binds the Pod name and uid: the Pod counts as not scheduled and stays Pending';
    });
  });

  it('keeps a Pod of a namespace placed whole on r1 there whatever super cluster the tenant writes', async () => {
    await attempts.attempt('superCluster r2 written by the tenant in a namespace placed on r1', async () => {
      await namespace('home');
      await place('home', '{"r1":1}');
      await pod('home', 'p', { [SUPER_CLUSTER]: 'r2' });
      await eventually(
        async () => expect((await t.get<Pod>(R.pods, 'home', 'p')).status?.phase).toBe('Running'),
        60_000,
      );
      expect(await r1.client.getOrNull(R.pods, superNamespace(tenant.key, 'home'), 'p')).not.toBeNull();
      await absentFrom(c2, 'home', ['p']);
      return 'an unsigned superCluster is ignored: the Pod runs where the namespace is placed';
    });
  });

  it("refuses, on each super cluster's vn-agent, the logs of the tenant's Pod that runs on the other", async () => {
    // The control: each agent serves the Pod on its own super cluster.
    const own = await kubeletGet(agents.r2!, '/containerLogs/spread/legit/c?tailLines=1');
    expect(own.status).toBe(200);
    expect(own.body.trim()).toBe('kwok fake container log line 3');
    await eventually(async () => expect((await t.get<Pod>(R.pods, 'home', 'p')).status?.phase).toBe('Running'), 60_000);
    for (const [agent, pod, where] of [
      ['r1', 'spread/legit', 'r2'],
      ['r2', 'home/p', 'r1'],
    ] as const) {
      await attempts.attempt(`logs of ${pod} (on ${where}) asked of ${agent}'s vn-agent`, async () => {
        const r = await kubeletGet(agents[agent]!, `/containerLogs/${pod}/c`);
        expect(r.status).toBe(403);
        expect(r.body).not.toContain('kwok fake container log');
        return `${r.status}: ${r.body.trim()}`;
      });
    }
  });
});
