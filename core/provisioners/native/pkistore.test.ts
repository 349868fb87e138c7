import { describe, expect, it } from 'vitest';
import { nativePKIOptions } from './render.ts';
import { pkiOptionsHash } from './pkistore.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';

const vc = (spec: VirtualCluster['spec'] = {}): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: 'u1' },
  spec,
});

describe('native PKI store', () => {
  it('hashes PKI options stably and changes only with certificate-relevant fields', () => {
    const base = pkiOptionsHash(nativePKIOptions(vc(), 'root'));
    expect(pkiOptionsHash(nativePKIOptions(vc({ apiServer: { extraArgs: { v: '4' } } }), 'root'))).toBe(base);
    const reordered = nativePKIOptions(vc(), 'root');
    expect(pkiOptionsHash({ ...reordered, apiserverDnsNames: [...reordered.apiserverDnsNames].reverse() })).toBe(base);
    expect(pkiOptionsHash(nativePKIOptions(vc({ serviceCidr: '10.40.0.0/16' }), 'root'))).not.toBe(base);
    expect(pkiOptionsHash(nativePKIOptions(vc({ pkiExpireDays: 30 }), 'root'))).not.toBe(base);
    expect(pkiOptionsHash(nativePKIOptions(vc(), 'other-root'))).not.toBe(base);
  });
});
