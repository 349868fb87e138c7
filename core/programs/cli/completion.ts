import type { Command } from 'commander';
import { CliError } from './errors.ts';

/**
 * This module writes shell completion scripts for `vc` from its own command and option tree (commander has none
 * built in), so a new command or flag completes without editing a script.
 */

/** CompletionTable maps a command path ("" for the root, "superclusters drain") to the words that may follow it. */
export type CompletionTable = Map<string, { words: string[]; help: Map<string, string> }>;

/** completionTable walks a program's commands and options into a CompletionTable. */
export function completionTable(root: Command): CompletionTable {
  const t: CompletionTable = new Map();
  const walk = (c: Command, path: string) => {
    const help = new Map<string, string>();
    for (const s of c.commands) help.set(s.name(), s.description().split('\n')[0]!.slice(0, 80));
    for (const o of c.options) {
      for (const flag of [o.long, o.short]) if (flag) help.set(flag, o.description.slice(0, 80));
    }
    help.set('--help', 'show help');
    t.set(path, { words: [...help.keys()], help });
    for (const s of c.commands) walk(s, path ? `${path} ${s.name()}` : s.name());
  };
  walk(root, '');
  return t;
}

const NAMES = ['vc', 'kubectl-vc'];
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** bashCompletion is a bash script completing subcommands and flags for `vc` and `kubectl-vc`. */
export function bashCompletion(t: CompletionTable): string {
  const entries = [...t].map(([path, v]) => `  [${q(path || '.')}]=${q(v.words.join(' '))}`);
  return [
    '# bash completion for vc; load with: source <(vc completion bash)',
    'declare -gA _vc_words=(',
    ...entries,
    ')',
    '_vc_complete() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" path="" key w i',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    w="${COMP_WORDS[i]}"',
    '    [[ "$w" == -* ]] && continue',
    '    key="${path:+$path }$w"',
    '    [[ -n "${_vc_words[$key]+x}" ]] && path="$key"',
    '  done',
    '  COMPREPLY=($(compgen -W "${_vc_words[${path:-.}]}" -- "$cur"))',
    '}',
    `complete -o default -F _vc_complete ${NAMES.join(' ')}`,
    '',
  ].join('\n');
}

/** zshCompletion is a zsh script completing subcommands and flags for `vc` and `kubectl-vc`. */
export function zshCompletion(t: CompletionTable): string {
  const entries = [...t].map(([path, v]) => `  ${q(path || '.')} ${q(v.words.join(' '))}`);
  return [
    `#compdef ${NAMES.join(' ')}`,
    '# zsh completion for vc; load with: source <(vc completion zsh)',
    'typeset -gA _vc_words',
    '_vc_words=(',
    ...entries,
    ')',
    '_vc_complete() {',
    // Not `path`: in zsh that is the array tied to PATH.
    '  local cmd="" key w',
    '  for w in "${(@)words[2,CURRENT-1]}"; do',
    '    [[ "$w" == -* ]] && continue',
    '    key="${cmd:+$cmd }$w"',
    '    (( ${+_vc_words[$key]} )) && cmd="$key"',
    '  done',
    '  compadd -- ${=_vc_words[${cmd:-.}]}',
    '}',
    `compdef _vc_complete ${NAMES.join(' ')}`,
    '',
  ].join('\n');
}

/** fishCompletion is a fish script completing subcommands and flags, with their help, for `vc` and `kubectl-vc`. */
export function fishCompletion(t: CompletionTable): string {
  const lines = ['# fish completion for vc; load with: vc completion fish | source'];
  for (const name of NAMES) {
    for (const [path, v] of t) {
      const parts = path ? path.split(' ') : [];
      // At the root: no subcommand yet. Below: the path's last command seen, none of its own subcommands yet.
      const children = [...v.help.keys()].filter((w) => !w.startsWith('-'));
      const cond = parts.length
        ? `__fish_seen_subcommand_from ${parts[parts.length - 1]}` +
          (children.length ? `; and not __fish_seen_subcommand_from ${children.join(' ')}` : '')
        : '__fish_use_subcommand';
      for (const [w, help] of v.help) {
        const what = w.startsWith('--') ? `-l ${w.slice(2)}` : w.startsWith('-') ? `-s ${w.slice(1)}` : `-a ${q(w)}`;
        lines.push(`complete -c ${name} -f -n ${q(cond)} ${what} -d ${q(help)}`);
      }
    }
  }
  return lines.join('\n') + '\n';
}

/** registerCompletionCommand adds `vc completion bash|zsh|fish`, generated from the program it is added to. */
export function registerCompletionCommand(program: Command): void {
  program
    .command('completion <shell>')
    .description('print a shell completion script for bash, zsh or fish: source <(vc completion bash)')
    .action((shell: string) => {
      const t = completionTable(program);
      const by: Record<string, (t: CompletionTable) => string> = {
        bash: bashCompletion,
        zsh: zshCompletion,
        fish: fishCompletion,
      };
      const f = by[shell];
      if (!f) throw new CliError(`completion ${shell}: not a shell vc completes; use bash, zsh or fish`);
      process.stdout.write(f(t));
    });
}
