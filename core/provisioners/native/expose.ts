import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { KubeObject } from '../../kube/client.ts';
import type { ApiServerExpose, ExposeType } from '../../api/virtualcluster.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import { renderKubeconfig, type ControlPlanePKI } from '../../pki/pki.ts';
import type { ExternalAccess } from '../provisioner.ts';

/**
 * How a native tenant's apiserver is reached from outside the super cluster (spec.apiServer.expose): pure decisions
 * from the VirtualCluster, its ClusterVersion and what the super cluster reports (the apiserver Service as applied,
 * the Nodes). The provisioner reads, these functions decide, the provisioner writes.
 */

/** ExposeSettings are spec.apiServer.expose with the type resolved and the lists present. */
export interface ExposeSettings {
  type: ExposeType;
  nodePort?: number;
  extraDNSNames: string[];
  extraIPs: string[];
}

/** ApiserverService is the part of the applied `apiserver` Service exposure reads. */
export interface ApiserverService extends KubeObject {
  spec?: { type?: string; clusterIP?: string; ports?: Array<{ name?: string; port?: number; nodePort?: number }> };
  status?: { loadBalancer?: { ingress?: Array<{ ip?: string; hostname?: string }> } };
}

/** NodeLike is the part of a super cluster Node exposure reads. */
export interface NodeLike extends KubeObject {
  spec?: { unschedulable?: boolean };
  status?: {
    addresses?: Array<{ type?: string; address?: string }>;
    conditions?: Array<{ type?: string; status?: string }>;
  };
}

/**
 * Exposure is what exposure decides: the names the serving certificate carries beyond the in-cluster ones, and the
 * server people outside reach the apiserver at. `server` is absent for ClusterIP (the in-cluster server is the one)
 * and while something is awaited (`waiting`: what, and a CamelCase reason for the condition).
 */
export interface Exposure {
  type: ExposeType;
  sans: { dnsNames: string[]; ips: string[] };
  server?: string;
  waiting?: { reason: string; message: string };
}

/** exposeSettings resolves spec.apiServer.expose: its type, else the ClusterVersion's serviceType, else ClusterIP. */
export function exposeSettings(expose: ApiServerExpose | undefined, clusterVersionType?: ExposeType): ExposeSettings {
  const type = expose?.type ?? clusterVersionType ?? 'ClusterIP';
  return {
    type,
    ...(type === 'NodePort' && expose?.nodePort !== undefined && { nodePort: expose.nodePort }),
    extraDNSNames: [...(expose?.extraDNSNames ?? [])],
    extraIPs: [...(expose?.extraIPs ?? [])],
  };
}

