import { describe, expect, it } from 'vitest';
import { createCA, renderKubeconfig } from '../../pki/pki.ts';
import { probeReadyz } from './readyz.ts';

describe('probeReadyz', () => {
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
