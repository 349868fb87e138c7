import type { ConditionInput } from '../controller/status.ts';
import type { ExternalAccess, Provisioned } from '../provisioners/provisioner.ts';

/** SecretProvisioned is what the kubeconfig Secret of a VirtualCluster records of its control plane. */
export type SecretProvisioned = Pick<Provisioned, 'kubeconfig' | 'apiserverEndpoint' | 'dnsApiEndpoint'>;

/**
 * MANAGER_KUBECONFIG_KEY holds, in a kubeconfig Secret whose `kubeconfig` names an exposed server (NodePort,
 * LoadBalancer), the admin kubeconfig the manager reaches the apiserver with: a syncer or a standing-by manager
 * reading the Secret dials what the manager dials, not the front door people use.
 */
export const MANAGER_KUBECONFIG_KEY = 'manager-kubeconfig';

type Endpoint = NonNullable<Provisioned['dnsApiEndpoint']>;

const b64 = (s: string) => Buffer.from(s).toString('base64');

/**
 * kubeconfigSecretData is the data of the `<vc>-kubeconfig` Secret the manager writes: under `kubeconfig` the admin
 * kubeconfig people use, which names the exposed server once there is one (externalAccess), else the manager's; then
 * the manager's own under MANAGER_KUBECONFIG_KEY; and, as JSON under `endpoints`, where the tenant's workloads
 * (`apiserverEndpoint`) and DNS server (`dnsApiEndpoint`) reach its apiserver, each absent when the provisioner gave
 * none, so that a syncer reading the Secret (`vc syncer`, a manager standing by) builds the tenant the controller
 * builds.
 */
export function kubeconfigSecretData(
  p: SecretProvisioned & Pick<Provisioned, 'externalAccess'>,
): Record<string, string> {
  const endpoints: Pick<Provisioned, 'apiserverEndpoint' | 'dnsApiEndpoint'> = {};
  if (p.apiserverEndpoint) endpoints.apiserverEndpoint = p.apiserverEndpoint;
  if (p.dnsApiEndpoint) endpoints.dnsApiEndpoint = p.dnsApiEndpoint;
  const outside = p.externalAccess?.kubeconfig;
  return {
    kubeconfig: b64(outside ?? p.kubeconfig),
    ...(outside && { [MANAGER_KUBECONFIG_KEY]: b64(p.kubeconfig) }),
    endpoints: b64(JSON.stringify(endpoints)),
  };
}

/** CAPI_CLUSTER_LABEL is the label Cluster API puts on a Cluster's objects, naming the Cluster. */
export const CAPI_CLUSTER_LABEL = 'cluster.x-k8s.io/cluster-name';

/**
 * capiKubeconfig is what the kubeconfig Secret of a VirtualCluster made for a Cluster API Cluster (labelled with
 * CAPI_CLUSTER_LABEL naming itself, as the control-plane provider makes it) adds, so that it is also the
 * `<cluster>-kubeconfig` Secret of Cluster API's contract: that label, and the admin kubeconfig under `value`. Any
 * other VirtualCluster's Secret gets nothing more.
 */
export function capiKubeconfig(
  vcName: string,
  vcLabels: Readonly<Record<string, string>> | undefined,
  data: Readonly<Record<string, string>>,
): { labels: Record<string, string>; data: Record<string, string> } {
  if (vcLabels?.[CAPI_CLUSTER_LABEL] !== vcName || !data.kubeconfig) return { labels: {}, data: {} };
  return { labels: { [CAPI_CLUSTER_LABEL]: vcName }, data: { value: data.kubeconfig } };
}

/** EXPOSED_CONDITION is the type of the VirtualCluster condition that says how its apiserver is reached from outside. */
export const EXPOSED_CONDITION = 'Exposed';

/**
 * exposedCondition is the Exposed condition of a tenant whose provisioner exposes its apiserver: True with the type
 * as reason and the outside server once known (ClusterIP: reached inside the super cluster only); False with what is
 * awaited (e.g. WaitingForLoadBalancer) while the kubeconfig Secret names the manager's server (that of
 * managerKubeconfig) meanwhile.
 */
export function exposedCondition(access: ExternalAccess, managerKubeconfig: string): ConditionInput {
  const own = serverOf(managerKubeconfig);
  const managerServer = own && `https://${own.host.includes(':') ? `[${own.host}]` : own.host}:${own.port}`;
  if (access.waiting)
    return {
      type: EXPOSED_CONDITION,
      status: 'False',
      reason: access.waiting.reason,
      message:
        `${access.type}: waiting for ${access.waiting.message}; ` +
        `the kubeconfig Secret names ${managerServer ?? 'the in-cluster server'} meanwhile`,
    };
  if (access.server)
    return {
      type: EXPOSED_CONDITION,
      status: 'True',
      reason: access.type,
      message: `reached from outside the super cluster at ${access.server}`,
    };
  return {
    type: EXPOSED_CONDITION,
    status: 'True',
    reason: access.type,
    message: `reached inside the super cluster${managerServer ? ` at ${managerServer}` : ''} (Service type ${access.type})`,
  };
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
 * provisionedOfSecret reads the data of a kubeconfig Secret (kubeconfigSecretData), with the manager's kubeconfig
 * (MANAGER_KUBECONFIG_KEY where the Secret has one, else `kubeconfig`); undefined without a kubeconfig.
 * A Secret written before the endpoints were recorded (or with them unreadable) gives the kubeconfig's server as the
 * workloads' endpoint and no DNS endpoint, as `vc syncer` read such Secrets before.
 */
export function provisionedOfSecret(data: Record<string, string> | undefined): SecretProvisioned | undefined {
  const own = data?.[MANAGER_KUBECONFIG_KEY] ?? data?.kubeconfig;
  if (!data || !own) return undefined;
  const kubeconfig = Buffer.from(own, 'base64').toString('utf8');
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
