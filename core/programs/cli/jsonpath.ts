/**
 * This module evaluates kubectl's JSONPath templates (`-o jsonpath=...`): literal text with `{...}` actions, `{range
 * EXPR}...{end}`, quoted literals such as `{"\n"}`, and paths of `$`, `@`, `.field`, `..field`, `*`, `[n]`,
 * `[start:end:step]`, `['a','b']` and `[?(@.x == "y")]`. The JSONPath libraries on npm evaluate single expressions
 * (RFC 9535 or Goessner's), not kubectl's template language, so the subset kubectl documents is implemented here.
 */

/** JsonPathError is a template that does not parse or cannot be evaluated; its message says where. */
export class JsonPathError extends Error {}

type Step =
  | { kind: 'root' }
  | { kind: 'current' }
  | { kind: 'field'; names: string[] }
  | { kind: 'recursive'; name: string }
  | { kind: 'wildcard' }
  | { kind: 'index'; parts: Array<{ index: number } | { start?: number; end?: number; step?: number }> }
  | { kind: 'filter'; left: Operand; op?: string; right?: Operand };
type Operand = { path: Step[] } | { literal: unknown };
type Node = { text: string } | { expr: Step[] } | { range: Step[]; body: Node[] };

/** jsonPath evaluates a kubectl JSONPath template against a value and returns the text kubectl would print. */
export function jsonPath(template: string, data: unknown): string {
  return render(parseTemplate(template), data, data);
}

