import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { anchor } from './clidoc.ts';
import type { CommandTree } from './links.ts';

/**
 * This module holds the documentation's shell blocks to account: each ```bash (or sh, shell, console) block of
 * README.md and docs/ says, in an HTML comment on the line above it, how its commands are known to work:
 *
 *   <!-- check: run -->                          the docs check runs the block (offline commands only) and compares
 *                                                what it prints with the ```text block right after it, if there is one
 *   <!-- check: run-by FILE [FILE...] -->        a test runs these commands: FILE reads this block from the page, or
 *                                                contains each command (literally, or as its argv: the vc command path
 *                                                or kubectl verb and every flag, as string literals close together)
 *   <!-- check: same as PAGE#anchor -->          the block is, character for character, that page's checked block
 *   <!-- check: illustrative: WHY -->            an example nothing runs, and why; kept rare
 *
 * and a ```ts block may say `<!-- check: typecheck as PATH -->`: with the page's other such blocks it is a package whose
 * file PATH it is, typechecked against the plugin SDK's sources (test/docs/tsblocks.ts).
 *
 * A fenced block without a language is a problem too, so that a shell block cannot go unmarked by leaving it untagged.
 */

/** SHELL_LANGS are the fence languages of blocks whose lines a reader types into a shell. */
export const SHELL_LANGS: ReadonlySet<string> = new Set(['bash', 'sh', 'shell', 'console']);

/** Mark is what the comment above a shell block says about it. */
export type Mark =
  | { kind: 'run' }
  | { kind: 'run-by'; files: string[] }
  | { kind: 'same'; page: string; anchor: string }
  | { kind: 'illustrative'; why: string }
  | { kind: 'typecheck'; path: string };

/** Block is one fenced code block of a page. */
export interface Block {
  /** page is the file's path from the repository root */
  page: string;
  /** line is the 1-based line of the opening fence */
  line: number;
  lang: string;
  body: string;
  /** heading is the text of the nearest heading above the block ('' before the first) */
  heading: string;
  /** mark is the parsed `<!-- check: ... -->` comment on the line above, or the reason it does not parse */
  mark?: Mark | { kind: 'bad'; text: string };
  /** next is the fenced block that follows with only blank lines between, if any */
  next?: Block;
  /** unclosed says the fence is never closed: the rest of the page renders as code */
  unclosed?: boolean;
}

/** parseMark reads the inside of a `<!-- check: ... -->` comment. */
export function parseMark(text: string): NonNullable<Block['mark']> {
  const t = text.trim();
  if (t === 'run') return { kind: 'run' };
  let m = /^run-by\s+(\S.*)$/.exec(t);
  if (m) return { kind: 'run-by', files: m[1]!.split(/\s+/) };
  m = /^same as\s+(\S+)#(\S+)$/.exec(t);
  if (m) return { kind: 'same', page: m[1]!, anchor: m[2]! };
  m = /^illustrative:\s*(\S.*)$/.exec(t);
  if (m) return { kind: 'illustrative', why: m[1]! };
  m = /^typecheck as\s+(\S+)$/.exec(t);
  if (m) return { kind: 'typecheck', path: m[1]! };
  return { kind: 'bad', text: t };
}

