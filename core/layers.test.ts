import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';
import { folderGraph, stronglyConnected } from '../test/importgraph.ts';
import { fromPackageRoot } from './paths.ts';

// The layering rules live in .dependency-cruiser.cjs (runtime <- domain <- programs, the tiers of the domain's core/
// folders, and the plugin rules); this test fails with one line per import that breaks them, and one line per ring
// of core/ folders that import each other (which the tiers rule out, and a folder not yet given a tier might not).
describe('layers', () => {
  it('every import obeys the rules in .dependency-cruiser.cjs, and no core/ folders import each other in a ring', async () => {
    const options = await extractDepcruiseOptions(fromPackageRoot('.dependency-cruiser.cjs'));
    const result = await cruise(
      ['core', 'gitops', 'plugins', 'schemas', 'test'],
      { ...options, baseDir: fromPackageRoot(), validate: true },
      undefined,
      {
        tsConfig: extractTSConfig(fromPackageRoot('tsconfig.json')),
      },
    );
    const output = result.output as ICruiseResult;
    const violations = output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
    const edges = output.modules.flatMap((m) =>
      m.dependencies
        .filter((d) => m.source.startsWith('core/') && d.resolved.startsWith('core/'))
        .map((d) => ({ from: m.source, to: d.resolved })),
    );
    const rings = stronglyConnected(folderGraph(edges)).map((c) => `folder cycle: ${c.join(' <-> ')}`);
    expect([...violations, ...rings]).toEqual([]);
    expect(output.summary.totalCruised).toBeGreaterThan(150);
  }, 60_000);
});
