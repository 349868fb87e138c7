import { describe, expect, it } from 'vitest';
import type { ManagerConfig } from './config.ts';
import { ConfigError } from './config.ts';
import { managerShape, MANAGER_DEFAULTS } from './shape.ts';

const three: ManagerConfig['superClusters'] = [
  { name: 'meta', kubeconfig: 'm' },
  { name: 'r1', kubeconfig: 'a' },
  { name: 'r2', kubeconfig: 'b', external: true },
];

/** config is a manager configuration of the given sections. */
const config = (c: Omit<ManagerConfig, 'apiVersion' | 'kind'>): ManagerConfig => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ManagerConfiguration',
  ...c,
});

describe('managerShape', () => {
  it.each([
    {
      name: 'no super cluster configured: one default of the in-cluster configuration, synced, nothing else runs',
      cfg: {},
      want: {
        supers: [{ name: 'default', kubeconfig: undefined }],
        connects: [true],
        syncs: [true],
        placedOnly: false,
        lease: undefined,
        runs: { virtualClusters: false, gitops: false, scheduler: false, clusterApi: false, registry: false },
        metaTenants: false,
        standbyFeed: false,
      },
    },
    {
      name: 'the manager connects to every super cluster and syncs all but the external one and a meta cluster apart',
      cfg: { superClusters: [{ name: 'meta', metaOnly: true }, ...three.slice(1)] },
      want: { connects: [true, true, true], syncs: [false, true, false] },
    },
    {
      name: 'the scheduler turns placedOnly on, and its namespace holds the signing key',
      cfg: { scheduler: { enabled: true, namespace: 'sched' } },
      want: { placedOnly: true, signingNamespace: 'sched', runs: { scheduler: true } },
    },
    {
      name: 'syncer.placedOnly false keeps every syncer syncing all with the scheduler on',
      cfg: { scheduler: { enabled: true }, syncer: { placedOnly: false } },
      want: { placedOnly: false, signingNamespace: MANAGER_DEFAULTS.leaderElection.namespace },
    },
    {
      name: 'leader election: the manager leads on its Lease and its VirtualClusters feed its standby syncers',
      cfg: { leaderElection: { enabled: true, namespace: 'vc' }, virtualClusters: { enabled: true } },
      want: {
        lease: { namespace: 'vc', name: MANAGER_DEFAULTS.leaderElection.name },
        signingNamespace: 'vc',
        runs: { virtualClusters: true },
        metaTenants: true,
        standbyFeed: true,
      },
    },
    {
      name: 'without leader election the manager has no feed of its own: its controller fills the tenant set',
      cfg: { virtualClusters: { enabled: true }, gitops: { enabled: true, sources: [{ kind: 'GitSource' }] } },
      want: {
        runs: { virtualClusters: true, gitops: true },
        metaTenants: false,
        standbyFeed: false,
        configuredSources: [{ kind: 'GitSource' }],
      },
    },
  ] as { name: string; cfg: Omit<ManagerConfig, 'apiVersion' | 'kind'>; want: Record<string, unknown> }[])(
    '$name',
    (c) => {
      const got = managerShape(config(c.cfg), 'm.yaml');
      expect(got).toMatchObject(c.want);
    },
  );

  it('vc syncer of one external super cluster connects to meta and it alone, runs its syncer only, on its own Lease', () => {
    const cfg = config({
      superClusters: three,
      leaderElection: { enabled: true },
      virtualClusters: { enabled: true },
      gitops: { enabled: true, sources: [{ kind: 'GitSource' }] },
      scheduler: { enabled: true },
      clusterApi: { enabled: true },
    });
    const got = managerShape(cfg, 'm.yaml', 'r2');
    expect(got).toMatchObject({
      syncerOnly: 'r2',
      connects: [true, false, true],
      syncs: [false, false, true],
      lease: { namespace: MANAGER_DEFAULTS.leaderElection.namespace, name: `${MANAGER_DEFAULTS.syncerLeasePrefix}r2` },
      configuredSources: [],
      runs: { virtualClusters: false, gitops: false, scheduler: false, clusterApi: false, registry: false },
      metaTenants: true,
      standbyFeed: false,
    });
  });

  it('the registry runs in the manager, and in vc syncer only for a registered external super cluster', () => {
    const cfg = config({ superClusters: three, superClusterRegistry: { enabled: true, external: ['x'] } });
    const manager = managerShape(cfg, 'm.yaml');
    expect(manager.runs.registry).toBe(true);
    expect([manager.servesRegistered('x'), manager.servesRegistered('y')]).toEqual([false, true]);
    const registered = managerShape(cfg, 'm.yaml', 'x');
    expect(registered.runs.registry).toBe(true);
    expect([registered.servesRegistered('x'), registered.servesRegistered('y')]).toEqual([true, false]);
    expect(managerShape(cfg, 'm.yaml', 'r2').runs.registry).toBe(false);
  });

  it('refuses a vc syncer name the manager runs itself, naming the file and field', () => {
    expect(() => managerShape(config({ superClusters: three }), 'm.yaml', 'r1')).toThrow(ConfigError);
    expect(() => managerShape(config({ superClusters: three }), 'm.yaml', 'r1')).toThrow(
      /^m\.yaml: \/superClusters\/1\/external: super cluster "r1" is not marked external: true/,
    );
  });
});