/** fencedBlocks are a page's fenced code blocks, in order, each with its heading, mark and following block. */
export function fencedBlocks(page: string, text: string): Block[] {
  const lines = text.split('\n');
  const out: Block[] = [];
  let heading = '';
  let lastBlockEnd = -2;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const h = /^#{1,6}\s+(.*)$/.exec(l);
    if (h) {
      heading = h[1]!.trim();
      continue;
    }
    const open = /^```\s*([\w-]*)\s*$/.exec(l);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    let above = i - 1;
    while (above >= 0 && !lines[above]!.trim()) above--;
    const comment = above >= 0 ? /^<!--\s*check:\s*(.*?)\s*-->$/.exec(lines[above]!.trim()) : null;
    const block: Block = {
      page,
      line: i + 1,
      lang: open[1]!,
      body: lines.slice(i + 1, end).join('\n'),
      heading,
      ...(comment && { mark: parseMark(comment[1]!) }),
      ...(end >= lines.length && { unclosed: true }),
    };
    const prev = out.at(-1);
    if (prev && above === lastBlockEnd) prev.next = block;
    out.push(block);
    lastBlockEnd = end;
    i = end;
  }
  return out;
}

/**
 * commandLines are the commands of a shell block as bash reads them: `\` continuations joined, comment lines and blank
 * lines dropped, a here-document kept with the line that opens it.
 */
export function commandLines(body: string): string[] {
  const out: string[] = [];
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let l = lines[i]!;
    while (l.endsWith('\\') && i + 1 < lines.length) l = l.slice(0, -1).trimEnd() + ' ' + lines[++i]!.trim();
    if (!l.trim() || l.trim().startsWith('#')) continue;
    const here = /<<-?\s*'?(\w+)'?/.exec(l);
    if (here) {
      const stop = here[1]!;
      while (i + 1 < lines.length && lines[i + 1]!.trim() !== stop) l += '\n' + lines[++i]!;
      if (i + 1 < lines.length) l += '\n' + lines[++i]!;
    }
    out.push(l);
  }
  return out;
}

/** withoutComment is a command line without its trailing `# ...` comment (a `#` outside quotes after a space). */
export function withoutComment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

/** simpleCommands splits a command line at `&&`, `||`, `;` and `|` outside quotes. */
export function simpleCommands(line: string): string[] {
  const out: string[] = [];
  let quote = '';
  let cur = '';
  const s = withoutComment(line.split('\n')[0]!);
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = '';
      cur += c;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    if (c === ';' || c === '|' || (c === '&' && s[i + 1] === '&')) {
      if (c !== ';' && s[i + 1] === c) i++;
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur.trim());
  return out.filter(Boolean);
}

/** words splits a simple command into words, keeping quoted strings whole (without their quotes). */
function words(cmd: string): string[] {
  return [...cmd.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/**
 * commandShape is what a test must name of a `vc` or `kubectl` command for it to count as the same command: the vc
 * command path (or kubectl's verb) and every flag, without values. Other programs have no shape: a test must hold
 * them literally.
 */
export function commandShape(cmd: string, program: CommandTree): string[] | undefined {
  let w = words(cmd);
  while (w[0] && /^[A-Za-z_]\w*=/.test(w[0])) w = w.slice(1); // VAR=value before the program
  if (w[0] === 'npx') w = w.slice(1);
  if (w[0] === 'kubectl' && w[1] === 'vc') w = w.slice(1);
  // after `--` comes another program's command line (vc exec dev -- kubectl ...): its shape is part of this one's
  const stop = w.indexOf('--');
  const inner = stop >= 0 ? commandShape(w.slice(stop + 1).join(' '), program) : undefined;
  if (stop >= 0) w = w.slice(0, stop);
  const flags = w.filter((x) => /^\[?-/.test(x)).map((x) => x.replace(/^\[/, '').replace(/[=\]].*$/, ''));
  if (w[0] === 'vc') {
    const path: string[] = [];
    let c = program;
    for (const x of w.slice(1)) {
      const sub = c.commands.find((s) => s.name() === x);
      if (!sub) break;
      path.push(x);
      c = sub;
    }
    return [...path, ...flags, ...(inner ?? [])];
  }
  if (w[0] === 'kubectl') {
    const verb = w.slice(1).find((x) => !x.startsWith('-'));
    return verb ? [verb, ...flags, ...(inner ?? [])] : undefined;
  }
  return undefined;
}

const quoted = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** shapeIn says whether source names a shape: its first word as a string literal, the rest within WINDOW after. */
export function shapeIn(shape: readonly string[], source: string): boolean {
  const WINDOW = 800;
  const [first, ...rest] = shape;
  if (!first) return false;
  for (const m of source.matchAll(new RegExp(`['"\`]${quoted(first)}['"\`]`, 'g'))) {
    const after = source.slice(m.index, m.index + WINDOW);
    if (rest.every((w) => new RegExp(`['"\`]${quoted(w)}(?:['"\`]|=)`).test(after))) return true;
  }
  return false;
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** commandIn says whether a source holds a simple command literally or, for vc and kubectl, by its shape. */
export function commandIn(cmd: string, sources: readonly string[], program: CommandTree): boolean {
  if (sources.some((s) => squash(s).includes(squash(cmd)))) return true;
  const shape = commandShape(cmd, program);
  return !!shape && sources.some((s) => shapeIn(shape, s));
}

/** readsBlock says whether a test's source reads the block from its page: it names the page and the block's heading. */
export function readsBlock(b: Block, source: string): boolean {
  const base = b.page.split('/').pop()!;
  return new RegExp(`['"\`/]${quoted(base)}['"\`]`).test(source) && source.includes(`## ${b.heading}`);
}

/** withoutCodeComments is a TypeScript or JavaScript source without its comments: a command named there is not run. */
export function withoutCodeComments(file: string, text: string): string {
  if (!/\.[cm]?[jt]s$/.test(file)) return text;
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/**
 * markProblems names each shell block that is unmarked or whose mark does not hold without running anything: a
 * run-by file that does not exist or does not hold the block's commands, a `same as` that differs, an untagged block.
 * `read` gives a repository file's text.
 */
export function markProblems(blocks: readonly Block[], program: CommandTree, read: (file: string) => string): string[] {
  const out: string[] = [];
  for (const b of blocks) {
    const at = `${b.page}:${b.line}`;
    if (b.unclosed) out.push(`${at}: a fence that is never closed (the rest of the page renders as code)`);
    if (!b.lang) {
      out.push(`${at}: a fenced block without a language (bash, text, yaml, ...)`);
      continue;
    }
    if (!SHELL_LANGS.has(b.lang)) continue;
    const m = b.mark;
    if (!m) {
      out.push(
        `${at}: a ${b.lang} block without <!-- check: run | run-by FILE | same as PAGE#anchor | illustrative: WHY -->`,
      );
      continue;
    }
    if (m.kind === 'typecheck') out.push(`${at}: typecheck is for a ts block`);
    else if (m.kind === 'bad') out.push(`${at}: <!-- check: ${m.text} --> is not a mark the docs check knows`);
    else if (m.kind === 'run-by') {
      const sources: string[] = [];
      for (const f of m.files) {
        try {
          sources.push(withoutCodeComments(f, read(f)));
        } catch {
          out.push(`${at}: run-by ${f}, which does not exist`);
        }
      }
      if (sources.length < m.files.length || sources.some((s) => readsBlock(b, s))) continue;
      for (const line of commandLines(b.body))
        for (const cmd of simpleCommands(line))
          if (!commandIn(cmd, sources, program)) out.push(`${at}: \`${cmd}\` is not in ${m.files.join(' or ')}`);
    } else if (m.kind === 'same') {
      let text: string;
      try {
        text = read(m.page);
      } catch {
        out.push(`${at}: same as ${m.page}, which does not exist`);
        continue;
      }
      const other = fencedBlocks(m.page, text).find((x) => SHELL_LANGS.has(x.lang) && anchor(x.heading) === m.anchor);
      if (!other) out.push(`${at}: ${m.page} has no shell block under #${m.anchor}`);
      else if (other.body !== b.body) out.push(`${at}: differs from the block at ${other.page}:${other.line}`);
      else if (other.mark?.kind !== 'run' && other.mark?.kind !== 'run-by')
        out.push(`${at}: ${other.page}:${other.line} is not itself run or run by a test`);
    }
  }
  return out;
}

/** matchesOutput compares printed text with a page's shown output line by line; a line `…` stands for any lines. */
export function matchesOutput(printed: string, shown: string): boolean {
  const got = printed
    .replace(/\s+$/, '')
    .split('\n')
    .map((l) => l.trimEnd());
  const want = shown
    .replace(/\s+$/, '')
    .split('\n')
    .map((l) => l.trimEnd());
  const match = (i: number, j: number): boolean => {
    if (j === want.length) return i === got.length;
    if (want[j] === '…') return match(i, j + 1) || (i < got.length && match(i + 1, j));
    return i < got.length && got[i] === want[j] && match(i + 1, j + 1);
  };
  return match(0, 0);
}

/** RunResult is what running a block gave: its exit code and everything it printed, stdout and stderr interleaved. */
export interface RunResult {
  code: number;
  output: string;
}

/**
 * runBlock runs a block with bash as a reader would from a clone, with `npx vc` (and `vc`) being this checkout's vc
 * on Node 22: in a fresh directory where the repository's top-level entries are symbolic links, so paths such as
 * deploy/samples resolve and what the block writes stays out of the repository; HOME is that directory (no
 * ~/.kube/config) and no kubeconfig variable is set, so nothing reaches a cluster.
 */
export async function runBlock(root: string, b: Block, timeoutMs = 60_000): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-docblock-'));
  try {
    const work = join(dir, 'clone');
    const home = join(dir, 'home');
    for (const d of [work, home]) mkdirSync(d);
    for (const e of readdirSync(root)) if (!['.git', '.state'].includes(e)) symlinkSync(join(root, e), join(work, e));
    const node = join(root, 'node_modules/.bin/node');
    const nodeBin = existsSync(node) ? node : process.execPath;
    const vcBin = join(root, 'core/programs/cli/vc.mjs');
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: `${dirname(nodeBin)}:${process.env.PATH}` };
    for (const k of ['KUBECONFIG', 'VC_KUBECONFIG', 'DOCKER_CONFIG']) delete env[k];
    const prelude = [
      'exec 2>&1',
      `vc() { "${nodeBin}" "${vcBin}" "$@"; }`,
      'npx() { [ "$1" = vc ] || { echo "npx $1: only npx vc runs in the docs check" >&2; return 127; }; shift; vc "$@"; }',
    ].join('\n');
    return await new Promise<RunResult>((resolve) => {
      execFile(
        'bash',
        ['-c', `${prelude}\n${b.body}\n`],
        { cwd: work, env, timeout: timeoutMs, maxBuffer: 16 << 20 },
        (err, stdout) => {
          const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
          resolve({ code, output: stdout });
        },
      );
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** runProblems runs a page's `check: run` block and names what does not hold: its exit code, or its shown output. */
export async function runProblems(root: string, b: Block): Promise<string[]> {
  const r = await runBlock(root, b);
  const at = `${b.page}:${b.line}`;
  if (r.code !== 0) return [`${at}: the block exits ${r.code}:\n${r.output}`];
  if (b.next?.lang === 'text' && !b.next.mark && !matchesOutput(r.output, b.next.body))
    return [`${at}: the block prints what ${b.page}:${b.next.line} does not show:\n${r.output}`];
  return [];
}

/** pageText reads a repository file (throws when it does not exist). */
export function pageText(root: string): (file: string) => string {
  return (file) => readFileSync(join(root, file), 'utf8');
}
