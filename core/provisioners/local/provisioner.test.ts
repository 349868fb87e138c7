import { describe, expect, it } from 'vitest';
import { localApiserverArgs } from './provisioner.ts';

describe('localApiserverArgs', () => {
  it.each([
    ['no extraArgs', undefined, { 'enable-aggregator-routing': 'true' }],
    ['other flags', { 'audit-log-maxage': '3' }, { 'audit-log-maxage': '3', 'enable-aggregator-routing': 'true' }],
    ["the tenant's own value", { 'enable-aggregator-routing': 'false' }, { 'enable-aggregator-routing': 'false' }],
    [
      'its own value with dashes',
      { '--enable-aggregator-routing': 'false' },
      { '--enable-aggregator-routing': 'false' },
    ],
  ])('%s', (_name, extra, want) => {
    expect(localApiserverArgs(extra)).toEqual(want);
  });
});
