import { describe, expect, it } from 'vitest';
import { benchSize, envSized } from './pods.ts';

describe('benchSize', () => {
  it.each<[string, string | undefined, string]>([
    ['unset: full', undefined, 'full'],
    ['empty: full', '', 'full'],
    ['full', 'full', 'full'],
    ['small', 'small', 'small'],
  ])('%s', (_, raw, want) => expect(benchSize({ BENCH_SIZE: raw })).toBe(want));

  it('names the variable and the sizes it takes', () => {
    expect(() => benchSize({ BENCH_SIZE: 'tiny' })).toThrow('BENCH_SIZE=tiny: must be full or small');
  });
});

describe('envSized', () => {
  const sizes = { full: 1000, small: 200 };
  it.each<[string, Record<string, string>, number]>([
    ['the full default', {}, 1000],
    ['the small default', { BENCH_SIZE: 'small' }, 200],
    ['the variable over the small default', { BENCH_SIZE: 'small', FAULTS_PODS: '50' }, 50],
    ['the variable over the full default', { FAULTS_PODS: '3000' }, 3000],
  ])('%s', (_, env, want) => expect(envSized('FAULTS_PODS', sizes, env)).toBe(want));

  it('refuses a size that is not a whole number, by its name', () => {
    expect(() => envSized('FAULTS_PODS', sizes, { FAULTS_PODS: '-1' })).toThrow(/FAULTS_PODS must be a non-negative/);
  });
});
