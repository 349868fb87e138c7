import { execFile } from 'node:child_process';
import { isAbsolute, resolve } from 'node:path';

/**
 * An exec credential plugin (client.authentication.k8s.io ExecCredential) of a kubeconfig the platform owns: the
 * manager's or vn-agent's own kubeconfig, the CLI user's. Tenant and Secret kubeconfigs never get here: their parser
 * (kubeconfig.ts) refuses `exec` before anything runs.
 */

/** EXEC_API_VERSIONS are the ExecCredential versions understood, as client-go: v1 and the still common v1beta1. */
export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const;

/** EXEC_TIMEOUT_MS bounds one run of a plugin; a hung plugin fails the requests waiting for it, not the process. */
export const EXEC_TIMEOUT_MS = 60_000;

/** ExecConfig is the `exec` field of a kubeconfig user, checked. */
export interface ExecConfig {
  apiVersion: (typeof EXEC_API_VERSIONS)[number];
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  installHint?: string;
  /** cluster is what KUBERNETES_EXEC_INFO tells a plugin of the cluster, when its provideClusterInfo asks for it */
  cluster?: ExecClusterInfo;
}

/** ExecClusterInfo is the ExecCredential's spec.cluster: the cluster the credential is for. */
export interface ExecClusterInfo {
  server: string;
  'certificate-authority-data'?: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
}

/** ExecResult is what one run of a plugin gave: a token and/or a client certificate, and until when they hold. */
export interface ExecResult {
  token?: string;
  certPem?: string;
  keyPem?: string;
  /** expiresAt in epoch milliseconds; undefined: until the server refuses it (401) */
  expiresAt?: number;
}

/** ExecCredentialError is a plugin that could not be run or gave no usable credential: which user, which field, why. */
export class ExecCredentialError extends Error {
  /** reason is the machine-readable reason, for a status condition */
  readonly reason = 'ExecCredentialFailed';

