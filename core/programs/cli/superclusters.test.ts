import { describe, expect, it } from 'vitest';
import { DRAINING } from '../../superclusters/registration.ts';
import { READY_CONDITION } from '../../superclusters/registration.ts';
import { formatRows, parseSchedulerState, registrationRow, summaryRows } from './superclusters.ts';

const cluster = (status?: 'True' | 'False', extra: Record<string, unknown> = {}, message = 'why') => ({
  metadata: { name: 'r2', namespace: 'vc-system', ...extra },
  status: status && {
    conditions: [{ type: READY_CONDITION, status, reason: 'X', message, lastTransitionTime: 't' }],
  },
});

describe('parseSchedulerState', () => {
  it.each([
    ['no ConfigMap', undefined, []],
    ['not JSON', { 'state.json': '{' }, []],
    ['no clusters', { 'state.json': '{"x":1}' }, []],
    ['clusters not an object', { 'state.json': '{"clusters":[1]}' }, []],
    [
      'a summary per cluster',
      { 'state.json': '{"clusters":{"r1":{"placedSlices":2,"placedNamespaces":1},"r2":5}}' },
      [['r1', { placedSlices: 2, placedNamespaces: 1 }]],
    ],
  ])('%s', (_what, data, want) => {
    expect([...parseSchedulerState(data)]).toEqual(want);
  });
});

describe('registrationRow', () => {
  const cap = { cpu: 64000n, memory: 512n * 1024n ** 3n * 1000n, pods: 220000n, 'ephemeral-storage': 1n };
  it.each([
    ['ready', cluster('True'), 'ready', ''],
    ['not ready: the condition message', cluster('False'), 'unreachable', 'why'],
    ['draining', cluster('True', { annotations: { [DRAINING]: 'true' } }), 'draining', ''],
    ['being deleted', cluster('True', { deletionTimestamp: 't' }), 'deregistered', ''],
    ['never checked', cluster(), 'pending', 'not checked yet: is a manager with superClusterRegistry.enabled running?'],
    [
      'a bad draining annotation',
      cluster('True', { annotations: { [DRAINING]: 'yes' } }),
      'unreachable',
      `Cluster vc-system/r2: annotation ${DRAINING} must be "true" or "false", not "yes"`,
    ],
  ])('%s', (_what, c, state, message) => {
    const row = registrationRow(c, undefined, undefined);
    expect(row).toMatchObject({ name: 'r2', namespace: 'vc-system', state, message, capacity: '-', slices: '-' });
  });

  it('shows cpu, memory and pods of the capacity, and the scheduler summary', () => {
    const row = registrationRow(cluster('True'), cap, { placedSlices: 3, placedNamespaces: 2 });
    expect(row).toMatchObject({ capacity: 'cpu=64,memory=512Gi,pods=220', slices: '3', namespaces: '2' });
    expect(formatRows([row]).split('\n')[1]).toMatch(
      /^r2\s+vc-system\s+ready\s+cpu=64,memory=512Gi,pods=220\s+3\s+2\s+-$/,
    );
  });
});

describe('summaryRows', () => {
  it('lists the static and the deregistered super clusters of the summary that no other row lists', () => {
    const summaries = parseSchedulerState({
      'state.json': JSON.stringify({
        clusters: {
          r1: {
            state: 'ready',
            placedSlices: 1,
            placedNamespaces: 4,
            allocatable: { cpu: '96', memory: '768Gi', pods: '330', 'ephemeral-storage': '1Ti' },
          },
          r2: { state: 'ready', placedSlices: 1, placedNamespaces: 3 },
          r9: { state: 'deregistered', placedSlices: 2, placedNamespaces: 1, allocatable: {} },
        },
      }),
    });
    expect(summaryRows(summaries, new Set(['r2']))).toEqual([
      {
        name: 'r1',
        namespace: '(static)',
        state: 'ready',
        capacity: 'cpu=96,memory=768Gi,pods=330',
        slices: '1',
        namespaces: '4',
        message: "configured in the manager's superClusters, not registered",
      },
      {
        name: 'r9',
        namespace: '-',
        state: 'deregistered',
        capacity: '-',
        slices: '2',
        namespaces: '1',
        message: 'no registration any more; its placements stay until drained',
      },
    ]);
    expect(summaryRows(summaries, new Set(['r1', 'r2', 'r9']))).toEqual([]);
  });
});
