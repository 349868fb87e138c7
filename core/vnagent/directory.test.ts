import { describe, expect, it } from 'vitest';
import { createCA, fingerprintSha256, renderKubeconfig } from '../pki/pki.ts';
import { agentTenant } from './auth.ts';
import { caFromKubeconfig } from './directory.ts';
import { StaticTenantDirectory } from './testing.ts';

describe('tenant directories', () => {
  it('StaticTenantDirectory adds, replaces and removes tenants', async () => {
    const ca = await createCA('t', 1);
    const fp = fingerprintSha256(ca.certPem);
    const d = new StaticTenantDirectory([{ key: 'a', caPem: ca.certPem, fingerprint: fp }]);
    await d.start();
    expect(d.ready()).toBe(true);
    expect([...d.tenants()].map((t) => t.key)).toEqual(['a']);
    d.upsert(agentTenant({ key: 'b', caPem: ca.certPem, fingerprint: fp }));
    d.upsert({ key: 'a', caPem: ca.certPem, fingerprint: fp, pluginConfig: { x: 1 } });
    expect([...d.tenants()].map((t) => t.key).sort()).toEqual(['a', 'b']);
    expect([...d.tenants()].find((t) => t.key === 'a')?.tenant.pluginConfig).toEqual({ x: 1 });
    d.remove('a');
    expect([...d.tenants()].map((t) => t.key)).toEqual(['b']);
    await d.stop();
  });

  it('caFromKubeconfig reads certificate-authority-data of the current cluster', async () => {
    const ca = await createCA('tenant-ca', 1);
    const text = renderKubeconfig({
      clusterName: 'c',
      server: 'https://127.0.0.1:6443',
      caPem: ca.certPem,
      user: 'admin',
      token: 'x',
    });
    expect(caFromKubeconfig(text).trim()).toBe(ca.certPem.trim());
    const noCa =
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://x"}}]\n' +
      'contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n';
    expect(() => caFromKubeconfig(noCa)).toThrow(/no certificate-authority-data/);
  });
});
