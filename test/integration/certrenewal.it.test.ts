/**
 * Certificates renewed while their holders run, on real processes, each with a two-minute life so that the test
 * outlives the first one. The holders share one super cluster and one local tenant and wait out their first
 * certificates at the same time (the cases run concurrently: each one's wait is the expiry, not work):
 *   - the local tenant (issue 33, §4): the VirtualCluster controller and the local provisioner renew the apiserver's
 *     serving certificate, the front-proxy client, the admin client the manager keeps (the kubeconfig Secret and the
 *     syncer's tenant follow it) and the controller manager's client (which restarts) while the apiserver keeps its
 *     process and answers; after the first certificates have expired the tenant still works with the new ones;
 *   - the same tenant's kubelet client certificate, which the vn-agent pins by its fingerprint: the local provisioner
 *     publishes the renewed one in the VirtualCluster's status before it gives it to the apiserver, and keeps the
 *     replaced one published until it expires. A tenant's `kubectl logs` goes through the real apiserver to an
 *     embedded vn-agent whose VirtualClusterDirectory reads that status, and on to kwok: it answers before the
 *     renewal, just after it and past the first certificate's expiry, while the apiserver keeps its process; the one
 *     call kube-apiserver itself fails when it takes a changed file up is retried once, and only that failure is;
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
import { fingerprintSha256, issueNodeCert } from '../../core/pki/pki.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { runVnAgent, type RunningVnAgent } from '../../core/programs/vn-agent/run.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { nodeSuperClient, parseNodeCredential } from '../../core/vnagent/nodecredential.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { logsOverGet } from '../podlogs.ts';

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
  /** the agent of `vc up`, whose directory follows the VirtualClusters' status: the tenant's kubelets are behind it */
  let logsAgent: VnAgent;
  let syncer: Syncer;
  /** the local tenant both tenant cases watch, once it is Running (created in beforeAll, awaited by the cases) */
  let running: Promise<VirtualCluster>;

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
    logsAgent = await startNodesAgent(t.sc, { port: 0 });
    stateDir = mkdtempSync(join(tmpdir(), 'vc-certrenewal-'));
    local = new LocalProvisioner(join(stateDir, 'tenants'), t.sc.etcd, { certificates: { validityDays: LIFE_DAYS } });
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
      defaultPluginConfig: { nodes: { vnAgent: { port: logsAgent.port } } },
    });
    await controller.start();
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({ superClient: t.client, host, registry: tenants, patrolIntervalMs: 0, workers: 4 });
    await syncer.start();
    // The tenant is provisioned while the agents below start; its cases wait for it.
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'short', namespace: NS },
      spec: { provisioner: { type: 'local' } },
    });
    running = eventually(async () => {
      const v = await get();
      if (v.status?.phase !== 'Running') throw new Error(`phase ${v.status?.phase}: ${v.status?.message}`);
      return v;
    }, 120_000);
    // A case that awaits it sees its failure; this only keeps a failure of the rest of beforeAll from leaving the
    // rejection unhandled.
    running.catch(() => {});
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
    await syncer?.stop();
    await controller?.stop();
    await local?.stop();
    await logsAgent?.stop();
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
    // The apiserver's Node authorizer learns of the Pod from its own watch: until then it answers 403, read as absent.
    await eventually(async () => {
      const seen = await nodesAgent.superView.pod('default', 'after-expiry');
      expect(seen?.metadata?.name).toBe('after-expiry');
    }, 30_000);
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
    const vc = await running;
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
      // The kubelet client is renewed too, published first (the case below).
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

  it("publishes the tenant's renewed kubelet client certificate before the apiserver presents it, and logs answer throughout", async ({
    expect,
  }) => {
    const vc = await running;
    const cp = local.controlPlane(vc.status!.clusterNamespace!)!;
    const kubeletClient = () => readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8');
    const firstPem = kubeletClient();
    const first = fingerprintSha256(firstPem);
    const firstExpiry = new Date(new X509Certificate(firstPem).validTo).getTime();
    expect(firstExpiry - Date.now()).toBeLessThan(LIFE_MINUTES * 60_000 + 5_000);
    expect(vc.status?.kubeletClientCertFingerprint).toBe(first);
    const apiserverPid = cp.apiserver.pid;

    const tenant = await cp.client();
    try {
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
    } finally {
      tenant.close();
    }
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
      LIFE_MINUTES * 60_000 + 30_000,
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
    expect(after.conditions?.find((c) => c.type === 'CertificatesValid')).toMatchObject({ status: 'True' });
  }, 420_000);
});
