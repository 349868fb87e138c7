import { resolve } from 'node:path';
import { Command } from 'commander';
import { ensureToolchain, isComplete, toolchainDir } from '../toolchain/toolchain.ts';

const program = new Command();
program.name('vc').description('VirtualCluster: hard multi-tenancy for Kubernetes, driven by GitOps').showHelpAfterError();

const toolchain = program.command('toolchain').description('the Kubernetes binaries this project runs (built from Go modules)');
toolchain
  .command('build')
  .description('build the pinned Kubernetes, etcd and kwok binaries, or find them in the cache')
  .action(async () => {
    const dir = await ensureToolchain();
    process.stdout.write(`${dir}\n`);
  });
toolchain
  .command('path')
  .description('print the directory that holds the pinned binaries')
  .option('--check', 'exit non-zero when the binaries are not built yet')
  .action((o: { check?: boolean }) => {
    const dir = toolchainDir();
    process.stdout.write(`${dir}\n`);
    if (o.check && !isComplete(dir)) {
      process.stderr.write('not built yet: run `npx vc toolchain build`\n');
      process.exitCode = 1;
    }
  });

program
  .command('up')
  .description('start the embedded default on this machine (the local super cluster) and keep it running until Ctrl-C')
  .option('--state-dir <dir>', 'where all state lives', '.state/default')
  .option('--nodes <n>', 'number of kwok nodes', '3')
  .action(async (o: { stateDir: string; nodes: string }) => {
    await ensureToolchain();
    const { LocalSuperCluster } = await import('../local/supercluster.ts');
    const stateDir = resolve(o.stateDir);
    process.stderr.write(`starting the local super cluster in ${stateDir} ...\n`);
    const started = Date.now();
    const sc = await LocalSuperCluster.start({ stateDir, nodes: Number(o.nodes), restart: true });
    process.stdout.write(
      [
        `super cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        `  kubeconfig: ${sc.kubeconfigPath}`,
        `  try:        kubectl --kubeconfig ${sc.kubeconfigPath} get nodes`,
        `  kubectl:    ${toolchainDir()}/kubectl`,
        'press Ctrl-C to stop everything',
        '',
      ].join('\n'),
    );
    await new Promise<void>((res) => {
      process.once('SIGINT', res);
      process.once('SIGTERM', res);
    });
    process.stderr.write('stopping ...\n');
    await sc.stop();
  });

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`vc: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
