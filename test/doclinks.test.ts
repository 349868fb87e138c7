import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './docs/generate.ts';
import { loadProgram } from './docs/clidoc.ts';
import {
  anchors,
  brokenLinks,
  codeSpans,
  type CommandTree,
  markdownFiles,
  npmScriptProblems,
  pathProblems,
  vcUsageProblems,
} from './docs/links.ts';

describe('the documentation', () => {
  it('has no relative link to a missing file or heading', () => {
    expect(brokenLinks(ROOT)).toEqual([]);
  });

  it('reads as documentation, not as a diary of work', () => {
    const diary = new RegExp(
      [
        String.raw`\bsessions? [0-9]+|\bround [0-9]+|not (?:understood|measured) yet|in this session|fixed since`,
        String.raw`after the fix|\b(?:since|before|until),? commit\b|not (?:run|measured) again|\bthe run just before\b`,
        String.raw`\ba run before\b|measured since\b|[0-9] before\)`,
      ].join('|'),
      'i',
    );
    const hits = markdownFiles(ROOT).flatMap((f) =>
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .flatMap((l, i) => (diary.test(l) ? [`${f}:${i + 1}: ${l}`] : [])),
    );
    expect(hits).toEqual([]);
  });

  it('names only vc commands and flags, npm scripts and repository paths that exist', async () => {
    const program = await loadProgram();
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    const problems = markdownFiles(ROOT)
      .filter((f) => !f.startsWith('docs/reference/'))
      .flatMap((f) => {
        const code = codeSpans(readFileSync(join(ROOT, f), 'utf8'));
        return [
          ...vcUsageProblems(f, code, program),
          ...npmScriptProblems(f, code, scripts),
          ...pathProblems(ROOT, f, code),
        ];
      });
    expect(problems).toEqual([]);
  }, 60_000);

  it('documents every environment variable the benchmarks read in docs/benchmarks.md', () => {
    const bench = join(ROOT, 'test/bench');
    const used = new Set(
      readdirSync(bench)
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
        .flatMap((f) => [...readFileSync(join(bench, f), 'utf8').matchAll(/\b(?:VC_BENCH|BENCH|FAULTS)_[A-Z_]+\b/g)])
        .map((m) => m[0]),
    );
    expect(used.size).toBeGreaterThan(20);
    const page = readFileSync(join(ROOT, 'docs/benchmarks.md'), 'utf8');
    expect([...used].filter((v) => !page.includes(v)).sort()).toEqual([]);
  });

  it('documents every environment variable the programs read in docs/operations/configuration.md', () => {
    // the process's own (PATH, TMPDIR) and the test runner's are not settings
    const notSettings = new Set(['PATH', 'TMPDIR', 'VITEST']);
    const used = new Set<string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) {
          if (e.name !== 'node_modules' && e.name !== 'dist') walk(p);
        } else if (/\.(ts|mjs)$/.test(e.name) && !e.name.endsWith('.test.ts'))
          for (const m of readFileSync(join(ROOT, p), 'utf8').matchAll(/process\.env\.([A-Z_]+)/g))
            if (!notSettings.has(m[1]!)) used.add(m[1]!);
      }
    };
    for (const d of ['core', 'gitops', 'plugins', 'schemas']) walk(d);
    expect(used.size).toBeGreaterThan(5);
    const page = readFileSync(join(ROOT, 'docs/operations/configuration.md'), 'utf8');
    expect([...used].filter((v) => !page.includes(`\`${v}`)).sort()).toEqual([]);
  });

  it('keeps the README a front door', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(250);
  });

  it("names every vc command in the README's list of them", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const list = readme.slice(readme.indexOf('The `vc` commands:'));
    const paragraph = list.slice(0, list.indexOf('\n\n'));
    expect(paragraph.length).toBeGreaterThan(100);
    const named = new Set([...paragraph.matchAll(/`([a-z-]+)[ `|]/g)].map((m) => m[1]));
    const commands = (await loadProgram()).commands.map((c) => c.name()).filter((n) => n !== 'help');
    expect(commands.length).toBeGreaterThan(20);
    expect(commands.filter((c) => !named.has(c))).toEqual([]);
  });
});

describe('the link check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'doclinks-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'docs/guides'), { recursive: true });
  writeFileSync(
    join(dir, 'README.md'),
    [
      '# Title',
      '[ok](docs/a.md) [ok anchor](docs/a.md#the-vc-command) [gone](docs/missing.md)',
      '[bad anchor](docs/a.md#nowhere) [web](https://example.com/x.md) [self](#title)',
      '`[in code](docs/nothing.md)`',
      '```',
      '[in a block](docs/nothing.md)',
      '```',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'docs/a.md'), '# A\n\n## The `vc` command\n\n## Again\n\n## Again\n\n[up](../README.md)\n');
  writeFileSync(join(dir, 'docs/guides/g.md'), '[out](../../../etc/passwd) [a](../a.md#again-1)\n');

  it('names each broken link with its file and reason, and nothing else', () => {
    expect(brokenLinks(dir)).toEqual([
      { file: 'README.md', link: 'docs/missing.md', reason: 'docs/missing.md does not exist' },
      { file: 'README.md', link: 'docs/a.md#nowhere', reason: 'docs/a.md has no heading #nowhere' },
      { file: 'docs/guides/g.md', link: '../../../etc/passwd', reason: 'points outside the repository' },
    ]);
  });

  it('anchors repeated headings as GitHub does', () => {
    expect([...anchors('# A\n## Again\n## Again\n```\n# not a heading\n```\n')]).toEqual(['a', 'again', 'again-1']);
  });

  it('names vc commands and flags the program lacks, and only those', () => {
    const cmd = (name: string, flags: string[], commands: CommandTree[] = []): CommandTree => ({
      name: () => name,
      options: flags.map((f) => ({ flags: f })),
      commands,
    });
    const program = cmd(
      'vc',
      [],
      [cmd('up', ['--state-dir <dir>', '-d, --detach']), cmd('toolchain', [], [cmd('path', ['--check'])])],
    );
    const code = [
      'npx vc up --state-dir .state/x -d',
      'vc toolchain path --check',
      'vc exec dev -- kubectl get pods --all-namespaces',
      'vc upp',
      'npx vc up --real-nodes 2',
      'echo vc-system and vc_metrics',
    ];
    expect(vcUsageProblems('f.md', code, { ...program, commands: [...program.commands, cmd('exec', [])] })).toEqual([
      'f.md: `vc upp`: vc has no command upp',
      'f.md: `npx vc up --real-nodes 2`: vc up has no flag --real-nodes',
    ]);
  });

  it('names npm scripts and repository paths that do not exist', () => {
    expect(npmScriptProblems('f.md', ['npm run bench -- faults', 'npm run -s docs:gone'], { bench: 'x' })).toEqual([
      'f.md: `npm run -s docs:gone`: package.json has no script docs:gone',
    ]);
    expect(
      pathProblems(dir, 'f.md', [
        'see docs/a.md and test/missing.ts',
        'kubectl logs deploy/web',
        'kubectl apply -f deploy/nothing.yaml',
        'core/<name>/x.ts',
      ]),
    ).toEqual([
      'f.md: `see docs/a.md and test/missing.ts`: test/missing.ts does not exist',
      'f.md: `kubectl apply -f deploy/nothing.yaml`: deploy/nothing.yaml does not exist',
    ]);
  });
});
