import { describe, expect, it } from 'vitest';
import type { DayTwoValue } from './daytwo.ts';
import { lifecycleFigures } from './lifecycle.ts';
import type { RepRun } from './repeat.ts';

const run = (rep: number, arm: string, figures: Record<string, number>, otherPercent = 0): RepRun<DayTwoValue> => ({
  rep,
  arm,
  value: { figures, detail: {} },
  load: { hostPercent: 150, otherPercent },
});

describe('lifecycleFigures', () => {
  const rollouts = (otherByHand: number[]) =>
    [0, 1, 2].flatMap((rep) => [
      run(rep, 'create', { createToKubeconfigSeconds: [4, 8, 6][rep]! }),
      run(rep, 'rollout', { 'rollout.seconds': [90, 100, 120][rep]! }),
      run(rep, 'rolloutByHand', { 'rollout.byHandSeconds': [80, 80, 100][rep]! }, otherByHand[rep]),
    ]);

  it.each([
    {
      name: 'every repetition under like load: the median ratio, its min and max',
      other: [0, 10, 20],
      want: { ratio: 1.2, min: 1.125, max: 1.25 },
      note: /^rollout\.secondsRatio: 1\.20 \(min 1\.13, max 1\.25, 3 of 3 repetitions\)$/,
    },
    {
      name: 'a repetition whose by-hand arm ran beside 90% of a core more is left out, and named',
      other: [0, 90, 20],
      want: { ratio: 1.1625, min: 1.125, max: 1.2 },
      note: /^rollout\.secondsRatio: 1\.16 .*2 of 3 repetitions\); left out: repetition 2: other load 0% \(rollout\) vs 90% \(rolloutByHand\)/,
    },
    {
      name: 'no repetition under like load: no ratio, the note says why',
      other: [60, 60, 60],
      want: undefined,
      note: /^rollout\.secondsRatio: not reported, no repetition counted/,
    },
  ])('$name', ({ other, want, note }) => {
    const { figures, notes } = lifecycleFigures(rollouts(other));
    // Times are the medians over the repetitions whatever the load: only ratios are refused.
    expect(figures['rollout.seconds']).toBe(100);
    expect(figures['rollout.byHandSecondsMax']).toBe(100);
    expect(figures.createToKubeconfigSeconds).toBe(6);
    expect(figures.kamajiRatio).toBeCloseTo(6 / 16);
    expect(figures.kamajiRatioMin).toBeCloseTo(4 / 16);
    if (want) {
      expect(figures['rollout.secondsRatio']).toBeCloseTo(want.ratio);
      expect(figures['rollout.secondsRatioMin']).toBeCloseTo(want.min);
      expect(figures['rollout.secondsRatioMax']).toBeCloseTo(want.max);
    } else expect(figures).not.toHaveProperty('rollout.secondsRatio');
    expect(notes[0]).toMatch(note);
    expect(notes.at(-1)).toContain('rolloutByHand r2');
  });

  it('reports only the ratios whose two arms ran (no upgrade without the older minor)', () => {
    const { notes } = lifecycleFigures(rollouts([0, 0, 0]));
    expect(notes.filter((n) => n.includes('Ratio'))).toHaveLength(1);
    expect(notes.join('\n')).not.toContain('upgrade');
  });

  it('takes a kill ratio from the restore of the manager and the restart by hand of the same repetition', () => {
    const { figures } = lifecycleFigures([
      run(0, 'kill', { 'etcd.restoreSeconds': 6, 'etcd.detectSeconds': 1.2 }),
      run(0, 'killByHand', { 'etcd.byHandRestartSeconds': 0.75 }),
      run(1, 'kill', { 'etcd.restoreSeconds': 9, 'etcd.detectSeconds': 1.0 }),
      run(1, 'killByHand', { 'etcd.byHandRestartSeconds': 1.5 }),
    ]);
    expect(figures['etcd.restoreRatio']).toBeCloseTo((8 + 6) / 2);
    expect(figures['etcd.restoreRatioMin']).toBeCloseTo(6);
    expect(figures['etcd.detectSeconds']).toBeCloseTo(1.1);
  });
});
