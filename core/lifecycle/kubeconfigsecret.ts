import type { Provisioned } from '../provisioners/provisioner.ts';

/** SecretProvisioned is what the kubeconfig Secret of a VirtualCluster records of its control plane. */
export type SecretProvisioned = Pick<Provisioned, 'kubeconfig' | 'apiserverEndpoint' | 'dnsApiEndpoint'>;

type Endpoint = NonNullable<Provisioned['dnsApiEndpoint']>;

const b64 = (s: string) => Buffer.from(s).toString('base64');

/**
 * kubeconfigSecretData is the data of the `<vc>-kubeconfig` Secret the manager writes: the admin kubeconfig, and, as
 * JSON under `endpoints`, where the tenant's workloads (`apiserverEndpoint`) and DNS server (`dnsApiEndpoint`) reach
 * its apiserver, each absent when the provisioner gave none, so that a syncer reading the Secret (`vc syncer`, a
 * manager standing by) builds the tenant the controller builds.
 */
export function kubeconfigSecretData(p: SecretProvisioned): Record<string, string> {
  const endpoints: Pick<Provisioned, 'apiserverEndpoint' | 'dnsApiEndpoint'> = {};
  if (p.apiserverEndpoint) endpoints.apiserverEndpoint = p.apiserverEndpoint;
  if (p.dnsApiEndpoint) endpoints.dnsApiEndpoint = p.dnsApiEndpoint;
  return { kubeconfig: b64(p.kubeconfig), endpoints: b64(JSON.stringify(endpoints)) };
}

/** endpoint reads one recorded endpoint: a host and a port from 1 to 65535 (and an optional tlsServerName). */
function endpoint(e: unknown): Endpoint | undefined {
  const o = e as { host?: unknown; port?: unknown; tlsServerName?: unknown } | undefined;
  if (typeof o?.host !== 'string' || !o.host || !Number.isInteger(o.port)) return undefined;
  const port = o.port as number;
  if (port < 1 || port > 65535) return undefined;
  return typeof o.tlsServerName === 'string'
    ? { host: o.host, port, tlsServerName: o.tlsServerName }
    : { host: o.host, port };
}

/**
 * provisionedOfSecret reads the data of a kubeconfig Secret (kubeconfigSecretData); undefined without a kubeconfig.
 * A Secret written before the endpoints were recorded (or with them unreadable) gives the kubeconfig's server as the
 * workloads' endpoint and no DNS endpoint, as `vc syncer` read such Secrets before.
 */
export function provisionedOfSecret(data: Record<string, string> | undefined): SecretProvisioned | undefined {
  if (!data?.kubeconfig) return undefined;
  const kubeconfig = Buffer.from(data.kubeconfig, 'base64').toString('utf8');
  let recorded: { apiserverEndpoint?: unknown; dnsApiEndpoint?: unknown } | undefined;
  try {
    const o: unknown = data.endpoints ? JSON.parse(Buffer.from(data.endpoints, 'base64').toString('utf8')) : undefined;
    if (o && typeof o === 'object' && !Array.isArray(o)) recorded = o;
  } catch {
    recorded = undefined;
  }
  if (!recorded) return { kubeconfig, apiserverEndpoint: serverOf(kubeconfig) };
  const out: SecretProvisioned = { kubeconfig };
  const api = endpoint(recorded.apiserverEndpoint);
  const dns = endpoint(recorded.dnsApiEndpoint);
  if (api) out.apiserverEndpoint = { host: api.host, port: api.port };
  if (dns) out.dnsApiEndpoint = dns;
  return out;
}

/** serverOf reads the host and port of the first cluster server in a kubeconfig. */
export function serverOf(kubeconfig: string): { host: string; port: number } | undefined {
  const m = /^\s*server:\s*["']?https:\/\/(\[[^\]]+\]|[^:/"'\s]+)(?::(\d+))?/m.exec(kubeconfig);
  if (!m) return undefined;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: m[2] ? Number(m[2]) : 443 };
}
