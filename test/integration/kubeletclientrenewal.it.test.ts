/**
 * The certificate a local tenant's kube-apiserver presents to kubelets (to the vn-agent, which tells tenants apart by
 * its fingerprint) is renewed like the other leaves (issue 33, §4), on real processes: with two-minute leaves the
 * local provisioner publishes the renewed certificate in the VirtualCluster's status before it gives it to the
 * apiserver, and keeps the replaced one published until it expires. A tenant's `kubectl logs` goes through the real
 * apiserver to the embedded vn-agent, whose VirtualClusterDirectory reads that status, and on to kwok: it answers
 * before the renewal, just after it and past the first certificate's expiry, while the apiserver keeps its process;
 * the one call kube-apiserver itself fails when it takes a changed file up is retried once, and only that failure is.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { startNodesAgent } from '../../core/dev/embedded/embedded.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { fingerprintSha256 } from '../../core/pki/pki.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { logsOverGet } from '../podlogs.ts';

const crds = join(import.meta.dirname, '../../deploy/crds');
const NS = 'default';
const LEAF_MINUTES = 2;
/**
 * IDLE_CLOSE_MS is past how long kube-apiserver keeps an idle connection to a kubelet (Go's 90 s): a connection opened
 * with a certificate is used with it until then, so a log call past the first certificate's expiry is made that long
 * after the last one, and must then come with the renewed certificate.
 */
const IDLE_CLOSE_MS = 95_000;

interface Pod extends KubeObject {
  spec: { nodeName?: string };
  status?: { phase?: string };
}

describe("renewing a local tenant apiserver's kubelet client certificate, which the vn-agent pins", () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let agent: VnAgent;
  let syncer: Syncer;
  const tenants = new MutableTenantRegistry();
  const get = () => t.client.get<VirtualCluster>(R.virtualclusters, NS, 'pinned');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml'])
      for (const d of parseAllDocuments(readFileSync(join(crds, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    await eventually(() => t.client.list(R.clusterversions));
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'renewal', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    // The agent of `vc up`: its directory follows the VirtualClusters' status in the meta cluster.
    agent = await startNodesAgent(t.sc, { port: 0 });
    stateDir = mkdtempSync(join(tmpdir(), 'vc-kubeletclient-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd, { certificates: { validityDays: LEAF_MINUTES / 1440 } });
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
      defaultPluginConfig: { nodes: { vnAgent: { port: agent.port } } },
    });
    await controller.start();
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({ superClient: t.client, host, registry: tenants, patrolIntervalMs: 0, workers: 4 });
    await syncer.start();
  }, 240_000);

  afterAll(async () => {
    await syncer?.stop();
    await controller?.stop();
    await local?.stop();
    await agent?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('publishes the renewed certificate before the apiserver presents it, and logs answer throughout', async () => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'pinned', namespace: NS },
      spec: { provisioner: { type: 'local' } },
    });
    const vc = await eventually(async () => {
      const v = await get();
      expect(v.status?.phase, v.status?.message).toBe('Running');
      return v;
    }, 120_000);
    const cp = local.controlPlane(vc.status!.clusterNamespace!)!;
    const kubeletClient = () => readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8');
    const firstPem = kubeletClient();
    const first = fingerprintSha256(firstPem);
    const firstExpiry = new Date(new X509Certificate(firstPem).validTo).getTime();
    expect(firstExpiry - Date.now()).toBeLessThan(LEAF_MINUTES * 60_000 + 5_000);
    expect(vc.status?.kubeletClientCertFingerprint).toBe(first);
    const apiserverPid = cp.apiserver.pid;

    const tenant = await cp.client();
    await eventually(() => tenant.get(R.serviceaccounts, 'default', 'default'), 60_000);
    await tenant.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
    await eventually(async () => {
      const p = await tenant.get<Pod>(R.pods, 'default', 'app');
      expect(p.status?.phase).toBe('Running');
      expect(p.spec.nodeName).toBeTruthy();
    }, 90_000);
    let lastLogs = 0;
    /**
     * closedOnRotation counts the calls that failed the one way kube-apiserver's own reload of the file fails one:
     * on the first connection it opens after the file changed, it sees the new certificate and closes every
     * connection it holds to kubelets, the one it is opening included (kubernetes/kops#16850).
     */
    const closedOnRotation: string[] = [];
    const logs = async (when: string) => {
      let r = await logsOverGet(cp, 'default', 'app');
      if (r.status === 500 && /use of closed network connection/.test(r.body.toString())) {
        closedOnRotation.push(when);
        r = await logsOverGet(cp, 'default', 'app');
      }
      lastLogs = Date.now();
      expect(r.status, `${when}: ${r.body.toString()}`).toBe(200);
      expect(r.body.toString(), when).toContain('kwok fake container log line 1');
    };
    await logs('before the renewal');
    expect(closedOnRotation).toEqual([]);

    // The status as the vn-agent reads it, each second: the renewed fingerprint is listed beside the old before it
    // becomes the one recorded, and then the old one is listed until it expires.
    const seen: Array<{ current?: string; rotating: string[] }> = [];
    const swapped = await eventually(
      async () => {
        const s = (await get()).status;
        seen.push({
          current: s?.kubeletClientCertFingerprint,
          rotating: s?.rotatingKubeletClientCertFingerprints ?? [],
        });
        expect(s?.kubeletClientCertFingerprint).not.toBe(first);
        return s!;
      },
      LEAF_MINUTES * 60_000 + 30_000,
      1000,
    );
    const renewed = swapped.kubeletClientCertFingerprint!;
    expect(swapped.rotatingKubeletClientCertFingerprints).toEqual([first]);
    expect(seen).toContainEqual({ current: first, rotating: [renewed] });
    expect(fingerprintSha256(kubeletClient())).toBe(renewed);
    expect(Date.now()).toBeLessThan(firstExpiry);
    await logs('just after the renewal, before the first certificate expires');

    // Past the first certificate's expiry (and the apiserver's idle connections made with it), the renewed one is
    // presented and accepted: the agent refuses an expired certificate, so only it can answer now.
    await new Promise((r) =>
      setTimeout(r, Math.max(0, firstExpiry + 5_000 - Date.now(), lastLogs + IDLE_CLOSE_MS - Date.now())),
    );
    await logs('past the first certificate expiry');
    expect(cp.apiserver.pid).toBe(apiserverPid);
    const after = (await get()).status!;
    expect(after.rotatingKubeletClientCertFingerprints ?? []).not.toContain(first);
    expect((await get()).status?.conditions?.find((c) => c.type === 'CertificatesValid')).toMatchObject({
      status: 'True',
    });
    tenant.close();
  }, 420_000);
});
