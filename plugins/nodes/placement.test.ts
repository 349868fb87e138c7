import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import type { TenantView } from '../../core/plugins/contract.ts';
import { MapCache, testTenant } from '../../core/plugins/testing.ts';
import type { Node } from './index.ts';
import {
  isReadyAndSchedulable,
  mayPlaceOn,
  nodesView,
  tolerates,
  type Taint,
} from '@virtualcluster-ts/plugin-sdk/pods';

const node = (labels: Record<string, string>, taints: Taint[] = [], extra: Partial<Node> = {}): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'n', labels },
  spec: { taints: taints as Array<Record<string, unknown>> },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
  ...extra,
});

const sandbox = {
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name: 'kata' },
  handler: 'kata',
  scheduling: {
    nodeSelector: { 'sandbox.example/kata': 'true' },
    tolerations: [{ key: 'sandbox.example/only', operator: 'Exists', effect: 'NoSchedule' }],
  },
};

const gold: Partial<TenantView> = {
  pods: {
    forced: {
      nodeSelector: { pool: 'gold' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gold', effect: 'NoSchedule' }],
    },
  },
};

describe('nodes placement: mayPlaceOn', () => {
  it.each<[string, Partial<TenantView>, Node, boolean]>([
    ['nothing forced, no taint', {}, node({}), true],
    ['the forced selector matches', gold, node({ pool: 'gold' }), true],
    ['the forced selector does not match', gold, node({ pool: 'silver' }), false],
    ['the forced selector key is missing', gold, node({}), false],
    [
      'a taint the forced toleration tolerates',
      gold,
      node({ pool: 'gold' }, [{ key: 'dedicated', value: 'gold', effect: 'NoSchedule' }]),
      true,
    ],
    [
      'a taint with another value than the forced toleration',
      gold,
      node({ pool: 'gold' }, [{ key: 'dedicated', value: 'silver', effect: 'NoSchedule' }]),
      false,
    ],
    ['a NoSchedule taint nothing tolerates', {}, node({}, [{ key: 'gpu', effect: 'NoSchedule' }]), false],
    ['a NoExecute taint nothing tolerates', {}, node({}, [{ key: 'gpu', effect: 'NoExecute' }]), false],
    [
      'a PreferNoSchedule taint does not keep Pods off',
      {},
      node({}, [{ key: 'gpu', effect: 'PreferNoSchedule' }]),
      true,
    ],
    [
      'a taint pods.tolerations lets tenant Pods tolerate',
      { pods: { tolerations: [{ key: 'gpu', effect: 'NoSchedule' }] } },
      node({}, [{ key: 'gpu', value: 'a100', effect: 'NoSchedule' }]),
      true,
    ],
    [
      'a pods.tolerations rule of another effect',
      { pods: { tolerations: [{ key: 'gpu', effect: 'NoExecute' }] } },
      node({}, [{ key: 'gpu', effect: 'NoSchedule' }]),
      false,
    ],
    [
      'the default pods.tolerations (not-ready, unreachable NoExecute)',
      {},
      node({}, [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }]),
      true,
    ],
    [
      'the required RuntimeClass selects the node and tolerates its taint',
      { runtimeClasses: { required: 'kata' } },
      node({ 'sandbox.example/kata': 'true' }, [{ key: 'sandbox.example/only', effect: 'NoSchedule' }]),
      true,
    ],
    ['the required RuntimeClass selects other nodes', { runtimeClasses: { required: 'kata' } }, node({}), false],
    [
      'the required RuntimeClass is missing in the super cluster',
      { runtimeClasses: { required: 'gvisor' } },
      node({}),
      false,
    ],
  ])('%s', (_name, over, n, want) => {
    expect(mayPlaceOn(n, testTenant(over), new MapCache([[R.runtimeclasses, [sandbox]]]))).toBe(want);
  });
});

describe('nodes placement: tolerates', () => {
  it.each<[string, Parameters<typeof tolerates>[0], Taint, boolean]>([
    [
      'Exists with the empty key tolerates every taint',
      { operator: 'Exists' },
      { key: 'x', effect: 'NoSchedule' },
      true,
    ],
    ['the empty key without Exists tolerates nothing', {}, { key: 'x', effect: 'NoSchedule' }, false],
    ['Equal compares the value', { key: 'k', value: 'a' }, { key: 'k', value: 'a', effect: 'NoSchedule' }, true],
    ['another value', { key: 'k', value: 'a' }, { key: 'k', value: 'b', effect: 'NoSchedule' }, false],
    [
      'another effect',
      { key: 'k', operator: 'Exists', effect: 'NoExecute' },
      { key: 'k', effect: 'NoSchedule' },
      false,
    ],
  ])('%s', (_name, t, taint, want) => expect(tolerates(t, taint)).toBe(want));
});

describe('nodes placement: view and readiness', () => {
  it('is withPods unless the policy chose schedulable', () => {
    expect(nodesView({})).toBe('withPods');
    expect(nodesView({ nodes: {} })).toBe('withPods');
    expect(nodesView({ nodes: { view: 'schedulable' } })).toBe('schedulable');
  });

  it('takes Pods only when Ready and not cordoned', () => {
    expect(isReadyAndSchedulable(node({}))).toBe(true);
    expect(isReadyAndSchedulable(node({}, [], { status: { conditions: [{ type: 'Ready', status: 'False' }] } }))).toBe(
      false,
    );
    expect(isReadyAndSchedulable(node({}, [], { status: {} }))).toBe(false);
    expect(isReadyAndSchedulable({ ...node({}), spec: { unschedulable: true } })).toBe(false);
  });
});
