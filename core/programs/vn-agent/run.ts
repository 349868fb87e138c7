import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { KubeClient } from '../../kube/client.ts';
import { childLogger } from '../../log.ts';
import { pluginHostFromConfig } from '../plugins.ts';
import { DEFAULT_PORT, startVnAgent, type VnAgent } from '../../vnagent/agent.ts';
import { readClientPair, watchClientPair } from '../../vnagent/clientfiles.ts';
import { ensureServingCert, type VnAgentConfig } from '../../vnagent/config.ts';
import { VirtualClusterDirectory } from '../../vnagent/directory.ts';
import { loadNodeCredential, nodeCredentialFileSource, nodeSuperClient } from '../../vnagent/nodecredential.ts';
import { InformerSuperView } from '../../vnagent/superview.ts';

const log = childLogger({ controller: 'vn-agent' });

/** DEFAULT_OPS_PORT is the vn-agent's ops port (/healthz, /readyz, /metrics). */
export const DEFAULT_OPS_PORT = 10551;

/** VN_AGENT_DEFAULTS are the values of the fields a configuration leaves out (schemas/vnagent-config.schema.json). */
export const VN_AGENT_DEFAULTS = {
  host: '0.0.0.0',
  port: DEFAULT_PORT,
  stateDir: '.state/vn-agent',
  kubeletInsecureSkipVerify: false,
  ops: { host: '127.0.0.1', port: DEFAULT_OPS_PORT },
} as const;

/**
 * clientFor is a client of the given kubeconfig file or, without one, of the Pod's in-cluster configuration; either
 * way its token file or exec plugin is re-read or re-run as the credentials rotate.
 */
function clientFor(kubeconfig?: string): Promise<KubeClient> {
  return kubeconfig ? KubeClient.fromFile(kubeconfig) : KubeClient.inCluster();
}

/** RunningVnAgent is a vn-agent started from a configuration, with the clients it owns. */
export interface RunningVnAgent {
  agent: VnAgent;
  stop(): Promise<void>;
}

/**
 * runVnAgent starts a vn-agent from a configuration: tenants from the VirtualClusters of the meta cluster, Pods and
 * Nodes from the super cluster, the vn-agent-capable plugins, and its serving certificate (generated when absent).
 */
export async function runVnAgent(cfg: VnAgentConfig): Promise<RunningVnAgent> {
  const plugins = await pluginHostFromConfig('vn-agent', cfg.plugins);
  const meta = await clientFor(cfg.metaKubeconfig);
  const superClient =
    cfg.superKubeconfig && cfg.superKubeconfig !== cfg.metaKubeconfig ? await clientFor(cfg.superKubeconfig) : meta;
  const nodeFiles = cfg.nodeClientCert && {
    certFile: cfg.nodeClientCert,
    keyFile: cfg.nodeClientKey,
    nodeName: cfg.nodeName ?? (process.env.NODE_NAME || undefined),
  };
  // Checked once at start (a bad file stops the agent naming it), then read again as the kubelet rotates it.
  const node = nodeFiles ? loadNodeCredential(nodeFiles) : undefined;
  const nodeName = node?.nodeName ?? cfg.nodeName ?? (process.env.NODE_NAME || undefined);
  const nodeClient =
    node && nodeFiles
      ? nodeSuperClient(superClient, node, nodeCredentialFileSource({ ...nodeFiles, nodeName: node.nodeName }))
      : undefined;
  if (node)
    log.info({ node: node.nodeName, notAfter: node.notAfter }, "super Pods are read with this node's credential");
  else
    log.warn(
      'no nodeClientCert: super Pods are read with the super kubeconfig, which is not limited to this node ' +
        "(configure the node's credential, deploy/vn-agent/daemonset.yaml)",
    );
  const serving = await ensureServingCert({
    certFile: cfg.servingCert,
    keyFile: cfg.servingKey,
    stateDir: resolve(cfg.stateDir ?? VN_AGENT_DEFAULTS.stateDir),
    names: [nodeName, process.env.HOST_IP].filter((x): x is string => !!x),
    validityDays: cfg.servingCertValidityDays,
  });
  const client =
    cfg.kubeletClientCert && cfg.kubeletClientKey
      ? readClientPair(cfg.kubeletClientCert, cfg.kubeletClientKey)
      : undefined;
  const agent = await startVnAgent({
    host: cfg.host ?? VN_AGENT_DEFAULTS.host,
    port: cfg.port ?? VN_AGENT_DEFAULTS.port,
    serving: serving.pair,
    directory: new VirtualClusterDirectory({ meta, superCluster: cfg.superCluster }),
    superView: new InformerSuperView({
      client: nodeClient ?? superClient,
      nodeName,
      nodeScoped: !!nodeClient,
      closeClient: !!nodeClient,
    }),
    plugins,
    kubelet: {
      certPem: client?.certPem,
      keyPem: client?.keyPem,
      caPem: cfg.kubeletCA ? readFileSync(cfg.kubeletCA, 'utf8') : undefined,
      insecureSkipVerify: cfg.kubeletInsecureSkipVerify ?? VN_AGENT_DEFAULTS.kubeletInsecureSkipVerify,
    },
    ops: { host: cfg.ops?.host ?? VN_AGENT_DEFAULTS.ops.host, port: cfg.ops?.port ?? VN_AGENT_DEFAULTS.ops.port },
    handshakeTimeoutMs: cfg.handshakeTimeoutSeconds ? cfg.handshakeTimeoutSeconds * 1000 : undefined,
    streamIdleTimeoutMs: cfg.streamIdleTimeoutSeconds ? cfg.streamIdleTimeoutSeconds * 1000 : undefined,
    limits: { perTenant: cfg.streamsPerTenant, total: cfg.streams },
  });
  // A generated serving certificate is renewed from its CA at two thirds of its life; configured files (a mounted
  // Secret that the platform renews) are read again and a new pair is served without a restart.
  if (serving.renew) agent.renewServing(serving.pair.certPem, serving.renew);
  const stopWatchingServing =
    !serving.renew && cfg.servingCert && cfg.servingKey
      ? watchClientPair({
          certFile: cfg.servingCert,
          keyFile: cfg.servingKey,
          current: serving.pair.certPem,
          apply: (pair) => {
            agent.setServing(pair);
            log.info({ file: cfg.servingCert }, 'serving certificate replaced; new connections get it');
          },
          onError: (e) => log.warn({ err: e.message }, 'the serving certificate files do not read yet'),
        })
      : undefined;
  // The client certificate towards the kubelets is a mounted Secret: a renewed one is taken up without a restart.
  const stopWatching =
    client && cfg.kubeletClientCert && cfg.kubeletClientKey
      ? watchClientPair({
          certFile: cfg.kubeletClientCert,
          keyFile: cfg.kubeletClientKey,
          current: client.certPem,
          apply: (pair) => {
            agent.setKubeletClient(pair);
            log.info({ file: cfg.kubeletClientCert }, 'kubelet client certificate replaced; new requests use it');
          },
          onError: (e) => log.warn({ err: e.message }, 'the kubelet client certificate files do not read yet'),
        })
      : undefined;
  return {
    agent,
    async stop() {
      stopWatching?.();
      stopWatchingServing?.();
      await agent.stop();
      meta.close();
      if (superClient !== meta) superClient.close();
    },
  };
}
