// Which module registers which `vc` command, so that a run loads only the modules of the command it runs.

import type { Command } from 'commander';

/** CommandModule is one module of the CLI and the top-level commands it adds or extends. */
export interface CommandModule {
  /** the top-level commands it registers (or adds subcommands to) */
  commands: readonly string[];
  /** load imports the module and returns its register function */
  load(): Promise<(program: Command) => void>;
  /** needsAll: it reads every command registered before it (the completion script) */
  needsAll?: boolean;
}

/**
 * COMMAND_MODULES register the commands beyond those main.ts defines itself, in the order of `vc --help`. Each is
 * imported only when its command runs (or for help, completion and an unknown command, all of them): a `vc get`
 * does not load the embedded default, the installer, the image builder and GitOps. commands.test.ts checks each
 * entry against what its module registers.
 */
export const COMMAND_MODULES: readonly CommandModule[] = [
  {
    commands: ['create', 'get', 'delete', 'kubeconfig', 'exec'],
    load: async () => (await import('./vcs.ts')).registerVirtualClusterCommands,
  },
  { commands: ['describe'], load: async () => (await import('./describe.ts')).registerDescribeCommand },
  { commands: ['backup', 'restore'], load: async () => (await import('./backup.ts')).registerBackupCommands },
  { commands: ['vn-agent', 'cluster-ips'], load: async () => (await import('./vnagent.ts')).registerVnAgentCommand },
  { commands: ['top'], load: async () => (await import('./top.ts')).registerTopCommand },
  { commands: ['validate', 'diff'], load: async () => (await import('./gitops.ts')).registerGitOpsCommands },
  {
    commands: ['reconcile', 'suspend', 'resume'],
    load: async () => (await import('./sources.ts')).registerGitSourceCommands,
  },
  { commands: ['sleep', 'wake'], load: async () => (await import('./sleep.ts')).registerSleepCommands },
  { commands: ['rotate-ca'], load: async () => (await import('./rotateca.ts')).registerRotateCaCommand },
  { commands: ['certs'], load: async () => (await import('./certs.ts')).registerCertsCommands },
  { commands: ['up', 'status', 'down'], load: async () => (await import('./up.ts')).registerUpCommands },
  { commands: ['install', 'uninstall'], load: async () => (await import('./install.ts')).registerInstallCommands },
  { commands: ['superclusters'], load: async () => (await import('./superclusters.ts')).registerSuperClusterCommands },
  // After the `vc superclusters` listing: drain and undrain go under it.
  { commands: ['superclusters'], load: async () => (await import('./drain.ts')).registerDrainCommands },
  { commands: ['superclusters'], load: async () => (await import('./rebalance.ts')).registerRebalanceCommand },
  { commands: ['image'], load: async () => (await import('./image.ts')).registerImageCommands },
  { commands: ['version'], load: async () => (await import('./version.ts')).registerVersionCommand },
  // Last: the completion script covers every command registered before it.
  {
    commands: ['completion'],
    load: async () => (await import('./completion.ts')).registerCompletionCommand,
    needsAll: true,
  },
];

/**
 * commandOf is the top-level command an argument list runs: its first operand, past the program's own options
 * (`--v <level>` takes a value). Undefined when there is none (`vc`, `vc --help`).
 */
export function commandOf(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return args[i + 1];
    if (a === '--v') i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/**
 * modulesFor are the modules a run of `args` registers: those of its command, or all of them for help, completion,
 * a command no module names (main.ts's own, or an unknown one, which commander answers with the known ones) and
 * none at all. `own` are the commands main.ts defines itself, which need no module.
 */
export function modulesFor(args: readonly string[], own: readonly string[]): readonly CommandModule[] {
  const name = commandOf(args);
  if (name !== undefined && own.includes(name)) return [];
  const mine = COMMAND_MODULES.filter((m) => name !== undefined && m.commands.includes(name));
  return mine.length && !mine.some((m) => m.needsAll) ? mine : COMMAND_MODULES;
}
