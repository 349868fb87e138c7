import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * This module renders docs/reference/reasons.md: every machine-readable reason the code gives a condition, an event
 * or a skip, found in the sources where it is raised. A reason is found when it is written as `reason: 'X'`, as an
 * event's type followed by its reason (`'Warning', 'X'`), as the reason argument of a `warn` helper or an error
 * class, as a member of an exported `*REASONS` list, as a constant (`const NAME = 'X'`) used as `reason: NAME`, or
 * as a constant whose doc comment says it is a reason.
 */

/** ReasonSite is one place a reason is raised or declared: the file and line, and the doc comment of the constant
 * or list entry that declares it, if any. */
export interface ReasonSite {
  reason: string;
  file: string;
  line: number;
  doc?: string;
}

const PASCAL = String.raw`[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z]+`;
const lineOf = (text: string, index: number): number => text.slice(0, index).split('\n').length;

/** docBefore is the text of the `/** ... *\/` comment that ends right before `index`, on one line. */
function docBefore(text: string, index: number): string | undefined {
  // the last comment only: its body may not contain the end of another comment
  const m = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*$/.exec(text.slice(Math.max(0, index - 600), index));
  return m
    ? m[1]!
        .replace(/^\s*\*\s?/gm, '')
        .replace(/\s+/g, ' ')
        .trim()
    : undefined;
}

/** scanReasons finds the reasons of one source file (`file` is its path for the report). */
export function scanReasons(file: string, text: string, constants: Map<string, string>): ReasonSite[] {
  const out: ReasonSite[] = [];
  const add = (reason: string, index: number, doc?: string) =>
    out.push({ reason, file, line: lineOf(text, index), ...(doc ? { doc } : {}) });
  for (const m of text.matchAll(new RegExp(String.raw`\breason\s*[:=]\s*'(${PASCAL})'`, 'g'))) add(m[1]!, m.index);
  for (const m of text.matchAll(new RegExp(String.raw`'(?:Warning|Normal)',\s*'(${PASCAL})'`, 'g')))
    add(m[1]!, m.index);
  // a warning helper's reason argument, and an error class's reason: warn(s, obj, 'X', ...), new SourceError('X', ...)
  for (const m of text.matchAll(new RegExp(String.raw`\bwarn\(\s*(?:[\w.]+,\s*){1,3}'(${PASCAL})'`, 'g')))
    add(m[1]!, m.index);
  for (const m of text.matchAll(new RegExp(String.raw`\bnew \w+Error\(\s*'(${PASCAL})'`, 'g'))) add(m[1]!, m.index);
  for (const m of text.matchAll(/\breason\s*:\s*([A-Z][A-Z0-9_]+)\b/g)) {
    const value = constants.get(m[1]!);
    if (value) add(value, m.index);
  }
  // a constant its doc comment calls a reason: /** REFUSED is the event reason of ... */ export const REFUSED = 'X'
  for (const m of text.matchAll(new RegExp(String.raw`(?:export )?const [A-Z][A-Z0-9_]+ = '(${PASCAL})'`, 'g'))) {
    const doc = docBefore(text, m.index);
    if (doc && /\breasons?\b/i.test(doc)) add(m[1]!, m.index, doc);
  }
  for (const m of text.matchAll(/export const (\w*REASONS|\w*Reasons) = \[([\s\S]*?)\] as const/g)) {
    const body = m[2]!;
    for (const e of body.matchAll(new RegExp(`'(${PASCAL})'`, 'g'))) {
      const at = m.index + m[0].indexOf(body) + e.index;
      add(e[1]!, at, docBefore(text, at));
    }
  }
  return out;
}

/** reasonConstants maps each `const NAME = 'PascalCase'` of the sources to its value and doc comment. */
export function reasonConstants(sources: Map<string, string>): {
  values: Map<string, string>;
  docs: Map<string, string>;
} {
  const values = new Map<string, string>();
  const docs = new Map<string, string>();
  for (const text of sources.values())
    for (const m of text.matchAll(new RegExp(String.raw`(?:export )?const ([A-Z][A-Z0-9_]+) = '(${PASCAL})'`, 'g'))) {
      values.set(m[1]!, m[2]!);
      const doc = docBefore(text, m.index);
      if (doc && !docs.has(m[2]!)) docs.set(m[2]!, doc);
    }
  return { values, docs };
}

/** projectSources are the non-test TypeScript sources of core/, gitops/ and plugins/ (examples excluded). */
export function projectSources(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir)).sort()) {
      const p = join(dir, e);
      if (e === 'node_modules' || e === 'dist' || p === join('plugins', 'examples')) continue;
      if (statSync(join(root, p)).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.test.ts')) out.set(p, readFileSync(join(root, p), 'utf8'));
    }
  };
  for (const d of ['core', 'gitops', 'plugins']) walk(d);
  return out;
}

/** renderReasonsReference is docs/reference/reasons.md for the sources under root. */
export function renderReasonsReference(root: string): string {
  const sources = projectSources(root);
  const { values, docs } = reasonConstants(sources);
  const byReason = new Map<string, ReasonSite[]>();
  for (const [file, text] of sources)
    for (const s of scanReasons(relative(root, join(root, file)), text, values))
      byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s]);
  const rows = [...byReason.entries()].sort(([a], [b]) => a.localeCompare(b));
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const lines = rows.map(([reason, sites]) => {
    const files = [...new Set(sites.map((s) => s.file))].sort();
    // "NAME is the event reason of ..." reads as "the event reason of ..." in a table keyed by the reason
    const doc = (sites.find((s) => s.doc)?.doc ?? docs.get(reason) ?? '').replace(/^[A-Z][A-Z0-9_]+ (is|are) /, '');
    return `| \`${reason}\` | ${cell(doc)} | ${files.map((f) => `[${f}](../../${f})`).join(', ')} |`;
  });
  return [
    '<!-- Generated by `npm run docs:gen` from the sources of core/, gitops/ and plugins/; do not edit. ' +
      'test/docsreference.test.ts fails when stale. -->\n',
    '# Condition, event and skip reasons\n',
    'Every machine-readable reason the code gives a status condition, an event or a skipped object, with the doc ' +
      'comment of the constant or list that declares it where there is one, and the files that raise it. What to do ' +
      'about the common ones: [troubleshooting](../operations/troubleshooting.md).\n',
    '| reason | meaning | raised in |',
    '|---|---|---|',
    ...lines,
    '',
  ].join('\n');
}
