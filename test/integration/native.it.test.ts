import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { fingerprintSha256, generateControlPlanePKI } from '../../core/pki/pki.ts';
import type { ControlPlanePKI } from '../../core/pki/pki.ts';
import { ANN, rootNamespace } from '../../core/names/names.ts';
import {
  NATIVE_SECRETS,
  nativePKIOptions,
  renderNative,
  resourceFor,
  type ClusterVersion,
  type VirtualCluster,
} from '../../core/provisioners/native/render.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';

const DAY_MS = 86_400_000;
const PKI_EXPIRE_DAYS = 90;

const vc: VirtualCluster = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: '7d1c4f0e-5b8a-4c61-9a3e-2f6d0c9b1a77' },
  spec: { clusterVersionName: 'v1', pkiExpireDays: PKI_EXPIRE_DAYS, apiServer: { extraArgs: { v: '2' } } },
};
const cv: ClusterVersion = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name: 'v1' },
  spec: {
    kubernetesVersion: 'v1.36.3',
    apiServer: { replicas: 2, serviceType: 'NodePort' },
    etcd: { storageSize: '2Gi' },
  },
};
const root = rootNamespace(vc.metadata!.namespace!, vc.metadata!.name!, vc.metadata!.uid!);

interface Secret extends KubeObject {
  data: Record<string, string>;
}

describe('native provisioner rendering on a real super cluster', () => {
  let t: TestSuper;
  let pki: ControlPlanePKI;
  let objs: KubeObject[];
  beforeAll(async () => {
    [t, pki] = await Promise.all([startTestSuper({ nodes: 1 }), generateControlPlanePKI(nativePKIOptions(vc, root))]);
    objs = renderNative({ vc, clusterVersion: cv, pki, rootNamespace: root });
  });
  afterAll(async () => {
    await t?.stop();
  });

  const secret = (name: string): Secret => objs.find((o) => o.kind === 'Secret' && o.metadata?.name === name) as Secret;
  const pem = (name: string, key = 'tls.crt'): string =>
    Buffer.from(secret(name).data[key]!, 'base64').toString('utf8');

  it('has every rendered object accepted by a server-side apply dry run', async () => {
    const [ns, ...rest] = objs;
    expect(ns!.kind).toBe('Namespace');
    const created = await t.client.apply(resourceFor(ns!), ns!, 'vc-manager');
    expect(created.metadata?.name).toBe(root);
    const rejected: string[] = [];
    for (const o of rest) {
      try {
        const answer = await t.client.apply(resourceFor(o), o, 'vc-manager', { dryRun: true });
        expect(answer.kind).toBe(o.kind);
        expect(answer.metadata?.namespace).toBe(root);
      } catch (e) {
        rejected.push(`${o.kind}/${o.metadata?.name}: ${(e as Error).message}`);
      }
    }
    expect(rejected).toEqual([]);
    // Dry run persists nothing.
    const left = await t.client.list(resourceFor(rest.find((o) => o.kind === 'StatefulSet')!), { namespace: root });
    expect(left.items).toEqual([]);
  });

  it('serves the apiserver certificate for exactly the Service and kubernetes.default names, signed by the tenant CA', () => {
    const ca = new X509Certificate(pem(NATIVE_SECRETS.ca));
    const cert = new X509Certificate(pem(NATIVE_SECRETS.apiserver));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    const sans = cert.subjectAltName!.split(', ').sort();
    expect(sans).toEqual(
      [
        'DNS:apiserver',
        `DNS:apiserver.${root}`,
        `DNS:apiserver.${root}.svc`,
        `DNS:apiserver.${root}.svc.cluster.local`,
        'DNS:kubernetes',
        'DNS:kubernetes.default',
        'DNS:kubernetes.default.svc',
        'DNS:kubernetes.default.svc.cluster.local',
        'DNS:localhost',
        'IP Address:127.0.0.1',
        'IP Address:10.32.0.1',
      ].sort(),
    );
    const expiresIn = new Date(cert.validTo).getTime() - Date.now();
    expect(Math.abs(expiresIn - PKI_EXPIRE_DAYS * DAY_MS)).toBeLessThan(DAY_MS);
  });

  it('records the kubelet client fingerprint of the rendered certificate', () => {
    const cert = pem(NATIVE_SECRETS.kubeletClient);
    expect(new X509Certificate(cert).verify(new X509Certificate(pem(NATIVE_SECRETS.ca)).publicKey)).toBe(true);
    expect(pki.kubeletClientFingerprint).toBe(fingerprintSha256(cert));
    expect(secret(NATIVE_SECRETS.kubeletClient).metadata?.annotations?.[ANN.kubeletClientFingerprint]).toBe(
      fingerprintSha256(cert),
    );
  });
});
