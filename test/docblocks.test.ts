import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type Block,
  commandLines,
  commandShape,
  fencedBlocks,
  markProblems,
  matchesOutput,
  pageText,
  runProblems,
  shapeIn,
  SHELL_LANGS,
  simpleCommands,
} from './docs/blocks.ts';
import { loadProgram } from './docs/clidoc.ts';
import { ROOT } from './docs/generate.ts';
import { type CommandTree, markdownFiles } from './docs/links.ts';
import { typecheckProblems } from './docs/tsblocks.ts';

/** MAX_ILLUSTRATIVE is how many shell blocks of the documentation may be examples that nothing runs. */
const MAX_ILLUSTRATIVE = 6;

// the generated reference's blocks are usage lines rendered from the program, checked by docsreference.test.ts
const pages = markdownFiles(ROOT).filter((f) => !f.startsWith('docs/reference/'));
const blocks = pages.flatMap((p) => fencedBlocks(p, readFileSync(join(ROOT, p), 'utf8')));
const shell = blocks.filter((b) => SHELL_LANGS.has(b.lang));

describe("the documentation's shell blocks", () => {
  it('are each run by the docs check, run by a named test, the same as such a block, or marked illustrative', async () => {
    expect(shell.length).toBeGreaterThanOrEqual(20);
    expect(markProblems(blocks, await loadProgram(), pageText(ROOT))).toEqual([]);
  }, 60_000);

  it(`are illustrative at most ${MAX_ILLUSTRATIVE} times`, () => {
    const ill = shell.filter((b) => b.mark?.kind === 'illustrative').map((b) => `${b.page}:${b.line}`);
    expect(ill.length, ill.join('\n')).toBeLessThanOrEqual(MAX_ILLUSTRATIVE);
  });

  it('in TypeScript that say so typecheck against the plugin SDK, as the files of a package', () => {
    const marked = blocks.filter((b) => b.lang === 'ts' && b.mark?.kind === 'typecheck');
    expect(marked.map((b) => b.page)).toEqual(expect.arrayContaining(['README.md', 'docs/guides/writing-a-plugin.md']));
    expect(typecheckProblems(ROOT, blocks)).toEqual([]);
  }, 60_000);

  it('that the docs check runs exit 0 and print what their page shows', async () => {
    const run = shell.filter((b) => b.mark?.kind === 'run');
    expect(run.length).toBeGreaterThanOrEqual(3);
    const problems: string[] = [];
    // two at a time: each starts the vc program
    for (let i = 0; i < run.length; i += 2)
      for (const p of await Promise.all(run.slice(i, i + 2).map((b) => runProblems(ROOT, b)))) problems.push(...p);
    expect(problems).toEqual([]);
  }, 180_000);
});

