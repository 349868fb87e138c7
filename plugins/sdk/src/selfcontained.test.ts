import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = import.meta.dirname;

describe('the SDK source', () => {
  it('imports nothing outside plugins/sdk/src but node: built-ins and vitest (in tests), so it can be packed and published', () => {
    const outside: string[] = [];
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.ts'));
    expect(files).toEqual(expect.arrayContaining(['index.ts', join('pods', 'index.ts'), join('network', 'index.ts')]));
    for (const f of files) {
      for (const m of readFileSync(join(src, f), 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        const spec = m[1]!;
        const inside = spec.startsWith('.') && !relative(src, resolve(src, f, '..', spec)).startsWith('..');
        const ok = inside || spec.startsWith('node:') || (f.endsWith('.test.ts') && spec === 'vitest');
        if (!ok) outside.push(`${f}: ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
