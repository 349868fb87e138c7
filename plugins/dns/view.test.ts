import { describe, expect, it } from 'vitest';
import { testContext } from '../../core/plugins/testing.ts';
import { dnsKubeconfig } from '../../core/lifecycle/tenantdns.ts';
import { dnsViewPlugin, perSuperKubeconfig } from './view.ts';

const kubeconfig = dnsKubeconfig({ host: '10.88.0.1', port: 40001, tlsServerName: 't.dns' });
const cm = (namespace: string, name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name },
  data,
});
const server = (o: { data?: Record<string, string> } | null) =>
  (JSON.parse(o!.data!.kubeconfig!) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0]!.cluster
    .server;

describe('dnsview: each super cluster reads its own view', () => {
  it.each([
    {
      name: 'several super clusters: r2 reads /super/r2',
      shared: true,
      sc: 'r2',
      want: 'https://10.88.0.1:40001/super/r2',
    },
    { name: 'one super cluster: unchanged', shared: false, sc: 'r1', want: 'https://10.88.0.1:40001' },
    { name: 'no super cluster name: unchanged', shared: true, sc: undefined, want: 'https://10.88.0.1:40001' },
  ])('$name', ({ shared, sc, want }) => {
    const t = cm('kube-system', 'coredns', { Corefile: 'x', kubeconfig });
    const got = dnsViewPlugin.mutate(structuredClone(t), t, testContext({ superCluster: sc, sharedTenants: shared }));
    expect(server(got.object)).toBe(want);
    expect(got.object?.data?.Corefile).toBe('x');
  });

  it('another ConfigMap is left alone', () => {
    const t = cm('default', 'coredns', { kubeconfig });
    const got = dnsViewPlugin.mutate(structuredClone(t), t, testContext({ superCluster: 'r2', sharedTenants: true }));
    expect(server(got.object)).toBe('https://10.88.0.1:40001');
  });

  it.each([
    ['YAML the tenant wrote', 'clusters: []'],
    ['a server with a path already', JSON.stringify({ clusters: [{ cluster: { server: 'https://h:1/super/r1' } }] })],
    ['no server', JSON.stringify({ clusters: [{ cluster: {} }] })],
  ])('perSuperKubeconfig leaves %s', (_n, text) => expect(perSuperKubeconfig(text, 'r2')).toBeUndefined());
});
