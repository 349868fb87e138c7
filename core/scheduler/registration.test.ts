import { describe, expect, it } from 'vitest';
import {
  clusterState,
  DRAINING,
  kubeconfigSecretName,
  RegistrationError,
  superClusterId,
  type ClusterObject,
} from './registration.ts';

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
