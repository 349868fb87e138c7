import { afterEach, describe, expect, it, vi } from 'vitest';
import { setCondition } from '../controller/status.ts';
import type { Tenant } from '../tenancy/tenant.ts';
import {
  CACHE_CONDITION,
  cacheCondition,
  TENANT_CACHE_EXCEEDED,
  TenantCacheStates,
  WITHIN_LIMIT,
} from './cachelimit.ts';

const tenant = (key: string): Tenant => ({ key, vcNamespace: 'team-a', vcName: key }) as Tenant;

describe('cacheCondition', () => {
  it.each([
    [undefined, 'True', WITHIN_LIMIT, 'the syncer caches and serves the tenant'],
    ['the caches would hold 301 objects', 'False', TENANT_CACHE_EXCEEDED, 'the caches would hold 301 objects'],
  ])('refusal %s -> %s %s', (refusal, status, reason, inMessage) => {
    const c = cacheCondition(refusal);
    expect(c).toMatchObject({ type: CACHE_CONDITION, status, reason });
    expect(c.message).toContain(inMessage);
  });
});

describe('TenantCacheStates', () => {
  afterEach(() => vi.useRealTimers());

  it('holds the refusal until the tenant is served again, telling listeners of each change', () => {
    const s = new TenantCacheStates(60_000);
    const told: string[] = [];
    const stop = s.onChange((t) => told.push(t.key));
    s.served(tenant('a')); // never refused: no change
    expect(told).toEqual([]);
    s.exceeded(tenant('a'), 'too many');
    expect(s.refusal('a')).toBe('too many');
    expect(s.refusal('b')).toBeUndefined();
    s.served(tenant('a'));
    expect(s.refusal('a')).toBeUndefined();
    expect(told).toEqual(['a', 'a']);
    stop();
    s.exceeded(tenant('a'), 'again');
    expect(told).toEqual(['a', 'a']);
    s.clear();
  });

  it('tells the listeners again after retryAfterMs, so the controller hands the tenant over once more', () => {
    vi.useFakeTimers();
    const s = new TenantCacheStates(1000);
    const told: string[] = [];
    s.onChange((t) => told.push(t.key));
    s.exceeded(tenant('a'), 'too many');
    vi.advanceTimersByTime(999);
    expect(told).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(told).toEqual(['a', 'a']);
    expect(s.refusal('a')).toBe('too many');
    // Served before the retry: the retry is cancelled.
    s.exceeded(tenant('b'), 'bytes');
    s.served(tenant('b'));
    vi.advanceTimersByTime(5000);
    expect(told).toEqual(['a', 'a', 'b', 'b']);
  });

  it('as conditions: False while refused, back to True (a new transition) once served', () => {
    const s = new TenantCacheStates(60_000);
    const t0 = new Date('2026-01-01T00:00:00Z');
    const t1 = new Date('2026-01-01T00:05:00Z');
    s.exceeded(tenant('a'), 'too many');
    let conds = setCondition(undefined, cacheCondition(s.refusal('a')), t0);
    expect(conds[0]).toMatchObject({ status: 'False', reason: TENANT_CACHE_EXCEEDED });
    s.served(tenant('a'));
    conds = setCondition(conds, cacheCondition(s.refusal('a')), t1);
    expect(conds).toHaveLength(1);
    expect(conds[0]).toMatchObject({ status: 'True', reason: WITHIN_LIMIT, lastTransitionTime: t1.toISOString() });
    s.clear();
  });
});
