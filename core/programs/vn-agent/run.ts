import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../kube/client.ts';
import { pluginHostFromConfig } from '../plugins.ts';
import { DEFAULT_PORT, startVnAgent, type VnAgent } from '../../vnagent/agent.ts';
import { ensureServingCert, type VnAgentConfig } from '../../vnagent/config.ts';
import { VirtualClusterDirectory } from '../../vnagent/directory.ts';
import { InformerSuperView } from '../../vnagent/superview.ts';

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

async function clientFor(kubeconfig?: string): Promise<KubeClient> {
  const kc = new KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromCluster();
  return KubeClient.fromKubeConfig(kc);
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
  const nodeName = cfg.nodeName ?? (process.env.NODE_NAME || undefined);
  const serving = await ensureServingCert({
    certFile: cfg.servingCert,
    keyFile: cfg.servingKey,
    stateDir: resolve(cfg.stateDir ?? VN_AGENT_DEFAULTS.stateDir),
    names: [nodeName, process.env.HOST_IP].filter((x): x is string => !!x),
  });
  const agent = await startVnAgent({
    host: cfg.host ?? VN_AGENT_DEFAULTS.host,
    port: cfg.port ?? VN_AGENT_DEFAULTS.port,
    serving,
    directory: new VirtualClusterDirectory({ meta, superCluster: cfg.superCluster }),
    superView: new InformerSuperView({ client: superClient, nodeName }),
    plugins,
    kubelet: {
      certPem: cfg.kubeletClientCert ? readFileSync(cfg.kubeletClientCert, 'utf8') : undefined,
      keyPem: cfg.kubeletClientKey ? readFileSync(cfg.kubeletClientKey, 'utf8') : undefined,
      caPem: cfg.kubeletCA ? readFileSync(cfg.kubeletCA, 'utf8') : undefined,
      insecureSkipVerify: cfg.kubeletInsecureSkipVerify ?? VN_AGENT_DEFAULTS.kubeletInsecureSkipVerify,
    },
    ops: { host: cfg.ops?.host ?? VN_AGENT_DEFAULTS.ops.host, port: cfg.ops?.port ?? VN_AGENT_DEFAULTS.ops.port },
    handshakeTimeoutMs: cfg.handshakeTimeoutSeconds ? cfg.handshakeTimeoutSeconds * 1000 : undefined,
    streamIdleTimeoutMs: cfg.streamIdleTimeoutSeconds ? cfg.streamIdleTimeoutSeconds * 1000 : undefined,
  });
  return {
    agent,
    async stop() {
      await agent.stop();
      meta.close();
      if (superClient !== meta) superClient.close();
    },
  };
}
