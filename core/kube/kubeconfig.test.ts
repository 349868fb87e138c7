import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createCA, issueCert, type CertKeyPair } from '../pki/ca.ts';
import { KubeClient } from './client.ts';
import { KubeconfigError, parseKubeconfig, renderSafeKubeconfig } from './kubeconfig.ts';

const SOURCE = 'Secret team-a/imported (key "kubeconfig")';
const b64 = (s: string) => Buffer.from(s).toString('base64');

type Doc = Record<string, unknown>;
let ca: CertKeyPair;
let admin: CertKeyPair;

/** good is a kubeconfig parseKubeconfig accepts; each case below changes one thing in it. */
function good(): Doc {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'c', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': b64(ca.certPem) } },
    ],
    users: [
      { name: 'u', user: { 'client-certificate-data': b64(admin.certPem), 'client-key-data': b64(admin.keyPem) } },
    ],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  };
}
const cluster = (d: Doc) => (d.clusters as Doc[])[0]!.cluster as Doc;
const user = (d: Doc) => (d.users as Doc[])[0]!.user as Doc;

beforeAll(async () => {
  ca = await createCA('kc-test-ca', 1);
  admin = await issueCert(ca, {
    commonName: 'admin',
    organizations: ['system:masters'],
    usages: ['client'],
    validityDays: 1,
  });
});

describe('parseKubeconfig', () => {
  it('accepts inline certificates and returns exactly them', () => {
    const k = parseKubeconfig(stringify(good()), SOURCE);
    expect(k).toMatchObject({
      server: 'https://127.0.0.1:6443',
      caPem: ca.certPem,
      certPem: admin.certPem,
      keyPem: admin.keyPem,
      context: 'x',
    });
    expect(k.token).toBeUndefined();
  });

  it('accepts a token, and a single context without current-context', () => {
    const d = good();
    (d.users as Doc[])[0]!.user = { token: 'abc.def' };
    delete d['current-context'];
    expect(parseKubeconfig(stringify(d), SOURCE)).toMatchObject({ token: 'abc.def', context: 'x' });
  });

  it('round-trips through renderSafeKubeconfig', () => {
    const k = parseKubeconfig(stringify(good()), SOURCE);
    expect(parseKubeconfig(renderSafeKubeconfig(k), 'rendered')).toEqual({ ...k, context: 'default' });
  });

  it.each<[string, (d: Doc) => void, string]>([
    [
      'an exec plugin',
      (d) => (user(d).exec = { apiVersion: 'client.authentication.k8s.io/v1', command: 'touch', args: ['/tmp/x'] }),
      'users[0].user.exec: exec plugins are refused',
    ],
    [
      'an auth-provider',
      (d) => (user(d)['auth-provider'] = { name: 'gcp', config: { 'cmd-path': '/bin/sh' } }),
      'users[0].user.auth-provider: auth-provider plugins are refused',
    ],
    [
      'a token file',
      (d) => (user(d).tokenFile = '/var/run/secrets/kubernetes.io/serviceaccount/token'),
      'users[0].user.tokenFile: token files are refused',
    ],
    [
      'a client certificate file',
      (d) => (user(d)['client-certificate'] = '/etc/kubernetes/pki/admin.crt'),
      'users[0].user.client-certificate: certificate files are refused',
    ],
    [
      'a client key file',
      (d) => (user(d)['client-key'] = '/etc/kubernetes/pki/admin.key'),
      'users[0].user.client-key: key files are refused',
    ],
    [
      'a CA file',
      (d) => (cluster(d)['certificate-authority'] = '/etc/kubernetes/pki/ca.crt'),
      'clusters[0].cluster.certificate-authority: CA files are refused',
    ],
    [
      'basic auth',
      (d) => Object.assign(user(d), { username: 'admin', password: 'x' }),
      'users[0].user.username: basic authentication is refused',
    ],
    ['impersonation', (d) => (user(d).as = 'system:admin'), 'users[0].user.as: impersonation is refused'],
    [
      'insecure-skip-tls-verify',
      (d) => (cluster(d)['insecure-skip-tls-verify'] = true),
      'clusters[0].cluster.insecure-skip-tls-verify: skipping TLS verification is refused',
    ],
    [
      'a proxy',
      (d) => (cluster(d)['proxy-url'] = 'socks5://127.0.0.1:1080'),
      'clusters[0].cluster.proxy-url: proxies are refused',
    ],
    [
      'a plain http server',
      (d) => (cluster(d).server = 'http://127.0.0.1:8080'),
      'clusters[0].cluster.server: "http://127.0.0.1:8080" is not https',
    ],
    ['a unix socket server', (d) => (cluster(d).server = 'unix:///var/run/docker.sock'), 'is not https'],
    [
      'credentials in the server URL',
      (d) => (cluster(d).server = 'https://u:p@127.0.0.1:6443'),
      'credentials in the URL are refused',
    ],
    ['no server', (d) => delete cluster(d).server, 'clusters[0].cluster.server: is required'],
    [
      'an unknown user field',
      (d) => (user(d)['client-certificate-file'] = '/x'),
      'users[0].user.client-certificate-file: unknown field',
    ],
    [
      'an exec plugin in an entry no context uses',
      (d) => (d.users as Doc[]).push({ name: 'other', user: { exec: { command: 'sh' } } }),
      'users[1].user.exec: exec plugins are refused',
    ],
    [
      'a file in an unused cluster',
      (d) =>
        (d.clusters as Doc[]).push({
          name: 'o',
          cluster: { server: 'https://x', 'certificate-authority': '/etc/shadow' },
        }),
      'clusters[1].cluster.certificate-authority',
    ],
    [
      'several contexts and none current',
      (d) => {
        (d.contexts as Doc[]).push({ name: 'y', context: { cluster: 'c', user: 'u' } });
        delete d['current-context'];
      },
      'current-context: is not set and there are 2 contexts',
    ],
    [
      'a current-context that does not exist',
      (d) => (d['current-context'] = 'nope'),
      'current-context: names context "nope"',
    ],
    [
      'a context naming a missing user',
      (d) => (((d.contexts as Doc[])[0]!.context as Doc).user = 'ghost'),
      'contexts[0].context.user: names user "ghost"',
    ],
    [
      'a name defined twice',
      (d) => (d.clusters as Doc[]).push({ name: 'c', cluster: { server: 'https://evil:6443' } }),
      'clusters[1].name: "c" is defined twice',
    ],
    [
      'a certificate without its key',
      (d) => delete user(d)['client-key-data'],
      'client-key-data: client-certificate-data and client-key-data go together',
    ],
    [
      'CA data that is not a certificate',
      (d) => (cluster(d)['certificate-authority-data'] = b64('/etc/kubernetes/pki/ca.crt')),
      'certificate-authority-data: must be base64 of a PEM certificate',
    ],
    ['a multi-line token', (d) => (user(d).token = 'a\nb'), 'users[0].user.token: must be a non-empty one-line string'],
    ['an unknown top-level field', (d) => (d['exec'] = { command: 'sh' }), 'exec: unknown field'],
  ])('refuses %s, naming the source and the field', (_, change, message) => {
    const d = good();
    change(d);
    let err: unknown;
    try {
      parseKubeconfig(stringify(d), SOURCE);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KubeconfigError);
    expect((err as Error).message).toContain(`kubeconfig in ${SOURCE}: `);
    expect((err as Error).message).toContain(message);
    expect((err as KubeconfigError).reason).toBe('KubeconfigRefused');
  });

  it.each([
    ['not YAML', ': : :\n  - ['],
    ['a list', '- a\n- b'],
    ['empty', ''],
  ])('refuses a document that is %s', (_, text) => {
    expect(() => parseKubeconfig(text, SOURCE)).toThrow(KubeconfigError);
  });
});

