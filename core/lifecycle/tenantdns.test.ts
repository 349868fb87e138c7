import { describe, expect, it } from 'vitest';
import { corefile, tenantDnsObjects } from './tenantdns.ts';

interface Fields {
  rules: unknown;
  subjects: unknown;
  data: Record<string, string>;
  spec: {
    template: {
      spec: { dnsPolicy: string; securityContext: unknown; containers: Array<{ securityContext: unknown }> };
    };
  };
}

const find = (kind: string, o = tenantDnsObjects({ clusterDomain: 'cluster.local' })) =>
  o.find((x) => x.object.kind === kind)!.object as unknown as Fields;

interface KC {
  clusters: Array<{ cluster: { server: string; 'tls-server-name'?: string } }>;
  users: Array<{ user: unknown }>;
}

describe('tenant DNS objects', () => {
  it('the DNS credential only lists and watches Services, EndpointSlices and Namespaces', () => {
    expect(find('ClusterRole').rules).toEqual([
      { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
    ]);
    expect(find('ClusterRoleBinding').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' },
    ]);
  });
  it('answers only the cluster domain and reverse zones: no forward to any other resolver', () => {
    const c = corefile('tenant.example');
    expect(c).toMatch(/^tenant\.example:1053 in-addr\.arpa:1053 ip6\.arpa:1053 \{/);
    expect(c).not.toMatch(/forward|proxy/);
  });
  it('runs within the restricted Pod Security level and keeps its own DNS settings', () => {
    const pod = find('Deployment').spec.template.spec;
    expect(pod.dnsPolicy).toBe('Default');
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });
  it('reads Services through the given address with the Pod ServiceAccount files, else in-cluster', () => {
    const withView = tenantDnsObjects({ clusterDomain: 'cluster.local', apiserver: { host: '10.1.2.1', port: 4443 } });
    const cm = find('ConfigMap', withView).data;
    expect(cm.Corefile).toContain('kubeconfig /etc/coredns/kubeconfig tenant');
    expect((JSON.parse(cm.kubeconfig!) as KC).clusters[0]!.cluster.server).toBe('https://10.1.2.1:4443');
    expect((JSON.parse(cm.kubeconfig!) as KC).users[0]!.user).toEqual({
      tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
    });
    expect((JSON.parse(cm.kubeconfig!) as KC).clusters[0]!.cluster['tls-server-name']).toBeUndefined();
    expect(find('ConfigMap').data.kubeconfig).toBeUndefined();
    expect(find('ConfigMap').data.Corefile).not.toContain('kubeconfig');
  });
  it('asks a shared view for its tenant by TLS server name', () => {
    const apiserver = { host: '10.1.2.1', port: 4443, tlsServerName: 'root-a.dns-view.invalid' };
    const cm = find('ConfigMap', tenantDnsObjects({ clusterDomain: 'cluster.local', apiserver })).data;
    expect((JSON.parse(cm.kubeconfig!) as KC).clusters[0]!.cluster).toEqual({
      server: 'https://10.1.2.1:4443',
      'certificate-authority': '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
      'tls-server-name': 'root-a.dns-view.invalid',
    });
  });
});
