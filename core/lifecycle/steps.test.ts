import { describe, expect, it } from 'vitest';
import type { Outcome } from './decisions.ts';
import { runSteps, type Pass, type Step } from './steps.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';

const vc: VirtualCluster = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: 'u1' },
  spec: {},
};

const boom = new Error('boom');

/** each step either answers an Outcome or throws the Error given */
type Case = [
  name: string,
  steps: Array<Outcome | Error>,
  ran: number,
  commits: string[],
  released: number,
  ends: string,
];

const cases: Case[] = [
  ['all continue: one empty commit at the end', [{}, {}, {}], 3, ['-'], 0, 'done'],
  [
    'a status is committed once, at the end, merged with the later steps',
    [{ status: { phase: 'Provisioning' } }, { events: [{ type: 'Normal', reason: 'A', message: 'a' }] }],
    2,
    ['Provisioning+A'],
    0,
    'done',
  ],
  [
    'a publish commits what is pending before the next step runs',
    [{ status: { phase: 'Provisioning' }, publish: true }, { status: { phase: 'Running' } }],
    2,
    ['Provisioning', 'Running'],
    0,
    'done',
  ],
  [
    'a stop ends the pass there and returns its requeue',
    [{ status: { phase: 'Pending' }, stop: true, requeueAfter: 1000 }, { status: { phase: 'Running' } }],
    1,
    ['Pending'],
    0,
    'requeue 1000',
  ],
  [
    'a release is done at once, and a stop with an error throws it after the commit',
    [{ release: true, status: { phase: 'Error' }, stop: true, error: boom }],
    1,
    ['Error'],
    1,
    'throws boom',
  ],
  [
    'a step that throws still has what came before committed',
    [{ status: { phase: 'Provisioning' } }, boom, {}],
    2,
    ['Provisioning'],
    0,
    'throws boom',
  ],
];

describe('runSteps', () => {
  it.each(cases)('%s', async (_name, outcomes, ran, commits, released, ends) => {
    const p: Pass = { key: 'team-a/dev', vc, root: 'root' };
    let count = 0;
    const steps: Step[] = outcomes.map((o) => async () => {
      count++;
      if (o instanceof Error) throw o;
      return o;
    });
    const written: string[] = [];
    let releases = 0;
    const end = await runSteps(p, steps, {
      release: () => void releases++,
      commit: async (_p, o) => {
        const parts = [o.status?.phase, ...(o.events ?? []).map((e) => e.reason)].filter((x) => x !== undefined);
        written.push(parts.length ? parts.join('+') : '-');
      },
    }).then(
      (r) => (r?.requeueAfter !== undefined ? `requeue ${r.requeueAfter}` : 'done'),
      (e: Error) => `throws ${e.message}`,
    );
    expect({ ran: count, commits: written, released: releases, ends: end }).toEqual({ ran, commits, released, ends });
  });
});
