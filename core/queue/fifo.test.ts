import { describe, it, expect } from 'vitest';
import { Fifo } from './fifo.ts';

describe('Fifo', () => {
  it('keeps first-in first-out order across internal compaction', () => {
    const fifo = new Fifo();
    const model: string[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 3000; i++) {
        const key = `${round}-${i}`;
        fifo.push(key);
        model.push(key);
      }
      const shifted = Array.from({ length: 2500 }, () => fifo.shift());
      expect(shifted).toEqual(model.splice(0, 2500));
      expect(fifo.length).toBe(model.length);
      expect([...fifo]).toEqual(model);
    }
    expect(Array.from({ length: model.length }, () => fifo.shift())).toEqual(model);
    expect(fifo.shift()).toBeUndefined();
    expect(fifo.length).toBe(0);
  });
});
