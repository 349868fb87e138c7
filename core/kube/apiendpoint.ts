import type { KubeClient, KubeObject } from './client.ts';
import { R } from './resources.ts';

/** FIELD_MANAGER is the server-side apply field manager of the `kubernetes` Service's endpoint objects. */
const FIELD_MANAGER = 'vc-local-apiserver-endpoint';

const ENDPOINT_SLICES = {
  group: 'discovery.k8s.io',
  version: 'v1',
  resource: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
} as const;

/**
 * kubernetesEndpoints are the objects that make `default/kubernetes` (the in-cluster configuration's Service) lead to
 * address:port, as a kube-apiserver's own endpoint reconciler writes them: the Endpoints (not mirrored again) and the
 * EndpointSlice kube-proxy reads. The local super clusters and every tenant apiserver run with
 * --endpoint-reconciler-type=none (the address their Pods reach them at is not one they listen on), so nobody else
 * writes them.
 */
export function kubernetesEndpoints(address: string, port: number): KubeObject[] {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(address))
    throw new Error(`apiserver endpoint: ${JSON.stringify(address)} is not an IPv4 address`);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`apiserver endpoint: port ${port} is not a TCP port`);
  return [
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' },
      },
      subsets: [{ addresses: [{ ip: address }], ports: [{ name: 'https', port, protocol: 'TCP' }] }],
    } as KubeObject,
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        labels: { 'kubernetes.io/service-name': 'kubernetes' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    } as KubeObject,
  ];
}

/**
 * publishable tells whether an apiserver address can stand in `default/kubernetes`: an IPv4 address outside the
 * loopback, link-local and unspecified ranges, which the apiserver refuses in Endpoints. A host name (a native
 * provisioner's Service name) or 127.0.0.1 (a tenant whose Pods only run on simulated nodes) is not.
 */
export function publishable(address: string): boolean {
  const m = /^(\d{1,3})\.(\d{1,3})\.\d{1,3}\.\d{1,3}$/.exec(address);
  if (!m || address.split('.').some((o) => Number(o) > 255)) return false;
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a !== 0 && a !== 127 && !(a === 169 && b === 254);
}

/** publishApiserverEndpoint applies kubernetesEndpoints(address, port) to the cluster of c. */
export async function publishApiserverEndpoint(c: KubeClient, address: string, port: number): Promise<void> {
  const [endpoints, slice] = kubernetesEndpoints(address, port);
  await c.apply(R.endpoints, endpoints!, FIELD_MANAGER, { force: true });
  await c.apply(ENDPOINT_SLICES, slice!, FIELD_MANAGER, { force: true });
}
