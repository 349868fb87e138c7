import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRegistryHost, registryConfigDir, registryHostsToml, writeRegistryHosts } from './noderegistry.ts';
import { containerdConfig, type RealNodeConfigInput } from './realnode.ts';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('registry hosts for a real node', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it.each([
    ['127.0.0.1:40123', true],
    ['registry.example.com', true],
    ['localhost:5000', true],
    ['https://127.0.0.1:5000', false],
    ['127.0.0.1:5000/vc', false],
    ['../etc', false],
    ['alice@host:5000', false],
    ['', false],
  ])('host %j is accepted: %s', (host, ok) => {
    if (ok) expect(checkRegistryHost(host, 'real node n')).toBe(host);
    else expect(() => checkRegistryHost(host, 'real node n')).toThrow(/real node n: registries\[\]\.host/);
  });

  it('hosts.toml sends pulls over HTTPS to the host itself, trusting the CA file', () => {
    expect(registryHostsToml('127.0.0.1:40123', '/n/containerd/certs.d/127.0.0.1:40123/ca.crt')).toBe(
      [
        "server = 'https://127.0.0.1:40123'",
        '',
        "[host.'https://127.0.0.1:40123']",
        "  capabilities = ['pull', 'resolve']",
        "  ca = '/n/containerd/certs.d/127.0.0.1:40123/ca.crt'",
        '',
      ].join('\n'),
    );
  });

  it('writes one directory per registry and drops registries of an earlier start', () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-noderegistry-'));
    const base = registryConfigDir(dir);
    mkdirSync(join(base, 'old:1'), { recursive: true });
    writeFileSync(join(base, 'old:1', 'hosts.toml'), 'stale');
    writeRegistryHosts(dir, [{ host: '127.0.0.1:40123', caPem: PEM }], 'real node n');
    expect(readdirSync(base)).toEqual(['127.0.0.1:40123']);
    expect(readFileSync(join(base, '127.0.0.1:40123', 'ca.crt'), 'utf8')).toBe(PEM);
    expect(readFileSync(join(base, '127.0.0.1:40123', 'hosts.toml'), 'utf8')).toContain(
      `ca = '${join(base, '127.0.0.1:40123', 'ca.crt')}'`,
    );
  });

  it('refuses a CA that is not PEM, naming the node and the registry', () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-noderegistry-'));
    expect(() => writeRegistryHosts(dir!, [{ host: 'r:1', caPem: 'nope' }], 'real node n')).toThrow(
      'real node n: registries[] r:1: caPem is not a PEM certificate',
    );
  });

  it("containerd reads registry hosts from the node's own certs.d, not the host's /etc", () => {
    const input: RealNodeConfigInput = {
      name: 'n',
      dir: '/s/nodes/n',
      binDir: '/tc/bin',
      cniDir: '/tc/cni',
      podCidr: '10.213.7.0/24',
      serviceCidr: '10.96.0.0/16',
      nodeIP: '10.213.7.1',
      bridge: 'vcbr01234567',
      network: 'vc-01234567',
      cgroupRoot: '/vc-01234567',
      cgroup: 'v2',
      capSysResource: true,
      runsc: false,
      kubeletPort: 20250,
      kubeletHealthzPort: 20248,
      proxyHealthzPort: 20256,
      proxyMetricsPort: 20249,
    };
    const toml = containerdConfig(input);
    expect(toml).toContain(
      "[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = '/s/nodes/n/containerd/certs.d'",
    );
  });
});
