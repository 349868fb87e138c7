import { describe, expect, it } from 'vitest';
import { formatTenantPlacements, parseTenantPlacements } from './placements.ts';

describe('parseTenantPlacements', () => {
  const cases: Array<[string, Record<string, string> | undefined, Record<string, unknown>]> = [
    ['no ConfigMap', undefined, {}],
    ['not JSON', { 'state.json': '{' }, {}],
    ['no tenants (an older scheduler)', { 'state.json': '{"clusters":{}}' }, {}],
    ['tenants is a list', { 'state.json': '{"tenants":[1]}' }, {}],
    [
      'counts kept, junk dropped',
      {
        'state.json': JSON.stringify({
          tenants: {
            'default-abc-dev': { namespaces: { r1: 2, r2: 1, bad: 'x', neg: -1, frac: 1.5 }, slices: { r2: 2 } },
            broken: 'x',
          },
        }),
      },
      { 'default-abc-dev': { namespaces: { r1: 2, r2: 1 }, slices: { r2: 2 } } },
    ],
  ];
  it.each(cases)('%s', (_, data, want) => {
    expect(Object.fromEntries(parseTenantPlacements(data))).toEqual(want);
  });
});

describe('formatTenantPlacements', () => {
  const cases: Array<[Parameters<typeof formatTenantPlacements>[0], string]> = [
    [undefined, '-'],
    [{ namespaces: {}, slices: {} }, '-'],
    [{ namespaces: { r1: 3 }, slices: {} }, 'r1=3ns'],
    [{ namespaces: { r2: 1, r1: 3 }, slices: { r2: 2 } }, 'r1=3ns,r2=1ns/2sl'],
  ];
  it.each(cases)('%j -> %s', (t, want) => {
    expect(formatTenantPlacements(t)).toBe(want);
  });
});
