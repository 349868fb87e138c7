import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { anchor } from './clidoc.ts';

/**
 * This module checks the documentation as a reader follows it: every relative link of README.md, CHANGELOG.md and
 * docs/ must name a file that exists and, with a `#fragment`, a heading of that file.
 */

/** markdownFiles are the documentation files under root: README.md, CHANGELOG.md and every .md below docs/. */
export function markdownFiles(root: string): string[] {
  const out = ['README.md', 'CHANGELOG.md'].filter((f) => existsSync(join(root, f)));
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