  constructor(
    /** the kubeconfig user whose exec plugin failed */
    readonly user: string,
    /** the field at fault, e.g. `exec.command` or `status.expirationTimestamp` */
    readonly field: string,
    why: string,
  ) {
    super(`kubeconfig user "${user}": ${field}: ${why}`);
    this.name = 'ExecCredentialError';
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * parseExecConfig checks the `exec` field of kubeconfig user `user`. A command with a path separator that is not
 * absolute is taken relative to `baseDir` (the kubeconfig's directory), as client-go does; a bare name is looked up
 * in PATH.
 */
export function parseExecConfig(raw: unknown, user: string, baseDir?: string, cluster?: ExecClusterInfo): ExecConfig {
  if (!isObj(raw)) throw new ExecCredentialError(user, 'exec', 'must be a mapping');
  const apiVersion = raw.apiVersion;
  if (!EXEC_API_VERSIONS.includes(apiVersion as ExecConfig['apiVersion']))
    throw new ExecCredentialError(
      user,
      'exec.apiVersion',
      `${JSON.stringify(apiVersion)} is not supported: use ${EXEC_API_VERSIONS.join(' or ')}`,
    );
  const given = raw.command;
  if (typeof given !== 'string' || !given)
    throw new ExecCredentialError(user, 'exec.command', 'is required: the program that prints an ExecCredential');
  const command = baseDir && given.includes('/') && !isAbsolute(given) ? resolve(baseDir, given) : given;
  const args = raw.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
    throw new ExecCredentialError(user, 'exec.args', 'must be a list of strings');
  const env = raw.env ?? [];
  if (!Array.isArray(env)) throw new ExecCredentialError(user, 'exec.env', 'must be a list of {name, value}');
  env.forEach((e, i) => {
    if (!isObj(e) || typeof e.name !== 'string' || !e.name || typeof e.value !== 'string')
      throw new ExecCredentialError(user, `exec.env[${i}]`, 'must be {name, value} with string values');
  });
  const out: ExecConfig = {
    apiVersion: apiVersion as ExecConfig['apiVersion'],
    command,
    args: args as string[],
    env: env as ExecConfig['env'],
  };
  if (typeof raw.installHint === 'string' && raw.installHint) out.installHint = raw.installHint;
  if (raw.provideClusterInfo === true && cluster) out.cluster = cluster;
  return out;
}

/**
 * parseExecCredential reads a plugin's standard output: an ExecCredential of the configured apiVersion whose status
 * holds a token, a client certificate and key, or both, and optionally an RFC 3339 expirationTimestamp.
 */
export function parseExecCredential(stdout: string, cfg: ExecConfig, user: string): ExecResult {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch (e) {
    throw new ExecCredentialError(
      user,
      '(output)',
      `exec plugin ${cfg.command} did not print JSON: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  if (!isObj(doc)) throw new ExecCredentialError(user, '(output)', 'must be an ExecCredential object');
  if (doc.kind !== 'ExecCredential')
    throw new ExecCredentialError(user, 'kind', `is ${JSON.stringify(doc.kind)}, expected "ExecCredential"`);
  if (doc.apiVersion !== cfg.apiVersion)
    throw new ExecCredentialError(
      user,
      'apiVersion',
      `is ${JSON.stringify(doc.apiVersion)}, but exec.apiVersion asks for "${cfg.apiVersion}"`,
    );
  const st = doc.status;
  if (!isObj(st)) throw new ExecCredentialError(user, 'status', 'is missing: the plugin gave no credential');
  const out: ExecResult = {};
  if (st.token !== undefined) {
    if (typeof st.token !== 'string' || !st.token || /[\r\n]/.test(st.token))
      throw new ExecCredentialError(user, 'status.token', 'must be a non-empty one-line string');
    out.token = st.token;
  }
  const cert = st.clientCertificateData;
  const key = st.clientKeyData;
  if ((cert === undefined) !== (key === undefined))
    throw new ExecCredentialError(
      user,
      cert === undefined ? 'status.clientCertificateData' : 'status.clientKeyData',
      'clientCertificateData and clientKeyData go together',
    );
  if (cert !== undefined) {
    if (typeof cert !== 'string' || !cert.includes('-----BEGIN CERTIFICATE-----'))
      throw new ExecCredentialError(user, 'status.clientCertificateData', 'must be a PEM certificate');
    if (typeof key !== 'string' || !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key))
      throw new ExecCredentialError(user, 'status.clientKeyData', 'must be a PEM private key');
    out.certPem = cert;
    out.keyPem = key;
  }
  if (out.token === undefined && out.certPem === undefined)
    throw new ExecCredentialError(user, 'status', 'holds neither token nor clientCertificateData and clientKeyData');
  const exp = st.expirationTimestamp;
  if (exp !== undefined && exp !== null) {
    const ms = typeof exp === 'string' ? Date.parse(exp) : NaN;
    if (!Number.isFinite(ms))
      throw new ExecCredentialError(
        user,
        'status.expirationTimestamp',
        `${JSON.stringify(exp)} is not an RFC 3339 time`,
      );
    out.expiresAt = ms;
  }
  return out;
}

/**
 * runExecPlugin runs the plugin once, not interactively (stdin closed), with its env added to this process's and
 * KUBERNETES_EXEC_INFO describing the request, and returns the credential it printed.
 */
export function runExecPlugin(cfg: ExecConfig, user: string, timeoutMs = EXEC_TIMEOUT_MS): Promise<ExecResult> {
  const spec = cfg.cluster ? { interactive: false, cluster: cfg.cluster } : { interactive: false };
  const info = { apiVersion: cfg.apiVersion, kind: 'ExecCredential', spec };
  const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
  for (const e of cfg.env) env[e.name] = e.value;
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      cfg.command,
      cfg.args,
      { env, timeout: timeoutMs, maxBuffer: 1 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) {
          const code = (err as NodeJS.ErrnoException).code;
          const hint = code === 'ENOENT' && cfg.installHint ? `; ${cfg.installHint.trim()}` : '';
          const why =
            code === 'ENOENT'
              ? `${cfg.command} was not found${hint}`
              : err.killed
                ? `${cfg.command} did not finish within ${timeoutMs} ms`
                : `${cfg.command} failed (${err.message.split('\n')[0]})${stderr ? `: ${stderr.trim().slice(0, 300)}` : ''}`;
          reject(new ExecCredentialError(user, 'exec.command', why));
          return;
        }
        try {
          resolvePromise(parseExecCredential(stdout, cfg, user));
        } catch (e) {
          reject(e as Error);
        }
      },
    );
    child.stdin?.end();
  });
}
