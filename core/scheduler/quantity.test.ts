import { describe, expect, it } from 'vitest';
import { ceilDiv, formatMilli, parseQuantity, QuantityError } from './quantity.ts';

describe('parseQuantity', () => {
  it.each([
    ['100m', 100n],
    ['0', 0n],
    ['1', 1000n],
    ['1.5', 1500n],
    ['.5', 500n],
    ['+2', 2000n],
    ['-0', 0n],
    ['100Mi', 100n * 1024n ** 2n * 1000n],
    ['1Ki', 1_024_000n],
    ['1.5Gi', 1536n * 1024n ** 2n * 1000n],
    ['2k', 2_000_000n],
    ['1M', 1_000_000_000n],
    ['1e3', 1_000_000n],
    ['1E-3', 1n],
    ['12e-1', 1200n],
    ['1u', 1n], // finer than a milli-unit rounds up, as Quantity.MilliValue does
    ['1500u', 2n],
    ['1000000n', 1n],
    ['0.0001', 1n],
    ['3Ei', 3n * 1024n ** 6n * 1000n],
  ])('%s is %d milli-units', (text, milli) => {
    expect(parseQuantity(text)).toBe(milli);
  });

  it.each(['', 'abc', '1.2.3', '100 m', '1Kb', '1ki', 'm', '1e', '-1', '-100m', '1e99', '0x10', '1,5'])(
    'refuses %j',
    (text) => {
      expect(() => parseQuantity(text)).toThrow(QuantityError);
    },
  );

  it('names the bad text', () => {
    expect(() => parseQuantity('1Kb')).toThrow('"1Kb" is not a Kubernetes quantity');
  });
});

describe('formatMilli', () => {
  it.each([
    [100n, '100m'],
    [1500n, '1500m'],
    [2000n, '2'],
    [0n, '0'],
    [100n * 1024n ** 2n * 1000n, '100Mi'],
    [1_024_000n, '1Ki'],
    [3n * 1024n ** 6n * 1000n, '3Ei'],
  ])('%d is written %s', (milli, text) => {
    expect(formatMilli(milli)).toBe(text);
    expect(parseQuantity(text)).toBe(milli);
  });
});

describe('ceilDiv', () => {
  it.each([
    [200n, 100n, 2n],
    [201n, 100n, 3n],
    [0n, 7n, 0n],
    [1n, 7n, 1n],
  ])('%d / %d rounds up to %d', (a, b, q) => {
    expect(ceilDiv(a, b)).toBe(q);
  });
});
