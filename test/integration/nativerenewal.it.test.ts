import { X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, rootNamespace } from '../../core/names/names.ts';
import { NativeProvisioner } from '../../core/provisioners/native/provisioner.ts';
import { KUBELET_CLIENT_ROTATION_KEY, PKI_SECRET, PKI_SECRET_KEY } from '../../core/provisioners/native/pkistore.ts';
import { nativeCertificates, type KubeletClientRotation } from '../../core/provisioners/native/renewal.ts';
import { fingerprintSha256, type ControlPlanePKI } from '../../core/pki/pki.ts';
import { PUBLISH_GRACE_MS } from '../../core/pki/renewal.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');
/** two-minute leaves renewed at half their life: due a minute after they are issued */
const LEAF_DAYS = 2 / 1440;

interface StatefulSet extends KubeObject {
  spec: { template: { metadata: { annotations: Record<string, string> } } };
}

/**
 * Renewal of a native tenant's leaf certificates with lifetimes of minutes, on a real super cluster (kwok runs the
 * Pods, so this holds what the super cluster is given; the apiserver's reload of its files is kube-apiserver's own):
 * a minute after the first reconcile the next one issues the five leaves again from the same CAs (the scheduler
 * client one too, which no native component uses), with the CAs and the pinned kubelet client kept, writes them to
 * the PKI Secret and the Secrets the Pods read, leaves the apiserver's and etcd's pod templates alone and rolls the
 * controller manager's. The kubelet client certificate, due at the same time, is renewed in two steps: staged in the
 * PKI Secret, and given to the apiserver's Secret only once the VirtualCluster's status publishes it.
 */
