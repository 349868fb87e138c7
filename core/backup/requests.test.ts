import { describe, expect, it } from 'vitest';
import { BACKUP_REQUEST_ANNOTATION as REQ, BACKUP_RESULT_ANNOTATION as RES, pendingAction } from './requests.ts';

const answered = (token: string) => JSON.stringify({ token, ok: true, message: 'done', at: 'now' });

describe('pendingAction', () => {
  const cases: Array<{ name: string; ann?: Record<string, string>; want: unknown }> = [
    { name: 'no annotations', ann: undefined, want: undefined },
    { name: 'no request', ann: { other: 'x' }, want: undefined },
    { name: 'a create', ann: { [REQ]: '{"token":"t1","action":"create"}' }, want: { token: 't1', action: 'create' } },
    {
      name: 'a restore from another VirtualCluster of the namespace',
      ann: { [REQ]: '{"token":"t1","action":"restore","snapshot":"s","from":"old"}' },
      want: { token: 't1', action: 'restore', snapshot: 's', from: 'old' },
    },
    {
      name: 'answered under its token',
      ann: { [REQ]: '{"token":"t1","action":"create"}', [RES]: answered('t1') },
      want: undefined,
    },
    {
      name: 'a new token after an answer',
      ann: { [REQ]: '{"token":"t2","action":"create"}', [RES]: answered('t1') },
      want: { token: 't2', action: 'create' },
    },
    { name: 'not JSON', ann: { [REQ]: 'backup please' }, want: `annotation ${REQ}: not JSON` },
    { name: 'not JSON, answered (no token)', ann: { [REQ]: 'backup please', [RES]: answered('') }, want: undefined },
    { name: 'no token', ann: { [REQ]: '{"action":"create"}' }, want: `annotation ${REQ}: token is missing` },
    {
      name: 'unknown action',
      ann: { [REQ]: '{"token":"t","action":"wipe"}' },
      want: `annotation ${REQ}: action must be one of create, delete, restore`,
    },
    {
      name: 'restore without a snapshot',
      ann: { [REQ]: '{"token":"t","action":"restore"}' },
      want: `annotation ${REQ}: snapshot is missing for restore`,
    },
    {
      name: 'from is for restore only',
      ann: { [REQ]: '{"token":"t","action":"delete","snapshot":"s","from":"x"}' },
      want: `annotation ${REQ}: from is the name of a VirtualCluster, for restore only`,
    },
    {
      name: 'from may not name another namespace (it is a name, not namespace/name)',
      ann: { [REQ]: '{"token":"t","action":"restore","snapshot":"s","from":{"namespace":"other","name":"x"}}' },
      want: `annotation ${REQ}: from is the name of a VirtualCluster, for restore only`,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(pendingAction(c.ann)).toEqual(c.want);
    });
});
