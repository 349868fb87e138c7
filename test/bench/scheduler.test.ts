import { describe, expect, it } from 'vitest';
import { busiestOf, tenantsThatFit } from './scheduler.ts';

describe('scheduler bench sizing', () => {
  it('tenantsThatFit adds what fits above the memory kept free, never more than the maximum', () => {
    // 5 started, 250 MiB each, 11 GiB available, 6 GiB kept: 5 GiB / 250 MiB = 20 more.
    expect(tenantsThatFit(5, 250, 11 * 1024, 6 * 1024, 100)).toBe(25);
    expect(tenantsThatFit(5, 250, 40 * 1024, 6 * 1024, 100)).toBe(100);
    // Already below what is kept free: only the started ones.
    expect(tenantsThatFit(5, 250, 5 * 1024, 6 * 1024, 100)).toBe(5);
    expect(tenantsThatFit(1, 0, 8 * 1024, 6 * 1024, 3)).toBe(3);
  });

  it('busiestOf names the busiest group and leaves the host and its other users out', () => {
    const share = (cpuSeconds: number, percentOfOneCore: number) => ({ cpuSeconds, percentOfOneCore });
    expect(
      busiestOf({
        tenantApiservers: share(4, 40),
        benchProcess: share(6, 60),
        host: share(20, 200),
        otherOnHost: share(10, 100),
      }),
    ).toBe('benchProcess 60% of one core');
  });
});
