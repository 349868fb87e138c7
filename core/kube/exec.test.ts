import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecCredentialError, parseExecConfig, parseExecCredential, runExecPlugin, type ExecConfig } from './exec.ts';

const V1 = 'client.authentication.k8s.io/v1';
const cfg: ExecConfig = { apiVersion: V1, command: 'plugin', args: [], env: [] };
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n';

/** thrown returns the ExecCredentialError fn throws. */
function thrown(fn: () => unknown): ExecCredentialError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ExecCredentialError) return e;
    throw e;
  }
  throw new Error('expected an ExecCredentialError');
}

describe('parseExecConfig', () => {
  it('accepts v1 and v1beta1 and resolves a relative command against the kubeconfig directory', () => {
    expect(parseExecConfig({ apiVersion: V1, command: './bin/p', args: ['a'] }, 'u', '/etc/vc')).toEqual({
      apiVersion: V1,
      command: '/etc/vc/bin/p',
      args: ['a'],
      env: [],
    });
    const beta = parseExecConfig({ apiVersion: `${V1}beta1`, command: 'aws', env: [{ name: 'A', value: 'b' }] }, 'u');
    expect(beta).toMatchObject({ command: 'aws', env: [{ name: 'A', value: 'b' }] });
  });

  it.each<[string, unknown, string]>([
    ['not a mapping', 'sh', 'kubeconfig user "ops": exec: must be a mapping'],
    ['an old apiVersion', { apiVersion: `${V1}alpha1`, command: 'x' }, 'exec.apiVersion: "client.authentication'],
    ['no apiVersion', { command: 'x' }, 'exec.apiVersion: undefined is not supported'],
    ['no command', { apiVersion: V1 }, 'exec.command: is required'],
    ['args not strings', { apiVersion: V1, command: 'x', args: [1] }, 'exec.args: must be a list of strings'],
    ['env not a list', { apiVersion: V1, command: 'x', env: { A: 'b' } }, 'exec.env: must be a list'],
    ['env without value', { apiVersion: V1, command: 'x', env: [{ name: 'A' }] }, 'exec.env[0]: must be'],
  ])('refuses %s, naming the user and the field', (_, raw, message) => {
    expect(thrown(() => parseExecConfig(raw, 'ops')).message).toContain(message);
  });
});

describe('parseExecCredential', () => {
  const out = (status: unknown, extra: object = {}) =>
    JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status, ...extra });

  it.each<[string, string, object]>([
    ['a token', out({ token: 'abc' }), { token: 'abc' }],
    [
      'a token with an expiry',
      out({ token: 'abc', expirationTimestamp: '2030-01-02T03:04:05Z' }),
      { token: 'abc', expiresAt: Date.parse('2030-01-02T03:04:05Z') },
    ],
    ['a client certificate', out({ clientCertificateData: CERT, clientKeyData: KEY }), { certPem: CERT, keyPem: KEY }],
  ])('reads %s', (_, stdout, want) => {
    expect(parseExecCredential(stdout, cfg, 'ops')).toEqual(want);
  });

  it.each<[string, string, string]>([
    ['output that is not JSON', 'token: abc', '(output): exec plugin plugin did not print JSON'],
    ['another kind', JSON.stringify({ apiVersion: V1, kind: 'Secret' }), 'kind: is "Secret"'],
    [
      'another apiVersion',
      out({ token: 'a' }, { apiVersion: `${V1}beta1` }),
      'apiVersion: is "client.authentication.k8s.io/v1beta1", but exec.apiVersion asks for',
    ],
    ['no status', JSON.stringify({ apiVersion: V1, kind: 'ExecCredential' }), 'status: is missing'],
    ['an empty status', out({}), 'status: holds neither token nor clientCertificateData'],
    ['a token that is not a string', out({ token: 3 }), 'status.token: must be a non-empty one-line string'],
    ['a certificate without its key', out({ clientCertificateData: CERT }), 'status.clientKeyData: clientCert'],
    ['a key that is not PEM', out({ clientCertificateData: CERT, clientKeyData: 'k' }), 'status.clientKeyData: must'],
    ['a bad expiry', out({ token: 'a', expirationTimestamp: 'soon' }), 'status.expirationTimestamp: "soon" is not'],
  ])('refuses %s, naming the user and the field', (_, stdout, message) => {
    const e = thrown(() => parseExecCredential(stdout, cfg, 'ops'));
    expect(e.message).toContain('kubeconfig user "ops": ');
    expect(e.message).toContain(message);
    expect(e.reason).toBe('ExecCredentialFailed');
  });
});

describe('runExecPlugin', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-exec-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const script = (name: string, body: string) => {
    const p = join(dir, name);
    writeFileSync(p, `#!/bin/sh\n${body}\n`);
    chmodSync(p, 0o755);
    return p;
  };

  it('runs the command with its args and env and KUBERNETES_EXEC_INFO, and reads what it prints', async () => {
    const p = script(
      'ok',
      `printf '{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"%s-%s-%s"}}' "$1" "$TEAM" ` +
        `"$(printf %s "$KUBERNETES_EXEC_INFO" | grep -c '"interactive":false')"`,
    );
    const r = await runExecPlugin({ ...cfg, command: p, args: ['arg'], env: [{ name: 'TEAM', value: 'ops' }] }, 'u');
    expect(r).toEqual({ token: 'arg-ops-1' });
  });

  it('tells a plugin that asks for it which cluster the credential is for', async () => {
    const p = script(
      'info',
      `printf '{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"%s"}}' "$(printf %s "$KUBERNETES_EXEC_INFO" | base64 -w0)"`,
    );
    const cluster = { server: 'https://10.0.0.1:6443', 'certificate-authority-data': 'Q0E=' };
    const given = parseExecConfig({ apiVersion: V1, command: p, provideClusterInfo: true }, 'u', undefined, cluster);
    const info = JSON.parse(Buffer.from((await runExecPlugin(given, 'u')).token!, 'base64').toString()) as unknown;
    expect(info).toEqual({ apiVersion: V1, kind: 'ExecCredential', spec: { interactive: false, cluster } });
    const withheld = parseExecConfig({ apiVersion: V1, command: p }, 'u', undefined, cluster);
    expect(withheld.cluster).toBeUndefined();
  });

  it.each<[string, string | undefined, string]>([
    ['a command that does not exist', undefined, 'exec.command: /nonexistent/plugin was not found; install it'],
    ['a command that fails', 'echo "no login" >&2; exit 3', 'failed (Command failed'],
  ])('reports %s, naming the user', async (_, body, message) => {
    const command = body === undefined ? '/nonexistent/plugin' : script('fail', body);
    const run = runExecPlugin({ ...cfg, command, installHint: 'install it' }, 'ops');
    await expect(run).rejects.toThrow(ExecCredentialError);
    await expect(run).rejects.toThrow(message);
    await expect(run).rejects.toThrow('kubeconfig user "ops"');
    if (body) await expect(run).rejects.toThrow('no login');
  });

  it('stops a plugin that hangs', async () => {
    const p = script('hang', 'sleep 30');
    await expect(runExecPlugin({ ...cfg, command: p }, 'ops', 300)).rejects.toThrow('did not finish within 300 ms');
  });
});
