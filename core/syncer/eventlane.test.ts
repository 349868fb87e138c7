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

  it("drops and counts the oldest waiting events beyond a tenant's backlog, leaving other tenants' alone", async () => {
    const dropped: string[] = [];
    const told: string[] = [];
    const lane = new EventLane({ concurrency: 1, maxPendingPerTenant: 2, onDrop: (t) => dropped.push(t) });
    const started: string[] = [];
    const hold = gated(started, 'held');
    lane.push('a', hold.write);
    await tick();
    const results = [1, 2, 3].map((i) =>
      lane.push('a', async () => void started.push(`a-${i}`), { dropped: () => told.push(`a-${i}`) }),
    );
    expect(results).toEqual([true, true, true]);
    expect(lane.push('b', async () => void started.push('b-1'))).toBe(true);
    expect(dropped).toEqual(['a']);
    expect(told).toEqual(['a-1']);
    expect(lane.pendingOf('a')).toBe(2);
    hold.open();
    await lane.drained();
    expect(started.sort()).toEqual(['a-2', 'a-3', 'b-1', 'held']);
  });

  it.each([
    {
      name: 'repeats of a waiting event coalesce into one write with their count',
      pushes: [
        ['a', 'x'],
        ['a', 'x'],
        ['a', 'x'],
      ],
      want: ['a:x:3'],
      coalesced: 2,
    },
    {
      name: 'different ids, or the same id of different tenants, are separate writes',
      pushes: [
        ['a', 'x'],
        ['a', 'y'],
        ['b', 'x'],
        ['a', 'x'],
      ],
      want: ['a:x:2', 'b:x:1', 'a:y:1'],
      coalesced: 1,
    },
    {
      name: 'events without an id never coalesce',
      pushes: [
        ['a', undefined],
        ['a', undefined],
      ],
      want: ['a:-:1', 'a:-:1'],
      coalesced: 0,
    },
  ])('$name', async ({ pushes, want, coalesced }) => {
    const written: string[] = [];
    let folded = 0;
    const lane = new EventLane({ concurrency: 1, onCoalesce: () => folded++ });
    const hold = gated([], 'held');
    lane.push('hold', hold.write);
    await tick();
    for (const [tenant = '', id] of pushes) {
      lane.push(tenant, async (count) => void written.push(`${tenant}:${id ?? '-'}:${count}`), { id });
    }
    hold.open();
    await lane.drained();
    expect(written).toEqual(want);
    expect(folded).toBe(coalesced);
  });

  it('a repeat after its event started writing is a new event, not folded into the one under way', async () => {
    const started: string[] = [];
    const lane = new EventLane({ concurrency: 1 });
    const first = gated(started, 'x-first');
    lane.push('a', first.write, { id: 'x' });
    await tick();
    expect(lane.waiting('a', 'x')).toBe(false);
    lane.push('a', async () => void started.push('x-second'), { id: 'x' });
    expect(lane.waiting('a', 'x')).toBe(true);
    first.open();
    await lane.drained();
    expect(started).toEqual(['x-first', 'x-second']);
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
