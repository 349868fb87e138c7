import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createCA, issueCert } from './ca.ts';
import type { CertKeyPair } from './ca.ts';
import { renderKubeconfig, withServer } from './kubeconfig.ts';

const b64 = (text: string): string => Buffer.from(text).toString('base64');

describe('renderKubeconfig', () => {
  let ca: CertKeyPair;
  let admin: CertKeyPair;
  let server: https.Server;
  let url: string;

  beforeAll(async () => {
    ca = await createCA('kc-ca', 1);
    const [serving, client] = await Promise.all([
      issueCert(ca, { commonName: 'kube-apiserver', ipAddresses: ['127.0.0.1'], usages: ['server'], validityDays: 1 }),
      issueCert(ca, { commonName: 'admin', organizations: ['system:masters'], usages: ['client'], validityDays: 1 }),
    ]);
    admin = client;
    server = https.createServer(
      { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        res.end(JSON.stringify({ cn: peer.subject.CN, o: peer.subject.O, auth: req.headers.authorization ?? null }));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('renders one cluster, user and current context with embedded base64 data', () => {
    const text = renderKubeconfig({
      clusterName: 'tenant-a',
      server: 'https://10.0.0.5:6443',
      caPem: ca.certPem,
      user: 'admin',
      clientCertPem: admin.certPem,
      clientKeyPem: admin.keyPem,
    });
    expect(parse(text)).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'tenant-a',
          cluster: { server: 'https://10.0.0.5:6443', 'certificate-authority-data': b64(ca.certPem) },
        },
      ],
      users: [
        {
          name: 'admin',
          user: { 'client-certificate-data': b64(admin.certPem), 'client-key-data': b64(admin.keyPem) },
        },
      ],
      contexts: [{ name: 'admin@tenant-a', context: { cluster: 'tenant-a', user: 'admin' } }],
      'current-context': 'admin@tenant-a',
      preferences: {},
    });
  });

  it('loads into client-node with the same server, CA, certificate and key', () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      renderKubeconfig({
        clusterName: 'tenant-a',
        server: url,
        caPem: ca.certPem,
        user: 'admin',
        clientCertPem: admin.certPem,
        clientKeyPem: admin.keyPem,
      }),
    );
    expect(kc.getCurrentContext()).toBe('admin@tenant-a');
    expect(kc.getCurrentCluster()?.server).toBe(url);
    expect(Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64').toString()).toBe(ca.certPem);
    expect(Buffer.from(kc.getCurrentUser()?.certData ?? '', 'base64').toString()).toBe(admin.certPem);
    expect(Buffer.from(kc.getCurrentUser()?.keyData ?? '', 'base64').toString()).toBe(admin.keyPem);
  });

  it('renders a token user', () => {
    const text = renderKubeconfig({
      clusterName: 'c',
      server: 'https://x:6443',
      caPem: ca.certPem,
      user: 'sa',
      token: 'abc.def.ghi',
    });
    expect(parse(text).users).toEqual([{ name: 'sa', user: { token: 'abc.def.ghi' } }]);
    const kc = new KubeConfig();
    kc.loadFromString(text);
    expect(kc.getCurrentUser()?.token).toBe('abc.def.ghi');
  });

  it('authenticates a client-node HTTPS request with the embedded certificate', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      renderKubeconfig({
        clusterName: 'tenant-a',
        server: url,
        caPem: ca.certPem,
        user: 'admin',
        clientCertPem: admin.certPem,
        clientKeyPem: admin.keyPem,
      }),
    );
    const options: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    const body = await new Promise<string>((resolve, reject) => {
      https
        .get(`${url}/version`, options, (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (data += chunk));
          res.on('end', () => resolve(data));
        })
        .on('error', reject);
    });
    expect(JSON.parse(body)).toEqual({ cn: 'admin', o: 'system:masters', auth: null });
  });

  it('refuses a client certificate without its key and vice versa', () => {
    const base = { clusterName: 'c', server: 'https://x', caPem: ca.certPem, user: 'u' };
    expect(() => renderKubeconfig({ ...base, clientCertPem: admin.certPem })).toThrow(/go together/);
    expect(() => renderKubeconfig({ ...base, clientKeyPem: admin.keyPem })).toThrow(/go together/);
  });

  it('names a credential file by path for certificate and key, and refuses it next to embedded data', () => {
    const base = { clusterName: 'c', server: 'https://x', caPem: ca.certPem, user: 'u' };
    const doc = parse(renderKubeconfig({ ...base, clientCredentialFile: '/n/pki/kubelet-client-current.pem' })) as {
      users: Array<{ user: Record<string, string> }>;
    };
    expect(doc.users[0]!.user).toEqual({
      'client-certificate': '/n/pki/kubelet-client-current.pem',
      'client-key': '/n/pki/kubelet-client-current.pem',
    });
    expect(() =>
      renderKubeconfig({
        ...base,
        clientCredentialFile: '/f',
        clientCertPem: admin.certPem,
        clientKeyPem: admin.keyPem,
      }),
    ).toThrow(/clientCredentialFile or clientCertPem, not both/);
  });
});

describe('withServer', () => {
  const base = renderKubeconfig({
    clusterName: 'dev',
    server: 'https://apiserver.root.svc:6443',
    caPem: '-----BEGIN CERTIFICATE-----\ntenant\n-----END CERTIFICATE-----\n',
    user: 'admin',
    token: 't0k',
  });
  type Doc = {
    clusters: Array<{ name: string; cluster: Record<string, string> }>;
    users: Array<{ user: Record<string, string> }>;
  };

  it('rewrites only the server, keeping the CA and the credentials', () => {
    const out = parse(withServer(base, 'https://api.team-a.example.com/')) as Doc;
    const before = parse(base) as Doc;
    expect(out.clusters[0]!.cluster).toEqual({
      ...before.clusters[0]!.cluster,
      server: 'https://api.team-a.example.com',
    });
    expect(out.users).toEqual(before.users);
  });

  it('puts the front door CA in place of the tenant CA when given', () => {
    const frontDoor = '-----BEGIN CERTIFICATE-----\nfront\n-----END CERTIFICATE-----\n';
    const out = parse(withServer(base, 'https://10.1.2.3:8443', frontDoor)) as Doc;
    expect(out.clusters[0]!.cluster).toEqual({
      server: 'https://10.1.2.3:8443',
      'certificate-authority-data': b64(frontDoor),
    });
  });

  it.each([
    [
      'not a URL',
      'api.example.com:443',
      undefined,
      /--server "api.example.com:443" is not a URL|expected an https URL/,
    ],
    ['plain http', 'http://api.example.com', undefined, /expected an https URL with a host/],
    [
      'a CA file without a certificate',
      'https://a.example.com',
      'hello',
      /--certificate-authority: no PEM certificate/,
    ],
  ])('refuses %s', (_, server, ca, want) => {
    expect(() => withServer(base, server, ca)).toThrow(want);
  });

  it('names the kubeconfig when it has no current cluster', () => {
    expect(() =>
      withServer('apiVersion: v1\nkind: Config\n', 'https://a.example.com', undefined, 'VirtualCluster x/y'),
    ).toThrow('VirtualCluster x/y: current-context undefined names no context with a cluster');
  });
});
