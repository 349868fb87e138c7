import { isDeepStrictEqual } from 'node:util';
import type { CacheNeed, CacheReader, MutatorPlugin, ResourcePlugin } from './contract.ts';
import type { KubeObject, Resource } from './kube.ts';
import { runTransforms, type TransformCase, type TransformResult } from './testing.ts';

/**
 * The conformance kit: what a plugin author runs to show a plugin can run in the manager's sandbox. A sandboxed
 * plugin gets plain JSON in and must give plain JSON back, may read only the resources it declares, and is stopped
 * when one call uses more than its CPU budget; the kit checks each of these on the author's own table of rows.
 */

/** ConformanceOptions set the budget the rows are held to. */
export interface ConformanceOptions {
  /** CPU time one call may use, in milliseconds (the manager's default sandbox budget is 250) */
  cpuMillis?: number;
  /** mutators run after a resource plugin, as runTransforms */
  mutators?: MutatorPlugin[];
}

/** ConformanceReport is what each row did: its result and the CPU time of its slowest run. */
export type ConformanceReport = Record<string, { result: TransformResult; cpuMillis: number }>;

/** SANDBOX_EFFECTS are the effects a sandboxed plugin may ask for. */
export const SANDBOX_EFFECTS = ['event', 'tenantCondition'] as const;

/**
 * checkConformance runs every row three times and throws, listing every problem, when the plugin
 * - changes an object it was given, or gives another result for the same input (it is not a pure function);
 * - returns what does not survive JSON (a Date, a function, undefined in an array, a cycle): the sandbox sends JSON;
 * - reads a cache of a resource it does not declare (its own resource, or `reads`): the sandbox refuses that read;
 * - asks for an effect other than SANDBOX_EFFECTS, or returns an object of another kind than its resource;
 * - uses more than `cpuMillis` of CPU in one call.
 * It returns each row's result and CPU time otherwise.
 */
export function checkConformance(
  plugin: ResourcePlugin | MutatorPlugin,
  rows: Record<string, TransformCase>,
  o: ConformanceOptions = {},
): ConformanceReport {
  const budget = o.cpuMillis ?? 250;
  const problems: string[] = [];
  const report: ConformanceReport = {};
  const declared = new Set((plugin.reads ?? []).map((n: CacheNeed) => `${n.side}:${n.resource.resource}`));
  const own = 'resource' in plugin.manifest ? plugin.manifest.resource?.resource : undefined;
  if (own) for (const side of ['tenant', 'super']) declared.add(`${side}:${own}`);
  for (const [name, row] of Object.entries(rows)) {
    const results: TransformResult[] = [];
    let slowest = 0;
    for (let run = 0; run < 3; run++) {
      const undeclared: string[] = [];
      const started = process.cpuUsage();
      let result: TransformResult;
      try {
        result = runTransforms(plugin, row, o.mutators ?? [], guard(declared, undeclared));
      } catch (e) {
        problems.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
        break;
      } finally {
        const used = process.cpuUsage(started);
        slowest = Math.max(slowest, (used.user + used.system) / 1000);
      }
      for (const u of [...new Set(undeclared)]) problems.push(`${name}: reads ${u}, which the plugin does not declare`);
      results.push(result);
    }
    const [first] = results;
    if (!first) continue;
    if (results.some((r) => !isDeepStrictEqual(r, first)))
      problems.push(`${name}: gives another result for the same input on another run (not a pure function)`);
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(first)), first))
      problems.push(`${name}: the result does not survive JSON (the sandbox sends plain data)`);
    for (const d of [first.down, first.up]) {
      for (const e of d?.effects ?? [])
        if (!(SANDBOX_EFFECTS as readonly string[]).includes(e.type))
          problems.push(
            `${name}: asks for a ${e.type} effect; a sandboxed plugin may ask only for ${SANDBOX_EFFECTS.join(' and ')}`,
          );
      const kind = plugin.manifest.direction === 'mutator' ? row.superObj?.kind : own && plugin.manifest.resource?.kind;
      if (d?.object?.kind && kind && d.object.kind !== kind)
        problems.push(`${name}: returns a ${d.object.kind}, but may write only ${kind} objects`);
    }
    if (slowest > budget)
      problems.push(`${name}: used ${slowest.toFixed(1)} ms of CPU, over the budget of ${budget} ms`);
    report[name] = { result: first, cpuMillis: slowest };
  }
  if (problems.length) throw new Error(`plugin ${plugin.manifest.name} is not conformant:\n${problems.join('\n')}`);
  return report;
}

/** guard wraps a row's caches so that every read of an undeclared resource is recorded in `undeclared` and answers nothing. */
function guard(declared: Set<string>, undeclared: string[]) {
  return (side: 'tenant' | 'super', inner: CacheReader): CacheReader => {
    const ok = (r: Resource) => {
      if (!declared.has(`${side}:${r.resource}`)) undeclared.push(`${r.resource} in the ${side} cache`);
      return declared.has(`${side}:${r.resource}`);
    };
    return {
      get: <T extends KubeObject = KubeObject>(r: Resource, ns: string | undefined, n: string) =>
        ok(r) ? inner.get<T>(r, ns, n) : undefined,
      list: <T extends KubeObject = KubeObject>(r: Resource, ns?: string) => (ok(r) ? inner.list<T>(r, ns) : []),
    };
  };
}
