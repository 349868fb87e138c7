import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { generateControlPlanePKI } from '../../pki/pki.ts';
import type { ApiServerExpose } from '../../api/virtualcluster.ts';
import {
  exposeSettings,
  exposure,
  externalAccess,
  httpsURL,
  servingNamesHash,
  type ApiserverService,
  type ExposeSettings,
  type NodeLike,
} from './expose.ts';
import { renderNativeServices, type ClusterVersion } from './render.ts';

const ROOT = 'default-abc123-dev';
const cv = (serviceType?: 'ClusterIP' | 'NodePort' | 'LoadBalancer'): ClusterVersion => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name: 'v' },
  spec: { kubernetesVersion: 'v1.36.3', ...(serviceType && { apiServer: { serviceType } }) },
});

const node = (
  name: string,
  addresses: Record<string, string>,
  o: { ready?: boolean; labels?: Record<string, string>; unschedulable?: boolean } = {},
): NodeLike => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: o.labels ?? {} },
  spec: { unschedulable: o.unschedulable ?? false },
  status: {
    addresses: Object.entries(addresses).map(([type, address]) => ({ type, address })),
    conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
  },
});

const service = (
  type: string,
  o: { nodePort?: number; ingress?: Array<{ ip?: string; hostname?: string }> } = {},
): ApiserverService => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'apiserver', namespace: ROOT },
  spec: {
    type,
    clusterIP: '10.96.0.10',
    ports: [{ name: 'https', port: 6443, ...(o.nodePort && { nodePort: o.nodePort }) }],
  },
  ...(o.ingress && { status: { loadBalancer: { ingress: o.ingress } } }),
});

const settings = (e: ApiServerExpose, cvType?: 'NodePort'): ExposeSettings => exposeSettings(e, cvType);

describe('exposeSettings', () => {
  it.each<[string, ApiServerExpose | undefined, 'NodePort' | undefined, ExposeSettings]>([
    ['nothing asked', undefined, undefined, { type: 'ClusterIP', extraDNSNames: [], extraIPs: [] }],
    ["the ClusterVersion's type", undefined, 'NodePort', { type: 'NodePort', extraDNSNames: [], extraIPs: [] }],
    [
      "the VirtualCluster's type over it",
      { type: 'ClusterIP' },
      'NodePort',
      { type: 'ClusterIP', extraDNSNames: [], extraIPs: [] },
    ],
    [
      'a node port with NodePort',
      { type: 'NodePort', nodePort: 30443, extraIPs: ['192.0.2.1'] },
      undefined,
      { type: 'NodePort', nodePort: 30443, extraDNSNames: [], extraIPs: ['192.0.2.1'] },
    ],
  ])('%s', (_n, e, cvType, want) => {
    expect(exposeSettings(e, cvType)).toEqual(want);
  });
});

describe('renderNativeServices: the apiserver Service per exposure', () => {
  const apiserver = (objs: ReturnType<typeof renderNativeServices>) =>
    objs.find((o) => o.metadata?.name === 'apiserver') as unknown as {
      spec: { type: string; ports: Array<Record<string, unknown>> };
    };
  it.each<[string, ClusterVersion, ApiServerExpose | undefined, string, Record<string, unknown>]>([
    ['default', cv(), undefined, 'ClusterIP', { name: 'https', port: 6443, targetPort: 6443 }],
    ['ClusterVersion NodePort', cv('NodePort'), undefined, 'NodePort', { name: 'https', port: 6443, targetPort: 6443 }],
    [
      'VirtualCluster NodePort with a node port',
      cv(),
      { type: 'NodePort', nodePort: 30443 },
      'NodePort',
      { name: 'https', port: 6443, targetPort: 6443, nodePort: 30443 },
    ],
    [
      'VirtualCluster LoadBalancer',
      cv(),
      { type: 'LoadBalancer' },
      'LoadBalancer',
      { name: 'https', port: 6443, targetPort: 6443 },
    ],
    [
      'VirtualCluster ClusterIP over a NodePort ClusterVersion',
      cv('NodePort'),
      { type: 'ClusterIP' },
      'ClusterIP',
      { name: 'https', port: 6443, targetPort: 6443 },
    ],
  ])('%s', (_n, version, e, type, port) => {
    const svc = apiserver(renderNativeServices(version, ROOT, exposeSettings(e, version.spec.apiServer?.serviceType)));
    expect(svc.spec.type).toBe(type);
    expect(svc.spec.ports).toEqual([port]);
  });
});

