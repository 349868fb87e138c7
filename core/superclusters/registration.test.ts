import { describe, expect, it } from 'vitest';
import { renderSafeKubeconfig } from '../kube/kubeconfig.ts';
import {
  clusterState,
  DRAINING,
  duplicateOf,
  kubeconfigSecretName,
  kubeconfigFromSecret,
  READY_CONDITION,
  readyCondition,
  readyOf,
  RegistrationError,
  RegistrationFailure,
  superClusterId,
  unreachable,
  type ClusterMeta,
  type ClusterObject,
} from './registration.ts';

const ref = { namespace: 'vc-system', name: 'r2' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const good = renderSafeKubeconfig({ server: 'https://127.0.0.1:6443', token: 'secret-token', context: 'x' });

function failure(fn: () => unknown): RegistrationFailure {
  try {
    fn();
  } catch (e) {
    if (e instanceof RegistrationFailure) return e;
    throw e;
  }
  throw new Error('expected a RegistrationFailure');
}

describe('kubeconfigFromSecret', () => {
  it('accepts an inline https kubeconfig in data.value and returns its text', () => {
    const { safe, text } = kubeconfigFromSecret(ref, { data: { value: b64(good) } });
    expect(safe.server).toBe('https://127.0.0.1:6443');
    expect(safe.token).toBe('secret-token');
    expect(text).toBe(good);
  });

  it.each([
    ['no Secret', null, 'SecretMissing', 'Secret vc-system/r2-kubeconfig not found'],
    ['no data', {}, 'SecretMissing', 'Secret vc-system/r2-kubeconfig: data.value is missing'],
    ['wrong key', { data: { kubeconfig: b64(good) } }, 'SecretMissing', 'data.value is missing'],
    ['empty value', { data: { value: '' } }, 'SecretMissing', 'data.value is missing'],
    [
      'garbage',
      { data: { value: b64('hello: [') } },
      'KubeconfigInvalid',
      'Secret vc-system/r2-kubeconfig (data.value)',
    ],
    ['a scalar', { data: { value: b64('just text') } }, 'KubeconfigInvalid', '(document): not a kubeconfig'],
    [
      'plain http',
      { data: { value: b64(good.replace('https://', 'http://')) } },
      'KubeconfigInvalid',
      'clusters[0].cluster.server',
    ],
    [
      'an exec plugin',
      {
        data: {
          value: b64(
            'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://a"}}]\n' +
              'users: [{name: u, user: {exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}}]\n' +
              'contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
          ),
        },
      },
      'KubeconfigInvalid',
      'users[0].user.exec',
    ],
    [
      "a VirtualCluster's admin kubeconfig (the manager writes it as <vc>-kubeconfig, with value for a Cluster's)",
      {
        metadata: {
          ownerReferences: [{ apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', name: 'r2' }],
        },
        data: { value: b64(good), kubeconfig: b64(good) },
      },
      'TenantKubeconfig',
      'is the admin kubeconfig of VirtualCluster vc-system/r2',
    ],
  ] as const)('refuses %s, naming the field', (_what, secret, reason, text) => {
    const f = failure(() => kubeconfigFromSecret(ref, secret));
    expect(f.reason).toBe(reason);
    expect(f.message).toContain('Cluster vc-system/r2');
    expect(f.message).toContain(text);
  });
});

it('reads a Secret owned by something else than a VirtualCluster as any other', () => {
  const owned = { ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', name: 'r2' }] };
  expect(kubeconfigFromSecret(ref, { metadata: owned, data: { value: b64(good) } }).text).toBe(good);
});

describe('duplicateOf', () => {
  const cl = (namespace: string, name: string, creationTimestamp: string, deleting = false): ClusterMeta => ({
    metadata: {
      namespace,
      name,
      creationTimestamp,
      ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
  });
  const all = [
    cl('a', 'r1', '2026-01-01T00:00:02Z'),
    cl('b', 'r1', '2026-01-01T00:00:01Z'),
    cl('c', 'r2', '2026-01-01T00:00:01Z'),
    cl('d', 'r2', '2026-01-01T00:00:01Z'),
    cl('e', 'r3', '2026-01-01T00:00:01Z', true),
    cl('f', 'r3', '2026-01-01T00:00:05Z'),
  ];
  it.each([
    ['the older of two owns the name', 'b', 'r1', undefined],
    ['the newer is the duplicate', 'a', 'r1', 'Cluster b/r1'],
    ['same age: namespace order', 'c', 'r2', undefined],
    ['same age: the later namespace loses', 'd', 'r2', 'Cluster c/r2'],
    ['a Cluster being deleted owns nothing', 'f', 'r3', undefined],
    ['a unique name', 'x', 'r9', undefined],
    ['a static super cluster owns its name', 'x', 'default', 'the statically configured super cluster default'],
  ])('%s', (_what, namespace, name, want) => {
    expect(duplicateOf({ namespace, name }, all, new Set(['default']))).toBe(want);
  });
});

describe('conditions', () => {
  it('Registered is True; a failure is False with its reason and message', () => {
    expect(readyCondition({ server: 'https://s' }, 3)).toMatchObject({
      type: READY_CONDITION,
      status: 'True',
      reason: 'Registered',
      observedGeneration: 3,
    });
    const f = unreachable(ref, 'https://127.0.0.1:1', new Error('connect ECONNREFUSED 127.0.0.1:1'));
    expect(f.reason).toBe('Unreachable');
    expect(f.message).toBe(
      'Cluster vc-system/r2: Secret vc-system/r2-kubeconfig (data.value): server https://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(readyCondition(f)).toEqual({
      type: READY_CONDITION,
      status: 'False',
      reason: 'Unreachable',
      message: f.message,
    });
  });

  it('readyOf finds the registry condition among others', () => {
    const mine = { type: READY_CONDITION, status: 'True' as const, reason: 'Registered', lastTransitionTime: 't' };
    expect(readyOf({ conditions: [{ ...mine, type: 'Ready' }, mine] })).toBe(mine);
    expect(readyOf(undefined)).toBeUndefined();
  });
});

const cluster = (metadata: Partial<ClusterObject['metadata']> = {}): ClusterObject => ({
  metadata: { name: 'r1', namespace: 'default', ...metadata },
});
const WHERE = 'Cluster default/r1: ConfigMap kube-system/supercluster-info in the super cluster: data.id';

describe('registration', () => {
  it('finds the kubeconfig in the Cluster API Secret <name>-kubeconfig', () => {
    expect(kubeconfigSecretName('r1')).toBe('r1-kubeconfig');
  });

  it('takes the id of supercluster-info when it names the Cluster', () => {
    expect(superClusterId(cluster(), { id: 'r1' })).toBe('r1');
  });

  it.each([
    ['no data', undefined, `${WHERE} is missing`],
    ['no id', { name: 'r1' }, `${WHERE} is missing`],
    ['an id that is not a DNS label', { id: 'R 1' }, `${WHERE} "R 1" is not a DNS label`],
    ['an id of another Cluster', { id: 'r2' }, `${WHERE} "r2" differs from the Cluster's name "r1"`],
  ])('refuses %s, naming the ConfigMap and field', (_, data, message) => {
    expect(() => superClusterId(cluster(), data)).toThrow(new RegistrationError(message));
  });

  it.each([
    ['a reachable Cluster', {}, true, 'ready'],
    ['an unreachable Cluster', {}, false, 'unreachable'],
    ['a draining Cluster, reachable or not', { annotations: { [DRAINING]: 'true' } }, false, 'draining'],
    ['draining=false', { annotations: { [DRAINING]: 'false' } }, true, 'ready'],
    [
      'a Cluster being deleted',
      { deletionTimestamp: '2026-11-26T09:00:00Z', annotations: { [DRAINING]: 'true' } },
      true,
      'deregistered',
    ],
  ] as const)('%s is %s', (_, metadata, reachable, state) => {
    expect(clusterState(cluster(metadata), reachable)).toBe(state);
  });

  it('refuses a draining annotation that is neither true nor false', () => {
    expect(() => clusterState(cluster({ annotations: { [DRAINING]: 'yes' } }), true)).toThrow(
      new RegistrationError(`Cluster default/r1: annotation ${DRAINING} must be "true" or "false", not "yes"`),
    );
  });
});
