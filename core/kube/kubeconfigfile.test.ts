import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fromPackageRoot } from '../paths.ts';
import { Kubeconfig } from './kubeconfigfile.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'vc-kubeconfigfile-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** write puts a kubeconfig document at dir/<name> and returns its path. */
function write(doc: unknown, name = 'kubeconfig'): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof doc === 'string' ? doc : stringify(doc));
  return path;
}

const CONFIG = {
  apiVersion: 'v1',
  kind: 'Config',
  clusters: [
    { name: 'files', cluster: { server: 'https://127.0.0.1:6443/', 'certificate-authority': 'pki/ca.crt' } },
    {
      name: 'inline',
      cluster: { server: 'https://10.0.0.1', 'certificate-authority-data': 'Q0E=', 'tls-server-name': 'api' },
    },
    { name: 'skip', cluster: { server: 'https://10.0.0.2', 'insecure-skip-tls-verify': true } },
  ],
  users: [
    { name: 'certs', user: { 'client-certificate': 'pki/admin.crt', 'client-key': '/abs/admin.key' } },
    { name: 'token', user: { token: 'secret' } },
    { name: 'basic', user: { username: 'u', password: 'p' } },
    { name: 'exec', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'get-token' } } },
  ],
  contexts: [
    { name: 'a', context: { cluster: 'files', user: 'certs', namespace: 'team-a' } },
    { name: 'b', context: { cluster: 'inline', user: 'token' } },
    { name: 'c', context: { cluster: 'skip', user: 'basic' } },
    { name: 'd', context: { cluster: 'inline', user: 'exec' } },
    { name: 'dangling', context: { cluster: 'nowhere', user: 'nobody' } },
  ],
  'current-context': 'a',
};

describe('Kubeconfig', () => {
  it('reads a file as client-node KubeConfig.loadFromFile does: entries, relative paths, current context', () => {
    const path = write(CONFIG, 'sub/kubeconfig');
    const ours = new Kubeconfig();
    ours.loadFromFile(path);
    const theirs = new KubeConfig();
    theirs.loadFromFile(path);
    expect(ours.clusters).toEqual(theirs.clusters);
    expect(ours.users).toEqual(theirs.users);
    expect(ours.contexts).toEqual(theirs.contexts);
    expect(ours.getCurrentContext()).toBe('a');
    expect(ours.getCurrentCluster()?.caFile).toBe(join(dir, 'sub/pki/ca.crt'));
    expect(ours.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(ours.getCurrentUser()).toMatchObject({
      certFile: join(dir, 'sub/pki/admin.crt'),
      keyFile: '/abs/admin.key',
    });
    expect(ours.getContextObject('a')?.namespace).toBe('team-a');
  });

  it.each([
    ['b', { cluster: 'inline', caData: 'Q0E=', tlsServerName: 'api', user: 'token', token: 'secret' }],
    ['c', { cluster: 'skip', skipTLSVerify: true, user: 'basic', username: 'u', password: 'p' }],
    ['d', { cluster: 'inline', user: 'exec' }],
  ])('context %s picks its cluster and user', (context, want) => {
    const kc = new Kubeconfig();
    kc.loadFromFile(write(CONFIG));
    kc.currentContext = context;
    const { cluster, user, ...fields } = want;
    expect(kc.getCurrentCluster()?.name).toBe(cluster);
    expect(kc.getCurrentUser()?.name).toBe(user);
    expect({ ...kc.getCurrentCluster(), ...kc.getCurrentUser() }).toMatchObject(fields);
  });

  it('has no current cluster or user when the context names ones the file lacks, or no context is current', () => {
    const kc = new Kubeconfig();
    kc.loadFromFile(write({ ...CONFIG, 'current-context': 'dangling' }));
    expect(kc.getCurrentCluster()).toBeNull();
    expect(kc.getCurrentUser()).toBeNull();
    kc.loadFromFile(write({ ...CONFIG, 'current-context': undefined }));
    expect(kc.getCurrentContext()).toBe('');
    expect(kc.getCurrentCluster()).toBeNull();
    expect(kc.getContextObject('missing')).toBeNull();
  });

  it.each<[string, unknown, string]>([
    ['a cluster without a server', { clusters: [{ name: 'x', cluster: {} }] }, 'clusters[0].cluster.server is missing'],
    ['a user without a name', { users: [{ user: { token: 't' } }] }, 'users[0].name is missing'],
    ['a context without a name', { contexts: [{ context: { cluster: 'x' } }] }, 'contexts[0].name is missing'],
    ['a list instead of a mapping', '- a\n- b\n', 'a kubeconfig is a YAML mapping'],
    ['an empty file', '', 'a kubeconfig is a YAML mapping'],
  ])('refuses %s, naming the entry', (_, doc, message) => {
    const path = write(doc);
    expect(() => new Kubeconfig().loadFromFile(path)).toThrow(message);
  });

  it('applies the current user to request options through client-node, as KubeConfig.applyToHTTPSOptions', async () => {
    const kc = new Kubeconfig();
    kc.loadFromFile(write({ ...CONFIG, 'current-context': 'b' }));
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    expect((opts.headers as Record<string, string>).Authorization).toBe('Bearer secret');
    expect(String(opts.ca)).toBe('CA');
  });
});

describe('@kubernetes/client-node in production code', () => {
  // Loading the package's index costs every `vc` command, manager and vn-agent about 0.6 CPU-seconds: production code
  // imports its types, its config_types.js (Kubeconfig), or the index with `await import` where it is really needed.
  it('is imported statically for its types only', () => {
    const refused: string[] = [];
    for (const top of ['core', 'gitops', 'plugins']) {
      const files = readdirSync(fromPackageRoot(top), { recursive: true, encoding: 'utf8' }).filter(
        (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.split('/').includes('node_modules'),
      );
      for (const f of files)
        for (const m of readFileSync(fromPackageRoot(top, f), 'utf8').matchAll(
          /^(import|export)( type)?[^'";]*from '@kubernetes\/client-node'/gm,
        ))
          if (!m[2]) refused.push(`${top}/${f}: ${m[0]}`);
    }
    expect(refused).toEqual([]);
  });
});
