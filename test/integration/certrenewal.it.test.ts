/**
 * Certificates renewed while their holders run, on real processes, each with a two-minute life so that the test
 * outlives the first one. The three holders share one super cluster and wait out their first certificates at the same
 * time (the cases run concurrently: each one's wait is the expiry, not work):
 *   - a local tenant (issue 33, §4): the VirtualCluster controller and the local provisioner renew the apiserver's
 *     serving certificate, the front-proxy client, the admin client the manager keeps (the kubeconfig Secret and the
 *     syncer's tenant follow it) and the controller manager's client (which restarts) while the apiserver keeps its
 *     process and answers; after the first certificates have expired the tenant still works with the new ones;
 *   - the embedded vn-agent reads each node's super Pods with that node's own credential (user system:node:<node>, of
 *     the super cluster's CA) and renews it at two thirds of its life: past the first one's expiry the agent still
 *     reads the super cluster through the node's client, while a client holding a credential issued at the same
 *     moment for the same life is refused (401), which is what the agent would be without renewal;
 *   - the in-cluster vn-agent program (`vc vn-agent`, deploy/vn-agent) renews the serving certificate it generated
 *     from its own CA at two thirds of its life: past the first one's expiry it presents another, of the same issuer,
 *     without a restart.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { kubeconfigSecretName, type VirtualCluster } from '../../core/api/virtualcluster.ts';
import { applyCRDs } from '../../core/dev/embedded/superobjects.ts';
import { startNodesAgent } from '../../core/dev/embedded/agent.ts';
import { RENEWED_LEAVES } from '../../core/dev/local/renewal.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { parseKubeconfig } from '../../core/kube/kubeconfig.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { registry as metrics } from '../../core/metrics/registry.ts';
import { issueNodeCert } from '../../core/pki/pki.ts';
import { runVnAgent, type RunningVnAgent } from '../../core/programs/vn-agent/run.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { nodeSuperClient, parseNodeCredential } from '../../core/vnagent/nodecredential.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const NS = 'default';
/** LIFE_MINUTES is the life of every certificate renewed here: the tenant's leaves, the node and serving ones. */
const LIFE_MINUTES = 2;
const LIFE_DAYS = LIFE_MINUTES / 1440;

/** served is the certificate a TLS server on 127.0.0.1:port presents to a new connection (not verified). */
const served = (port: number) =>
  new Promise<X509Certificate>((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', reject);
  });

/** until waits until `at` (epoch milliseconds) has passed by `after` milliseconds. */
const until = (at: number, after: number) => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now()) + after));

