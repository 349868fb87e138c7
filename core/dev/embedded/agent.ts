// The embedded default's vn-agents: one per super cluster on 127.0.0.1, serving every node, simulated and real.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueCert, issueNodeCert, type CertKeyPair } from '../../pki/pki.ts';
import { pluginHostFromConfig } from '../../programs/plugins.ts';
import { startVnAgent, type VnAgent } from '../../vnagent/agent.ts';
import { VirtualClusterDirectory, type TenantDirectory } from '../../vnagent/directory.ts';
import { nodeSuperClient, parseNodeCredential, RenewedNodeCredential } from '../../vnagent/nodecredential.ts';
import { InformerSuperView, NodesSuperView } from '../../vnagent/superview.ts';
import type { LocalControlPlane } from '../local/controlplane.ts';
import { freePorts } from '../local/process.ts';
import type { LocalSuperCluster } from '../local/supercluster.ts';
import { applyKubeletAccess } from './superobjects.ts';

/** keptPort is the port recorded in a file, or a free one, recorded there: the same port across restarts. */
export async function keptPort(file: string): Promise<number> {
  const port = existsSync(file) ? Number(readFileSync(file, 'utf8')) : (await freePorts(1))[0]!;
  writeFileSync(file, String(port));
  return port;
}

/**
 * startNodesAgent runs the vn-agent of one super cluster of the embedded default (default the first; `cluster`
 * another one, r2..) on 127.0.0.1: tenants are the Running VirtualClusters of the meta cluster (or the given
 * directory); it serves every node of that super cluster, simulated and real, and reads each node's
 * Pods with that node's own credential (system:node:<node>, signed by that super cluster's CA), so the apiserver's Node
 * authorizer shows it nothing else. Towards the kubelets it is the user `vc-vn-agent` (a client certificate of that
 * super cluster's CA, allowed nodes/proxy by applyKubeletAccess) and verifies their serving certificates against that
 * CA. Its own serving certificate is of the first super cluster's CA, for 127.0.0.1 and `podAddress` when given (a
 * forwarder there lets tenant apiservers in Pods, native tenants', reach it): the one CA tenant apiservers verify every
 * vn-agent against (virtualClusters.local.kubeletCAFile, virtualClusters.native.kubeletCAFile); it is renewed from
 * that CA at two thirds of its life while the agent runs (VnAgent.renewServing), and its client certificate towards the
 * kubelets from theirs (VnAgent.renewKubeletClient), and each node's credential from its super cluster's CA
 * (VnAgent.renewNodeCredential).
 */
export async function startNodesAgent(
  sc: LocalSuperCluster,
  o: {
    port: number;
    cluster?: LocalControlPlane;
    directory?: TenantDirectory;
    handshakeTimeoutMs?: number;
    podAddress?: string;
    /** third-party plugins the manager loads (`vc up --plugin`): the agent loads them too, for their node-call hooks */
    thirdParty?: string[];
    /** sandboxed third-party plugins the manager loads: the agent runs their node-call hooks in sandboxes too */
    sandboxed?: string[];
    /** lifetime of each node's credential, in days (fractions allowed; tests use minutes); default 365 */
    nodeCredentialDays?: number;
  },
): Promise<VnAgent> {
  const cluster = o.cluster ?? sc.cluster;
  const meta = await sc.cluster.client();
  const c = cluster === sc.cluster ? meta : await cluster.client();
  await applyKubeletAccess(c);
  const superCA = cluster.ca;
  const nodes = [...cluster.kwokNodeNames, ...sc.realNodesOf(cluster).map((n) => n.name)];
  const views: InformerSuperView[] = [];
  const held: Array<[RenewedNodeCredential, () => Promise<CertKeyPair>]> = [];
  for (const nodeName of nodes) {
    const issueNode = () => issueNodeCert(superCA, nodeName, o.nodeCredentialDays ?? 365);
    const cert = await issueNode();
    const cred = new RenewedNodeCredential(parseNodeCredential(cert.certPem, cert.keyPem, `of ${nodeName}`, nodeName));
    held.push([cred, issueNode]);
    views.push(
      new InformerSuperView({
        client: nodeSuperClient(c, cred.current, cred),
        nodeName,
        nodeScoped: true,
        closeClient: true,
      }),
    );
  }
  const issueClient = () => issueCert(superCA, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 365 });
  const client = await issueClient();
  const issueServing = () =>
    issueCert(sc.cluster.ca, {
      commonName: 'vc-vn-agent',
      ipAddresses: ['127.0.0.1', ...(o.podAddress ? [o.podAddress] : [])],
      usages: ['server'],
      validityDays: 365,
    });
  const serving = await issueServing();
  const agent = await startVnAgent({
    host: '127.0.0.1',
    port: o.port,
    serving,
    directory: o.directory ?? new VirtualClusterDirectory({ meta }),
    superView: new NodesSuperView(views),
    plugins: await pluginHostFromConfig('vn-agent', {
      ...(o.thirdParty?.length && { thirdParty: o.thirdParty }),
      ...(o.sandboxed?.length && { sandboxed: o.sandboxed }),
    }),
    kubelet: { certPem: client.certPem, keyPem: client.keyPem, caPem: superCA.certPem },
    handshakeTimeoutMs: o.handshakeTimeoutMs,
  });
  // Renewed at two thirds of its life from the same CA: tenant apiservers verify it against that CA alone. The client
  // certificate towards the kubelets likewise, from the super cluster's CA the kubelets trust.
  agent.renewServing(serving.certPem, issueServing);
  agent.renewKubeletClient(client.certPem, issueClient);
  // Each node's credential likewise, from that node's super cluster CA: requests from then on carry the renewed one.
  for (const [cred, issueNode] of held) agent.renewNodeCredential(cred, issueNode);
  return agent;
}

/** startAgent runs the vn-agent of one super cluster (startNodesAgent) on a port kept across restarts. */
export async function startAgent(
  sc: LocalSuperCluster,
  stateDir: string,
  cluster: LocalControlPlane = sc.cluster,
  podAddress?: string,
  thirdParty?: string[],
): Promise<VnAgent> {
  const port = await keptPort(
    join(stateDir, cluster === sc.cluster ? 'vn-agent-port' : `vn-agent-port-${cluster.name}`),
  );
  return startNodesAgent(sc, { port, cluster, podAddress, thirdParty });
}
