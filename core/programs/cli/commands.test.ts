import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_MODULES, commandOf, modulesFor } from './commands.ts';

describe('COMMAND_MODULES', () => {
  it('names exactly the top-level commands each module registers', async () => {
    for (const m of COMMAND_MODULES) {
      const program = new Command();
      (await m.load())(program);
      expect(program.commands.map((c) => c.name())).toEqual(m.commands);
    }
  }, 120_000);
});

describe('commandOf', () => {
  it.each([
    { args: [], want: undefined },
    { args: ['--help'], want: undefined },
    { args: ['get', 'vc1'], want: 'get' },
    { args: ['-v', 'describe', 'x'], want: 'describe' },
    { args: ['--v', '3', 'get'], want: 'get' },
    { args: ['--v=3', 'get'], want: 'get' },
    { args: ['--', 'up'], want: 'up' },
  ])('$args runs $want', (c) => {
    expect(commandOf(c.args)).toBe(c.want);
  });
});

describe('modulesFor', () => {
  const own = ['toolchain', 'manager', 'syncer', 'plugins'];
  const names = (args: string[]) => modulesFor(args, own).flatMap((m) => m.commands);
  it.each([
    {
      name: 'a command loads its own module only',
      args: ['get'],
      want: ['create', 'get', 'delete', 'kubeconfig', 'exec'],
    },
    {
      name: 'a command several modules extend loads each',
      args: ['superclusters', 'drain', 'r2'],
      want: ['superclusters', 'superclusters', 'superclusters'],
    },
    { name: "main's own commands load none", args: ['manager', '-c', 'm.yaml'], want: [] },
  ])('$name', (c) => {
    expect(names(c.args)).toEqual(c.want);
  });

  it.each([[[]], [['--help']], [['help', 'get']], [['completion', 'bash']], [['no-such-command']]])(
    '%j loads every module',
    (args) => {
      expect(modulesFor(args, own)).toBe(COMMAND_MODULES);
    },
  );
});
