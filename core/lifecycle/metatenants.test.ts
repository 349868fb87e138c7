import { describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import type { TenantPolicy } from '../tenancy/policy.ts';
import { LABEL } from '../names/names.ts';
import { servedSettings } from './metatenants.ts';

const gold: TenantPolicy = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name: 'gold' },
  spec: {
    grants: {
      subjects: [
        { kind: 'Namespace', selector: { matchLabels: { tier: 'gold' } } },
        { kind: 'GitSource', namespace: 'platform', name: 'tenants' },
      ],
    },
  },
};

const vc = (namespace: string, labels: Record<string, string> = {}): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'a', namespace, uid: 'u-a', labels },
  spec: { policyName: 'gold' },
});

const SOURCE_LABEL = LABEL.gitSource;

describe('servedSettings: a syncer apart from the controller judges grants as the controller does', () => {
  it.each([
    ['a namespace whose labels the policy grants', vc('team-a'), { tier: 'gold' }, false, 'gold'],
    ['the same, already served', vc('team-a'), { tier: 'gold' }, true, 'gold'],
    [
      'the GitSource the policy grants, whatever the namespace',
      vc('team-b', { [SOURCE_LABEL]: 'platform.tenants' }),
      {},
      false,
      'gold',
    ],
    [
      'a namespace whose label was taken off (grant revoked), served before: its last settings',
      vc('team-a'),
      {},
      true,
      'keep',
    ],
    ['a revoked grant never served (a syncer that restarted): not served', vc('team-a'), {}, false, undefined],
    ['a namespace labelled for another tier', vc('team-a'), { tier: 'silver' }, false, undefined],
    ['another GitSource’s label', vc('team-b', { [SOURCE_LABEL]: 'team-b.mine' }), {}, true, 'keep'],
  ])('%s', (_, v, labels, served, want) => {
    const got = servedSettings(v, [gold], {}, labels, served);
    expect(typeof got === 'object' ? got.policyName : got).toBe(want);
  });
});
