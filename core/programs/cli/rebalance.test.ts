import { describe, expect, it } from 'vitest';
import type { RebalanceReport } from '../../scheduler/state.ts';
import { formatRebalance, lastRebalanceLine, maxMoves, parseRebalanceReport } from './rebalance.ts';

const report = (over: Partial<RebalanceReport> = {}): RebalanceReport => ({
  request: '{"requestedAt":"t1","maxMoves":2,"dryRun":false}',
  requestedAt: 't1',
  handledAt: '2026-11-30T04:00:00.000Z',
  policy: 'spread',
  dryRun: false,
  maxMoves: 2,
  moves: [
    { tenant: 'default-abc-dev', namespace: 'spread', from: 'r1', to: 'r2' },
    { tenant: 'default-abc-dev', namespace: 'later', from: 'r1', to: 'r2' },
  ],
  remaining: 1,
  ...over,
});

describe('parseRebalanceReport', () => {
  it.each<[string, Record<string, string> | undefined, boolean]>([
    ['no ConfigMap', undefined, false],
    ['not JSON', { 'state.json': '{' }, false],
    ['no rebalance yet', { 'state.json': '{"clusters":{}}' }, false],
    ['a rebalance without moves is no report', { 'state.json': '{"rebalance":{"request":"x"}}' }, false],
    ['a report', { 'state.json': JSON.stringify({ clusters: {}, rebalance: report() }) }, true],
  ])('%s', (_, data, found) => {
    expect(parseRebalanceReport(data)).toEqual(found ? report() : undefined);
  });
});

describe('formatRebalance', () => {
  it('lists the moves and what is left past the bound', () => {
    expect(formatRebalance(report())).toBe(
      [
        'rebalanced (spread): 2 slice move(s), requested at t1',
        'TENANT           NAMESPACE  MOVE',
        'default-abc-dev  spread     r1 -> r2',
        'default-abc-dev  later      r1 -> r2',
        '1 more move(s) past --max-moves 2: run it again to go on',
        '',
      ].join('\n'),
    );
  });
  it('says a dry run changed nothing', () => {
    expect(formatRebalance(report({ dryRun: true, remaining: 0 }))).toMatch(
      /^dry run \(spread\): 2 slice move\(s\) planned, nothing changed, requested at t1\n/,
    );
  });
  it('says when nothing would move', () => {
    expect(formatRebalance(report({ moves: [], remaining: 0, policy: 'pack' }))).toBe(
      'rebalanced (pack): 0 slice move(s), requested at t1\n' +
        'no move would even out (spread) or consolidate (pack) the placed slices further\n',
    );
  });
  it('gives the refusal of a malformed request', () => {
    expect(formatRebalance(report({ moves: [], error: 'configmap x: annotation y field "maxMoves": bad' }))).toBe(
      'rebalance request refused: configmap x: annotation y field "maxMoves": bad\n',
    );
  });
});

describe('lastRebalanceLine', () => {
  it.each<[string, RebalanceReport | undefined, string]>([
    ['none yet', undefined, ''],
    [
      'moves counted per pair',
      report(),
      'Last rebalance (spread) at 2026-11-30T04:00:00.000Z: 2 slice move(s) (r1->r2 x2), 1 more past the bound\n',
    ],
    [
      'a dry run',
      report({ dryRun: true, moves: [], remaining: 0 }),
      'Last rebalance (spread, dry run) at 2026-11-30T04:00:00.000Z: 0 slice move(s)\n',
    ],
  ])('%s', (_, r, want) => {
    expect(lastRebalanceLine(r)).toBe(want);
  });
});

describe('maxMoves', () => {
  it('reads a bound', () => expect(maxMoves('3')).toBe(3));
  it.each(['0', '-1', '1.5', 'x', '1001'])('refuses %s', (v) => {
    expect(() => maxMoves(v)).toThrow(`--max-moves ${JSON.stringify(v)}: give a whole number from 1 to 1000`);
  });
});
