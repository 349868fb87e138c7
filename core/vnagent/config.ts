import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { loadConfigFile, pluginPath } from '../../schemas/load.ts';
import { validate } from '../../schemas/validate.ts';
import type { VnAgentConfiguration } from '../api/generated.ts';
import { createCA, issueCert, type CertKeyPair } from '../pki/pki.ts';

/**
 * VnAgentConfig is a vn-agent configuration file (`kind: VnAgentConfiguration`), its type generated from
 * schemas/vnagent-config.schema.json; relative paths are resolved against it. Defaults: VN_AGENT_DEFAULTS in
 * core/programs/vn-agent/run.ts.
 */
export type VnAgentConfig = VnAgentConfiguration;

/** VnAgentConfigError is a configuration that cannot be used; its message names the file, the field and the problem. */
export class VnAgentConfigError extends Error {
  override name = 'VnAgentConfigError';
}

const PATH_FIELDS = [
  'stateDir',
  'servingCert',
  'servingKey',
  'metaKubeconfig',
  'superKubeconfig',
  'kubeletClientCert',
  'kubeletClientKey',
  'kubeletCA',
  'nodeClientCert',
  'nodeClientKey',
] as const;

/**
 * validateVnAgentConfig returns every problem of a parsed configuration (schemas/vnagent-config.schema.json) as
 * `/pointer message` lines.
 */
export function validateVnAgentConfig(value: unknown): string[] {
  return validate('vnAgentConfig', value).map((e) => `${e.pointer} ${e.message}`);
}

/** loadVnAgentConfig reads, parses and validates a configuration file and resolves its relative paths. */
export function loadVnAgentConfig(file: string): VnAgentConfig {
  return loadConfigFile<VnAgentConfig>(file, {
    schema: 'vnAgentConfig',
    Err: VnAgentConfigError,
    empty: {},
    resolvePaths: (cfg, abs) => {
      for (const f of PATH_FIELDS) if (cfg[f]) cfg[f] = abs(cfg[f]);
      if (cfg.plugins?.thirdParty) cfg.plugins.thirdParty = cfg.plugins.thirdParty.map((p) => pluginPath(p, abs));
      if (cfg.plugins?.sandboxed) cfg.plugins.sandboxed = cfg.plugins.sandboxed.map((p) => pluginPath(p, abs));
      if (cfg.plugins?.trustedKeys) cfg.plugins.trustedKeys = cfg.plugins.trustedKeys.map(abs);
    },
  });
}

/**
 * ensureServingCert returns the agent's serving certificate: the configured files, or a certificate generated once
 * into `<stateDir>/serving.crt|key` (with its own CA, `serving-ca.crt`) for localhost, 127.0.0.1, this host's name
 * and the given names. Tenant apiservers connect without checking kubelet serving certificates unless they are given
 * a kubelet CA, so a self-signed one is enough for them.
 */
export async function ensureServingCert(o: {
  certFile?: string;
  keyFile?: string;
  stateDir: string;
  names?: string[];
}): Promise<CertKeyPair> {
  if (o.certFile && o.keyFile)
    return { certPem: readFileSync(o.certFile, 'utf8'), keyPem: readFileSync(o.keyFile, 'utf8') };
  const cert = join(o.stateDir, 'serving.crt');
  const key = join(o.stateDir, 'serving.key');
  if (existsSync(cert) && existsSync(key))
    return { certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
  mkdirSync(o.stateDir, { recursive: true, mode: 0o700 });
  const names = ['localhost', hostname(), ...(o.names ?? [])];
  const ca = await createCA('vc-vn-agent-serving-ca', 3650);
  const leaf = await issueCert(ca, {
    commonName: 'vc-vn-agent',
    dnsNames: names.filter((n) => !isIP(n)),
    ipAddresses: ['127.0.0.1', ...names.filter((n) => isIP(n) && !(n.includes(':') && n.includes('.')))],
    usages: ['server'],
    validityDays: 3650,
  });
  writeFileSync(join(o.stateDir, 'serving-ca.crt'), ca.certPem, { mode: 0o644 });
  writeFileSync(cert, leaf.certPem, { mode: 0o644 });
  writeFileSync(key, leaf.keyPem, { mode: 0o600 });
  return leaf;
}
