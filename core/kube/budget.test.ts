import { describe, expect, it } from 'vitest';
import { BudgetExceeded, CacheBudget, objectBytes } from './budget.ts';

describe('CacheBudget', () => {
  it('sums what its informers hold, replacing what each held before', () => {
    const b = new CacheBudget({ objects: 10, bytes: 1000 }, 'the caches of t');
    b.set('a', { objects: 4, bytes: 400 });
    b.set('b', { objects: 3, bytes: 300 });
    b.set('a', { objects: 5, bytes: 500 });
    expect(b.total()).toEqual({ objects: 8, bytes: 800 });
    b.release('b');
    expect(b.total()).toEqual({ objects: 5, bytes: 500 });
    expect(b.exceeded).toBeUndefined();
  });

  it.each([
    [
      'objects',
      { objects: 8, bytes: 10 },
      'the caches of t would hold 11 objects, over the limit of 10; they are stopped',
    ],
    [
      'bytes',
      { objects: 1, bytes: 801 },
      'the caches of t would hold 1001 bytes, over the limit of 1000; they are stopped',
    ],
  ])('is exceeded for good by %s: the reason is told once, and every later set throws', (_, u, reason) => {
    const told: string[] = [];
    const b = new CacheBudget({ objects: 10, bytes: 1000 }, 'the caches of t', (r) => told.push(r));
    b.set('a', { objects: 3, bytes: 200 });
    expect(() => b.set('b', u)).toThrow(BudgetExceeded);
    expect(b.exceeded).toBe(reason);
    expect(b.total()).toEqual({ objects: 3, bytes: 200 });
    expect(() => b.set('a', { objects: 0, bytes: 0 })).toThrow(reason);
    expect(told).toEqual([reason]);
  });

  it('counts an object by the bytes of its JSON', () => {
    expect(objectBytes({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'é' } })).toBe(
      Buffer.byteLength('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"é"}}'),
    );
  });
});
