import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = import.meta.dirname;

/** builtinSources lists the built-in plugins' source files (not their tests, the SDK, the examples, the contrib packages or registry.ts). */
function builtinSources(): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && f.includes('/'))
    .filter((f) => !/^(sdk|examples|contrib)\//.test(f) && !f.split('/').includes('dist'))
    .sort();
}

describe('the built-in plugins', () => {
  it('import only @virtualcluster-ts/plugin-sdk (and its subpaths), node: built-ins and files of their own folder', () => {
    const files = builtinSources();
    expect(files.length).toBeGreaterThan(20);
    const refused: string[] = [];
    for (const f of files) {
      for (const m of readFileSync(join(root, f), 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        const spec = m[1]!;
        const own =
          spec.startsWith('.') && !relative(dirname(join(root, f)), resolve(root, f, '..', spec)).startsWith('..');
        const ok = own || spec.startsWith('node:') || /^@virtualcluster-ts\/plugin-sdk(\/(pods|network))?$/.test(spec);
        if (!ok) refused.push(`plugins/${f}: ${spec}`);
      }
    }
    expect(refused).toEqual([]);
  });
});
