import { isIP } from 'node:net';
import type { KubeObject } from '../../kube/client.ts';
import { nodeIPs } from '../provisioner.ts';
import { outsideBlockPeers } from '../../../plugins/sdk/src/network/isolation.ts';
import { LABEL } from '../../../plugins/sdk/src/names.ts';
import { SUPER_INTERNAL_CIDRS, VN_AGENT_PORT } from '../../../plugins/sdk/src/wellknown.ts';
import { objectMeta, selector } from './parts.ts';

/** VnAgentAddress is a vn-agent the vNodes name: its host when the platform names one, else on every node's address. */
export interface VnAgentAddress {
  host?: string;
  port: number;
}

/** APISERVER_EGRESS_POLICY names the NetworkPolicy that confines a native tenant apiserver's connections. */
export const APISERVER_EGRESS_POLICY = 'apiserver-egress';

/**
 * apiserverEgressPolicy confines the connections of a native tenant's apiserver Pods. A tenant admin points its
 * apiserver anywhere (webhooks and APIServices by URL or Service, `services/proxy` through Endpoints it writes,
 * `nodes/proxy` to Nodes it creates, `pods/proxy` to Pod addresses it sets); from a Pod of the super cluster those
 * connections would reach the super apiserver, the platform's Pods and Services, other tenants and the nodes. The
 * policy allows:
 * - the tenant's own super namespaces (LABEL.cluster = the root namespace): its etcd, its Pods and Services (the
 *   backends of its webhooks, APIServices and proxied Services), its own DNS;
 * - the vn-agents (`vnAgents`, those the platform's vNodes name): every vNode's kubelet endpoint is a vn-agent (logs,
 *   exec), which serves a tenant only its own Pods. One whose host the platform names is allowed at that address and
 *   port only; one without (default: VN_AGENT_PORT, the DaemonSet's, on the host network of every node, whose
 *   addresses the policy cannot follow) at its port on every address;
 * - every address outside `internal` (default SUPER_INTERNAL_CIDRS) and other than `platform` (the super apiserver's
 *   and the nodes' own addresses, which may lie outside those ranges: a public node or apiserver address): webhooks the
 *   tenant runs elsewhere. Those addresses are listed as the blocks that make them up (outsideBlockPeers), with no
 *   `except`.
 * The super's DNS is not among them: it would answer other tenants' names, so webhook URLs outside the tenant name an
 * address. The policy is evaluated after kube-proxy has translated a Service address, so it is the super apiserver's
 * endpoint, not 10.96.0.1, that `internal` and `platform` must hold. Throws on a `platform` entry that is not an
 * address or CIDR.
 */
export function apiserverEgressPolicy(
  root: string,
  internal: readonly string[] = SUPER_INTERNAL_CIDRS,
  vnAgents: readonly VnAgentAddress[] = [{ port: VN_AGENT_PORT }],
  platform: readonly string[] = [],
): KubeObject {
  const agents = vnAgents.map((a) => ({
    ...(a.host && { to: [{ ipBlock: { cidr: `${a.host}/${a.host.includes(':') ? 128 : 32}` } }] }),
    ports: [{ protocol: 'TCP', port: a.port }],
  }));
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: objectMeta(root, APISERVER_EGRESS_POLICY, 'apiserver'),
    spec: {
      podSelector: { matchLabels: selector(root, 'apiserver') },
      policyTypes: ['Egress'],
      egress: [
        { to: [{ namespaceSelector: { matchLabels: { [LABEL.cluster]: root } } }] },
        ...agents,
        { to: outsideBlockPeers([...internal, ...platform]) },
      ],
    },
  } as KubeObject;
}

/** EndpointsLike is the part of the super's `default/kubernetes` Endpoints platformAddressesOf reads. */
export interface EndpointsLike extends KubeObject {
  subsets?: Array<{ addresses?: Array<{ ip?: string }> }>;
}

/** NodeAddressesLike is the part of a super Node platformAddressesOf reads. */
export interface NodeAddressesLike extends KubeObject {
  status?: { addresses?: Array<{ type?: string; address?: string }> };
}

/**
 * platformAddressesOf lists the super cluster's own addresses that apiserverEgressPolicy leaves out: the endpoints of
 * the super apiserver (its `default/kubernetes` Endpoints, where kube-proxy sends 10.96.0.1), every node's addresses
 * and `servers` (the hosts the manager reaches the super apiserver at, such as a load balancer's address in front of
 * it), sorted, each once; names (a Hostname address, a server's DNS name) are skipped.
 */
export function platformAddressesOf(
  apiserver: EndpointsLike | null,
  nodes: readonly NodeAddressesLike[],
  servers: readonly string[] = [],
): string[] {
  const out = new Set(servers.map((h) => h.replace(/^\[(.*)\]$/, '$1')).filter((h) => isIP(h)));
  for (const s of apiserver?.subsets ?? []) for (const a of s.addresses ?? []) if (a.ip && isIP(a.ip)) out.add(a.ip);
  for (const n of nodes) for (const ip of nodeIPs(n)) out.add(ip);
  return [...out].sort();
}