describe('KubeClient.fromString', () => {
  it('never runs an exec plugin: the command is refused before any request', async () => {
    const marker = join(tmpdir(), `pwned-${randomBytes(6).toString('hex')}`);
    const d = good();
    (d.users as Doc[])[0]!.user = {
      exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'touch', args: [marker] },
    };
    await expect(KubeClient.fromString(stringify(d), SOURCE)).rejects.toThrow(/exec plugins are refused/);
    expect(existsSync(marker)).toBe(false);
  });

  it.each<[string, Doc, string]>([
    ['a token file', { tokenFile: 'TOKEN' }, 'token files are refused'],
    ['certificate files', { 'client-certificate': 'TOKEN', 'client-key': 'TOKEN' }, 'certificate files are refused'],
  ])('never reads %s on the manager host, though platform kubeconfigs may name them', async (_, u, message) => {
    // The same user that KubeClient.fromFile (a platform kubeconfig) would read: from a Secret it is refused.
    const secretFile = join(tmpdir(), `secret-${randomBytes(6).toString('hex')}`);
    writeFileSync(secretFile, 'manager-token');
    try {
      const d = good();
      (d.users as Doc[])[0]!.user = JSON.parse(JSON.stringify(u).replaceAll('TOKEN', secretFile)) as Doc;
      await expect(KubeClient.fromString(stringify(d), SOURCE)).rejects.toThrow(message);
    } finally {
      rmSync(secretFile, { force: true });
    }
  });

  it('builds a client that carries only the accepted credentials', async () => {
    const d = good();
    (d.users as Doc[])[0]!.user = { token: 'tok' };
    const c = await KubeClient.fromString(stringify(d), SOURCE);
    try {
      expect(c.server.href).toBe('https://127.0.0.1:6443/');
      expect(c.kubeConfig.getCurrentCluster()?.caData).toBe(b64(ca.certPem));
      expect(c.kubeConfig.getCurrentCluster()?.skipTLSVerify).toBe(false);
    } finally {
      c.close();
    }
  });
});
