import { describe, expect, it } from 'vitest';
import { RunGroup, type Runnable } from './runnables.ts';

function recorder(trace: string[], failStart = '', failStop = '') {
  return (name: string): Runnable => ({
    name,
    start: async () => {
      trace.push(`start ${name}`);
      if (name === failStart) throw new Error(`${name} cannot start`);
    },
    stop: async () => {
      trace.push(`stop ${name}`);
      if (name === failStop) throw new Error(`${name} cannot stop`);
    },
  });
}

describe('RunGroup', () => {
  it('starts in order and stops in reverse, once', async () => {
    const trace: string[] = [];
    const r = recorder(trace);
    const g = new RunGroup();
    await g.start([r('cache'), r('syncer'), r('controller')]);
    expect(g.names()).toEqual(['cache', 'syncer', 'controller']);
    await g.stop();
    await g.stop();
    expect(trace).toEqual([
      'start cache',
      'start syncer',
      'start controller',
      'stop controller',
      'stop syncer',
      'stop cache',
    ]);
    expect(g.names()).toEqual([]);
  });

  it('stops what it started, the failing one included, when a start fails', async () => {
    const trace: string[] = [];
    const r = recorder(trace, 'syncer');
    const g = new RunGroup();
    await expect(g.start([r('cache'), r('syncer'), r('controller')])).rejects.toThrow(
      'starting syncer: syncer cannot start',
    );
    expect(trace).toEqual(['start cache', 'start syncer', 'stop syncer', 'stop cache']);
    expect(g.names()).toEqual([]);
  });

  it('stops the others when one stop fails, and reports it', async () => {
    const trace: string[] = [];
    const r = recorder(trace, '', 'syncer');
    const g = new RunGroup();
    await g.start([r('cache'), r('syncer'), r('controller')]);
    await expect(g.stop()).rejects.toThrow('syncer cannot stop');
    expect(trace.slice(3)).toEqual(['stop controller', 'stop syncer', 'stop cache']);
  });
});
