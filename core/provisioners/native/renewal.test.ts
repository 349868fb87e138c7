import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  fingerprintSha256,
  generateControlPlanePKI,
  type ControlPlanePKI,
  type ControlPlanePKIOptions,
} from '../../pki/pki.ts';
import { PUBLISH_GRACE_MS, type RenewalRequest } from '../../pki/renewal.ts';
import { nativePKIOptions, renderNative, type VirtualCluster } from './render.ts';
import {
  kubeletClientFingerprints,
  NATIVE_KUBELET_CLIENT,
  NATIVE_RENEWED,
  nativeCaRotation,
  nativeCertificates,
  renewDueLeaves,
  renewKubeletClient,
} from './renewal.ts';
import { CA_ROTATION_REFUSED, caRotationCondition } from '../../lifecycle/certificates.ts';
import { ANN } from '../../names/names.ts';
import type { KubeObject } from '../../kube/client.ts';

const ROOT = 'team-a-1a2b3c-dev';
const DAY_MS = 86_400_000;
const vc: VirtualCluster = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: '0b3f7a52-0000-4000-8000-000000000003' },
  spec: { pkiExpireDays: 30 },
};
// leaves of ten days under CAs of thirty, as NativeOptions.certificates.validityDays gives them
const opts: ControlPlanePKIOptions = {
  ...nativePKIOptions(vc, ROOT),
  validityDays: 10,
  caValidityDays: 30,
  kubeletClientValidityDays: 10,
};

let pki: ControlPlanePKI;
beforeAll(async () => {
  pki = await generateControlPlanePKI(opts);
});
const x509 = (pem: string) => new X509Certificate(pem);
const hashOf = (objs: KubeObject[], name: string): string =>
  (
    objs.find((o) => o.kind === 'StatefulSet' && o.metadata?.name === name) as KubeObject & {
      spec: { template: { metadata: { annotations: Record<string, string> } } };
    }
  ).spec.template.metadata.annotations[ANN.configHash]!;

describe('nativeCertificates', () => {
  it('reports the renewed leaves and the kubelet client and, marked manual, the CAs', () => {
    const certs = nativeCertificates(pki);
    expect(certs.filter((c) => !c.manual).map((c) => c.name)).toEqual([
      ...Object.values(NATIVE_RENEWED),
      NATIVE_KUBELET_CLIENT,
    ]);
    expect(certs.filter((c) => c.manual).map((c) => c.name)).toEqual(['cluster CA', 'front-proxy CA']);
    const life = (name: string) => {
      const c = certs.find((x) => x.name === name)!;
      return Math.round((c.notAfter.getTime() - c.notBefore.getTime()) / DAY_MS);
    };
    expect(life('admin client')).toBe(10);
    expect(life('cluster CA')).toBe(30);
    expect(life('kube-apiserver kubelet client')).toBe(10);
  });
});

describe('renewDueLeaves', () => {
  it('renews nothing before the fraction of their life has passed', async () => {
    const out = await renewDueLeaves(pki, opts, new Date(Date.now() + 6 * DAY_MS), 2 / 3, 10);
    expect(out.renewed).toEqual([]);
    expect(out.pki).toBe(pki);
  });

  it('renews every leaf past it from the same CAs, with the same subjects and names, and keeps the rest', async () => {
    const out = await renewDueLeaves(pki, opts, new Date(Date.now() + 7 * DAY_MS), 2 / 3, 10);
    expect(out.renewed).toEqual(Object.values(NATIVE_RENEWED));
    for (const k of ['apiserver', 'frontProxyClient', 'admin', 'controllerManager', 'scheduler'] as const) {
      const [was, now] = [x509(pki[k].certPem), x509(out.pki[k].certPem)];
      expect(now.serialNumber, k).not.toBe(was.serialNumber);
      expect(now.subject, k).toBe(was.subject);
      expect(now.subjectAltName, k).toBe(was.subjectAltName);
      expect(now.issuer, k).toBe(was.issuer);
      expect(out.pki[k].keyPem, k).not.toBe(pki[k].keyPem);
      expect(now.verify(x509((k === 'frontProxyClient' ? pki.frontProxyCA : pki.ca).certPem).publicKey), k).toBe(true);
    }
    for (const k of ['ca', 'frontProxyCA', 'kubeletClient', 'serviceAccount', 'kubeletClientFingerprint'] as const)
      expect(out.pki[k], k).toBe(pki[k]);
  });

  it('renews only the leaf that is due', async () => {
    const shortAdmin = { ...pki };
    const early = await renewDueLeaves(pki, opts, new Date(Date.now() + 7 * DAY_MS), 2 / 3, 1);
    shortAdmin.admin = early.pki.admin; // one day of life: due after 16 hours
    const out = await renewDueLeaves(shortAdmin, opts, new Date(Date.now() + 17 * 3_600_000), 2 / 3, 10);
    expect(out.renewed).toEqual(['admin client']);
    expect(out.pki.apiserver).toBe(pki.apiserver);
  });

  it('rolls the controller manager and not the apiserver, which reloads its renewed files', async () => {
    const out = await renewDueLeaves(pki, opts, new Date(Date.now() + 7 * DAY_MS), 2 / 3, 10);
    const cv = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ClusterVersion',
      metadata: { name: 'v1' },
      spec: { kubernetesVersion: 'v1.36.3' },
    };
    const before = renderNative({ vc, clusterVersion: cv, pki, rootNamespace: ROOT });
    const after = renderNative({ vc, clusterVersion: cv, pki: out.pki, rootNamespace: ROOT });
    expect(hashOf(after, 'apiserver')).toBe(hashOf(before, 'apiserver'));
    expect(hashOf(after, 'etcd')).toBe(hashOf(before, 'etcd'));
    expect(hashOf(after, 'controller-manager')).not.toBe(hashOf(before, 'controller-manager'));
  });
});

