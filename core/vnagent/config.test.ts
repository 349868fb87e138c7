import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ensureServingCert, loadVnAgentConfig, validateVnAgentConfig, VnAgentConfigError } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'vn-agent-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('vn-agent configuration', () => {
  it('loads a configuration and resolves paths against the file', () => {
    const f = join(dir, 'agent.yaml');
    writeFileSync(
      f,
      [
        'apiVersion: tenancy.x-k8s.io/v1alpha1',
        'kind: VnAgentConfiguration',
        'port: 10550',
        'metaKubeconfig: meta.kubeconfig',
        'kubeletClientCert: pki/agent.crt',
        'kubeletClientKey: /abs/agent.key',
        'nodeClientCert: pki/node.pem',
        'kubeletInsecureSkipVerify: true',
        'ops: { host: 0.0.0.0, port: 10551 }',
        'plugins: { thirdParty: [./plugin, some-package] }',
      ].join('\n'),
    );
    const c = loadVnAgentConfig(f);
    expect(c.port).toBe(10550);
    expect(c.metaKubeconfig).toBe(join(dir, 'meta.kubeconfig'));
    expect(c.kubeletClientCert).toBe(join(dir, 'pki/agent.crt'));
    expect(c.kubeletClientKey).toBe('/abs/agent.key');
    expect(c.nodeClientCert).toBe(join(dir, 'pki/node.pem'));
    expect(c.kubeletInsecureSkipVerify).toBe(true);
    expect(c.plugins?.thirdParty).toEqual([join(dir, 'plugin'), 'some-package']);
  });

  it('reports every problem with its field', () => {
    expect(
      validateVnAgentConfig({
        port: 70000,
        prot: 1,
        ops: { port: 'x' },
        kubeletInsecureSkipVerify: 'yes',
        kind: 'Other',
      }),
    ).toEqual([
      '/prot is not a known field',
      '/kind must be equal to constant',
      '/port must be <= 65535',
      '/kubeletInsecureSkipVerify must be boolean',
      '/ops/port must be integer',
    ]);
    expect(validateVnAgentConfig({ servingCert: 'a' })).toEqual([
      '/servingCert goes with servingKey, which is missing',
    ]);
    expect(validateVnAgentConfig({ kubeletCA: 'ca', kubeletInsecureSkipVerify: true })).toEqual([
      '/kubeletInsecureSkipVerify must be false: set either kubeletCA or kubeletInsecureSkipVerify, not both',
    ]);
    expect(validateVnAgentConfig({ kubeletCA: 'ca', kubeletInsecureSkipVerify: false })).toEqual([]);
    expect(validateVnAgentConfig({ nodeClientKey: 'k' })).toEqual([
      '/nodeClientKey goes with nodeClientCert, which is missing',
    ]);
    expect(validateVnAgentConfig({ nodeClientCert: '/var/lib/kubelet/pki/kubelet-client-current.pem' })).toEqual([]);
    expect(validateVnAgentConfig([])).toEqual(['/ must be object']);
    const f = join(dir, 'bad.yaml');
    writeFileSync(f, 'port: nope\n');
    expect(() => loadVnAgentConfig(f)).toThrow(VnAgentConfigError);
    expect(() => loadVnAgentConfig(f)).toThrow(/bad.yaml: \/port must be integer/);
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'port: [\n');
    expect(() => loadVnAgentConfig(broken)).toThrow(/broken.yaml: invalid YAML/);
    expect(() => loadVnAgentConfig(join(dir, 'missing.yaml'))).toThrow(/cannot read/);
  });

  it('generates a serving certificate once and reuses it', async () => {
    const stateDir = join(dir, 'state');
    const first = (await ensureServingCert({ stateDir, names: ['node-1', '10.0.0.7'] })).pair;
    const c = new X509Certificate(first.certPem);
    expect(c.subjectAltName).toContain('DNS:node-1');
    expect(c.subjectAltName).toContain('IP Address:10.0.0.7');
    expect(c.subjectAltName).toContain('IP Address:127.0.0.1');
    const again = await ensureServingCert({ stateDir });
    expect(again.pair.certPem).toBe(first.certPem);
  });

  it('renews a generated serving certificate from the same CA, and at start when it is past two thirds of its life', async () => {
    const stateDir = join(dir, 'renewing');
    const ca = () => new X509Certificate(readFileSync(join(stateDir, 'serving-ca.crt'), 'utf8'));
    // Two minutes from a minute back: due in a minute.
    const first = await ensureServingCert({ stateDir, names: ['node-1'], validityDays: 2 / 1440 });
    const x1 = new X509Certificate(first.pair.certPem);
    expect(x1.verify(ca().publicKey)).toBe(true);
    const renewed = await first.renew!();
    const x2 = new X509Certificate(renewed.certPem);
    expect(x2.serialNumber).not.toBe(x1.serialNumber);
    expect(x2.verify(ca().publicKey)).toBe(true);
    expect(x2.subjectAltName).toContain('DNS:node-1');
    expect(readFileSync(join(stateDir, 'serving.crt'), 'utf8')).toBe(renewed.certPem);
    // A start finds it within its life's first two thirds: kept.
    expect((await ensureServingCert({ stateDir, validityDays: 2 / 1440 })).pair.certPem).toBe(renewed.certPem);
    // A one-second certificate (from a minute back) is past two thirds at once: the next start renews it.
    const other = join(dir, 'short');
    const short = await ensureServingCert({ stateDir: other, validityDays: 1 / 86_400 });
    const restarted = await ensureServingCert({ stateDir: other, validityDays: 1 });
    expect(restarted.pair.certPem).not.toBe(short.pair.certPem);
    const otherCA = new X509Certificate(readFileSync(join(other, 'serving-ca.crt'), 'utf8'));
    expect(new X509Certificate(restarted.pair.certPem).verify(otherCA.publicKey)).toBe(true);
    expect(readFileSync(join(other, 'serving.crt'), 'utf8')).toBe(restarted.pair.certPem);
  });

  it('gives configured files as they are, with no renewal of its own', async () => {
    const stateDir = join(dir, 'configured');
    const made = (await ensureServingCert({ stateDir })).pair;
    writeFileSync(join(dir, 'given.crt'), made.certPem);
    writeFileSync(join(dir, 'given.key'), made.keyPem);
    const given = await ensureServingCert({
      stateDir: join(dir, 'unused'),
      certFile: join(dir, 'given.crt'),
      keyFile: join(dir, 'given.key'),
    });
    expect(given).toEqual({ pair: made });
  });

  it('accepts the configuration shipped in deploy/vn-agent/daemonset.yaml', () => {
    const file = join(import.meta.dirname, '../../deploy/vn-agent/daemonset.yaml');
    const docs = parseAllDocuments(readFileSync(file, 'utf8')).map(
      (d) => d.toJS() as { kind: string; data?: Record<string, string> },
    );
    const cm = docs.find((d) => d.kind === 'ConfigMap')!;
    const cfg = parse(cm.data!['vn-agent.yaml']!) as Record<string, unknown>;
    expect(validateVnAgentConfig(cfg)).toEqual([]);
    expect(cfg).toMatchObject({
      port: 10550,
      kubeletInsecureSkipVerify: false,
      nodeClientCert: '/var/lib/kubelet/pki/kubelet-client-current.pem',
    });
    // The node credential comes read-only from the kubelet's directory (a symlink the kubelet re-points on rotation).
    interface Pod {
      containers: Array<{ volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> }>;
      volumes: Array<{ name: string; hostPath?: { path: string } }>;
    }
    const ds = docs.find((d) => d.kind === 'DaemonSet') as unknown as { spec: { template: { spec: Pod } } };
    const pod = ds.spec.template.spec;
    const mount = pod.containers[0]!.volumeMounts.find((m) => String(cfg.nodeClientCert).startsWith(`${m.mountPath}/`));
    expect(mount).toMatchObject({ mountPath: '/var/lib/kubelet/pki', readOnly: true });
    expect(pod.volumes.find((v) => v.name === mount!.name)?.hostPath?.path).toBe('/var/lib/kubelet/pki');
  });
});