describe('exposure: certificate names and the outside server', () => {
  const nodes = [
    node('worker-b', { InternalIP: '10.0.0.12' }),
    node('worker-a', { InternalIP: '10.0.0.11', ExternalIP: '203.0.113.11', Hostname: 'worker-a' }),
    node('worker-c', { InternalIP: '10.0.0.13' }, { ready: false }),
    node('worker-r', { InternalIP: '172.30.0.2' }, { labels: { 'vc.test/real': 'true' } }),
  ];
  it.each<
    [
      string,
      ExposeSettings,
      ApiserverService,
      NodeLike[],
      Record<string, string> | undefined,
      { dnsNames: string[]; ips: string[]; server?: string; waiting?: string },
    ]
  >([
    [
      'ClusterIP: only the extra names, no outside server',
      settings({ extraDNSNames: ['api.example.com'], extraIPs: ['192.0.2.7'] }),
      service('ClusterIP'),
      nodes,
      undefined,
      { dnsNames: ['api.example.com'], ips: ['192.0.2.7'] },
    ],
    [
      'NodePort: every node IP, the first Ready node by name, its external address',
      settings({ type: 'NodePort' }),
      service('NodePort', { nodePort: 31234 }),
      nodes,
      undefined,
      {
        dnsNames: [],
        ips: ['10.0.0.11', '10.0.0.12', '10.0.0.13', '172.30.0.2', '203.0.113.11'],
        server: 'https://203.0.113.11:31234',
      },
    ],
    [
      "NodePort: only the nodes of the platform's placement",
      settings({ type: 'NodePort', extraIPs: ['192.0.2.7'] }),
      service('NodePort', { nodePort: 31234 }),
      nodes,
      { 'vc.test/real': 'true' },
      { dnsNames: [], ips: ['172.30.0.2', '192.0.2.7'], server: 'https://172.30.0.2:31234' },
    ],
    [
      'NodePort: a not Ready node only when no other',
      settings({ type: 'NodePort' }),
      service('NodePort', { nodePort: 31234 }),
      [nodes[2]!],
      undefined,
      { dnsNames: [], ips: ['10.0.0.13'], server: 'https://10.0.0.13:31234' },
    ],
    [
      'NodePort: an IPv6 node in brackets',
      settings({ type: 'NodePort' }),
      service('NodePort', { nodePort: 31234 }),
      [node('v6', { InternalIP: 'fd00::2' })],
      undefined,
      { dnsNames: [], ips: ['fd00::2'], server: 'https://[fd00::2]:31234' },
    ],
    [
      'NodePort: waits for the node port',
      settings({ type: 'NodePort' }),
      service('ClusterIP'),
      nodes.slice(0, 1),
      undefined,
      { dnsNames: [], ips: ['10.0.0.12'], waiting: `WaitingForNodePort: a node port for Service ${ROOT}/apiserver` },
    ],
    [
      'NodePort: waits for a node matching the placement',
      settings({ type: 'NodePort' }),
      service('NodePort', { nodePort: 31234 }),
      nodes,
      { 'vc.test/real': 'false' },
      {
        dnsNames: [],
        ips: [],
        waiting:
          'WaitingForNode: a node with an InternalIP or ExternalIP matching the placement of the control plane to serve node port 31234',
      },
    ],
    [
      'LoadBalancer: waits while the ingress is empty',
      settings({ type: 'LoadBalancer', extraDNSNames: ['api.example.com'] }),
      service('LoadBalancer'),
      [],
      undefined,
      {
        dnsNames: ['api.example.com'],
        ips: [],
        waiting:
          'WaitingForLoadBalancer: the super cluster to assign a load balancer address to ' +
          `Service ${ROOT}/apiserver (status.loadBalancer.ingress is empty)`,
      },
    ],
    [
      'LoadBalancer: the ingress IP at the Service port',
      settings({ type: 'LoadBalancer' }),
      service('LoadBalancer', { ingress: [{ ip: '198.51.100.20' }] }),
      [],
      undefined,
      { dnsNames: [], ips: ['198.51.100.20'], server: 'https://198.51.100.20:6443' },
    ],
    [
      'LoadBalancer: an ingress host name',
      settings({ type: 'LoadBalancer' }),
      service('LoadBalancer', { ingress: [{ hostname: 'lb-1.elb.example.com' }, { ip: '198.51.100.21' }] }),
      [],
      undefined,
      { dnsNames: ['lb-1.elb.example.com'], ips: ['198.51.100.21'], server: 'https://lb-1.elb.example.com:6443' },
    ],
  ])('%s', (_n, s, svc, ns, selector, want) => {
    const e = exposure(s, svc, ns, selector ? { nodeSelector: selector } : undefined);
    expect(e.type).toBe(s.type);
    expect(e.sans).toEqual({ dnsNames: want.dnsNames, ips: want.ips });
    expect(e.server).toBe(want.server);
    expect(e.waiting && `${e.waiting.reason}: ${e.waiting.message}`).toBe(want.waiting);
  });

  it('gives the same names, and so the same hash, whatever order the nodes are listed in', () => {
    const s = settings({ type: 'NodePort' });
    const a = exposure(s, service('NodePort', { nodePort: 31000 }), nodes);
    const b = exposure(s, service('NodePort', { nodePort: 31000 }), [...nodes].reverse());
    expect(b).toEqual(a);
    expect(servingNamesHash(b.sans)).toBe(servingNamesHash(a.sans));
    expect(servingNamesHash({ dnsNames: [], ips: ['10.0.0.1'] })).not.toBe(servingNamesHash({ dnsNames: [], ips: [] }));
  });
});

