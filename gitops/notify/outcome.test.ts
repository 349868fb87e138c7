import { describe, expect, it } from 'vitest';
import type { GitSourceStatus } from '../applier/gitsource.ts';
import { outcomesOf } from './outcome.ts';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const st = (
  ready: ['True' | 'False' | 'Unknown', string] | undefined,
  applied?: string,
  attempted?: string,
): GitSourceStatus => ({
  ...(applied && { lastAppliedRevision: applied }),
  ...(attempted && { lastAttemptedRevision: attempted }),
  ...(ready && {
    conditions: [
      { type: 'Ready', status: ready[0], reason: ready[1], message: `m ${ready[1]}`, lastTransitionTime: '' },
    ],
  }),
});

describe('outcomesOf', () => {
  const rows: Array<[string, GitSourceStatus | undefined, GitSourceStatus, Array<[string, string | undefined]>]> = [
    ['a first revision applied, still progressing', undefined, st(['Unknown', 'Progressing'], A, A), [['Applied', A]]],
    ['the same status again: nothing', st(['Unknown', 'Progressing'], A, A), st(['Unknown', 'Progressing'], A, A), []],
    ['health reached', st(['Unknown', 'Progressing'], A, A), st(['True', 'Succeeded'], A, A), [['Healthy', A]]],
    [
      'a new revision applied and healthy at once',
      st(['True', 'Succeeded'], A, A),
      st(['True', 'Succeeded'], B, B),
      [
        ['Applied', B],
        ['Healthy', B],
      ],
    ],
    [
      'health timed out',
      st(['Unknown', 'Progressing'], A, A),
      st(['False', 'HealthCheckFailed'], A, A),
      [['Unhealthy', A]],
    ],
    [
      'a revision refused keeps the applied one',
      st(['True', 'Succeeded'], A, A),
      st(['False', 'ValidationFailed'], A, B),
      [['Refused', B]],
    ],
    [
      'the refusal repeated: nothing',
      st(['False', 'ValidationFailed'], A, B),
      st(['False', 'ValidationFailed'], A, B),
      [],
    ],
    [
      'a second revision refused for the same reason',
      st(['False', 'ValidationFailed'], A, B),
      st(['False', 'ValidationFailed'], A, 'c'.repeat(40)),
      [['Refused', 'c'.repeat(40)]],
    ],
    [
      'a fetch failure has no revision',
      st(['True', 'Succeeded'], A, A),
      st(['False', 'AuthenticationFailed'], A, A),
      [['Failed', undefined]],
    ],
    ['suspended: nothing', st(['True', 'Succeeded'], A, A), st(['Unknown', 'Suspended'], A, A), []],
    ['waiting on a dependency: nothing', undefined, st(['False', 'DependencyNotReady']), []],
  ];
  it.each(rows)('%s', (_, prev, next, want) => {
    expect(outcomesOf(prev, next).map((o) => [o.event, o.revision])).toEqual(want);
  });

  it('carries the Ready reason and message', () => {
    expect(outcomesOf(undefined, st(['False', 'ValidationFailed'], undefined, A))).toEqual([
      { event: 'Refused', revision: A, reason: 'ValidationFailed', message: 'm ValidationFailed' },
    ]);
  });
});
