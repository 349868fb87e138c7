import { judge } from './health.ts';
import { describe, expect, it } from 'vitest';
import type { Condition } from '../controller/status.ts';
import type { ProvisionState } from '../provisioners/provisioner.ts';
import { checkPolicies, type EffectiveSettings } from '../tenancy/policy.ts';
import type { VirtualCluster, VirtualClusterStatus } from '../api/virtualcluster.ts';
import {
  afterDns,
  clusterVersionsUnavailable,
  CONTINUE,
  deleting,
  EXPOSE_RECHECK_MS,
  hasStatus,
  invalidSpec,
  merge,
  nextStatus,
  notOwned,
  policyNotFound,
  policyRefused,
  provisionerUnavailable,
  provisionFailed,
  provisioningStarts,
  running,
  stillStarting,
  unknownSuperCluster,
  type Outcome,
} from './decisions.ts';
import { ProvisionRefused } from '../provisioners/provisioner.ts';
import { cacheCondition } from './cachelimit.ts';

/**
 * Decision tables of the VirtualCluster reconcile: the object as it stands + what a step read (validation, super
 * cluster, policy, provisioner) -> the phase, reason, conditions, events and requeue the user sees next.
 */

const KEY = 'team-a/dev';
const kubeconfig = 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.9:6443\n  name: t\n';

function vcWith(status?: VirtualClusterStatus, spec: Partial<VirtualCluster['spec']> = {}): VirtualCluster {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { namespace: 'team-a', name: 'dev', uid: 'u-1', generation: 3 },
    spec: { ...spec },
    ...(status && { status }),
  };
}

/** effective is what the real policy check grants a spec with no policy in place. */
function effective(): EffectiveSettings {
  const r = checkPolicies(vcWith(undefined, { provisioner: { type: 'native' } }), [], {});
  if (!('effective' in r)) throw new Error(`no effective settings: ${JSON.stringify(r.violations)}`);
  return r.effective;
}

const ready = (rolled = false, extra: Partial<Extract<ProvisionState, { ready: true }>['result']> = {}) =>
  ({
    ready: true,
    rolled,
    result: { kubeconfig, apiserverEndpoint: { host: '10.0.0.9', port: 6443 }, ...extra },
  }) as const;

interface Row {
  name: string;
  vc: VirtualCluster;
  decide: (vc: VirtualCluster) => Outcome;
  phase?: string;
  reason?: string;
  message?: string | RegExp;
  /** [status, reason] of the Ready condition after the outcome */
  readyCondition?: [string, string];
  policyAccepted?: string;
  /** the CacheWithinLimit condition's status and reason; absent: no such condition */
  cacheCondition?: [string, string];
  events: string[];
  requeueAfter?: number;
  stop: boolean;
  release?: boolean;
  publish?: boolean;
}

const running0 = vcWith({ phase: 'Running', reason: 'Running', message: 'control plane is serving' });
const degraded0 = vcWith({
  phase: 'Degraded',
  reason: 'ComponentDown',
  message: 'kube-apiserver: kube-apiserver exited (SIGKILL); restarting with back-off',
  components: [
    { name: 'etcd', healthy: true, restarts: 0 },
    { name: 'kube-apiserver', healthy: false, reason: 'ComponentDown', restarts: 1 },
  ],
});
const allHealthy = (apiserverRestarts: number) =>
  judge(
    {
      components: [
        { name: 'etcd', running: true, restarts: 0 },
        { name: 'kube-apiserver', running: true, restarts: apiserverRestarts },
      ],
      readyz: { status: 200, body: 'ok' },
      lease: { state: 'absent' },
    },
    new Date(),
  );
const apiserverDown = (restarts: number) =>
  judge(
    {
      components: [
        { name: 'etcd', running: true, restarts: 0 },
        { name: 'kube-apiserver', running: false, restarts, message: 'kube-apiserver exited (SIGKILL)' },
      ],
      readyz: { error: 'ECONNREFUSED' },
      lease: { state: 'unknown', error: 'no answer' },
    },
    new Date(),
  );

