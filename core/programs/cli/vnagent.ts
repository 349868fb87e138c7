import type { Command } from 'commander';

/**
 * registerVnAgentCommand adds the node components: `vc vn-agent --config <file>` (the kubelet endpoint of every
 * vNode) and `vc cluster-ips --node <name>` (a node's translation of tenant cluster IPs); each runs until SIGINT or
 * SIGTERM.
 */
export function registerVnAgentCommand(program: Command): void {
  program
    .command('vn-agent')
    .description('run the vn-agent: the kubelet endpoint of vNodes (logs, exec, attach, port-forward for tenant pods)')
    .requiredOption('-c, --config <file>', 'vn-agent configuration (VnAgentConfiguration YAML)')
    .action(async (o: { config: string }) => {
      (await import('../../kube/identity.ts')).setUserAgentComponent('vn-agent');
      const { loadVnAgentConfig } = await import('../../vnagent/config.ts');
      const { runVnAgent } = await import('../vn-agent/run.ts');
      const r = await runVnAgent(loadVnAgentConfig(o.config));
      process.stderr.write(
        `vn-agent listening on port ${r.agent.port}; metrics and probes on port ${r.agent.opsPort}\n`,
      );
      await new Promise<void>((res) => {
        process.once('SIGINT', res);
        process.once('SIGTERM', res);
      });
      await r.stop();
    });

  program
    .command('cluster-ips')
    .description(
      "translate tenant Services' cluster IPs to their super copies' for the tenant's own Pods on this node (nftables)",
    )
    .option('--node <name>', 'the node whose Pods are translated (its super Node name); default $NODE_NAME')
    .option('--kubeconfig <file>', 'the super cluster; default the in-cluster configuration')
    .option(
      '--node-client-cert <file>',
      "the node's own client certificate (the kubelet's kubelet-client-current.pem): the Node authorizer then shows " +
        "only the node's Pods",
    )
    .option('--node-client-key <file>', 'its key, when not in the same file')
    .option('--table <name>', 'the nftables table (family ip) to own; default vc-cluster-ips')
    .action(
      async (o: {
        node?: string;
        kubeconfig?: string;
        nodeClientCert?: string;
        nodeClientKey?: string;
        table?: string;
      }) => {
        (await import('../../kube/identity.ts')).setUserAgentComponent('cluster-ips');
        const node = o.node ?? process.env.NODE_NAME;
        if (!node) throw new Error('cluster-ips: name the node with --node or NODE_NAME');
        const { runClusterIPTranslator } = await import('../../vnagent/clusteriptranslator.ts');
        const t = await runClusterIPTranslator({ ...o, nodeName: node });
        process.stderr.write(`cluster-ips: translating for node ${node}\n`);
        await new Promise<void>((res) => {
          process.once('SIGINT', res);
          process.once('SIGTERM', res);
        });
        await t.stop();
        process.exit(0);
      },
    );
}
