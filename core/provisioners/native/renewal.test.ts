import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateControlPlanePKI, type ControlPlanePKI, type ControlPlanePKIOptions } from '../../pki/pki.ts';
import { nativePKIOptions, renderNative, type VirtualCluster } from './render.ts';
import { NATIVE_RENEWED, nativeCaRotation, nativeCertificates, renewDueLeaves } from './renewal.ts';
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
const opts: ControlPlanePKIOptions = { ...nativePKIOptions(vc, ROOT), validityDays: 10, caValidityDays: 30 };

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
  it('reports the renewed leaves and, marked manual, the CAs and the pinned kubelet client', () => {
    const certs = nativeCertificates(pki);
    expect(certs.filter((c) => !c.manual).map((c) => c.name)).toEqual(Object.values(NATIVE_RENEWED));
    expect(certs.filter((c) => c.manual).map((c) => c.name)).toEqual([
      'cluster CA',
      'front-proxy CA',
      'kube-apiserver kubelet client',
    ]);
    const life = (name: string) => {
      const c = certs.find((x) => x.name === name)!;
      return Math.round((c.notAfter.getTime() - c.notBefore.getTime()) / DAY_MS);
    };
    expect(life('admin client')).toBe(10);
    expect(life('cluster CA')).toBe(30);
    expect(life('kube-apiserver kubelet client')).toBe(30);
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
    for (const k of ['apiserver', 'frontProxyClient', 'admin', 'controllerManager'] as const) {
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

describe('nativeCaRotation', () => {
  it('answers nothing without the annotation', () => {
    expect(nativeCaRotation(undefined)).toBeUndefined();
  });

  it.each(['add', 'reissue', 'drop', 'later'])('refuses step %s by name, as vc rotate-ca reads it', (step) => {
    const c = caRotationCondition(nativeCaRotation(step)!);
    expect(c).toMatchObject({ status: 'False', reason: CA_ROTATION_REFUSED });
    // vc rotate-ca stops waiting on a refusal whose message names the step it asked for.
    expect(c.message).toContain(`step ${step}: native tenants have no CA rotation yet`);
  });
});
