import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = import.meta.dirname;

describe('the SDK source', () => {
  it('imports nothing outside plugins/sdk but node: built-ins and vitest (in tests), so it can be packed and published', () => {
    const outside: string[] = [];
    for (const f of readdirSync(src).filter((n) => n.endsWith('.ts'))) {
      for (const m of readFileSync(join(src, f), 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        const spec = m[1]!;
        const ok =
          (spec.startsWith('./') && !spec.includes('..')) ||
          spec.startsWith('node:') ||
          (f.endsWith('.test.ts') && spec === 'vitest');
        if (!ok) outside.push(`${f}: ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
