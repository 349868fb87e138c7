import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';
import { fromPackageRoot } from './paths.ts';

// The layering rules live in .dependency-cruiser.cjs (runtime <- domain <- programs, and the plugin rules); this
// test fails with one line per import that breaks them.
describe('layers', () => {
  it('every import obeys the rules in .dependency-cruiser.cjs', async () => {
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
    expect(violations).toEqual([]);
    expect(output.summary.totalCruised).toBeGreaterThan(150);
  }, 60_000);
});