/** httpsURL is `https://host:port`, with an IPv6 address in brackets. */
export function httpsURL(host: string, port: number): string {
  return `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** ADDRESS_PREFERENCE orders node address types for the kubeconfig server: an external address first. */
const ADDRESS_PREFERENCE = ['ExternalIP', 'InternalIP'] as const;

/**
 * exposureNodes are the Nodes whose addresses serve a NodePort apiserver: those the platform's placement selects
 * for control-plane Pods (its nodeSelector; the nodes it runs kube-proxy and the control plane on), else all, in
 * name order, Ready and schedulable ones first.
 */
export function exposureNodes(nodes: readonly NodeLike[], placement?: ForcedPlacementView): NodeLike[] {
  const selector = Object.entries(placement?.nodeSelector ?? {});
  const ready = (n: NodeLike) =>
    !n.spec?.unschedulable && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  return nodes
    .filter((n) => selector.every(([k, v]) => n.metadata?.labels?.[k] === v))
    .sort(
      (a, b) => Number(ready(b)) - Number(ready(a)) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    );
}

/** nodeIPs are a Node's InternalIP and ExternalIP addresses. */
function nodeIPs(n: NodeLike): string[] {
  return (n.status?.addresses ?? [])
    .filter((a) => (ADDRESS_PREFERENCE as readonly string[]).includes(a.type ?? '') && a.address && isIP(a.address))
    .map((a) => a.address!);
}

/**
 * exposure decides from the applied apiserver Service and the super cluster's Nodes:
 * - ClusterIP: only the extra names; no outside server.
 * - NodePort: the IPs of every exposure node as certificate names; the server is the first node's ExternalIP (else
 *   InternalIP) at the Service's node port. Waits for a node port and for a node with an address.
 * - LoadBalancer: the load balancer's ingress IPs and host names as certificate names; the server is the first
 *   ingress at the Service port. Waits (reason WaitingForLoadBalancer) while the super cluster assigned none.
 * Names are sorted and without repeats, so the same cluster gives the same certificate names.
 */
export function exposure(
  settings: ExposeSettings,
  svc: ApiserverService,
  nodes: readonly NodeLike[],
  placement?: ForcedPlacementView,
): Exposure {
  const dnsNames = new Set(settings.extraDNSNames);
  const ips = new Set(settings.extraIPs);
  const where = `Service ${svc.metadata?.namespace}/${svc.metadata?.name}`;
  const port = svc.spec?.ports?.find((p) => p.name === 'https') ?? svc.spec?.ports?.[0];
  const done = (server?: string, waiting?: Exposure['waiting']): Exposure => ({
    type: settings.type,
    sans: { dnsNames: [...dnsNames].sort(), ips: [...ips].sort() },
    ...(server && { server }),
    ...(waiting && { waiting }),
  });

  if (settings.type === 'NodePort') {
    const candidates = exposureNodes(nodes, placement);
    for (const n of candidates) for (const ip of nodeIPs(n)) ips.add(ip);
    if (!port?.nodePort) return done(undefined, { reason: 'WaitingForNodePort', message: `a node port for ${where}` });
    for (const n of candidates) {
      const byType = new Map((n.status?.addresses ?? []).map((a) => [a.type, a.address]));
      const host = ADDRESS_PREFERENCE.map((t) => byType.get(t)).find((a) => a && isIP(a));
      if (host) return done(httpsURL(host, port.nodePort));
    }
    const matching = placement?.nodeSelector ? ' matching the placement of the control plane' : '';
    return done(undefined, {
      reason: 'WaitingForNode',
      message: `a node with an InternalIP or ExternalIP${matching} to serve node port ${port.nodePort}`,
    });
  }
  if (settings.type === 'LoadBalancer') {
    const ingress = svc.status?.loadBalancer?.ingress ?? [];
    for (const i of ingress) {
      if (i.ip && isIP(i.ip)) ips.add(i.ip);
      if (i.hostname) dnsNames.add(i.hostname);
    }
    const first = ingress.find((i) => (i.ip && isIP(i.ip)) || i.hostname);
    if (!first || !port?.port)
      return done(undefined, {
        reason: 'WaitingForLoadBalancer',
        message: `the super cluster to assign a load balancer address to ${where} (status.loadBalancer.ingress is empty)`,
      });
    return done(httpsURL(first.ip && isIP(first.ip) ? first.ip : first.hostname!, port.port));
  }
  return done();
}

/** servingNamesHash identifies the exposed names of the serving certificate (order does not matter). */
export function servingNamesHash(names: Exposure['sans']): string {
  return createHash('sha256')
    .update(JSON.stringify([[...names.dnsNames].sort(), [...names.ips].sort()]))
    .digest('hex')
    .slice(0, 16);
}

/**
 * externalAccess is the ExternalAccess of a native tenant: for NodePort and LoadBalancer, once the address is known,
 * an admin kubeconfig naming it (the same CA and admin certificate as the manager's); for ClusterIP only the type.
 */
export function externalAccess(e: Exposure, clusterName: string, pki: ControlPlanePKI): ExternalAccess {
  if (e.waiting) return { type: e.type, waiting: e.waiting };
  if (!e.server) return { type: e.type };
  return {
    type: e.type,
    server: e.server,
    kubeconfig: renderKubeconfig({
      clusterName,
      server: e.server,
      caPem: pki.ca.certPem,
      user: 'admin',
      clientCertPem: pki.admin.certPem,
      clientKeyPem: pki.admin.keyPem,
    }),
  };
}
