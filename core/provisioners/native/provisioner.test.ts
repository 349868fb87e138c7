import { describe, expect, it } from 'vitest';
import { validate } from '../../../schemas/validate.ts';
import { createCA, renderKubeconfig } from '../../pki/pki.ts';
import { nativePKIOptions } from './render.ts';
import { defaultClusterVersion, pkiOptionsHash, probeReadyz } from './provisioner.ts';
import type { VirtualCluster } from '../../lifecycle/types.ts';

const vc = (spec: VirtualCluster['spec'] = {}): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: 'u1' },
  spec,
});

describe('native provisioner helpers', () => {
  it('gives a default ClusterVersion the schema accepts', () => {
    expect(validate('clusterVersion', defaultClusterVersion())).toEqual([]);
    expect(defaultClusterVersion().spec.kubernetesVersion).toMatch(/^v\d+\.\d+\.\d+/);
  });

  it('hashes PKI options stably and changes only with certificate-relevant fields', () => {
    const base = pkiOptionsHash(nativePKIOptions(vc(), 'root'));
    expect(pkiOptionsHash(nativePKIOptions(vc({ apiServer: { extraArgs: { v: '4' } } }), 'root'))).toBe(base);
    const reordered = nativePKIOptions(vc(), 'root');
    expect(pkiOptionsHash({ ...reordered, apiserverDnsNames: [...reordered.apiserverDnsNames].reverse() })).toBe(base);
    expect(pkiOptionsHash(nativePKIOptions(vc({ serviceCidr: '10.40.0.0/16' }), 'root'))).not.toBe(base);
    expect(pkiOptionsHash(nativePKIOptions(vc({ pkiExpireDays: 30 }), 'root'))).not.toBe(base);
    expect(pkiOptionsHash(nativePKIOptions(vc(), 'other-root'))).not.toBe(base);
  });

  it('reports why /readyz does not answer instead of throwing', async () => {
    const ca = await createCA('probe-ca', 1);
    const kubeconfig = renderKubeconfig({
      clusterName: 'x',
      server: 'https://127.0.0.1:1',
      caPem: ca.certPem,
      user: 'u',
      token: 't',
    });
    expect(await probeReadyz(kubeconfig, 3000)).toBe('ECONNREFUSED 127.0.0.1');
  });
});
