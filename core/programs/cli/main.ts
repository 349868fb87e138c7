import { dirname, resolve } from 'node:path';
import { Command } from 'commander';
import { KUBECONFIG_RULE } from './kubeconfig.ts';
import { COMMAND_MODULES, commandOf, modulesFor } from './commands.ts';
import { errorReport } from './errors.ts';
import { formatData, formatTable, outputOption } from './output.ts';

const program = new Command();
program
  .name('vc')
  .description('VirtualCluster: hard multi-tenancy for Kubernetes, driven by GitOps')
  .option('-v, --verbose', 'errors with their stack and every cause')
  .option('--v <level>', "kubectl's verbosity flag: a level above 0 shows errors as -v does")
  // Usage errors are one line, as every other error: what is wrong, then where the help is. Set before any command is
  // added, so that every command inherits it.
  .configureOutput({
    outputError: (text, write) =>
      write(
        `vc: ${text
          .replace(/^error: /, '')
          .replace(/\s*\n\s*/g, ' ')
          .trim()} (see --help)\n`,
      ),
  })
  .addHelpText(
    'after',
    `\n${KUBECONFIG_RULE}\n\nExit codes: 0 success, 1 error (vc diff: 1 when there are differences, 2 on error).`,
  );

const toolchain = program
  .command('toolchain')
  .description('the Kubernetes binaries this project runs (built from Go modules)');
toolchain
  .command('build')
  .description(
    'build the pinned Kubernetes, etcd and kwok binaries, or find them in the cache; as root on Linux with cgroups, ' +
      'also the node toolchain (kubelet, containerd, runc, CNI, CoreDNS, images) real nodes run',
  )
  .option('--node', 'build only the node toolchain (and the control-plane toolchain its images come from)')
  .option('--no-node', 'skip the node toolchain (also VC_REAL_NODES=0)')
  .option(
    '--previous',
    'build only kube-apiserver and kube-controller-manager of the older pinned Kubernetes minor (kubernetesPrevious), ' +
      'which tenants on that version and the upgrade tests run',
  )
  .option(
    '--extras',
    'also what `vc up` and the tests build on first use: metrics-server, etcdutl (restores) and the OCI registry',
  )
  .action(async (o: { node?: boolean; previous?: boolean; extras?: boolean }) => {
    if (o.previous) {
      const { ensureKubernetesMinor } = await import('../../toolchain/minors.ts');
      return void process.stdout.write(`${await ensureKubernetesMinor()}\n`);
    }
    const { ensureToolchain } = await import('../../toolchain/toolchain.ts');
    if (o.node !== true) process.stdout.write(`${await ensureToolchain()}\n`);
    if (o.node !== false && (o.node !== undefined || process.env.VC_REAL_NODES !== '0')) {
      const { setupNodeToolchain } = await import('../../toolchain/setup.ts');
      const dir = await setupNodeToolchain({ force: o.node === true });
      if (dir) process.stdout.write(`${dir}\n`);
    }
    if (!o.extras) return;
    const { ensureMetricsServer } = await import('../../toolchain/metricsserver.ts');
    const { ensureEtcdutl } = await import('../../toolchain/etcdutl.ts');
    const { ensureRegistryToolchain } = await import('../../toolchain/registry.ts');
    // One after another: each Go build takes both cores.
    for (const build of [ensureMetricsServer, ensureEtcdutl, ensureRegistryToolchain])
      process.stdout.write(`${await build()}\n`);
  });
toolchain
  .command('path')
  .description('print the directory that holds the pinned binaries')
  .option('--check', 'exit non-zero when the binaries are not built yet')
  .action(async (o: { check?: boolean }) => {
    const { isComplete, toolchainDir } = await import('../../toolchain/toolchain.ts');
    const dir = toolchainDir();
    process.stdout.write(`${dir}\n`);
    if (o.check && !isComplete(dir)) {
      process.stderr.write('not built yet: run `npx vc toolchain build`\n');
      process.exitCode = 1;
    }
  });

program
  .command('manager')
  .description('run the manager: a syncer per super cluster, leader election, /metrics /healthz /readyz')
  .requiredOption('-c, --config <file>', 'manager configuration (ManagerConfiguration YAML)')
  .action(async (o: { config: string }) => {
    (await import('../../kube/identity.ts')).setUserAgentComponent('manager');
    const { installProcessGuards } = await import('../guards.ts');
    const guards = installProcessGuards();
    const { loadManagerConfig } = await import('../manager/config.ts');
    const { startManager } = await import('../manager/manager.ts');
    const cfg = loadManagerConfig(o.config);
    const m = await startManager(cfg, o.config);
    guards.onFatal(() => m.stop());
    process.stderr.write(`manager running; metrics and probes on 127.0.0.1:${m.opsPort}\n`);
    await new Promise<void>((res) => {
      process.once('SIGINT', res);
      process.once('SIGTERM', res);
    });
    await m.stop();
  });