describe('the block check', () => {
  const cmd = (name: string, commands: CommandTree[] = []): CommandTree => ({
    name: () => name,
    options: [],
    commands,
  });
  const program = cmd('vc', [
    cmd('image', [cmd('build'), cmd('push')]),
    ...['install', 'get', 'up'].map((n) => cmd(n)),
  ]);

  it('reads blocks with their heading, mark and the block that follows', () => {
    const page = [
      '# T',
      '## Try it',
      '<!-- check: run -->',
      '```bash',
      'npx vc version',
      '```',
      '',
      '```text',
      'Client Version: 0.1.0',
      '```',
      '<!-- check: illustrative: needs your registry -->',
      '```sh',
      'x',
      '```',
      '```',
      'untagged',
      '```',
    ].join('\n');
    const got = fencedBlocks('p.md', page);
    expect(got.map((b) => [b.line, b.lang, b.heading, b.mark?.kind, b.next?.line])).toEqual([
      [4, 'bash', 'Try it', 'run', 8],
      [8, 'text', 'Try it', undefined, undefined], // a marked block is not the output of the one before
      [12, 'sh', 'Try it', 'illustrative', 15],
      [15, '', 'Try it', undefined, undefined],
    ]);
    expect(got[0]!.body).toBe('npx vc version');
  });

  it.each([
    ['a\n# comment\n\nb # trailing', ['a', 'b # trailing']],
    ['npx vc install --image x \\\n  --components manager', ['npx vc install --image x --components manager']],
    ["cat > f <<'YAML'\nk: v\nYAML\nnext", ["cat > f <<'YAML'\nk: v\nYAML", 'next']],
  ])('splits %j into command lines', (body, want) => expect(commandLines(body)).toEqual(want));

  it.each([
    ['npm ci && npx vc up      # install', ['npm ci', 'npx vc up']],
    ["echo 'a && b' | grep a; true", ["echo 'a && b'", 'grep a', 'true']],
    ['x || y', ['x', 'y']],
  ])('splits %j into simple commands', (line, want) => expect(simpleCommands(line)).toEqual(want));

  it.each([
    ['npx vc image push reg/x:1 --from image.tar --ca-file ca.crt', ['image', 'push', '--from', '--ca-file']],
    [
      'DOCKER_CONFIG=./docker npx vc install --image=r [--pull-credentials]',
      ['install', '--image', '--pull-credentials'],
    ],
    ['kubectl vc get -o name', ['get', '-o']],
    ['npx vc exec dev -- kubectl get pods -A', ['get', '-A']],
    ['kubectl apply -k deploy/samples', ['apply', '-k']],
    ['git -C tenants push', undefined],
  ])('gives %j the shape %j', (c, want) => expect(commandShape(c, program)).toEqual(want));

  it('finds a shape as string literals close together, and only then', () => {
    const src = "await vc('image', 'push', ref, '--from', archive, '--ca-file', ca);\nconst other = '--timeout';";
    expect(shapeIn(['image', 'push', '--from', '--ca-file'], src)).toBe(true);
    expect(shapeIn(['push', '--dry-run'], src)).toBe(false);
    expect(shapeIn(['image', '--timeout'], `${src}${' '.repeat(900)}'--late'`)).toBe(true);
    expect(shapeIn(['image', '--late'], `${src}${' '.repeat(900)}'--late'`)).toBe(false);
    expect(shapeIn(['get', '-o'], "kubectl(['vc', 'get', '-o', `jsonpath=${t}`])")).toBe(true);
  });

  it('compares output line by line, `…` standing for any lines', () => {
    expect(matchesOutput('a\nb  \nc\n', 'a\nb\nc')).toBe(true);
    expect(matchesOutput('a\nb\nc\nd', 'a\n…\nd')).toBe(true);
    expect(matchesOutput('a\nd', 'a\n…\nd')).toBe(true);
    expect(matchesOutput('a\nb', 'a\nc')).toBe(false);
    expect(matchesOutput('a\nb\nx', 'a\n…\nd')).toBe(false);
  });

  it('names unmarked, unknown, misattributed and diverging blocks, and nothing else', () => {
    const files: Record<string, string> = {
      'README.md': [
        '## Tour',
        '<!-- check: run-by t.ts -->',
        '```bash',
        'npx vc up',
        '```',
        '## Install',
        '<!-- check: run-by i.ts -->',
        '```bash',
        'npx vc image push r --from a.tar',
        'npx vc install --image r --components manager',
        'kubectl apply -k deploy/samples',
        '```',
      ].join('\n'),
      'docs/a.md': [
        '## Tour',
        '<!-- check: same as README.md#tour -->',
        '```bash',
        'npx vc up',
        '```',
        '<!-- check: same as README.md#install -->',
        '```bash',
        'npx vc up -d',
        '```',
        '```sh',
        'npx vc get',
        '```',
        '<!-- check: maybe -->',
        '```bash',
        'npx vc get',
        '```',
        '<!-- check: run-by gone.ts -->',
        '```bash',
        'npx vc get',
        '```',
        '```',
        'untagged',
        '```',
        '```yaml',
        'never: closed',
      ].join('\n'),
      't.ts': "const readme = read('README.md'); section('\\n## Tour\\n')",
      // a command named only in a comment is not run
      'i.ts':
        "vc('image', 'push', ref, '--from', archive); vc('install', '--image', image)\n// kubectl apply -k deploy/samples",
    };
    const read = (f: string) => {
      const t = files[f];
      if (t === undefined) throw new Error(`no ${f}`);
      return t;
    };
    const all: Block[] = ['README.md', 'docs/a.md'].flatMap((p) => fencedBlocks(p, read(p)));
    expect(markProblems(all, program, read)).toEqual([
      'README.md:8: `npx vc install --image r --components manager` is not in i.ts',
      'README.md:8: `kubectl apply -k deploy/samples` is not in i.ts',
      'docs/a.md:7: differs from the block at README.md:8',
      'docs/a.md:10: a sh block without <!-- check: run | run-by FILE | same as PAGE#anchor | illustrative: WHY -->',
      'docs/a.md:14: <!-- check: maybe --> is not a mark the docs check knows',
      'docs/a.md:18: run-by gone.ts, which does not exist',
      'docs/a.md:21: a fenced block without a language (bash, text, yaml, ...)',
      'docs/a.md:24: a fence that is never closed (the rest of the page renders as code)',
    ]);
  });
});
