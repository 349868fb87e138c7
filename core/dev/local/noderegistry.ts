import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * NodeRegistry is an OCI registry a real node's containerd pulls from: its host part of image references and the CA
 * that signed its serving certificate. containerd runs in the host's network namespace, so a registry on 127.0.0.1
 * (core/toolchain/registry.ts) is reachable from it as is.
 */
export interface NodeRegistry {
  /** `host[:port]`, exactly as image references name it, e.g. `127.0.0.1:40123` */
  host: string;
  /** the PEM CA that signed the registry's serving certificate */
  caPem: string;
}

/** registryConfigDir is the node's own containerd registry host directory (`config_path`), under the node directory. */
export function registryConfigDir(nodeDir: string): string {
  return join(nodeDir, 'containerd', 'certs.d');
}

const HOST_RE =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::\d{1,5})?$/;

/**
 * checkRegistryHost returns host when it is a plain `host[:port]` (no scheme, path or user part), else throws an error
 * naming the node and the field, so that a bad value never becomes a directory name outside certs.d.
 */
export function checkRegistryHost(host: string, where: string): string {
  if (!HOST_RE.test(host))
    throw new Error(
      `${where}: registries[].host ${JSON.stringify(host)}: want host[:port] as image references name it ` +
        '(no scheme, path or credentials)',
    );
  return host;
}

/**
 * registryHostsToml renders containerd's `hosts.toml` for one registry: HTTPS to the host itself, pull and resolve
 * only, trusting caFile. Credentials are not part of it: the kubelet passes a Pod's imagePullSecrets with each pull.
 */
export function registryHostsToml(host: string, caFile: string): string {
  const url = `https://${host}`;
  return [
    `server = '${url}'`,
    '',
    `[host.'${url}']`,
    "  capabilities = ['pull', 'resolve']",
    `  ca = '${caFile}'`,
    '',
  ].join('\n');
}

/**
 * writeRegistryHosts writes `certs.d/<host>/hosts.toml` and `ca.crt` for every registry into the node's own
 * registry directory, after emptying it (a restart with fewer registries trusts no stale one). The directory is
 * under the node directory and leaves with it.
 */
export function writeRegistryHosts(nodeDir: string, registries: readonly NodeRegistry[], where: string): void {
  const base = registryConfigDir(nodeDir);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  for (const r of registries) {
    const dir = join(base, checkRegistryHost(r.host, where));
    if (!r.caPem.includes('-----BEGIN CERTIFICATE-----'))
      throw new Error(`${where}: registries[] ${r.host}: caPem is not a PEM certificate`);
    mkdirSync(dir, { recursive: true });
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, r.caPem);
    writeFileSync(join(dir, 'hosts.toml'), registryHostsToml(r.host, caFile));
  }
}
