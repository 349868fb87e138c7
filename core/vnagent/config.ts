import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { loadConfigFile, pluginPath } from '../../schemas/load.ts';
import { validate } from '../../schemas/validate.ts';
import type { VnAgentConfiguration } from '../api/generated.ts';
import { createCA, issueCert, type CertKeyPair } from '../pki/pki.ts';
import { DEFAULT_RENEW_FRACTION, renewAt } from '../pki/renewal.ts';

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

/** GENERATED_SERVING_DAYS is the default lifetime of a generated serving certificate (servingCertValidityDays). */
export const GENERATED_SERVING_DAYS = 3650;

/** ServingCert is the agent's serving pair and, for a generated one, how the next is issued. */
export interface ServingCert {
  pair: CertKeyPair;
  /** issues the next certificate from the same CA and writes it to the state directory; absent for configured files */
  renew?: () => Promise<CertKeyPair>;
}

/**
 * ensureServingCert returns the agent's serving certificate: the configured files, or one generated into
 * `<stateDir>/serving.crt|key` from a CA of its own (`serving-ca.crt`, its key `serving-ca.key` kept beside it) for
 * localhost, 127.0.0.1, this host's name and the given names, living validityDays. A generated one comes with `renew`,
 * which issues the next from the same CA (VnAgent.renewServing calls it at two thirds of its life); one found past
 * that point at start (the agent was down) is renewed at once. Tenant apiservers connect without checking kubelet
 * serving certificates unless they are given a kubelet CA, so a CA of the agent's own is enough for them.
 */
export async function ensureServingCert(o: {
  certFile?: string;
  keyFile?: string;
  stateDir: string;
  names?: string[];
  validityDays?: number;
  renewFraction?: number;
}): Promise<ServingCert> {
  if (o.certFile && o.keyFile)
    return { pair: { certPem: readFileSync(o.certFile, 'utf8'), keyPem: readFileSync(o.keyFile, 'utf8') } };
  const file = (name: string) => join(o.stateDir, name);
  const names = ['localhost', hostname(), ...(o.names ?? [])];
  const days = o.validityDays ?? GENERATED_SERVING_DAYS;
  const renew = async (): Promise<CertKeyPair> => {
    mkdirSync(o.stateDir, { recursive: true, mode: 0o700 });
    let ca = readPair(file('serving-ca.crt'), file('serving-ca.key'));
    // A CA without its key (kept by an older agent) or ending before the next leaf would: a new one.
    if (!ca || Date.parse(new X509Certificate(ca.certPem).validTo) < Date.now() + days * 86_400_000) {
      ca = await createCA('vc-vn-agent-serving-ca', Math.max(GENERATED_SERVING_DAYS, days));
      writeAtomically(file('serving-ca.key'), ca.keyPem, 0o600);
      writeAtomically(file('serving-ca.crt'), ca.certPem, 0o644);
    }
    const leaf = await issueCert(ca, {
      commonName: 'vc-vn-agent',
      dnsNames: names.filter((n) => !isIP(n)),
      ipAddresses: ['127.0.0.1', ...names.filter((n) => isIP(n) && !(n.includes(':') && n.includes('.')))],
      usages: ['server'],
      validityDays: days,
    });
    writeAtomically(file('serving.key'), leaf.keyPem, 0o600);
    writeAtomically(file('serving.crt'), leaf.certPem, 0o644);
    return leaf;
  };
  const found = readPair(file('serving.crt'), file('serving.key'));
  if (found) {
    const x = new X509Certificate(found.certPem);
    const due = renewAt(
      { notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo) },
      o.renewFraction ?? DEFAULT_RENEW_FRACTION,
    );
    if (due.getTime() > Date.now()) return { pair: found, renew };
  }
  return { pair: await renew(), renew };
}

/** readPair reads a certificate and key file, or undefined when either is missing. */
function readPair(certFile: string, keyFile: string): CertKeyPair | undefined {
  if (!existsSync(certFile) || !existsSync(keyFile)) return undefined;
  return { certPem: readFileSync(certFile, 'utf8'), keyPem: readFileSync(keyFile, 'utf8') };
}

/** writeAtomically replaces a file in one rename, so a reader never sees half of it. */
function writeAtomically(path: string, text: string, mode: number): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
}