describe('renewKubeletClient: the two steps of the kubelet client certificate renewal', () => {
  const at = (days: number) => new Date(Date.now() + days * DAY_MS);
  const step = (p: ControlPlanePKI, r: Parameters<typeof renewKubeletClient>[1], now: Date, published: string[]) =>
    renewKubeletClient(p, r, { now, fraction: 2 / 3, validityDays: 10, published });

  it('does nothing before two thirds of its life', async () => {
    const out = await step(pki, {}, at(6), [pki.kubeletClientFingerprint]);
    expect(out).toEqual({ pki, rotation: {}, step: 'none' });
  });

  it('stages, waits for the status and the grace, promotes, and keeps the replaced one until it expires', async () => {
    const t0 = at(7);
    const staged = await step(pki, {}, t0, [pki.kubeletClientFingerprint]);
    expect(staged.step).toBe('stage');
    // the apiserver is not given it yet: the PKI is the same, the renewed pair waits in the rotation
    expect(staged.pki).toBe(pki);
    const next = staged.rotation.next!;
    const [was, is] = [x509(pki.kubeletClient.certPem), x509(next.certPem)];
    expect(is.serialNumber).not.toBe(was.serialNumber);
    expect(is.subject).toBe(was.subject);
    expect(is.verify(x509(pki.ca.certPem).publicKey)).toBe(true);
    expect(Math.round((Date.parse(is.validTo) - Date.parse(is.validFrom)) / DAY_MS)).toBe(10);
    const fp = fingerprintSha256(next.certPem);
    // what the status publishes now: the current one and the staged one
    expect(kubeletClientFingerprints(staged.pki, staged.rotation, t0)).toEqual({
      current: pki.kubeletClientFingerprint,
      rotating: [fp],
    });

    // not published yet, or published less than the grace ago: it waits, whatever the time
    const later = new Date(t0.getTime() + 60_000);
    expect((await step(pki, staged.rotation, later, [pki.kubeletClientFingerprint])).step).toBe('wait');
    const soon = new Date(t0.getTime() + PUBLISH_GRACE_MS - 1);
    const waiting = await step(pki, staged.rotation, soon, [pki.kubeletClientFingerprint, fp]);
    expect(waiting).toEqual({ pki, rotation: staged.rotation, step: 'wait' });

    const t1 = new Date(t0.getTime() + PUBLISH_GRACE_MS);
    const promoted = await step(pki, staged.rotation, t1, [pki.kubeletClientFingerprint, fp]);
    expect(promoted.step).toBe('promote');
    expect(promoted.pki.kubeletClient).toEqual({ certPem: next.certPem, keyPem: next.keyPem });
    expect(promoted.pki.kubeletClientFingerprint).toBe(fp);
    expect(promoted.pki.ca).toBe(pki.ca);
    expect(promoted.rotation).toEqual({ previousCertPem: pki.kubeletClient.certPem });
    expect(kubeletClientFingerprints(promoted.pki, promoted.rotation, t1)).toEqual({
      current: fp,
      rotating: [pki.kubeletClientFingerprint],
    });
    // the rendered apiserver Secret carries the renewed pair, and the apiserver's pod template does not change
    const cv = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ClusterVersion',
      metadata: { name: 'v1' },
      spec: { kubernetesVersion: 'v1.36.3' },
    };
    const before = renderNative({ vc, clusterVersion: cv, pki, rootNamespace: ROOT });
    const after = renderNative({ vc, clusterVersion: cv, pki: promoted.pki, rootNamespace: ROOT });
    const secret = after.find((o) => o.kind === 'Secret' && o.metadata?.name === 'kubelet-client') as KubeObject & {
      data: Record<string, string>;
    };
    expect(Buffer.from(secret.data['tls.crt']!, 'base64').toString()).toBe(next.certPem);
    expect(secret.metadata?.annotations?.[ANN.kubeletClientFingerprint]).toBe(fp);
    expect(hashOf(after, 'apiserver')).toBe(hashOf(before, 'apiserver'));

    // once the replaced certificate has expired it is no longer published, and the next step drops it (here, with
    // both issued in this test's same second, the renewed one is due by then too: it is staged again)
    const expired = at(11);
    expect(kubeletClientFingerprints(promoted.pki, promoted.rotation, expired).rotating).toEqual([]);
    const again = await step(promoted.pki, promoted.rotation, expired, [fp]);
    expect(again.step).toBe('stage');
    expect(Object.keys(again.rotation)).toEqual(['next']);
  });
});