describe('native certificate renewal on a real super cluster', () => {
  let t: TestSuper;
  let native: NativeProvisioner;
  let vc: VirtualCluster;
  let root: string;
  const readPKI = async (): Promise<ControlPlanePKI> => {
    const s = await t.client.get<{ data: Record<string, string> }>(R.secrets, root, PKI_SECRET);
    return JSON.parse(Buffer.from(s.data[PKI_SECRET_KEY]!, 'base64').toString('utf8')) as ControlPlanePKI;
  };
  const readRotation = async (): Promise<KubeletClientRotation> => {
    const s = await t.client.get<{ data: Record<string, string> }>(R.secrets, root, PKI_SECRET);
    const data = s.data[KUBELET_CLIENT_ROTATION_KEY];
    return data ? (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as KubeletClientRotation) : {};
  };
  const kubeletSecret = async () =>
    t.client.get<KubeObject & { data: Record<string, string> }>(R.secrets, root, 'kubelet-client');
  const hashes = async (): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    for (const c of ['etcd', 'apiserver', 'controller-manager'])
      out[c] = (await t.client.get<StatefulSet>(R.statefulsets, root, c)).spec.template.metadata.annotations[
        ANN.configHash
      ]!;
    return out;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.virtualclusters));
    native = new NativeProvisioner(t.client, {
      etcdHostPathDir: '/nonexistent/vc-nativerenewal',
      certificates: { validityDays: LEAF_DAYS, renewFraction: 0.5 },
    });
    vc = await t.client.create<VirtualCluster>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'short', namespace: 'default' },
      spec: { provisioner: { type: 'native' }, pkiExpireDays: 30 },
    });
    root = rootNamespace('default', 'short', vc.metadata!.uid!);
  }, 300_000);

  afterAll(async () => {
    await t?.stop();
  });

  it('renews the five leaves once half their life has passed, rolling only the controller manager', async () => {
    await native.ensure(vc, root);
    const first = await readPKI();
    const life = (pem: string) => {
      const x = new X509Certificate(pem);
      return (Date.parse(x.validTo) - Date.parse(x.validFrom)) / 60_000;
    };
    // issued for two minutes (from a minute back, for clocks a little behind), the CA for the tenant's thirty days
    expect(life(first.admin.certPem)).toBeGreaterThanOrEqual(2);
    expect(life(first.admin.certPem)).toBeLessThanOrEqual(3);
    expect(life(first.ca.certPem) / 1440).toBeCloseTo(30, 1);
    const before = await hashes();
    // Nothing is due yet: a second reconcile changes nothing.
    await native.ensure(vc, root);
    expect((await readPKI()).admin.certPem).toBe(first.admin.certPem);

    const renewed = await eventually(
      async () => {
        await native.ensure(vc, root);
        const now = await readPKI();
        expect(now.admin.certPem).not.toBe(first.admin.certPem);
        return now;
      },
      120_000,
      5_000,
    );
    for (const k of ['apiserver', 'frontProxyClient', 'admin', 'controllerManager', 'scheduler'] as const) {
      const [was, is] = [new X509Certificate(first[k].certPem), new X509Certificate(renewed[k].certPem)];
      expect(is.serialNumber, k).not.toBe(was.serialNumber);
      expect(is.subjectAltName, k).toBe(was.subjectAltName);
    }
    // the kubelet client is due too, but the apiserver is not given a renewed one the status has not published
    for (const k of ['ca', 'frontProxyCA', 'kubeletClient'] as const)
      expect(renewed[k].certPem, k).toBe(first[k].certPem);
    // the Secret the apiserver's Pods read carries the new serving certificate
    const tls = await t.client.get<{ data: Record<string, string> }>(R.secrets, root, 'apiserver-tls');
    expect(Buffer.from(tls.data['tls.crt']!, 'base64').toString()).toBe(renewed.apiserver.certPem);
    const after = await hashes();
    expect(after.apiserver).toBe(before.apiserver);
    expect(after.etcd).toBe(before.etcd);
    expect(after['controller-manager']).not.toBe(before['controller-manager']);
    // what the controller's metric and CertificatesValid read: the renewed leaves' new expiries, the CAs' unchanged
    const reported = nativeCertificates(renewed);
    expect(reported.find((c) => c.name === 'admin client')!.notAfter.getTime()).toBeGreaterThan(
      nativeCertificates(first)
        .find((c) => c.name === 'admin client')!
        .notAfter.getTime(),
    );
  });

  it('renews the kubelet client in two steps: staged, then given to the apiserver once published, without a roll', async () => {
    const first = await readPKI();
    // due at half its life like the leaves: a renewed pair from the same CA waits in the PKI Secret
    const staged = await eventually(
      async () => {
        await native.ensure(vc, root);
        const r = await readRotation();
        expect(r.next).toBeDefined();
        return r.next!;
      },
      120_000,
      5_000,
    );
    const [was, is] = [new X509Certificate(first.kubeletClient.certPem), new X509Certificate(staged.certPem)];
    expect(is.serialNumber).not.toBe(was.serialNumber);
    expect(is.subject).toBe(was.subject);
    expect(is.verify(new X509Certificate(first.ca.certPem).publicKey)).toBe(true);
    const fp = fingerprintSha256(staged.certPem);
    // Reconciled with a status that does not publish it, however long after: the apiserver's Secret keeps the
    // current pair, since a vn-agent would refuse a certificate the status does not name.
    await new Promise((r) => setTimeout(r, PUBLISH_GRACE_MS));
    await native.ensure(vc, root);
    expect((await readRotation()).next?.certPem).toBe(staged.certPem);
    expect(Buffer.from((await kubeletSecret()).data['tls.crt']!, 'base64').toString()).toBe(
      first.kubeletClient.certPem,
    );
    const before = await hashes();

    // The status as the controller writes it from the provisioner's report: the current one, and the staged one.
    const published: VirtualCluster = {
      ...vc,
      status: {
        kubeletClientCertFingerprint: first.kubeletClientFingerprint,
        rotatingKubeletClientCertFingerprints: [fp],
      },
    };
    await native.ensure(published, root);
    const promoted = await readPKI();
    expect(promoted.kubeletClientFingerprint).toBe(fp);
    expect(promoted.kubeletClient).toEqual({ certPem: staged.certPem, keyPem: staged.keyPem });
    expect(promoted.ca.certPem).toBe(first.ca.certPem);
    // the replaced one is kept, published until it expires (connections opened before go on with it)
    expect(await readRotation()).toEqual({ previousCertPem: first.kubeletClient.certPem });
    // the Secret the apiserver's Pods project carries the renewed pair, and neither the apiserver nor etcd rolls for it
    const secret = await kubeletSecret();
    expect(Buffer.from(secret.data['tls.crt']!, 'base64').toString()).toBe(staged.certPem);
    expect(Buffer.from(secret.data['tls.key']!, 'base64').toString()).toBe(staged.keyPem);
    expect(secret.metadata?.annotations?.[ANN.kubeletClientFingerprint]).toBe(fp);
    const after = await hashes();
    expect(after.apiserver).toBe(before.apiserver);
    expect(after.etcd).toBe(before.etcd);
  });

  it('replaces the CAs when spec.pkiExpireDays changes: every certificate from the new ones, the ServiceAccount key kept', async () => {
    const first = await readPKI();
    const before = await hashes();
    const changed: VirtualCluster = { ...vc, spec: { ...vc.spec, pkiExpireDays: 31 } };
    await native.ensure(changed, root);
    const replaced = await readPKI();
    const x = (pem: string) => new X509Certificate(pem);
    const [ca, frontProxyCA] = [x(replaced.ca.certPem), x(replaced.frontProxyCA.certPem)];
    expect(ca.serialNumber).not.toBe(x(first.ca.certPem).serialNumber);
    expect(frontProxyCA.serialNumber).not.toBe(x(first.frontProxyCA.certPem).serialNumber);
    expect((Date.parse(ca.validTo) - Date.parse(ca.validFrom)) / 86_400_000).toBeCloseTo(31, 1);
    for (const k of ['apiserver', 'admin', 'controllerManager', 'scheduler', 'kubeletClient'] as const) {
      expect(x(replaced[k].certPem).verify(ca.publicKey), k).toBe(true);
      expect(x(replaced[k].certPem).verify(x(first.ca.certPem).publicKey), k).toBe(false);
    }
    expect(x(replaced.frontProxyClient.certPem).verify(frontProxyCA.publicKey)).toBe(true);
    expect(replaced.kubeletClientFingerprint).toBe(fingerprintSha256(replaced.kubeletClient.certPem));
    // tokens the tenant's apiserver signed before go on being accepted
    expect(replaced.serviceAccount).toEqual(first.serviceAccount);
    // a kubelet client renewal under the old CA is over
    expect(await readRotation()).toEqual({});
    // the admin kubeconfig the manager hands out trusts the new CA only
    const admin = await t.client.get<{ data: Record<string, string> }>(R.secrets, root, 'admin-kubeconfig');
    const text = Buffer.from(admin.data['admin-kubeconfig']!, 'base64').toString();
    const caData = /certificate-authority-data: (\S+)/.exec(text)![1]!;
    expect(Buffer.from(caData, 'base64').toString()).toBe(replaced.ca.certPem);
    // the apiserver and the controller manager roll onto the new files; etcd, which uses none of them, does not
    const after = await hashes();
    expect(after.apiserver).not.toBe(before.apiserver);
    expect(after['controller-manager']).not.toBe(before['controller-manager']);
    expect(after.etcd).toBe(before.etcd);
  });
});