const rows: Row[] = [
  {
    name: 'a valid spec goes on',
    vc: vcWith(),
    decide: () => invalidSpec(KEY, undefined, []),
    events: [],
    stop: false,
  },
  {
    name: 'a schema error: Error, InvalidSpec, Warning, released, no requeue',
    vc: vcWith(),
    decide: () => invalidSpec(KEY, 'VirtualCluster team-a/dev: spec.weight: must be >= 1', []),
    phase: 'Error',
    reason: 'InvalidSpec',
    message: 'VirtualCluster team-a/dev: spec.weight: must be >= 1',
    readyCondition: ['False', 'InvalidSpec'],
    events: ['Warning/InvalidSpec'],
    stop: true,
    release: true,
  },
  {
    name: 'plugin config errors are named with the object, one a line',
    vc: vcWith(),
    decide: () => invalidSpec(KEY, undefined, ['pluginConfig.pods.x: unknown', 'pluginConfig.y: unknown']),
    phase: 'Error',
    reason: 'InvalidSpec',
    message:
      'VirtualCluster team-a/dev: pluginConfig.pods.x: unknown\nVirtualCluster team-a/dev: pluginConfig.y: unknown',
    readyCondition: ['False', 'InvalidSpec'],
    events: ['Warning/InvalidSpec'],
    stop: true,
    release: true,
  },
  {
    name: 'an unknown super cluster: Pending (waiting for it), Warning, released, looked at again in 15 s',
    vc: vcWith(undefined, { superCluster: 'east' }),
    decide: (vc) => unknownSuperCluster(vc, KEY, 'not registered'),
    phase: 'Pending',
    reason: 'UnknownSuperCluster',
    message: 'VirtualCluster team-a/dev: spec.superCluster "east": not registered',
    readyCondition: ['False', 'UnknownSuperCluster'],
    events: ['Warning/UnknownSuperCluster'],
    requeueAfter: 15_000,
    stop: true,
    release: true,
  },
  {
    name: 'the same unknown super cluster again: no second event',
    vc: vcWith(
      {
        phase: 'Pending',
        reason: 'UnknownSuperCluster',
        message: 'VirtualCluster team-a/dev: spec.superCluster "east": not registered',
      },
      { superCluster: 'east' },
    ),
    decide: (vc) => unknownSuperCluster(vc, KEY, 'not registered'),
    phase: 'Pending',
    reason: 'UnknownSuperCluster',
    readyCondition: ['False', 'UnknownSuperCluster'],
    events: [],
    requeueAfter: 15_000,
    stop: true,
    release: true,
  },
  {
    name: 'a refused spec on a tenant that never ran: Error, PolicyAccepted=False, released',
    vc: vcWith({ phase: 'Provisioning' }),
    decide: (vc) => policyRefused(vc, 'spec.weight 9 is over 4', undefined),
    phase: 'Error',
    reason: 'PolicyViolation',
    message: 'spec.weight 9 is over 4',
    readyCondition: ['False', 'PolicyViolation'],
    policyAccepted: 'False',
    events: ['Warning/PolicyViolation'],
    stop: true,
    release: true,
  },
  {
    name: 'a refused edit of a Running tenant: it keeps running on its last settings, Ready stays True',
    vc: running0,
    decide: (vc) => policyRefused(vc, 'spec.weight 9 is over 4', effective()),
    phase: 'Running',
    reason: 'PolicyViolation',
    message: /^spec refused; the control plane keeps running on its last accepted settings \(policy .*\n.*over 4$/,
    readyCondition: ['True', 'Running'],
    policyAccepted: 'False',
    events: ['Warning/PolicyViolation'],
    stop: true,
    release: false,
  },
  {
    name: 'a Running tenant without accepted settings (after a restart) is refused like a new one',
    vc: running0,
    decide: (vc) => policyRefused(vc, 'spec.weight 9 is over 4', undefined),
    phase: 'Error',
    reason: 'PolicyViolation',
    readyCondition: ['False', 'PolicyViolation'],
    policyAccepted: 'False',
    events: ['Warning/PolicyViolation'],
    stop: true,
    release: true,
  },
  {
    name: 'a provisioner this manager lacks: ProvisionerUnavailable, no event, the tenant not released',
    vc: vcWith(),
    decide: () => provisionerUnavailable('import', false),
    phase: 'Error',
    reason: 'ProvisionerUnavailable',
    message: 'provisioner "import" is not available in this manager (spec.provisioner.type)',
    readyCondition: ['False', 'ProvisionerUnavailable'],
    events: [],
    stop: true,
    release: false,
  },
  {
    name: 'no provisioner named and no default',
    vc: vcWith(),
    decide: () => provisionerUnavailable(undefined, false),
    phase: 'Error',
    reason: 'ProvisionerUnavailable',
    message: /no provisioner named .*virtualClusters\.defaultProvisioner/,
    readyCondition: ['False', 'ProvisionerUnavailable'],
    events: [],
    stop: true,
  },
  {
    name: 'a first start is announced and published before the provisioner runs',
    vc: vcWith(),
    decide: (vc) => provisioningStarts(vc, 'native'),
    phase: 'Provisioning',
    reason: 'Provisioning',
    message: 'provisioning with native',
    readyCondition: ['False', 'Provisioning'],
    events: ['Normal/Provisioning'],
    stop: false,
    publish: true,
  },
  {
    name: 'a tenant already Provisioning is not announced again',
    vc: vcWith({ phase: 'Provisioning', reason: 'Waiting' }),
    decide: (vc) => provisioningStarts(vc, 'native'),
    phase: 'Provisioning',
    reason: 'Waiting',
    events: [],
    stop: false,
  },
  {
    name: 'a Running tenant is not announced again',
    vc: running0,
    decide: (vc) => provisioningStarts(vc, 'native'),
    phase: 'Running',
    events: [],
    stop: false,
  },
  {
    name: 'a refusing provisioner: its reason, a Warning, looked at again in 30 s, nothing rethrown',
    vc: vcWith({ phase: 'Provisioning' }),
    decide: () => {
      const e = new ProvisionRefused('ExposeRefused', 'LoadBalancer is not granted');
      return provisionFailed(e, e.reason);
    },
    phase: 'Error',
    reason: 'ExposeRefused',
    message: 'LoadBalancer is not granted',
    readyCondition: ['False', 'ExposeRefused'],
    events: ['Warning/ExposeRefused'],
    requeueAfter: 30_000,
    stop: true,
    release: false,
  },
  {
    name: 'a control plane still starting: Provisioning, Waiting, 2 s',
    vc: vcWith({ phase: 'Provisioning' }),
    decide: () => stillStarting({ ready: false, waitingFor: 'etcd' }),
    phase: 'Provisioning',
    reason: 'Waiting',
    message: 'waiting for etcd',
    readyCondition: ['False', 'Waiting'],
    events: [],
    requeueAfter: 2000,
    stop: true,
  },
  {
    name: 'a tenant rolling to a new spec whose component is not ready yet stays Updating',
    vc: vcWith({ phase: 'Updating', reason: 'Updating', message: 'rolling etcd' }),
    decide: (vc) => stillStarting({ ready: false, waitingFor: 'the etcd StatefulSet' }, vc),
    phase: 'Updating',
    reason: 'Waiting',
    message: 'waiting for the etcd StatefulSet',
    readyCondition: ['False', 'Waiting'],
    events: [],
    requeueAfter: 2000,
    stop: true,
  },
  {
    name: 'a policyName no TenantPolicy has: Pending until it exists, Warning, released',
    vc: vcWith(undefined, { policyName: 'gold' }),
    decide: (vc) => policyNotFound(vc, KEY, false),
    phase: 'Pending',
    reason: 'PolicyNotFound',
    message: /TenantPolicy "gold" does not exist; waiting for it/,
    readyCondition: ['False', 'PolicyNotFound'],
    events: ['Warning/PolicyNotFound'],
    stop: true,
    release: true,
  },
  {
    name: 'a serving tenant whose policy went missing is left to policyRefused (it keeps running)',
    vc: vcWith({ phase: 'Running' }, { policyName: 'gold' }),
    decide: (vc) => policyNotFound(vc, KEY, false),
    events: [],
    stop: false,
  },
  {
    name: 'a ClusterVersion named while none can be read (no CRD): Pending, Warning, released, 10 s',
    vc: vcWith(undefined, { clusterVersionName: 'v1-36' }),
    decide: (vc) => clusterVersionsUnavailable(vc, KEY, false),
    phase: 'Pending',
    reason: 'ClusterVersionsUnavailable',
    message: /spec.clusterVersionName "v1-36": the manager cannot read ClusterVersions .*CRD installed/,
    readyCondition: ['False', 'ClusterVersionsUnavailable'],
    events: ['Warning/ClusterVersionsUnavailable'],
    requeueAfter: 10_000,
    stop: true,
    release: true,
  },
  {
    name: 'a serving tenant naming a ClusterVersion that cannot be read keeps running, nothing written, 10 s',
    vc: vcWith({ phase: 'Running' }, { clusterVersionName: 'v1-36' }),
    decide: (vc) => clusterVersionsUnavailable(vc, KEY, false),
    events: [],
    requeueAfter: 10_000,
    stop: true,
  },
  {
    name: 'a tenant naming no ClusterVersion, or once they can be read, goes on',
    vc: vcWith(undefined, { clusterVersionName: 'v1-36' }),
    decide: (vc) => merge(clusterVersionsUnavailable(vcWith(), KEY, false), clusterVersionsUnavailable(vc, KEY, true)),
    events: [],
    stop: false,
  },
  {
    name: 'a foreign Secret of the tenant name: NotOwned, Warning, released, 30 s',
    vc: vcWith({ phase: 'Provisioning' }),
    decide: () => notOwned('Secret team-a/dev-kubeconfig exists and was not written by the manager'),
    phase: 'Error',
    reason: 'NotOwned',
    readyCondition: ['False', 'NotOwned'],
    events: ['Warning/NotOwned'],
    requeueAfter: 30_000,
    stop: true,
    release: true,
  },
  {
    name: 'a first Running: status with endpoint, Ready and PolicyAccepted True, Running event, published',
    vc: vcWith({ phase: 'Provisioning' }),
    decide: () => running(ready(), 'team-a-u1-dev', 'dev-kubeconfig', effective(), true),
    phase: 'Running',
    reason: 'Running',
    message: 'control plane is serving',
    readyCondition: ['True', 'Running'],
    policyAccepted: 'True',
    events: ['Normal/Running'],
    stop: false,
    publish: true,
  },
  {
    name: 'a roll of a Running tenant: Updated event',
    vc: running0,
    decide: () => running(ready(true), 'team-a-u1-dev', 'dev-kubeconfig', effective(), false),
    phase: 'Running',
    message: 'control plane rolled to the new spec',
    readyCondition: ['True', 'Running'],
    policyAccepted: 'True',
    events: ['Normal/Updated'],
    stop: false,
    publish: true,
  },
  {
    name: 'a Running tenant reconciled again: no event',
    vc: running0,
    decide: () => running(ready(), 'team-a-u1-dev', 'dev-kubeconfig', effective(), false),
    phase: 'Running',
    readyCondition: ['True', 'Running'],
    events: [],
    stop: false,
    publish: true,
  },
  {
    name: 'a Running tenant whose apiserver died: Degraded, Ready False naming it, Warning event',
    vc: running0,
    decide: (vc) => running(ready(), 'r', 's', effective(), false, vc, apiserverDown(1)),
    phase: 'Degraded',
    reason: 'ComponentDown',
    message: /^kube-apiserver: /,
    readyCondition: ['False', 'ComponentDown'],
    events: ['Warning/ComponentDown'],
    stop: false,
    publish: true,
  },
  {
    name: 'a Degraded tenant still down for the same reason: no new event',
    vc: degraded0,
    decide: (vc) => running(ready(), 'r', 's', effective(), false, vc, apiserverDown(1)),
    phase: 'Degraded',
    readyCondition: ['False', 'ComponentDown'],
    events: [],
    stop: false,
    publish: true,
  },
  {
    name: 'a Running tenant whose caches the syncer refuses: CacheWithinLimit False, still Running',
    vc: running0,
    decide: () =>
      running(
        ready(),
        'team-a-u1-dev',
        'dev-kubeconfig',
        effective(),
        false,
        undefined,
        undefined,
        cacheCondition('over the limit'),
      ),
    phase: 'Running',
    readyCondition: ['True', 'Running'],
    cacheCondition: ['False', 'TenantCacheExceeded'],
    events: [],
    stop: false,
    publish: true,
  },
  {
    name: 'a Degraded tenant healthy again: Running, Ready True, Recovered, and its restart reported',
    vc: degraded0,
    decide: (vc) =>
      running(ready(), 'r', 's', effective(), false, vc, {
        ...allHealthy(2),
        restarted: [{ name: 'kube-apiserver', restarts: 2 }],
      }),
    phase: 'Running',
    reason: 'Running',
    readyCondition: ['True', 'Running'],
    events: ['Normal/Recovered', 'Warning/ComponentRestarted'],
    stop: false,
    publish: true,
  },
  {
    name: 'a first start ignores a verdict of the processes before it',
    vc: vcWith({ phase: 'Provisioning' }),
    decide: (vc) => running(ready(), 'r', 's', effective(), true, vc, apiserverDown(0)),
    phase: 'Running',
    readyCondition: ['True', 'Running'],
    events: ['Normal/Running'],
    stop: false,
    publish: true,
  },
  {
    name: 'a serving tenant whose provisioner reports it not ready: Degraded, ControlPlaneUnavailable, Warning',
    vc: running0,
    decide: (vc) => stillStarting({ ready: false, waitingFor: 'the apiserver StatefulSet' }, vc),
    phase: 'Degraded',
    reason: 'ControlPlaneUnavailable',
    readyCondition: ['False', 'ControlPlaneUnavailable'],
    events: ['Warning/ControlPlaneUnavailable'],
    requeueAfter: 2000,
    stop: true,
  },
  {
    name: 'deletion is announced and published before clean-up, the tenant released',
    vc: running0,
    decide: (vc) => deleting(vc),
    phase: 'Deleting',
    reason: 'Deleting',
    readyCondition: ['False', 'Deleting'],
    events: [],
    stop: false,
    publish: true,
    release: true,
  },
  {
    name: 'a deletion already announced releases the tenant without a status write',
    vc: vcWith({ phase: 'Deleting', reason: 'Deleting' }),
    decide: (vc) => deleting(vc),
    phase: 'Deleting',
    events: [],
    stop: false,
    release: true,
  },
];

describe('VirtualCluster reconcile decisions', () => {
  it.each(rows)('$name', (row) => {
    const o = row.decide(row.vc);
    const status = nextStatus(row.vc, o);
    expect(!!o.stop).toBe(row.stop);
    expect(!!o.publish).toBe(!!row.publish);
    if (row.release !== undefined) expect(!!o.release).toBe(row.release);
    expect(o.requeueAfter).toBe(row.requeueAfter);
    expect((o.events ?? []).map((e) => `${e.type}/${e.reason}`)).toEqual(row.events);
    if (row.phase) expect(status.phase).toBe(row.phase);
    if (row.reason) expect(status.reason).toBe(row.reason);
    if (typeof row.message === 'string') expect(status.message).toBe(row.message);
    else if (row.message) expect(status.message).toMatch(row.message);
    const cond = (type: string) => status.conditions?.find((c) => c.type === type);
    if (row.readyCondition) {
      expect([cond('Ready')?.status, cond('Ready')?.reason]).toEqual(row.readyCondition);
      expect(cond('Ready')?.observedGeneration).toBe(3);
      expect(status.observedGeneration).toBe(3);
    } else {
      expect(hasStatus(o)).toBe(false);
    }
    if (row.policyAccepted) expect(cond('PolicyAccepted')?.status).toBe(row.policyAccepted);
    const cache = cond('CacheWithinLimit');
    expect(cache && [cache.status, cache.reason]).toEqual(row.cacheCondition);
  });

  it('a failing provisioner error is rethrown for back-off after its status and event', () => {
    const e = new Error('connection refused');
    const o = provisionFailed(e, undefined);
    expect(o.error).toBe(e);
    expect(o.requeueAfter).toBeUndefined();
    expect(nextStatus(vcWith(), o)).toMatchObject({ phase: 'Error', reason: 'ProvisionFailed' });
    expect(o.events).toEqual([{ type: 'Warning', reason: 'ProvisionFailed', message: 'connection refused' }]);
  });

  it('Running writes what the user connects with: namespace, Secret, endpoint and fingerprint', () => {
    const o = running(
      ready(false, { kubeletClientCertFingerprint: 'ab:cd' }),
      'team-a-u1-dev',
      'dev-kubeconfig',
      effective(),
      true,
    );
    expect(o.status).toMatchObject({
      clusterNamespace: 'team-a-u1-dev',
      kubeconfigSecretName: 'dev-kubeconfig',
      apiserverEndpoint: 'https://10.0.0.9:6443',
      kubeletClientCertFingerprint: 'ab:cd',
    });
  });

  it('an exposed API server adds the Exposed condition; an awaited address bounds the requeue', () => {
    const access = { type: 'LoadBalancer', waiting: { reason: 'WaitingForLoadBalancer', message: 'an address' } };
    const o = running(ready(false, { externalAccess: access }), 'r', 's', effective(), false);
    expect(o.conditions?.find((c) => c.type === 'Exposed')).toMatchObject({
      status: 'False',
      reason: 'WaitingForLoadBalancer',
    });
    const table: Array<[boolean, { requeueAfter?: number } | undefined, number | undefined]> = [
      [false, undefined, undefined],
      [false, { requeueAfter: 5000 }, 5000],
      [true, undefined, EXPOSE_RECHECK_MS],
      [true, { requeueAfter: 5000 }, 5000],
      [true, { requeueAfter: 60_000 }, EXPOSE_RECHECK_MS],
    ];
    for (const [awaiting, dns, want] of table) {
      const end = afterDns(awaiting, dns);
      expect(end.stop).toBe(true);
      expect(end.requeueAfter, `awaiting=${awaiting} dns=${JSON.stringify(dns)}`).toBe(want);
    }
  });

  it('nextStatus keeps a condition transition time while its status holds, and does not change the object', () => {
    const before: Condition = {
      type: 'Ready',
      status: 'False',
      reason: 'Waiting',
      message: 'waiting for etcd',
      lastTransitionTime: '2026-01-01T00:00:00.000Z',
    };
    const vc = vcWith({ phase: 'Provisioning', conditions: [before] });
    const now = new Date('2026-02-02T00:00:00.000Z');
    const waiting = nextStatus(vc, stillStarting({ ready: false, waitingFor: 'apiserver' }), now);
    expect(waiting.conditions?.[0]?.lastTransitionTime).toBe(before.lastTransitionTime);
    const up = nextStatus(vc, running(ready(), 'r', 's', effective(), true), now);
    expect(up.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(now.toISOString());
    expect(vc.status?.conditions).toEqual([before]);
  });

  it('merge keeps every step’s events in order and later status fields over earlier ones', () => {
    const m = merge(
      merge(CONTINUE, provisioningStarts(vcWith(), 'native')),
      stillStarting({ ready: false, waitingFor: 'etcd' }),
    );
    expect(m.status).toMatchObject({ phase: 'Provisioning', reason: 'Waiting' });
    expect(m.events?.map((e) => e.reason)).toEqual(['Provisioning']);
    expect(nextStatus(vcWith(), m).conditions?.filter((c) => c.type === 'Ready')).toHaveLength(1);
    expect(hasStatus(merge(CONTINUE, CONTINUE))).toBe(false);
  });
});
