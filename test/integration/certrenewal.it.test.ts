/**
 * Every leaf certificate of a local tenant is renewed before it expires (issue 33, §4), on real processes: with the
 * platform's leaf lifetime set to two minutes, the VirtualCluster controller and the local provisioner renew the
 * apiserver's serving certificate, the front-proxy client, the admin client the manager keeps (the kubeconfig Secret
 * and the syncer's tenant follow it) and the controller manager's client (which restarts) while the apiserver keeps
 * its process and answers; after the first certificates have expired the tenant still works with the new ones.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigSecretName, type VirtualCluster } from '../../core/api/virtualcluster.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { parseKubeconfig } from '../../core/kube/kubeconfig.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { registry as metrics } from '../../core/metrics/registry.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { RENEWED_LEAVES } from '../../core/dev/local/renewal.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crds = join(import.meta.dirname, '../../deploy/crds');
const NS = 'default';
const LEAF_MINUTES = 2;

/** served is the certificate a TLS server on 127.0.0.1:port presents to a new connection. */
const served = (port: number) =>
  new Promise<X509Certificate>((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', reject);
  });

describe('renewing every certificate of a local tenant with two-minute leaves', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  const tenants = new MutableTenantRegistry();
  const get = () => t.client.get<VirtualCluster>(R.virtualclusters, NS, 'short');

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
    stateDir = mkdtempSync(join(tmpdir(), 'vc-certrenewal-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd, { certificates: { validityDays: LEAF_MINUTES / 1440 } });
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
    });
    await controller.start();
  });

  afterAll(async () => {
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('renews each leaf while the apiserver keeps its process and answers, and works past the first expiry', async () => {
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
    expect(firstExpiry - Date.now()).toBeLessThan(LEAF_MINUTES * 60_000 + 5_000);
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
        LEAF_MINUTES * 60_000 + 30_000,
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
      await new Promise((r) => setTimeout(r, Math.max(0, firstExpiry - Date.now() + 2_000)));
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