describe('httpsURL', () => {
  it.each([
    ['10.0.0.1', 6443, 'https://10.0.0.1:6443'],
    ['fd00::1', 443, 'https://[fd00::1]:443'],
    ['api.example.com', 30000, 'https://api.example.com:30000'],
  ])('%s:%d', (host, port, want) => expect(httpsURL(host, port)).toBe(want));
});

describe('externalAccess', () => {
  it('writes an admin kubeconfig for the outside server, with the tenant CA and admin certificate', async () => {
    const pki = await generateControlPlanePKI({
      clusterName: ROOT,
      apiserverDnsNames: [],
      apiserverIPs: ['203.0.113.11'],
      serviceIP: '10.32.0.1',
      validityDays: 1,
    });
    const e = exposure(settings({ type: 'NodePort' }), service('NodePort', { nodePort: 31234 }), [
      node('a', { ExternalIP: '203.0.113.11' }),
    ]);
    const access = externalAccess(e, 'dev', pki);
    expect(access.server).toBe('https://203.0.113.11:31234');
    const kc = parse(access.kubeconfig!) as {
      clusters: Array<{ cluster: Record<string, string> }>;
      users: Array<{ user: Record<string, string> }>;
    };
    expect(kc.clusters[0]!.cluster.server).toBe('https://203.0.113.11:31234');
    expect(Buffer.from(kc.clusters[0]!.cluster['certificate-authority-data']!, 'base64').toString()).toBe(
      pki.ca.certPem,
    );
    expect(Buffer.from(kc.users[0]!.user['client-certificate-data']!, 'base64').toString()).toBe(pki.admin.certPem);
    // The serving certificate made for these names verifies for the server's address.
    expect(new X509Certificate(pki.apiserver.certPem).checkIP('203.0.113.11')).toBe('203.0.113.11');

    expect(externalAccess(exposure(settings({}), service('ClusterIP'), []), 'dev', pki)).toEqual({ type: 'ClusterIP' });
    const waiting = externalAccess(
      exposure(settings({ type: 'LoadBalancer' }), service('LoadBalancer'), []),
      'dev',
      pki,
    );
    expect(waiting).toMatchObject({ type: 'LoadBalancer', waiting: { reason: 'WaitingForLoadBalancer' } });
    expect(waiting.kubeconfig).toBeUndefined();
  });
});
