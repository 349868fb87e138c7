import { Option } from 'commander';
import { stringify } from 'yaml';
import type { KubeObject } from '../../kube/client.ts';
import { CliError } from './errors.ts';
import { jsonPath, JsonPathError } from './jsonpath.ts';

/**
 * This module prints what `vc` commands show in kubectl's `-o` formats: json, yaml, name, wide and
 * jsonpath=TEMPLATE (kubectl's template syntax, see jsonpath.ts), the default being the command's own table.
 */

/**
 * OutputFormat is a `-o` kind a command may offer; `jsonpath` stands for `jsonpath=TEMPLATE`, and `table` and `text`
 * are a command's own human form.
 */
export type OutputFormat = 'table' | 'text' | 'wide' | 'json' | 'yaml' | 'name' | 'jsonpath';

/** outputOption is `-o, --output` offering the given formats, the first being the default; `note` adds to its help. */
export function outputOption(formats: readonly OutputFormat[], note?: string): Option {
  const shown = formats.map((f) => (f === 'jsonpath' ? 'jsonpath=TEMPLATE' : f));
  const help = `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}${note ? ` (${note})` : ''}`;
  return new Option('-o, --output <format>', help)
    .default(formats[0])
    .argParser((v: string) => checkOutput(v, formats));
}

/** checkOutput returns a `-o` value when the command offers it, else throws a CliError listing what it offers. */
export function checkOutput(value: string, formats: readonly OutputFormat[]): string {
  const kind = value.startsWith('jsonpath=') ? 'jsonpath' : value;
  if (formats.includes(kind as OutputFormat)) return value;
  const shown = formats.map((f) => (f === 'jsonpath' ? 'jsonpath=TEMPLATE' : f)).join(', ');
  throw new CliError(`--output ${value}: not a format of this command; use one of ${shown}`);
}

/** formatData prints a document as json, yaml or jsonpath=TEMPLATE; undefined for any other format. */
export function formatData(doc: unknown, format: string): string | undefined {
  if (format === 'json') return JSON.stringify(doc, null, 2) + '\n';
  if (format === 'yaml') return stringify(doc);
  if (format.startsWith('jsonpath=')) {
    try {
      return jsonPath(format.slice('jsonpath='.length), doc);
    } catch (e) {
      if (e instanceof JsonPathError) throw new CliError(`--output ${format}: ${e.message}`);
      throw e;
    }
  }
  return undefined;
}

/**
 * formatObjects prints objects as kubectl does for `-o json|yaml|name|jsonpath=`: one object alone when `single`, else
 * a `v1 List` holding them; `name` is `<resource>.<group>/<name>` per line. `resource` is the plural lower-case name
 * and `group` its API group. Undefined for a format it does not handle (table and wide are the caller's).
 */
export function formatObjects(
  objects: readonly KubeObject[],
  o: { format: string; single: boolean; resource: string; group: string; apiVersion: string; kind: string },
): string | undefined {
  const typed = objects.map((x) => ({ apiVersion: o.apiVersion, kind: o.kind, ...x }));
  const doc = o.single ? typed[0] : { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items: typed };
  if (o.format === 'name')
    return objects.map((x) => `${o.resource.replace(/s$/, '')}.${o.group}/${x.metadata?.name}\n`).join('');
  return formatData(doc, o.format);
}

/** formatTable aligns rows under upper-case headers, two spaces apart, as kubectl's tables are. */
export function formatTable(head: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [head, ...rows]
    .map(
      (r) =>
        r
          .map((x, i) => (x ?? '').padEnd(w[i]!))
          .join('  ')
          .trimEnd() + '\n',
    )
    .join('');
}

/** age is how long ago a timestamp was, as kubectl prints it (90s, 5m, 3h, 2d). */
export function age(ts?: string): string {
  if (!ts) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}
