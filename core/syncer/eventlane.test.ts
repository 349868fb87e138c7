import { describe, expect, it } from 'vitest';
import { EventLane } from './eventlane.ts';

/** gate is a write that waits until it is opened, recording when it started. */
function gated(log: string[], name: string): { write: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const done = new Promise<void>((r) => (open = r));
  return {
    write: async () => {
      log.push(name);
      await done;
    },
    open,
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('EventLane', () => {
  it('takes an event without waiting for its write, and writes at most `concurrency` at once', async () => {
    const started: string[] = [];
    const lane = new EventLane({ concurrency: 2 });
    const writes = ['a1', 'a2', 'a3'].map((n) => gated(started, n));
    for (const w of writes) expect(lane.push('a', w.write)).toBe(true);
    await tick();
    expect(started).toEqual(['a1', 'a2']);
    writes[0]!.open();
    await tick();
    expect(started).toEqual(['a1', 'a2', 'a3']);
    writes.forEach((w) => w.open());
    await lane.drained();
    expect(lane.pendingOf('a')).toBe(0);
  });

  it("serves tenants in turn, so a flood delays only the flooding tenant's events", async () => {
    const started: string[] = [];
    const lane = new EventLane({ concurrency: 1 });
    const first = gated(started, 'noisy-0');
    lane.push('noisy', first.write);
    for (let i = 1; i <= 50; i++) lane.push('noisy', async () => void started.push(`noisy-${i}`));
    lane.push('quiet', async () => void started.push('quiet-0'));
    first.open();
    await lane.drained();
    expect(started.indexOf('quiet-0')).toBe(2);
    expect(started).toHaveLength(52);
  });

  it("drops and counts events beyond a tenant's backlog, leaving other tenants' alone", async () => {
    const dropped: string[] = [];
    const lane = new EventLane({ concurrency: 1, maxPendingPerTenant: 2, onDrop: (t) => dropped.push(t) });
    const started: string[] = [];
    const hold = gated(started, 'held');
    lane.push('a', hold.write);
    await tick();
    const results = [1, 2, 3].map((i) => lane.push('a', async () => void started.push(`a-${i}`)));
    expect(results).toEqual([true, true, false]);
    expect(lane.push('b', async () => void started.push('b-1'))).toBe(true);
    expect(dropped).toEqual(['a']);
    hold.open();
    await lane.drained();
    expect(started.sort()).toEqual(['a-1', 'a-2', 'b-1', 'held']);
  });

  it('goes on after a write that rejects', async () => {
    const lane = new EventLane({ concurrency: 1 });
    const done: string[] = [];
    lane.push('a', () => Promise.reject(new Error('apiserver gone')));
    lane.push('a', async () => void done.push('next'));
    await lane.drained();
    expect(done).toEqual(['next']);
  });

  it("forgets a removed tenant's waiting events, and takes none after stop", async () => {
    const started: string[] = [];
    const lane = new EventLane({ concurrency: 1 });
    const hold = gated(started, 'held');
    lane.push('a', hold.write);
    await tick();
    lane.push('a', async () => void started.push('a-later'));
    lane.forget('a');
    const stopping = lane.stop();
    expect(lane.push('b', async () => void started.push('b-after-stop'))).toBe(false);
    hold.open();
    await stopping;
    expect(started).toEqual(['held']);
  });
});