program
  .command('syncer')
  .description("run one super cluster's syncer alone, with leader election on its own Lease (vc-syncer-<name>)")
  .requiredOption(
    '-c, --config <file>',
    'manager configuration (ManagerConfiguration YAML), the same as the manager reads',
  )
  .requiredOption('--super-cluster <name>', 'the super cluster to sync, one of /superClusters')
  .action(async (o: { config: string; superCluster: string }) => {
    (await import('../../kube/identity.ts')).setUserAgentComponent('syncer');
    const { installProcessGuards } = await import('../guards.ts');
    const guards = installProcessGuards();
    const { loadManagerConfig } = await import('../manager/config.ts');
    const { startManager } = await import('../manager/manager.ts');
    const cfg = loadManagerConfig(o.config);
    const m = await startManager(cfg, o.config, { syncerOnly: o.superCluster });
    guards.onFatal(() => m.stop());
    process.stderr.write(`syncer of ${o.superCluster} running; metrics and probes on 127.0.0.1:${m.opsPort}\n`);
    await new Promise<void>((res) => {
      process.once('SIGINT', res);
      process.once('SIGTERM', res);
    });
    await m.stop();
  });

const plugins = program.command('plugins').description('syncer plugins');
plugins
  .command('list')
  .description('list the built-in plugins and those a manager configuration adds, with their manifests and load errors')
  .option('-c, --config <file>', 'manager configuration naming third-party plugins')
  .option('--process <name>', 'manager or vn-agent', 'manager')
  .addOption(outputOption(['table', 'json', 'yaml', 'jsonpath']))
  .action(async (o: { config?: string; process: 'manager' | 'vn-agent'; output: string }) => {
    const { pluginHostFromConfig } = await import('../plugins.ts');
    const cfg = o.config ? (await import('../manager/config.ts')).loadManagerConfig(o.config) : undefined;
    const host = await pluginHostFromConfig(o.process, cfg?.plugins, {
      logFailures: false,
      ...(o.config ? { baseDir: dirname(resolve(o.config)) } : {}),
      defaultPluginConfig: cfg?.virtualClusters?.defaultPluginConfig,
    });
    const rows = host.names().map((n) => {
      const m = host.get(n)!.manifest;
      const on = host.enabledFor({}, n);
      // rbac: what the plugin needs beyond deploy/manager/rbac.yaml (see deploy/plugins/clusterrole.yaml)
      const rbac =
        (m.rbac ?? [])
          .map((r) => `${r.apiGroups.join(',') || 'core'}/${r.resources.join(',')}:${r.verbs.join(',')}`)
          .join(' ') || '-';
      return {
        name: n,
        version: m.version,
        api: m.apiVersion,
        direction: m.direction,
        truth: m.sourceOfTruth,
        processes: m.processes.join(','),
        enabled: on ? 'yes' : 'opt-in',
        rbac,
      };
    });
    const rules = Object.fromEntries(host.names().map((n) => [n, host.get(n)!.manifest.rbac ?? []]));
    const doc = { plugins: rows.map((r) => ({ ...r, rbac: rules[r.name] })), failures: host.failures };
    const data = formatData(doc, o.output);
    if (data !== undefined) process.stdout.write(data);
    else {
      const cols = ['name', 'version', 'api', 'direction', 'truth', 'processes', 'enabled', 'rbac'] as const;
      process.stdout.write(
        formatTable(
          cols.map((c) => c.toUpperCase()),
          rows.map((r) => cols.map((c) => r[c])),
        ),
      );
      for (const f of host.failures) process.stderr.write(`FAILED ${f.plugin} (${f.source}): ${f.reason}\n`);
    }
    if (host.failures.length) process.exitCode = 1;
    await host.close();
  });
// The commands of the other modules: only those of the command that runs are imported (commands.ts), all of them
// for help, completion and an unknown command.
const args = process.argv.slice(2);
const others = modulesFor(
  args,
  program.commands.map((c) => c.name()),
);
// `vc plugins sign` and its kin (pluginsign.ts) go under main's own `plugins`.
if (commandOf(args) === 'plugins' || others.length === COMMAND_MODULES.length)
  (await import('./pluginsign.ts')).registerPluginSigningCommands(plugins);
for (const m of others) (await m.load())(program);

/** verbose says whether errors show their stack: -v, or kubectl's --v=N with N > 0. */
const verbose = (o: { verbose?: boolean; v?: string }) => !!o.verbose || (o.v !== undefined && o.v !== '0');

// As `kubectl diff`, vc diff exits 1 for differences, so its errors exit 2: the command that ran decides.
let running: Command | undefined;
program.hook('preAction', (_, command) => {
  running = command;
});

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(errorReport(e, verbose(program.opts<{ verbose?: boolean; v?: string }>())));
  process.exit(running?.name() === 'diff' ? 2 : 1);
});
