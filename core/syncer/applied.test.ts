import { describe, expect, it } from 'vitest';
import { RecentApplies } from './applied.ts';

/** clock is a settable time for RecentApplies. */
function clock() {
  let t = 0;
  return { now: () => t, set: (v: number) => (t = v) };
}

describe('RecentApplies', () => {
  it('sends an apply once while it runs: a second caller waits for it and sends nothing', async () => {
    const c = clock();
    const r = new RecentApplies(c.now, 2000);
    let sent = 0;
    let release!: () => void;
    const apply = () => {
      sent++;
      return new Promise<void>((res) => (release = res));
    };
    const first = r.run('ns/sa', apply);
    const second = r.run('ns/sa', apply);
    release();
    expect(await first).toBe(true);
    expect(await second).toBe(false);
    expect(sent).toBe(1);
  });

  it.each([
    { name: 'within the TTL: taken as done', at: 1999, want: 1 },
    { name: 'at the TTL: sent again', at: 2000, want: 2 },
  ])('after a success, $name', async ({ at, want }) => {
    const c = clock();
    const r = new RecentApplies(c.now, 2000);
    let sent = 0;
    const apply = async () => void sent++;
    await r.run('ns/sa', apply);
    c.set(at);
    await r.run('ns/sa', apply);
    expect(sent).toBe(want);
  });

  it('keeps ids apart', async () => {
    const r = new RecentApplies(clock().now, 2000);
    let sent = 0;
    const apply = async () => void sent++;
    await r.run('a/sa', apply);
    await r.run('b/sa', apply);
    expect(sent).toBe(2);
  });

  it('forgets a failed apply: its waiters see the failure, the next caller sends it again', async () => {
    const c = clock();
    const r = new RecentApplies(c.now, 2000);
    let sent = 0;
    let fail!: (e: Error) => void;
    const first = r.run('ns/sa', () => {
      sent++;
      return new Promise<void>((_res, rej) => (fail = rej));
    });
    const waiter = r.run('ns/sa', async () => void sent++);
    fail(new Error('refused'));
    await expect(first).rejects.toThrow('refused');
    await expect(waiter).rejects.toThrow('refused');
    expect(await r.run('ns/sa', async () => void sent++)).toBe(true);
    expect(sent).toBe(2);
  });

  it('drops entries past the TTL', async () => {
    const c = clock();
    const r = new RecentApplies(c.now, 2000);
    await r.run('a/sa', async () => {});
    c.set(5000);
    await r.run('b/sa', async () => {});
    expect(r.size).toBe(1);
  });
});