describe('a renewal asked for by hand (the renew-certificates annotation)', () => {
  // asked at the next whole second (an annotation's time counts to the second), once it has come: everything in the
  // PKI was issued before, and what is renewed now is issued at it or after, as in the manager
  const request = async (names?: RenewalRequest['names']): Promise<RenewalRequest> => {
    const before = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000);
    await new Promise((r) => setTimeout(r, before.getTime() - Date.now() + 1));
    return { before, ...(names && { names }) };
  };

  it('renews the leaves it names from its time on, long before their fraction of life', async () => {
    const r = await request(['admin', 'apiserver']);
    expect((await renewDueLeaves(pki, opts, new Date(r.before.getTime() - 1), 2 / 3, 10, r)).renewed).toEqual([]);
    const out = await renewDueLeaves(pki, opts, new Date(r.before.getTime() + 1), 2 / 3, 10, r);
    expect(out.renewed).toEqual(['kube-apiserver serving', 'admin client']);
    expect(out.pki.frontProxyClient).toBe(pki.frontProxyClient);
    expect(out.pki.kubeletClient).toBe(pki.kubeletClient);
    // the certificates it issued are not covered by the same request: nothing is renewed again
    const again = await renewDueLeaves(out.pki, opts, new Date(r.before.getTime() + 2000), 2 / 3, 10, r);
    expect(again.renewed).toEqual([]);
  });

  it('takes the kubelet client through the same two steps, and is done once the renewed one is given', async () => {
    const r = await request(['kubelet-client']);
    const s = (p: ControlPlanePKI, rot: Parameters<typeof renewKubeletClient>[1], now: Date, published: string[]) =>
      renewKubeletClient(p, rot, { now, fraction: 2 / 3, validityDays: 10, published, request: r });
    const t0 = new Date(r.before.getTime() + 1);
    const staged = await s(pki, {}, t0, [pki.kubeletClientFingerprint]);
    expect(staged.step).toBe('stage');
    const fp = fingerprintSha256(staged.rotation.next!.certPem);
    expect((await s(pki, staged.rotation, t0, [pki.kubeletClientFingerprint])).step).toBe('wait');
    const t1 = new Date(t0.getTime() + PUBLISH_GRACE_MS);
    const promoted = await s(pki, staged.rotation, t1, [pki.kubeletClientFingerprint, fp]);
    expect(promoted.step).toBe('promote');
    expect(promoted.pki.kubeletClientFingerprint).toBe(fp);
    // the renewed one was issued at the request's time or after: the request is satisfied
    const after = await s(promoted.pki, promoted.rotation, new Date(t1.getTime() + 60_000), [fp]);
    expect(after.step).toBe('none');
    // reported with the request's time as its renewal time until then, which CertificatesValid and the requeue read
    const reported = (p: ControlPlanePKI) => nativeCertificates(p, r).find((c) => c.name === NATIVE_KUBELET_CLIENT)!;
    expect(reported(pki).renewBy).toEqual(r.before);
    expect(reported(promoted.pki).renewBy).toBeUndefined();
  });
});

describe('nativeCaRotation', () => {
  it('answers nothing without the annotation', () => {
    expect(nativeCaRotation(undefined)).toBeUndefined();
  });

  it.each(['add', 'reissue', 'drop', 'later'])('refuses step %s by name, as vc rotate-ca reads it', (step) => {
    const c = caRotationCondition(nativeCaRotation(step)!);
    expect(c).toMatchObject({ status: 'False', reason: CA_ROTATION_REFUSED });
    // vc rotate-ca stops waiting on a refusal whose message names the step it asked for.
    expect(c.message).toContain(`step ${step}: native tenants have no CA rotation yet`);
    // and says what replaces their CAs instead
    expect(c.message).toContain('spec.pkiExpireDays, and a change of it replaces them');
  });
});
