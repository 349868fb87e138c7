/**
 * metrics-server for a local tenant control plane: `kubectl top` and HorizontalPodAutoscalers of one tenant, fed by
 * the vn-agent's /metrics/resource (which answers a tenant only its own Pods, under tenant names).
 *
 * It runs beside the tenant's apiserver and controller manager on the host, not as a tenant Pod: the vn-agent admits
 * only the client certificate of the tenant's own apiserver (its kubelet client, matched by fingerprint), and under
 * `vc up` it listens on loopback, which no Pod reaches. metrics-server presents that same certificate to the agent,
 * so it sees exactly what the tenant's apiserver may see of the node, and the tenant apiserver reaches it through an
 * APIService whose Service has one endpoint, this host's address (aggregator routing, as local tenants run with).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { KubeClient, KubeObject, Resource } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { issueCert, PKI_FILES } from '../../pki/pki.ts';
import { ensureMetricsServer } from '../../toolchain/metricsserver.ts';
import { freePorts, ManagedProcess, waitFor } from './process.ts';

/** APISERVICES is the aggregator's APIService resource. */
export const APISERVICES: Resource = {
  group: 'apiregistration.k8s.io',
  version: 'v1',
  resource: 'apiservices',
  kind: 'APIService',
  namespaced: false,
};

/** METRICS_API is the APIService metrics-server serves: `kubectl top` and the HPA controller read it. */
export const METRICS_API = 'v1beta1.metrics.k8s.io';

/** FIELD_MANAGER owns the tenant objects that register metrics-server. */
const FIELD_MANAGER = 'vc-metrics-server';

/** MetricsServerArgsInput are the inputs of metricsServerArgs. */
export interface MetricsServerArgsInput {
  /** kubeconfig of the tenant apiserver metrics-server lists Nodes and Pods from and authorizes callers against */
  kubeconfig: string;
  /** the tenant apiserver's kubelet client certificate and key, which the vn-agent admits as that tenant */
  kubeletClientCert: string;
  kubeletClientKey: string;
  /** CA of the vn-agent's serving certificate (the super cluster's CA) */
  kubeletCa: string;
  /** serving certificate and key for the tenant apiserver's aggregator */
  tlsCert: string;
  tlsKey: string;
  bindAddress: string;
  port: number;
  /** how often the agent is scraped (metrics-server allows 10 s at least) */
  resolutionSeconds?: number;
}

/**
 * metricsServerArgs is metrics-server's command line for one tenant: it reaches each vNode at its InternalIP and
 * kubelet port (the vn-agent), verifying the agent, with the tenant apiserver's own kubelet identity.
 */
