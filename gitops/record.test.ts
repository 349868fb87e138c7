import { describe, expect, it } from 'vitest';
import type { GitSource } from './applier/gitsource.ts';
import {
  descentBase,
  readRecord,
  recordedData,
  recordName,
  recordObject,
  type AppliedRecord,
  type ConfigMapObject,
} from './record.ts';

const gs: GitSource = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'GitSource',
  metadata: { name: 'tenants', namespace: 'team-a', uid: 'uid-1' },
  spec: { url: 'https://git.example.com/tenants.git', ref: { branch: 'main' } },
};
const where = `team-a/${recordName('tenants')}`;
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

describe('readRecord', () => {
  const own = recordObject(gs, A);
  const cases: { name: string; cm: ConfigMapObject | null; want: AppliedRecord['kind']; revision?: string }[] = [
    { name: 'no ConfigMap', cm: null, want: 'absent' },
    { name: 'the record the manager wrote', cm: own, want: 'present', revision: A },
    { name: 'a record without a revision', cm: { ...own, data: {} }, want: 'present' },
    {
      name: 'no managed-by label (written by someone else)',
      cm: { ...own, metadata: { ...own.metadata, labels: {} } },
      want: 'foreign',
    },
    {
      name: 'owned by an earlier GitSource of the same name',
      cm: recordObject({ ...gs, metadata: { ...gs.metadata, uid: 'uid-0' } }, A),
      want: 'foreign',
    },
    {
      name: 'owner reference that is not the controller',
      cm: {
        ...own,
        metadata: { ...own.metadata, ownerReferences: [{ ...own.metadata!.ownerReferences![0]!, controller: false }] },
      },
      want: 'foreign',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = readRecord(c.cm, gs);
      expect(r.kind).toBe(c.want);
      if (r.kind === 'present') expect(r.revision).toBe(c.revision);
    });
  }

  it('keeps the handled deletion confirmation beside the revision, and reads both back', () => {
    const cm = recordObject(gs, { revision: A, confirmation: B });
    expect(cm.data).toEqual({ lastAppliedRevision: A, lastHandledConfirmation: B });
    expect(readRecord(cm, gs)).toEqual({ kind: 'present', revision: A, confirmation: B });
    expect(recordedData(readRecord(cm, gs))).toEqual({ revision: A, confirmation: B });
    expect(recordObject(gs, A).data).toEqual({ lastAppliedRevision: A });
  });

  it('reads nothing from a ConfigMap the manager did not write, whatever confirmation it holds', () => {
    const forged = { ...recordObject(gs, { revision: A, confirmation: B }), metadata: { name: recordName('tenants') } };
    expect(recordedData(readRecord(forged, gs))).toEqual({});
    expect(recordedData({ kind: 'absent' })).toEqual({});
  });

  it('names the record from the GitSource, labelled as the manager’s and owned by it', () => {
    expect(own.metadata).toMatchObject({
      name: 'tenants-gitops-record',
      namespace: 'team-a',
      labels: { 'tenancy.x-k8s.io/managed-by': 'vc-manager' },
      ownerReferences: [{ kind: 'GitSource', name: 'tenants', uid: 'uid-1', controller: true }],
    });
  });
});

describe('descentBase', () => {
  it('takes the recorded revision, whatever status says (S cannot move the base)', () => {
    expect(descentBase({ kind: 'present', revision: A }, B, where)).toEqual({ since: A });
    expect(descentBase({ kind: 'present', revision: A }, undefined, where)).toEqual({ since: A });
  });

  it('counts a GitSource as never applied only when neither the record nor status has a revision', () => {
    expect(descentBase({ kind: 'absent' }, undefined, where)).toEqual({});
    expect(descentBase({ kind: 'present' }, undefined, where)).toEqual({});
  });

  it('treats a missing record next to a status revision as lost, not as a first apply', () => {
    const base = descentBase({ kind: 'absent' }, B, where);
    expect(base).toEqual({ lost: expect.stringContaining(`status reports last applied ${B}`) });
    expect('lost' in base && base.lost).toContain(where);
  });

  it('treats a ConfigMap the manager did not write as lost, even when status has no revision', () => {
    expect(descentBase({ kind: 'foreign', why: 'not ours' }, undefined, where)).toEqual({ lost: 'not ours' });
  });
});
