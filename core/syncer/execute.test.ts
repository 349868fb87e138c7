import { describe, expect, it } from 'vitest';
import { ApiError, type KubeObject } from '../kube/client.ts';
import { isMissingNamespace, isStalePatch, isTerminatingNamespace, runSteps } from './execute.ts';
import type { Step } from './plan.ts';

const test = (rv: string) => ({ op: 'test' as const, path: '/metadata/resourceVersion', value: rv });
const written = (rv: string, uid = 'u'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { resourceVersion: rv, uid },
});

describe('runSteps', () => {
  it('hands the resourceVersion of one write to the next patch of the same object', async () => {
    const seen: Step[] = [];
    const steps: Step[] = [
      {
        op: 'patchTenant',
        namespace: 'default',
        name: 'web',
        ops: [test('5'), { op: 'add', path: '/metadata/labels', value: {} }],
      },
      {
        op: 'patchTenantStatus',
        namespace: 'default',
        name: 'web',
        ops: [test('5'), { op: 'add', path: '/status/phase', value: 'Running' }],
      },
      { op: 'patchTenant', namespace: 'default', name: 'other', ops: [test('9')] },
    ];
    await runSteps(steps, { write: async (s) => (seen.push(s), written('6')), adopt: async () => undefined });
    expect(seen.map((s) => ('ops' in s ? s.ops[0] : undefined))).toEqual([test('5'), test('6'), test('9')]);
    expect(steps[1]!.op === 'patchTenantStatus' && steps[1]!.ops[0]).toEqual(test('5'));
  });

  it('returns the uid of the super object written, and adopts one that already exists', async () => {
    const create: Step = {
      op: 'createSuper',
      obj: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } },
    };
    expect(await runSteps([create], { write: async () => written('1', 'new'), adopt: async () => 'nope' })).toBe('new');
    const exists = new ApiError(409, 'AlreadyExists', 'POST x: already exists');
    const adopted = await runSteps([create], {
      write: async () => {
        throw exists;
      },
      adopt: async (obj) => `adopted-${obj.metadata?.name}`,
    });
    expect(adopted).toBe('adopted-default');
  });

  it('throws any other failure', async () => {
    const create: Step = { op: 'createSuper', obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } } };
    const boom = new ApiError(403, 'Forbidden', 'POST x: forbidden');
    await expect(
      runSteps([create], { write: async () => Promise.reject(boom), adopt: async () => undefined }),
    ).rejects.toBe(boom);
  });
});

describe('error classes', () => {
  it.each([
    [
      'a missing namespace',
      new ApiError(404, 'NotFound', 'POST x', { details: { name: 'ns', kind: 'namespaces' } }),
      true,
      false,
      false,
    ],
    [
      'a namespace being deleted',
      new ApiError(403, 'Forbidden', 'POST x', {
        details: {
          name: 'a',
          kind: 'configmaps',
          causes: [{ reason: 'NamespaceTerminating', field: 'metadata.namespace' }],
        },
      }),
      false,
      false,
      true,
    ],
    [
      'a create forbidden by RBAC',
      new ApiError(403, 'Forbidden', 'POST x', { details: { name: 'a', kind: 'configmaps' } }),
      false,
      false,
      false,
    ],
    [
      'a missing object',
      new ApiError(404, 'NotFound', 'GET x', { details: { name: 'a', kind: 'configmaps' } }),
      false,
      false,
      false,
    ],
    ['a failed resourceVersion test', new ApiError(422, 'Invalid', 'PATCH x', { details: {} }), false, true, false],
    [
      'an invalid patch',
      new ApiError(422, 'Invalid', 'PATCH x', { details: { causes: [{ field: 'spec' }] } }),
      false,
      false,
      false,
    ],
  ])('tells %s', (_, e, missingNs, stale, terminating) => {
    expect(isMissingNamespace(e)).toBe(missingNs);
    expect(isStalePatch(e)).toBe(stale);
    expect(isTerminatingNamespace(e)).toBe(terminating);
  });
});

describe('runSteps with a uid precondition', () => {
  it('leaves a test on the uid alone after an earlier write of the same object', async () => {
    const seen: Step[] = [];
    const uidTest = { op: 'test' as const, path: '/metadata/uid', value: 'pod-uid' };
    const steps: Step[] = [
      { op: 'patchTenant', namespace: 'default', name: 'web', ops: [test('5')] },
      { op: 'patchTenantStatus', namespace: 'default', name: 'web', ops: [uidTest] },
    ];
    await runSteps(steps, { write: async (s) => (seen.push(s), written('6')), adopt: async () => undefined });
    expect(seen.map((s) => ('ops' in s ? s.ops[0] : undefined))).toEqual([test('5'), uidTest]);
  });
});
