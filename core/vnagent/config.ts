import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { createCA, issueCert, type CertKeyPair } from '../pki/pki.ts';

/** VnAgentConfig is a vn-agent configuration file (`kind: VnAgentConfiguration`); relative paths are resolved against it. */
export interface VnAgentConfig {
  apiVersion?: 'tenancy.x-k8s.io/v1alpha1';
  kind?: 'VnAgentConfiguration';
  /** listen address (default 0.0.0.0) */
  host?: string;
  /** listen port (default 10550) */
  port?: number;
  /** where a generated serving certificate is kept (default `.state/vn-agent`) */
  stateDir?: string;
  /** serving certificate and key files; generated (self-signed) into stateDir when absent */
  servingCert?: string;
  servingKey?: string;
  /** kubeconfig of the meta cluster (VirtualClusters, kubeconfig Secrets); in-cluster credentials when absent */
  metaKubeconfig?: string;
  /** kubeconfig of the super cluster (Pods, Nodes); the meta cluster's when absent */
  superKubeconfig?: string;
  /** serve only VirtualClusters whose spec.superCluster is this name (or unset) */
  superCluster?: string;
  /** this agent's node (a DaemonSet passes spec.nodeName); defaults to $NODE_NAME; absent: all nodes are cached */
  nodeName?: string;
  /** client certificate and key the agent presents to kubelets */
  kubeletClientCert?: string;
  kubeletClientKey?: string;
  /** CA of the kubelet serving certificates */
  kubeletCA?: string;
  /** do not verify kubelet serving certificates (kwok's are self-signed); default false */
  kubeletInsecureSkipVerify?: boolean;
  /** the plain HTTP ops port (/healthz, /readyz, /metrics); default 127.0.0.1:10551 */
  ops?: { host?: string; port?: number };
  plugins?: { thirdParty?: string[]; enable?: string[]; disable?: string[] };
  handshakeTimeoutSeconds?: number;
  streamIdleTimeoutSeconds?: number;
}

/** VnAgentConfigError is a configuration that cannot be used; its message names the file, the field and the problem. */
export class VnAgentConfigError extends Error {
  override name = 'VnAgentConfigError';
}

type Check = 'string' | 'port' | 'boolean' | 'positive' | 'strings';
const FIELDS: Record<string, Check | Record<string, Check>> = {
  apiVersion: 'string',
  kind: 'string',
  host: 'string',
  port: 'port',
  stateDir: 'string',
  servingCert: 'string',
  servingKey: 'string',
  metaKubeconfig: 'string',
  superKubeconfig: 'string',
  superCluster: 'string',
  nodeName: 'string',
  kubeletClientCert: 'string',
  kubeletClientKey: 'string',
  kubeletCA: 'string',
  kubeletInsecureSkipVerify: 'boolean',
  ops: { host: 'string', port: 'port' },
  plugins: { thirdParty: 'strings', enable: 'strings', disable: 'strings' },
  handshakeTimeoutSeconds: 'positive',
  streamIdleTimeoutSeconds: 'positive',
};

function checkValue(v: unknown, c: Check): string | undefined {
  switch (c) {
    case 'string':
      return typeof v === 'string' && v !== '' ? undefined : 'must be a non-empty string';
    case 'port':
      return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 65535 ? undefined : 'must be a port number (0-65535)';
    case 'boolean':
      return typeof v === 'boolean' ? undefined : 'must be true or false';
    case 'positive':
      return typeof v === 'number' && v > 0 ? undefined : 'must be a positive number';
    case 'strings':
      return Array.isArray(v) && v.every((x) => typeof x === 'string' && x) ? undefined : 'must be a list of non-empty strings';
  }
}

/** validateVnAgentConfig returns every problem of a parsed configuration as `/pointer: message` lines. */
export function validateVnAgentConfig(value: unknown): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return ['/: must be a mapping'];
  const errors: string[] = [];
  const walk = (obj: Record<string, unknown>, spec: Record<string, Check | Record<string, Check>>, at: string): void => {
    for (const [k, v] of Object.entries(obj)) {
      const c = spec[k];
      if (c === undefined) errors.push(`${at}/${k}: unknown field`);
      else if (typeof c === 'object') {
        if (v === null || typeof v !== 'object' || Array.isArray(v)) errors.push(`${at}/${k}: must be a mapping`);
        else walk(v as Record<string, unknown>, c, `${at}/${k}`);
      } else {
        const m = checkValue(v, c);
        if (m) errors.push(`${at}/${k}: ${m}`);
      }
    }
  };
  walk(value as Record<string, unknown>, FIELDS, '');
  const o = value as VnAgentConfig;
  if (o.apiVersion !== undefined && o.apiVersion !== 'tenancy.x-k8s.io/v1alpha1') errors.push('/apiVersion: must be tenancy.x-k8s.io/v1alpha1');
  if (o.kind !== undefined && o.kind !== 'VnAgentConfiguration') errors.push('/kind: must be VnAgentConfiguration');
  if (!!o.servingCert !== !!o.servingKey) errors.push('/servingCert: servingCert and servingKey go together');
  if (!!o.kubeletClientCert !== !!o.kubeletClientKey) errors.push('/kubeletClientCert: kubeletClientCert and kubeletClientKey go together');
  if (o.kubeletCA && o.kubeletInsecureSkipVerify) errors.push('/kubeletInsecureSkipVerify: set either kubeletCA or kubeletInsecureSkipVerify, not both');
  return errors;
}

const PATH_FIELDS = ['stateDir', 'servingCert', 'servingKey', 'metaKubeconfig', 'superKubeconfig', 'kubeletClientCert', 'kubeletClientKey', 'kubeletCA'] as const;

/** loadVnAgentConfig reads, parses and validates a configuration file and resolves its relative paths. */
export function loadVnAgentConfig(file: string): VnAgentConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new VnAgentConfigError(`${file}: cannot read: ${(e as Error).message}`);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length) throw new VnAgentConfigError(`${file}: invalid YAML: ${doc.errors[0]!.message}`);
  const value = (doc.toJS() as unknown) ?? {};
  const errors = validateVnAgentConfig(value);
  if (errors.length) throw new VnAgentConfigError(`${file}:\n  ${errors.join('\n  ')}`);
  const cfg = value as VnAgentConfig;
  const base = dirname(resolve(file));
  for (const f of PATH_FIELDS) if (cfg[f]) cfg[f] = resolve(base, cfg[f]);
  if (cfg.plugins?.thirdParty) cfg.plugins.thirdParty = cfg.plugins.thirdParty.map((p) => (p.startsWith('.') || p.startsWith('/') ? resolve(base, p) : p));
  return cfg;
}

/**
 * ensureServingCert returns the agent's serving certificate: the configured files, or a certificate generated once
 * into `<stateDir>/serving.crt|key` (with its own CA, `serving-ca.crt`) for localhost, 127.0.0.1, this host's name
 * and the given names. Tenant apiservers connect without checking kubelet serving certificates unless they are given
 * a kubelet CA, so a self-signed one is enough for them.
 */
export async function ensureServingCert(o: { certFile?: string; keyFile?: string; stateDir: string; names?: string[] }): Promise<CertKeyPair> {
  if (o.certFile && o.keyFile) return { certPem: readFileSync(o.certFile, 'utf8'), keyPem: readFileSync(o.keyFile, 'utf8') };
  const cert = join(o.stateDir, 'serving.crt');
  const key = join(o.stateDir, 'serving.key');
  if (existsSync(cert) && existsSync(key)) return { certPem: readFileSync(cert, 'utf8'), keyPem: readFileSync(key, 'utf8') };
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
