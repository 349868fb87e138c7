import type { Command } from 'commander';

/**
 * registerVnAgentCommand adds `vc vn-agent --config <file>`: run the vn-agent, the kubelet endpoint of every vNode,
 * until SIGINT or SIGTERM.
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
}
