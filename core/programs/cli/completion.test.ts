import { execFileSync } from 'node:child_process';
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
});