export function metricsServerArgs(i: MetricsServerArgsInput): string[] {
  return [
    `--kubeconfig=${i.kubeconfig}`,
    `--authentication-kubeconfig=${i.kubeconfig}`,
    `--authorization-kubeconfig=${i.kubeconfig}`,
    `--kubelet-client-certificate=${i.kubeletClientCert}`,
    `--kubelet-client-key=${i.kubeletClientKey}`,
    `--kubelet-certificate-authority=${i.kubeletCa}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--kubelet-use-node-status-port',
    `--metric-resolution=${i.resolutionSeconds ?? 15}s`,
    `--tls-cert-file=${i.tlsCert}`,
    `--tls-private-key-file=${i.tlsKey}`,
    `--bind-address=${i.bindAddress}`,
    `--secure-port=${i.port}`,
  ];
}

/**
 * metricsServerObjects are the tenant objects that make its apiserver serve metrics.k8s.io from metrics-server at
 * address:port: a selector-less Service and its Endpoints in kube-system, and the APIService naming it with the CA
 * that signed metrics-server's serving certificate.
 */
export function metricsServerObjects(o: { address: string; port: number; caPem: string }): Array<{
  resource: Resource;
  object: KubeObject;
}> {
  const meta = { name: 'metrics-server', namespace: 'kube-system', labels: { 'k8s-app': 'metrics-server' } };
  return [
    {
      resource: R.services,
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta,
        spec: { ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: o.port }] },
      },
    },
    {
      resource: R.endpoints,
      object: {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: meta,
        subsets: [{ addresses: [{ ip: o.address }], ports: [{ name: 'https', port: o.port, protocol: 'TCP' }] }],
      },
    },
    {
      resource: APISERVICES,
      object: {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: METRICS_API, labels: meta.labels },
        spec: {
          service: { name: 'metrics-server', namespace: 'kube-system', port: 443 },
          group: 'metrics.k8s.io',
          version: 'v1beta1',
          caBundle: Buffer.from(o.caPem).toString('base64'),
          groupPriorityMinimum: 100,
          versionPriority: 100,
        },
      },
    },
  ];
}

/**
 * hostAddress is an IPv4 address of this host other than loopback: the API refuses loopback in Endpoints, and the
 * tenant apiserver connects to it locally.
 */
export function hostAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('metrics-server: this host has no IPv4 address but loopback for the tenant apiserver to reach');
}

/** TenantMetricsServerOptions say which tenant control plane and which vn-agent. */
export interface TenantMetricsServerOptions {
  /** the tenant control plane's state directory (its pki/ holds the CA and the kubelet client certificate) */
  dir: string;
  /** an admin kubeconfig of the tenant */
  kubeconfigPath: string;
  client: KubeClient;
  /** CA file of the vn-agent's serving certificate */
  kubeletCaFile: string;
  resolutionSeconds?: number;
  /** how long to wait for the APIService to become Available (default 120 s); 0: do not wait */
  timeoutMs?: number;
  /** the port to serve on (default a free one) */
  port?: number;
  /** the metrics-server executable (default: built on demand, ensureMetricsServer) */
  binary?: string;
  /**
   * the `cgroup.procs` file of the tenant control plane's cpu cgroup (cpulimit.ts): metrics-server is the tenant's and
   * enters it before it runs, rather than staying in the cgroup of the manager that starts it
   */
  cgroupProcs?: string;
}

/** TenantMetricsServer is a running metrics-server registered in its tenant. */
export interface TenantMetricsServer {
  process: ManagedProcess;
  address: string;
  port: number;
  /** stop removes the APIService (so the tenant's discovery is not left failing) and stops the process */
  stop(): Promise<void>;
}

/**
 * startTenantMetricsServer starts metrics-server (built on demand, ensureMetricsServer) for the tenant control plane
 * of `o.dir`, registers it in the tenant and waits until the tenant apiserver reports the APIService Available.
 */
export async function startTenantMetricsServer(o: TenantMetricsServerOptions): Promise<TenantMetricsServer> {
  const bin = o.binary ?? (await ensureMetricsServer());
  const dir = join(o.dir, 'metrics-server');
  mkdirSync(dir, { recursive: true });
  const pki = join(o.dir, 'pki');
  const ca = {
    certPem: readFileSync(join(pki, PKI_FILES.ca.cert), 'utf8'),
    keyPem: readFileSync(join(pki, PKI_FILES.ca.key), 'utf8'),
  };
  const address = hostAddress();
  const port = o.port ?? (await freePorts(1))[0];
  const serving = await issueCert(ca, {
    commonName: 'metrics-server',
    dnsNames: ['metrics-server.kube-system.svc'],
    ipAddresses: [address],
    usages: ['server'],
    validityDays: 365,
  });
  writeFileSync(join(dir, 'serving.crt'), serving.certPem);
  writeFileSync(join(dir, 'serving.key'), serving.keyPem, { mode: 0o600 });
  const process = new ManagedProcess({
    name: 'metrics-server',
    command: bin,
    args: metricsServerArgs({
      kubeconfig: o.kubeconfigPath,
      kubeletClientCert: join(pki, 'kubelet-client.crt'),
      kubeletClientKey: join(pki, 'kubelet-client.key'),
      kubeletCa: o.kubeletCaFile,
      tlsCert: join(dir, 'serving.crt'),
      tlsKey: join(dir, 'serving.key'),
      bindAddress: address,
      port: port!,
      resolutionSeconds: o.resolutionSeconds,
    }),
    logFile: join(dir, 'metrics-server.log'),
    restart: true,
    ...(o.cgroupProcs && { cgroupProcs: o.cgroupProcs }),
  });
  process.start();
  const stop = async () => {
    await o.client.delete(APISERVICES, undefined, METRICS_API).catch(() => undefined);
    await process.stop();
  };
  try {
    for (const x of metricsServerObjects({ address, port: port!, caPem: ca.certPem }))
      await o.client.apply(x.resource, x.object, FIELD_MANAGER);
    if (o.timeoutMs === 0) return { process, address, port: port!, stop };
    await waitFor(
      `APIService ${METRICS_API} Available`,
      async () => {
        const s = await o.client.get<
          KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }
        >(APISERVICES, undefined, METRICS_API);
        return s.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') ?? false;
      },
      { timeoutMs: o.timeoutMs ?? 120_000, intervalMs: 1000, process },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { process, address, port: port!, stop };
}
