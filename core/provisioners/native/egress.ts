import type { KubeObject } from '../../kube/client.ts';
import { outsidePeers } from '../../../plugins/sdk/src/network/isolation.ts';
import { LABEL } from '../../../plugins/sdk/src/names.ts';
import { SUPER_INTERNAL_CIDRS, VN_AGENT_PORT } from '../../../plugins/sdk/src/wellknown.ts';
import { objectMeta, selector } from './parts.ts';

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
 * - the vn-agents' ports (`vnAgentPorts`, those the platform's vNodes name; default VN_AGENT_PORT) on every address:
 *   every vNode's kubelet endpoint is the vn-agent of a node (logs, exec), and it serves a tenant only its own Pods;
 * - every address outside `internal` (default SUPER_INTERNAL_CIDRS): webhooks the tenant runs elsewhere.
 * The super's DNS is not among them: it would answer other tenants' names, so webhook URLs outside the tenant name an
 * address.
 */
export function apiserverEgressPolicy(
  root: string,
  internal: readonly string[] = SUPER_INTERNAL_CIDRS,
  vnAgentPorts: readonly number[] = [VN_AGENT_PORT],
): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: objectMeta(root, APISERVER_EGRESS_POLICY, 'apiserver'),
    spec: {
      podSelector: { matchLabels: selector(root, 'apiserver') },
      policyTypes: ['Egress'],
      egress: [
        { to: [{ namespaceSelector: { matchLabels: { [LABEL.cluster]: root } } }] },
        { ports: vnAgentPorts.map((port) => ({ protocol: 'TCP', port })) },
        { to: outsidePeers(internal) },
      ],
    },
  } as KubeObject;
}
