import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { bashCompletion, completionTable, fishCompletion, zshCompletion } from './completion.ts';

function program(): Command {
  const p = new Command('vc');
  p.command('get [name]')
    .description('list')
    .option('-o, --output <format>', 'format')
    .option('--context <name>', 'ctx');
  const s = p.command('superclusters').description('super clusters').option('--kubeconfig <file>', 'kc');
  s.command('drain <name>').description('drain one').option('-n, --namespace <ns>', 'ns');
  return p;
}

/** complete runs the bash script's completion function on a command line whose last word is being typed. */
function complete(script: string, words: string[]): string[] {
  const arr = words.map((w) => `'${w}'`).join(' ');
  const out = execFileSync(
    'bash',
    [
      '-c',
      `${script}\nCOMP_WORDS=(${arr}); COMP_CWORD=${words.length - 1}; _vc_complete; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  return out.split('\n').filter(Boolean);
}

/** has says whether a shell is installed (bash always is; zsh and fish come from the distribution's packages). */
function has(shell: string): boolean {
  try {
    execFileSync(shell, ['-c', 'exit 0']);
    return true;
  } catch {
    return false;
  }
}

/** inShell writes a script to a temporary file and runs `run` in `shell` after sourcing it, returning stdout lines. */
function inShell(shell: string, args: string[], script: string, run: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'vc-completion-'));
  try {
    writeFileSync(join(dir, 'script'), script);
    const out = execFileSync(shell, [...args, `source ${join(dir, 'script')}\n${run}`], {
      encoding: 'utf8',
      env: { ...process.env, HOME: dir },
    });
    return out.split('\n').filter(Boolean);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('completion', () => {
  it('walks commands and options into the words that may follow each path', () => {
    const t = completionTable(program());
    expect(t.get('')!.words).toEqual(expect.arrayContaining(['get', 'superclusters', '--help']));
    expect(t.get('get')!.words).toEqual(expect.arrayContaining(['--output', '-o', '--context']));
    expect(t.get('superclusters drain')!.words).toEqual(expect.arrayContaining(['--namespace', '-n']));
  });

  it('completes subcommands and flags in bash, after flags and their values', () => {
    const script = bashCompletion(completionTable(program()));
    expect(complete(script, ['vc', 'su'])).toEqual(['superclusters']);
    expect(complete(script, ['vc', 'superclusters', '--kubeconfig', 'x', 'dr'])).toEqual(['drain']);
    expect(complete(script, ['vc', 'superclusters', 'drain', '--n'])).toEqual(['--namespace']);
    expect(complete(script, ['vc', 'get', '--c'])).toEqual(['--context']);
    expect(script).toMatch(/complete -o default -F _vc_complete vc kubectl-vc/);
  });

  it('writes zsh and fish scripts for vc and kubectl-vc from the same tree', () => {
    const t = completionTable(program());
    const zsh = zshCompletion(t);
    expect(zsh).toMatch(/^#compdef vc kubectl-vc/);
    expect(zsh).toContain(`'superclusters drain' '--namespace -n --help'`);
    const fish = fishCompletion(t);
    expect(fish).toContain(`complete -c vc -f -n '__fish_use_subcommand' -a 'superclusters' -d 'super clusters'`);
    expect(fish).toContain(`complete -c kubectl-vc -f -n '__fish_seen_subcommand_from drain' -l namespace -d 'ns'`);
  });

  // zsh: compinit's real compdef registers the function; compadd, which only works inside a completion widget, is
  // replaced by a function printing the candidates it is given (zsh then filters them by the typed prefix).
  it.skipIf(!has('zsh'))('zsh registers the completer for vc and kubectl-vc and offers the words after a path', () => {
    const zsh = zshCompletion(completionTable(program()));
    const run = (words: string[]) =>
      inShell(
        'zsh',
        ['-f', '-c'],
        `autoload -U compinit && compinit -D -u\n${zsh}`,
        `print -r -- "$_comps[vc] $_comps[kubectl-vc]"; compadd() { print -r -- "PATH=$PATH"; shift; print -rl -- "$@"; }\n` +
          `words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _vc_complete`,
      );
    const out = run(['vc', 'superclusters', '--kubeconfig', 'x', 'dr']);
    expect(out[0]).toBe('_vc_complete _vc_complete');
    // The completer leaves PATH alone while it runs (a variable named `path` would have replaced it).
    expect(out[1]).toBe(`PATH=${process.env.PATH}`);
    expect(out.slice(2)).toEqual(['drain', '--kubeconfig', '--help']);
    expect(run(['kubectl-vc', 'get', '-']).slice(2)).toEqual(['--output', '-o', '--context', '--help']);
  });

  // fish completes a command line itself with `complete --do-complete`: the script is exercised as a user's tab is.
  it.skipIf(!has('fish'))('fish completes subcommands and flags, with their help', () => {
    const fish = fishCompletion(completionTable(program()));
    const complete = (line: string) => inShell('fish', ['-c'], fish, `complete --do-complete '${line}'`);
    expect(complete('vc su')).toEqual(['superclusters\tsuper clusters']);
    expect(complete('vc superclusters dr')).toEqual(['drain\tdrain one']);
    expect(complete('kubectl-vc superclusters drain --na')).toEqual(['--namespace\tns']);
    expect(complete('vc get --con')).toEqual(['--context\tctx']);
  });
});