describe.concurrent('certificates renewed while their holders run, with two-minute lives', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  const tenants = new MutableTenantRegistry();
  const get = () => t.client.get<VirtualCluster>(R.virtualclusters, NS, 'short');
  let nodesAgent: VnAgent;
  let control: KubeClient;
  let controlExpiresAt: number;
  let program: RunningVnAgent;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
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
    stateDir = mkdtempSync(join(tmpdir(), 'vc-certrenewal-'));
    local = new LocalProvisioner(join(stateDir, 'tenants'), t.sc.etcd, { certificates: { validityDays: LIFE_DAYS } });
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
    });
    await controller.start();
    program = await runVnAgent({
      host: '127.0.0.1',
      port: 0,
      ops: { port: 0 },
      stateDir: join(stateDir, 'vn-agent'),
      metaKubeconfig: join(t.sc.cluster.dir, 'admin.kubeconfig'),
      servingCertValidityDays: LIFE_DAYS,
    });
    nodesAgent = await startNodesAgent(t.sc, {
      port: 0,
      directory: new StaticTenantDirectory(),
      nodeCredentialDays: LIFE_DAYS,
    });
    // The control: a credential of the same node issued now, for the same life, which nothing renews.
    const node = t.sc.cluster.kwokNodeNames[0]!;
    const cert = await issueNodeCert(t.sc.cluster.ca, node, LIFE_DAYS);
    const cred = parseNodeCredential(cert.certPem, cert.keyPem, 'of the control', node);
    controlExpiresAt = cred.notAfter.getTime();
    control = nodeSuperClient(t.client, cred);
  }, 240_000);

  afterAll(async () => {
    control?.close();
    await nodesAgent?.stop();
    await program?.stop();
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it("the embedded vn-agent reads super Pods past its node credential's first expiry, where the control is refused", async ({
    expect,
  }) => {
    // Before the expiry both are authenticated: the Node authorizer answers 403 for a Pod bound to no node, which the
    // agent reads as not there.
    expect(await nodesAgent.superView.pod('default', 'absent')).toBeUndefined();
    await expect(control.getOrNull(R.pods, 'default', 'absent')).rejects.toMatchObject({ code: 403 });
    await until(controlExpiresAt, 5000);
    await expect(control.getOrNull(R.pods, 'default', 'absent')).rejects.toMatchObject({ code: 401 });
    // The agent's node client asks the apiserver (the Pod is not in its cache) with its renewed credential: 403, not
    // 401 (which superView.pod would throw).
    expect(await nodesAgent.superView.pod('default', 'absent')).toBeUndefined();
    // A super Pod bound to the node after the expiry is seen through the node's client.
    await t.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'after-expiry', namespace: 'default' },
      spec: { nodeName: t.sc.cluster.kwokNodeNames[0], containers: [{ name: 'c', image: 'nginx' }] },
    });
    const seen = await nodesAgent.superView.pod('default', 'after-expiry');
    expect(seen?.metadata?.name).toBe('after-expiry');
  }, 300_000);

  it("the vn-agent program presents a renewed serving certificate of the same issuer past the first one's expiry, with no restart", async ({
    expect,
  }) => {
    const port = program.agent.port;
    const first = await served(port);
    const expiresAt = Date.parse(first.validTo);
    expect(expiresAt - Date.now()).toBeLessThan((LIFE_MINUTES + 1) * 60_000);
    await until(expiresAt, 5000);
    const later = await served(port);
    expect(later.serialNumber).not.toBe(first.serialNumber);
    expect(later.issuer).toEqual(first.issuer);
    expect(later.subject).toEqual(first.subject);
    expect(Date.parse(later.validTo)).toBeGreaterThan(Date.now());
    expect(program.agent.port).toBe(port);
  }, 300_000);

  it('a local tenant renews each leaf while the apiserver keeps its process and answers, and works past the first expiry', async ({
    expect,
  }) => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'short', namespace: NS },
      spec: { provisioner: { type: 'local' } },
    });
    const vc = await eventually(async () => {
      const v = await get();
      expect(v.status?.phase, v.status?.message).toBe('Running');
      return v;
    }, 120_000);
    const cp = local.controlPlane(vc.status!.clusterNamespace!)!;
    const pki = (base: string) => new X509Certificate(readFileSync(join(cp.dir, 'pki', `${base}.crt`), 'utf8'));
    const first = new Map(RENEWED_LEAVES.map((l) => [l.base, pki(l.base)]));
    const firstExpiry = Math.max(...[...first.values()].map((c) => new Date(c.validTo).getTime()));
    expect(firstExpiry - Date.now()).toBeLessThan(LIFE_MINUTES * 60_000 + 5_000);
    const kubeletClient = pki('kubelet-client').fingerprint256;
    const apiserverPid = cp.apiserver.pid;
    const kcmPid = cp.controllerManager!.pid;

    // The tenant answers throughout, through a credential that is not renewed (the token), so that every failure
    // counted is the apiserver's and not the renewal's.
    const token = await KubeClient.fromFile(join(cp.dir, 'admin-token.kubeconfig'));
    let asked = 0;
    const failures: string[] = [];
    let polling = true;
    const poll = (async () => {
      while (polling) {
        asked++;
        await token.list(R.namespaces).catch((e: Error) => failures.push(e.message));
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    try {
      // Each leaf is renewed: a new serial, issued after the first, valid for the platform's lifetime.
      await eventually(
        () => {
          for (const leaf of RENEWED_LEAVES)
            expect(pki(leaf.base).serialNumber, leaf.name).not.toBe(first.get(leaf.base)!.serialNumber);
        },
        LIFE_MINUTES * 60_000 + 30_000,
        1000,
      );
      // The apiserver serves the renewed certificate to new connections without a restart.
      await eventually(async () =>
        expect((await served(cp.ports.apiserver)).serialNumber).not.toBe(first.get('apiserver')!.serialNumber),
      );
      expect(cp.apiserver.pid).toBe(apiserverPid);
      // The controller manager restarted on its renewed kubeconfig: a process of another pid runs. The restart follows
      // the certificate files the checks above read, so it may still be under way (the old process stopping).
      await eventually(() => {
        const pid = cp.controllerManager!.pid;
        expect(pid).toBeDefined();
        expect(pid).not.toBe(kcmPid);
      });
      // The kubeconfig Secret and the tenant handed to the syncer carry the renewed admin certificate.
      const adminSerial = () => pki('admin').serialNumber;
      const secretKubeconfig = async () => {
        const s = await t.client.get<KubeObject & { data?: Record<string, string> }>(
          R.secrets,
          NS,
          kubeconfigSecretName('short'),
        );
        return Buffer.from(s.data!.kubeconfig!, 'base64').toString('utf8');
      };
      const certOf = (text: string) => new X509Certificate(parseKubeconfig(text, 'kubeconfig').certPem!).serialNumber;
      await eventually(async () => {
        expect(certOf(await secretKubeconfig())).toBe(adminSerial());
        expect(certOf(tenants.list().find((x) => x.key === vc.status!.clusterNamespace)!.kubeconfig)).toBe(
          adminSerial(),
        );
      });
      // Past the first certificates' expiry the tenant works with the renewed ones: the admin kubeconfig of the
      // Secret reaches it, and the controller manager still acts (it makes the new namespace's ServiceAccount).
      await until(firstExpiry, 2_000);
      const admin = await KubeClient.fromString(await secretKubeconfig(), 'the renewed kubeconfig Secret');
      try {
        await admin.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'after-expiry' } });
        await eventually(() => admin.get(R.serviceaccounts, 'after-expiry', 'default'), 60_000);
      } finally {
        admin.close();
      }
      const v = await get();
      expect(v.status?.conditions?.find((c) => c.type === 'CertificatesValid')).toMatchObject({ status: 'True' });
      // The kubelet client is renewed too, published first (test/integration/kubeletclientrenewal.it.test.ts).
      expect(pki('kubelet-client').fingerprint256).not.toBe(kubeletClient);
      // Each renewed certificate's expiry is a metric, and it is the renewed one's.
      const text = await metrics.getSingleMetricAsString('vc_tenant_certificate_expiry_timestamp_seconds');
      for (const leaf of RENEWED_LEAVES) {
        const line = text.split('\n').find((l) => l.includes('vc_name="short"') && l.includes(`"${leaf.name}"`));
        expect(Number(line?.split(' ').pop()), leaf.name).toBeGreaterThan(firstExpiry / 1000);
      }
    } finally {
      polling = false;
      await poll;
      token.close();
    }
    expect(asked).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  }, 300_000);
});
