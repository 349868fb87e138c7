import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { loadConfigFile, pluginPath } from '../../schemas/load.ts';
import { validate } from '../../schemas/validate.ts';
import { createCA, issueCert, type CertKeyPair } from '../pki/pki.ts';

/**
 * VnAgentConfig is a vn-agent configuration file (`kind: VnAgentConfiguration`, schemas/vnagent-config.schema.json);
 * relative paths are resolved against it. Defaults: VN_AGENT_DEFAULTS in core/programs/vn-agent/run.ts.
 */
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
  /**
   * this node's own client certificate for the super cluster (user system:node:<node>, group system:nodes; a DaemonSet
   * mounts the kubelet's /var/lib/kubelet/pki/kubelet-client-current.pem): super Pods and the Node are read with it,
   * so the apiserver's Node authorizer limits the agent to its node. Absent: they are read with the super kubeconfig.
   */
  nodeClientCert?: string;
  /** the key of nodeClientCert; defaults to the same file (the kubelet keeps both in one) */
  nodeClientKey?: string;
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
