import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { codeLabels, currentUserAgent, packageVersion, userAgent } from './identity.ts';
import { Kubeconfig } from './kubeconfigfile.ts';
import { inClusterConfig, InClusterError, platformAuth, platformFileHints } from './platform.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'vc-platform-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** serviceAccount writes a ServiceAccount directory as the kubelet mounts it. */
function serviceAccount(files: Record<string, string> = { token: 'tok', 'ca.crt': 'CA', namespace: 'vc-system' }) {
  for (const [n, v] of Object.entries(files)) writeFileSync(join(dir, n), v);
  return dir;
}

describe('inClusterConfig', () => {
  const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };

  it('reads the server from the environment and the CA, token and namespace from the ServiceAccount directory', () => {
    expect(inClusterConfig(env, serviceAccount())).toEqual({
      server: 'https://10.96.0.1:443',
      caFile: join(dir, 'ca.crt'),
      tokenFile: join(dir, 'token'),
      namespace: 'vc-system',
    });
  });

  it.each<[string, NodeJS.ProcessEnv, Record<string, string>, string]>([
    ['no service host', { KUBERNETES_SERVICE_PORT: '443' }, { token: 't', 'ca.crt': 'c' }, 'KUBERNETES_SERVICE_HOST'],
    ['no service port', { KUBERNETES_SERVICE_HOST: 'h' }, { token: 't', 'ca.crt': 'c' }, 'must be set'],
    ['no token', env, { 'ca.crt': 'c' }, '/token does not exist (is a ServiceAccount token mounted?)'],
    ['no CA', env, { token: 't' }, '/ca.crt does not exist'],
  ])('refuses %s, saying what is missing', (_, e, files, message) => {
    serviceAccount(files);
    expect(() => inClusterConfig(e, dir)).toThrow(InClusterError);
    expect(() => inClusterConfig(e, dir)).toThrow(message);
  });

  it('brackets an IPv6 service host and leaves the namespace out when it is not mounted', () => {
    const c = inClusterConfig(
      { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      serviceAccount({ token: 't', 'ca.crt': 'c' }),
    );
    expect(c.server).toBe('https://[fd00::1]:443');
    expect(c.namespace).toBeUndefined();
  });
});

describe('platform kubeconfig files', () => {
  /** kubeconfig writes a kubeconfig with one user and loads it as fromFile does. */
  function kubeconfig(user: Record<string, unknown>): { path: string; kc: Kubeconfig } {
    const path = join(dir, 'kubeconfig');
    writeFileSync(
      path,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
        users: [{ name: 'ops', user }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'ops' } }],
        'current-context': 'x',
      }),
    );
    const kc = new Kubeconfig();
    kc.loadFromFile(path);
    return { path, kc };
  }

  it('finds the tokenFile the loader drops, relative to the kubeconfig, and reads the token from it', async () => {
    writeFileSync(join(dir, 'sa-token'), 'from-file\n');
    const { path, kc } = kubeconfig({ tokenFile: 'sa-token' });
    const hints = platformFileHints(path, kc);
    expect(hints).toEqual({ baseDir: dir, tokenFile: join(dir, 'sa-token') });
    const { credentials } = await platformAuth(kc, hints);
    expect(await credentials.get()).toEqual({ authorization: 'Bearer from-file' });
  });

  it('checks an exec plugin when the client is built, naming the user', async () => {
    const { path, kc } = kubeconfig({ exec: { apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'x' } });
    await expect(platformAuth(kc, platformFileHints(path, kc))).rejects.toThrow(
      'kubeconfig user "ops": exec.apiVersion',
    );
  });

  it('sends basic auth and a static token as headers', async () => {
    const basic = kubeconfig({ username: 'a', password: 'b' });
    expect(await (await platformAuth(basic.kc)).credentials.get()).toEqual({
      authorization: `Basic ${Buffer.from('a:b').toString('base64')}`,
    });
    const token = kubeconfig({ token: 'inline' });
    expect(await (await platformAuth(token.kc)).credentials.get()).toEqual({ authorization: 'Bearer inline' });
  });
});

describe('identity', () => {
  it.each([
    ['manager', '0.1.0', 'linux', 'x64', 'virtualcluster-ts-manager/0.1.0 (linux/x64)'],
    ['vn-agent', '0.1.0', 'linux', 'arm64', 'virtualcluster-ts-vn-agent/0.1.0 (linux/arm64)'],
    ['vc', '1.2.3-rc.1', 'darwin', 'arm64', 'virtualcluster-ts-vc/1.2.3-rc.1 (darwin/arm64)'],
  ])('userAgent(%s, %s, %s, %s) is %s', (component, version, os, arch, want) => {
    expect(userAgent(component, version, os, arch)).toBe(want);
  });

  it('takes the version from package.json and names the CLI until a program names itself', () => {
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
    expect(currentUserAgent()).toBe(`virtualcluster-ts-vc/${packageVersion()} (${process.platform}/${process.arch})`);
  });

  it.each<[number | undefined, string, string]>([
    [200, '200', '2xx'],
    [201, '201', '2xx'],
    [401, '401', '4xx'],
    [403, '403', '4xx'],
    [503, '503', '5xx'],
    [undefined, 'error', 'error'],
    [99, 'other', 'other'],
    [600, 'other', 'other'],
  ])('the status %s counts as code %s, class %s', (status, code, cls) => {
    expect(codeLabels(status)).toEqual({ code, class: cls });
  });
});
