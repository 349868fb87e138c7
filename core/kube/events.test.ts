import { describe, expect, it } from 'vitest';
import { apiVersionOf, eventTarget } from './events.ts';
import { R } from './resources.ts';

describe('eventTarget', () => {
  it.each([
    {
      name: 'a core-group object is referred to by its version alone',
      r: R.pods,
      meta: { namespace: 'ns', name: 'web', uid: 'u1' },
      want: { apiVersion: 'v1', kind: 'Pod', namespace: 'ns', name: 'web', uid: 'u1' },
    },
    {
      name: 'a grouped object by group/version',
      r: R.virtualclusters,
      meta: { namespace: 'team', name: 'vc', uid: 'u2' },
      want: {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        namespace: 'team',
        name: 'vc',
        uid: 'u2',
      },
    },
    {
      name: 'a cluster-scoped object has no namespace',
      r: R.namespaces,
      meta: { name: 'ns' },
      want: { apiVersion: 'v1', kind: 'Namespace', namespace: undefined, name: 'ns', uid: undefined },
    },
    {
      name: 'an object without a name gets the empty name',
      r: R.configmaps,
      meta: {},
      want: { apiVersion: 'v1', kind: 'ConfigMap', namespace: undefined, name: '', uid: undefined },
    },
  ])('$name', (c) => {
    expect(eventTarget(c.r, c.meta)).toEqual(c.want);
    expect(apiVersionOf(c.r)).toBe(c.want.apiVersion);
  });
});
