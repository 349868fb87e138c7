import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { anchor } from './clidoc.ts';

/**
 * This module checks the documentation as a reader follows it: every relative link of README.md and
 * docs/ must name a file that exists and, with a `#fragment`, a heading of that file.
 */

/** markdownFiles are the documentation files under root: README.md and every .md below docs/. */
export function markdownFiles(root: string): string[] {
  const out = ['README.md'].filter((f) => existsSync(join(root, f)));
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir)).sort()) {
      const p = join(dir, e);
      if (statSync(join(root, p)).isDirectory()) walk(p);
      else if (p.endsWith('.md')) out.push(p);
    }
  };
  if (existsSync(join(root, 'docs'))) walk('docs');
  return out;
}

/** withoutCode is a Markdown text with fenced code blocks and inline code blanked, so links in examples are ignored. */
export function withoutCode(text: string): string {
  return text
    .replace(/^```[\s\S]*?^```/gm, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (m) => ' '.repeat(m.length));
}

/** anchors are the GitHub anchors of a Markdown text's headings (a repeated heading gets -1, -2, ...). */
export function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const count = new Map<string, number>();
  for (const m of withoutCode(text).matchAll(/^#{1,6}\s+(.*)$/gm)) {
    // the heading's text as rendered: code spans keep their content
    // (withoutCode keeps every offset, so the same span of the original text is the heading as written)
    const raw = text.slice(m.index, m.index + m[0].length).replace(/^#{1,6}\s+/, '');
    const base = anchor(raw.replace(/`/g, ''));
    const n = count.get(base) ?? 0;
    count.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** BrokenLink is a relative link that does not resolve: the file it is in, the link, and why. */
export interface BrokenLink {
  file: string;
  link: string;
  reason: string;
}

/** brokenLinks checks every relative link of the documentation files under root. */
export function brokenLinks(root: string): BrokenLink[] {
  const out: BrokenLink[] = [];
  const texts = new Map<string, string>();
  const read = (f: string) => {
    let t = texts.get(f);
    if (t === undefined) texts.set(f, (t = readFileSync(join(root, f), 'utf8')));
    return t;
  };
  for (const file of markdownFiles(root)) {
    for (const m of withoutCode(read(file)).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const link = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: ...
      const [path, fragment] = link.split('#') as [string, string | undefined];
      const target = path ? relative(root, resolve(root, dirname(file), path)) : file;
      if (target.startsWith('..')) {
        out.push({ file, link, reason: 'points outside the repository' });
        continue;
      }
      if (!existsSync(join(root, target))) {
        out.push({ file, link, reason: `${target} does not exist` });
        continue;
      }
      if (fragment && target.endsWith('.md') && !anchors(read(target)).has(fragment))
        out.push({ file, link, reason: `${target} has no heading #${fragment}` });
    }
  }
  return out;
}

/** codeSpans are the code of a Markdown text, fenced blocks (but output) and inline spans, one string per line of code. */
export function codeSpans(text: string): string[] {
  const out: string[] = [];
  // a comment line of a block is prose, and a ```text block is what a command printed
  for (const m of text.matchAll(/^```([^\n]*)\n([\s\S]*?)^```/gm))
    if (m[1]!.trim() !== 'text') out.push(...m[2]!.split('\n').filter((l) => !/^\s*(#|\/\/)/.test(l)));
  const prose = text.replace(/^```[\s\S]*?^```/gm, '');
  for (const m of prose.matchAll(/`([^`\n]+)`/g)) out.push(m[1]!);
  return out;
}

/** CommandTree is what the check needs of a commander program: names, option flags and subcommands. */
export interface CommandTree {
  name(): string;
  readonly options: ReadonlyArray<{ flags: string }>;
  readonly commands: readonly CommandTree[];
}

/** vcUsageProblems names each `vc` command line in code whose command or flag the program does not have. */
export function vcUsageProblems(file: string, code: string[], program: CommandTree): string[] {
  const out: string[] = [];
  for (const line of code) {
    for (const m of line.matchAll(/(?:^|[\s;&(])(?:npx )?vc ([a-z][^;&|#`]*)/g)) {
      const words = m[1]!
        .trim()
        .split(/\s+/)
        .map((w) => w.replace(/^\[|\]$/g, ''));
      let cmd = program;
      let i = 0;
      const first = cmd.commands.find((c) => c.name() === words[0]);
      if (!first) {
        out.push(`${file}: \`${line.trim()}\`: vc has no command ${words[0]}`);
        continue;
      }
      cmd = first;
      for (i = 1; i < words.length; i++) {
        const sub = cmd.commands.find((c) => c.name() === words[i]);
        if (!sub) break;
        cmd = sub;
      }
      const flags = new Set(cmd.options.flatMap((o) => o.flags.split(/[\s,]+/).filter((f) => f.startsWith('-'))));
      for (const w of words.slice(i)) {
        if (w === '--') break; // what follows is another program's command line
        const flag = /^(--?[a-z][\w-]*)/.exec(w)?.[1];
        if (flag && flag !== '--help' && flag !== '-h' && !flags.has(flag))
          out.push(`${file}: \`${line.trim()}\`: vc ${words.slice(0, i).join(' ')} has no flag ${flag}`);
      }
    }
  }
  return out;
}

/** npmScriptProblems names each `npm run <script>` in code whose script package.json does not define. */
export function npmScriptProblems(file: string, code: string[], scripts: Record<string, string>): string[] {
  const out: string[] = [];
  for (const line of code)
    for (const m of line.matchAll(/\bnpm run (?:-s )?([\w:-]+)/g))
      if (!(m[1]! in scripts)) out.push(`${file}: \`${line.trim()}\`: package.json has no script ${m[1]}`);
  return out;
}

/** pathProblems names each repository path in code (`core/...`, `test/...`, `deploy/...`) that does not exist;
 * paths with placeholders or wildcards are skipped. */
export function pathProblems(root: string, file: string, code: string[]): string[] {
  const out: string[] = [];
  for (const line of code)
    for (const m of line.matchAll(/(?:^|[\s(:=,'"])((?:core|gitops|plugins|schemas|deploy|test)\/[\w./-]*[\w/])/g)) {
      const p = m[1]!;
      // kubectl names objects as kind/name (deploy/web): not a path unless it is a file or a -f/-k argument
      if (
        /\bkubectl\b/.test(line) &&
        /^deploy\/[\w-]+$/.test(p) &&
        !/(-f|-k|--filename|--kustomize)[\s=]$/.test(line.slice(0, m.index + 1))
      )
        continue;
      if (/[<>*{}]|\.\.\./.test(p) || /[<>*{}]/.test(line.slice(m.index + m[0].length, m.index + m[0].length + 1)))
        continue;
      if (!existsSync(join(root, p))) out.push(`${file}: \`${line.trim()}\`: ${p} does not exist`);
    }
  return out;
}
