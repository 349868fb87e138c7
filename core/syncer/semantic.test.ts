import { describe, expect, it } from 'vitest';
import { covers, specHash } from './semantic.ts';

describe('covers', () => {
  it.each([
    ['the same quota', { hard: { pods: '500' } }, { hard: { pods: '500' } }, true],
    [
      'a quantity the apiserver rewrote',
      { hard: { secrets: '1k', storage: '1Ti' } },
      { hard: { secrets: '1000', storage: '1Ti' } },
      true,
    ],
    ['binary and decimal units of the same value', { max: { memory: '1Gi' } }, { max: { memory: '1073741824' } }, true],
    ['a different value', { hard: { pods: '500' } }, { hard: { pods: '501' } }, false],
    ['a field missing from the stored object', { hard: {} }, { hard: { pods: '1' } }, false],
    [
      'a field the apiserver defaulted',
      { limits: [{ type: 'Container', default: { cpu: '1' }, defaultRequest: { cpu: '1' } }] },
      { limits: [{ type: 'Container', default: { cpu: '1' } }] },
      true,
    ],
    [
      'a list of another length',
      { limits: [{ type: 'Pod' }, { type: 'Container' }] },
      { limits: [{ type: 'Pod' }] },
      false,
    ],
    ['lists in another order', { l: ['a', 'b'] }, { l: ['b', 'a'] }, false],
    ['strings that are not quantities', { a: 'Ingress' }, { a: 'Egress' }, false],
    ['a number against its string', { port: '53' }, { port: 53 }, false],
    ['null wanted and stored', { x: null }, { x: null }, true],
    ['an object where a list is wanted', { l: { 0: 'a' } }, { l: ['a'] }, false],
    ['nothing stored', undefined, { hard: { pods: '1' } }, false],
  ])('%s: %s', (_, have, want, ok) => {
    expect(covers(have, want)).toBe(ok);
  });
});

describe('specHash', () => {
  it('changes with what is applied, not between calls', () => {
    expect(specHash({ hard: { pods: '1' } })).toBe(specHash({ hard: { pods: '1' } }));
    expect(specHash({ hard: { pods: '1' } })).not.toBe(specHash({ hard: { pods: '1', services: '2' } }));
    expect(specHash(undefined)).toMatch(/^[0-9a-f]{16}$/);
  });
});
