import { describe, expect, it } from 'vitest';
import { DEFAULT_STREAMS, DEFAULT_STREAMS_PER_TENANT, StreamLimits } from './limits.ts';

describe('StreamLimits', () => {
  it('refuses a tenant at its own limit, and not the other tenants', () => {
    const l = new StreamLimits({ perTenant: 2, total: 10 });
    const a1 = l.acquire('a');
    const a2 = l.acquire('a');
    expect([a1.ok, a2.ok]).toEqual([true, true]);
    const a3 = l.acquire('a');
    expect(a3).toEqual({
      ok: false,
      reason:
        'too many streams: tenant a has 2 requests and streams open on this vn-agent, its limit (streamsPerTenant 2); ' +
        'close some (kubectl logs -f, exec, port-forward) or retry later',
    });
    expect(l.acquire('b').ok).toBe(true);
    expect(l.openOf('a')).toBe(2);
  });

  it('frees a slot on release, once however often it is released', () => {
    const l = new StreamLimits({ perTenant: 1, total: 10 });
    const a = l.acquire('a');
    if (!a.ok) throw new Error(a.reason);
    a.release();
    a.release();
    expect(l.openOf('a')).toBe(0);
    const again = l.acquire('a');
    expect(again.ok).toBe(true);
    expect(l.acquire('a').ok).toBe(false);
  });

  it('refuses everyone once the agent relays its total, and a refused request holds no slot', () => {
    const l = new StreamLimits({ perTenant: 5, total: 3 });
    for (const t of ['a', 'a', 'b']) expect(l.acquire(t).ok).toBe(true);
    const c = l.acquire('c');
    expect(c.ok ? '' : c.reason).toBe(
      'too many streams: this vn-agent relays 3 requests and streams, its limit (streams 3); retry later',
    );
    expect(l.openOf('c')).toBe(0);
  });

  it('defaults to a per-tenant limit well under the total', () => {
    const l = new StreamLimits();
    expect([l.perTenant, l.total]).toEqual([DEFAULT_STREAMS_PER_TENANT, DEFAULT_STREAMS]);
    expect(l.perTenant * 4).toBeLessThan(l.total);
  });
});