/** parseTemplate splits a template into literal text, actions and ranges, throwing JsonPathError on bad syntax. */
function parseTemplate(t: string): Node[] {
  const top: Node[] = [];
  const stack: Node[][] = [top];
  let i = 0;
  while (i < t.length) {
    const open = t.indexOf('{', i);
    if (open < 0) {
      stack.at(-1)!.push({ text: t.slice(i) });
      break;
    }
    if (open > i) stack.at(-1)!.push({ text: t.slice(i, open) });
    const close = closing(t, open + 1, '}');
    if (close < 0) throw new JsonPathError(`unclosed action at column ${open + 1} of ${JSON.stringify(t)}`);
    const body = t.slice(open + 1, close).trim();
    i = close + 1;
    if (body === 'end') {
      if (stack.length === 1) throw new JsonPathError(`{end} at column ${open + 1} is not in a {range}`);
      stack.pop();
    } else if (body.startsWith('range ')) {
      const node = { range: parsePath(body.slice(6).trim()), body: [] as Node[] };
      stack.at(-1)!.push(node);
      stack.push(node.body);
    } else if (/^["']/.test(body)) stack.at(-1)!.push({ text: unquote(body) });
    else stack.at(-1)!.push({ expr: parsePath(body) });
  }
  // As kubectl: a {range} left open runs to the end of the template.
  return top;
}

/** closing finds the `end` character that closes a bracket opened before `from`, skipping quoted strings. */
function closing(s: string, from: number, end: string): number {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"' || c === "'") {
      for (i++; i < s.length && s[i] !== c; i++) if (s[i] === '\\') i++;
    } else if (c === '[' || c === '(') depth++;
    else if ((c === ']' || c === ')') && depth > 0) depth--;
    else if (c === end && depth === 0) return i;
  }
  return -1;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r' };

function unquote(q: string): string {
  if (q.length < 2 || q.at(-1) !== q[0]) throw new JsonPathError(`unterminated quoted string ${q}`);
  return q.slice(1, -1).replace(/\\(.)/g, (_, c: string) => ESCAPES[c] ?? c);
}

/** parsePath reads one path expression (`.a.b[0]`, `$..name`, `@.x`) into steps. */
function parsePath(p: string): Step[] {
  const steps: Step[] = [];
  let i = 0;
  if (p[0] === '$' || p[0] === '@') {
    steps.push({ kind: p[0] === '$' ? 'root' : 'current' });
    i++;
  }
  while (i < p.length) {
    if (p.startsWith('..', i)) {
      const [name, next] = identifier(p, i + 2);
      if (name) steps.push(name === '*' ? { kind: 'wildcard' } : { kind: 'recursive', name });
      i = next;
    } else if (p[i] === '.') {
      const [name, next] = identifier(p, i + 1);
      if (name) steps.push(name === '*' ? { kind: 'wildcard' } : { kind: 'field', names: [name] });
      i = next;
    } else if (p[i] === '[') {
      const close = closing(p, i + 1, ']');
      if (close < 0) throw new JsonPathError(`unterminated [ at column ${i + 1} of ${JSON.stringify(p)}`);
      steps.push(parseBracket(p.slice(i + 1, close).trim()));
      i = close + 1;
    } else throw new JsonPathError(`unexpected ${JSON.stringify(p[i])} at column ${i + 1} of ${JSON.stringify(p)}`);
  }
  return steps;
}

/** identifier reads a field name up to the next unescaped `.` or `[` (`\.` keeps a dot in the name). */
function identifier(p: string, from: number): [string, number] {
  let name = '';
  let i = from;
  for (; i < p.length && p[i] !== '.' && p[i] !== '['; i++) name += p[i] === '\\' ? (p[++i] ?? '') : p[i];
  return [name, i];
}

function parseBracket(b: string): Step {
  if (b === '*') return { kind: 'wildcard' };
  if (b.startsWith('?(') && b.endsWith(')')) return parseFilter(b.slice(2, -1).trim());
  const parts = b.split(',').map((x) => x.trim());
  if (parts.every((x) => /^'.*'$/.test(x))) return { kind: 'field', names: parts.map(unquote) };
  return {
    kind: 'index',
    parts: parts.map((x) => {
      const n = x.split(':').map((v) => (v.trim() === '' ? undefined : Number(v)));
      if (n.length > 3 || n.some((v) => v !== undefined && !Number.isInteger(v)))
        throw new JsonPathError(`invalid array index ${JSON.stringify(x)}`);
      return n.length === 1 ? { index: n[0]! } : { start: n[0], end: n[1], step: n[2] };
    }),
  };
}

function parseFilter(f: string): Step {
  const m = /^(.+?)\s*(==|!=|<=|>=|<|>)\s*(.+)$/.exec(f);
  if (!m) return { kind: 'filter', left: operand(f) };
  return { kind: 'filter', left: operand(m[1]!), op: m[2]!, right: operand(m[3]!) };
}

function operand(s: string): Operand {
  if (s.startsWith('@') || s.startsWith('$')) return { path: parsePath(s) };
  if (/^["']/.test(s)) return { literal: unquote(s) };
  if (s === 'true' || s === 'false') return { literal: s === 'true' };
  const n = Number(s);
  if (s !== '' && Number.isFinite(n)) return { literal: n };
  throw new JsonPathError(`invalid filter operand ${JSON.stringify(s)}`);
}

function render(nodes: readonly Node[], root: unknown, current: unknown): string {
  let out = '';
  for (const n of nodes) {
    if ('text' in n) out += n.text;
    else if ('expr' in n) out += evaluate(n.expr, root, current).map(show).join(' ');
    else for (const v of evaluate(n.range, root, current)) out += render(n.body, root, v);
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const children = (v: unknown): unknown[] => (Array.isArray(v) ? v : isObject(v) ? Object.values(v) : []);

function evaluate(steps: readonly Step[], root: unknown, current: unknown): unknown[] {
  let set: unknown[] = [current];
  for (const s of steps) set = set.flatMap((v) => step(s, v, root, current));
  return set;
}

function step(s: Step, v: unknown, root: unknown, current: unknown): unknown[] {
  switch (s.kind) {
    case 'root':
      return [root];
    case 'current':
      return [current];
    case 'field':
      return isObject(v) ? s.names.filter((n) => n in v).map((n) => v[n]) : [];
    case 'wildcard':
      return children(v);
    case 'recursive': {
      const found: unknown[] = [];
      const walk = (x: unknown) => {
        if (isObject(x) && s.name in x) found.push(x[s.name]);
        children(x).forEach(walk);
      };
      walk(v);
      return found;
    }
    case 'index':
      return Array.isArray(v) ? s.parts.flatMap((p) => pick(v, p)) : [];
    case 'filter':
      return children(v).filter((x) => matches(s, x, root));
  }
}

function pick(
  a: readonly unknown[],
  p: { index: number } | { start?: number; end?: number; step?: number },
): unknown[] {
  if ('index' in p) {
    const i = p.index < 0 ? a.length + p.index : p.index;
    if (i < 0 || i >= a.length)
      throw new JsonPathError(`array index out of bounds: index ${p.index}, length ${a.length}`);
    return [a[i]];
  }
  const clamp = (x: number) => Math.min(a.length, Math.max(0, x < 0 ? a.length + x : x));
  const step = p.step ?? 1;
  if (step <= 0) throw new JsonPathError(`slice step ${step} must be positive`);
  const out: unknown[] = [];
  for (let i = clamp(p.start ?? 0); i < clamp(p.end ?? a.length); i += step) out.push(a[i]);
  return out;
}

function matches(f: Extract<Step, { kind: 'filter' }>, x: unknown, root: unknown): boolean {
  const value = (o: Operand) => ('literal' in o ? [o.literal] : evaluate(o.path, root, x));
  const left = value(f.left);
  if (!f.op) return left.length > 0;
  const [l, r] = [left[0], value(f.right!)[0]];
  if (l === undefined || r === undefined) return false;
  switch (f.op) {
    case '==':
      return l === r;
    case '!=':
      return l !== r;
    default:
      if (typeof l !== typeof r || (typeof l !== 'number' && typeof l !== 'string')) return false;
      return f.op === '<' ? l < r! : f.op === '>' ? l > r! : f.op === '<=' ? l <= r! : l >= r!;
  }
}

/** show prints one result as kubectl does: strings bare, objects and arrays as compact JSON with sorted keys. */
function show(v: unknown): string {
  if (typeof v === 'string') return v;
  return JSON.stringify(v, (_, x: unknown) =>
    isObject(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}
