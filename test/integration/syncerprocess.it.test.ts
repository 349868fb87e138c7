/**
 * One super cluster's syncer as processes of its own (issue 14): the manager (`vc manager`) with r2 marked
 * `external: true`, and two `vc syncer --super-cluster r2` replicas leading on the Lease `vc-syncer-r2`, all separate
 * OS processes started as a user starts them. The placements are written and signed by the test with the manager's
 * key, as the namespace scheduler would (multisuper.it.test.ts runs the scheduler itself).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { rootNamespace, superNamespace } from '../../core/names/names.ts';
import { MANAGER_DEFAULTS } from '../../core/programs/manager/manager.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { PLACEMENTS, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { PlacementRecords } from '../../core/scheduler/placementrecord.ts';
import { loadSigningKey, sign, SIGNATURE } from '../../core/scheduler/signature.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { killManager, managerAlive, type ManagerProc, ManagerSpawner } from '../managerproc.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const LEASE = `${MANAGER_DEFAULTS.syncerLeasePrefix}r2`;
const LEASE_NS = 'kube-system';
/** the log lines the test reads (leadership, syncers started) or shows after a failure */
const KEEP = /lead|syncer started|super cluster registered|"level":"(error|fatal)"/;

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

interface Lease extends KubeObject {
  spec?: { holderIdentity?: string };
}

/** pidOf is the process id in a leader election identity `<hostname>-<pid>[-<tag>]`. */
const pidOf = (identity: string | undefined) => Number(/-(\d+)(?:-[0-9a-f]{8})?$/.exec(identity ?? '')?.[1]);

/** startedSyncers are the super clusters a process logged `syncer started` for, in order. */
const startedSyncers = (m: ManagerProc) =>
  m.log.flatMap((l) => (l.includes('"msg":"syncer started"') ? [/"superCluster":"([^"]+)"/.exec(l)?.[1]] : []));

describe('a super cluster synced by `vc syncer` processes of its own', () => {
  const spawner = new ManagerSpawner();
  let t: TestSuper;
  let c2: KubeClient;
  let x: KubeClient;
  let dir: string;
  let config: string;
  let manager: ManagerProc;
  let key: Buffer;
  let records: PlacementRecords;
  const syncers: ManagerProc[] = [];
  const keyX = rootNamespace('team-x', 'x', 'uid-x');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1, superClusters: 2 });
    const r2 = t.supers[1]!.cp;
    c2 = await r2.client();
    const cp = await t.sc.addControlPlane('tenant-x', { controllers: TENANT_CONTROLLERS });
    x = await cp.client();
    dir = mkdtempSync(join(tmpdir(), 'vc-syncerprocess-'));
    config = join(dir, 'manager.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [
          { name: 'r1', kubeconfig: t.sc.kubeconfigPath },
          { name: 'r2', kubeconfig: r2.kubeconfigPath, external: true },
        ],
        syncer: { workers: 4, patrolIntervalSeconds: 0, placedOnly: true },
        leaderElection: { enabled: true, leaseDurationSeconds: 10, renewDeadlineSeconds: 8, retryPeriodSeconds: 1 },
        tenants: [{ name: 'x', namespace: 'team-x', uid: 'uid-x', kubeconfig: cp.kubeconfigPath }],
      }),
    );
    manager = spawner.spawn({ config, keep: KEEP, keepLines: 100, keepChars: 4000 });
    await manager.ready;
    key = await loadSigningKey(t.client, LEASE_NS);
    records = new PlacementRecords(t.client, LEASE_NS);
  }, 240_000);

  afterAll(async () => {
    for (const m of spawner.managers)
      if (m.log.length) process.stdout.write(`process ${m.id} log:\n${m.log.join('\n')}\n`);
    await spawner.stopAll();
    x?.close();
    c2?.close();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** place records a namespace's placements and writes them with their signature, as the scheduler does. */
  const place = async (ns: string, placements: string) => {
    const uid = (await x.get(R.namespaces, undefined, ns)).metadata!.uid!;
    const sig = sign(key, { tenant: keyX, kind: 'Namespace', namespace: ns, name: ns, uid, value: placements });
    await records.set(keyX, ns, { uid, placements });
    const annotations = { [PLACEMENTS]: placements, [SIGNATURE]: sig };
    await x.patch(R.namespaces, undefined, ns, { metadata: { annotations } }, 'merge');
  };

  /** createPod creates a tenant Pod and places it on a super cluster, as the scheduler does. */
  const createPod = async (ns: string, name: string, cluster: string) => {
    const { metadata } = await x.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
    const sig = sign(key, { tenant: keyX, kind: 'Pod', namespace: ns, name, uid: metadata!.uid!, value: cluster });
    const annotations = { [SUPER_CLUSTER]: cluster, [SIGNATURE]: sig };
    await x.patch(R.pods, ns, name, { metadata: { annotations } }, 'merge');
  };

  /** runsOnR2 waits for a tenant Pod to be Running on a vNode of r2, and returns its super Pod in r2. */
  const runsOnR2 = async (name: string) => {
    const p = await eventually(async () => {
      const p = await x.get<Pod>(R.pods, 'team', name);
      expect(p.status?.phase).toBe('Running');
      return p;
    }, 90_000);
    expect(p.spec?.nodeName).toMatch(/^r2\.r2-node-/);
    const sp = await c2.get<Pod>(R.pods, superNamespace(keyX, 'team'), name);
    expect(sp.spec?.nodeName).toBe(p.spec!.nodeName!.slice('r2.'.length));
    expect(await t.client.getOrNull(R.pods, superNamespace(keyX, 'team'), name)).toBeNull();
    return sp;
  };

  const holder = async () => (await t.client.get<Lease>(R.leases, LEASE_NS, LEASE)).spec?.holderIdentity;

  it('leaves r2 alone in the manager: a namespace placed on both reaches r1 only, its Pod on r2 waits', async () => {
    await x.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
    await eventually(() => x.get(R.serviceaccounts, 'team', 'default'), 30_000);
    await x.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'team' },
      data: { a: '1' },
    });
    await place('team', '{"r1":1,"r2":1}');
    await createPod('team', 'web-1', 'r2');
    // The manager syncs r1: the namespace's objects arrive there. Nothing reaches r2, where no syncer runs yet.
    await eventually(() => t.client.get(R.configmaps, superNamespace(keyX, 'team'), 'settings'), 60_000);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await c2.getOrNull(R.namespaces, undefined, superNamespace(keyX, 'team'))).toBeNull();
    expect((await x.get<Pod>(R.pods, 'team', 'web-1')).status?.phase).toBe('Pending');
    expect(await t.client.getOrNull(R.leases, LEASE_NS, LEASE)).toBeNull();
    expect(startedSyncers(manager)).toEqual(['r1']);
  }, 120_000);

  it('runs two `vc syncer --super-cluster r2`, one leading on vc-syncer-r2, which syncs the Pod to r2', async () => {
    for (let i = 0; i < 2; i++)
      syncers.push(spawner.spawn({ config, superCluster: 'r2', keep: KEEP, keepChars: 4000 }));
    await Promise.all(syncers.map((s) => s.ready));
    await runsOnR2('web-1');
    const leader = await eventually(async () => {
      const pid = pidOf(await holder());
      const leaders = syncers.filter((s) => s.child.pid === pid).map((s) => s.id);
      expect(leaders).toHaveLength(1);
      // What each process says agrees with the Lease: one in a term, the other standing by.
      expect(syncers.filter((s) => s.leaderAt !== undefined).map((s) => s.id)).toEqual(leaders);
      return syncers.find((s) => s.id === leaders[0])!;
    }, 30_000);
    // The manager leads on its own Lease and started no syncer for r2.
    const managerLease = await t.client.get<Lease>(R.leases, LEASE_NS, MANAGER_DEFAULTS.leaderElection.name);
    expect(pidOf(managerLease.spec?.holderIdentity)).toBe(manager.child.pid);
    expect(pidOf(await holder())).not.toBe(manager.child.pid);
    expect(startedSyncers(manager)).toEqual(['r1']);
    expect(startedSyncers(leader)).toEqual(['r2']);
  }, 180_000);

  it('hands r2 over when its leader is killed with SIGKILL: the other takes the Lease and syncs a new Pod', async () => {
    const pid = pidOf(await holder());
    const leader = syncers.find((s) => s.child.pid === pid);
    expect(leader).toBeDefined();
    const standby = syncers.find((s) => s !== leader)!;
    const before = await c2.get<Pod>(R.pods, superNamespace(keyX, 'team'), 'web-1');
    await killManager(leader!);
    await eventually(async () => expect(pidOf(await holder())).toBe(standby.child.pid), 30_000);
    await createPod('team', 'web-2', 'r2');
    await runsOnR2('web-2');
    // The first Pod is kept as it was: the new leader neither deleted nor recreated it.
    const after = await runsOnR2('web-1');
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(managerAlive(standby)).toBe(true);
  }, 180_000);

  it('runs the syncer of a registered super cluster alone when /superClusterRegistry/external names it', async () => {
    // The same system, now with r2 known only by its Cluster registration (the harness registered r1 and r2).
    await spawner.stopAll();
    const registered = join(dir, 'registered.yaml');
    writeFileSync(
      registered,
      stringify({
        ...parse(readFileSync(config, 'utf8')),
        superClusters: [{ name: 'r1', kubeconfig: t.sc.kubeconfigPath }],
        superClusterRegistry: { enabled: true, probeIntervalSeconds: 2, connectTimeoutSeconds: 2, external: ['r2'] },
      }),
    );
    const m = spawner.spawn({ config: registered, keep: KEEP, keepLines: 100, keepChars: 4000 });
    const s = spawner.spawn({ config: registered, superCluster: 'r2', keep: KEEP, keepChars: 4000 });
    await Promise.all([m.ready, s.ready]);
    await eventually(async () => expect(pidOf(await holder())).toBe(s.child.pid), 30_000);
    await createPod('team', 'web-3', 'r2');
    await runsOnR2('web-3');
    // The manager has its own syncer running and has seen r2's registration ready, and started no syncer for it.
    await eventually(() => {
      expect(startedSyncers(m)).toEqual(['r1']);
      expect(m.log.some((l) => l.includes('"msg":"super cluster registered"') && l.includes('/r2"'))).toBe(true);
    }, 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(m.log.filter((l) => l.includes('syncer started for a registered super cluster'))).toEqual([]);
    expect(startedSyncers(m)).toEqual(['r1']);
    expect(startedSyncers(s)).toEqual(['r2']);
  }, 180_000);

  it('refuses `vc syncer --super-cluster nosuch` with one line naming it', async () => {
    const run = execP(process.execPath, [vcBin, 'syncer', '-c', config, '--super-cluster', 'nosuch'], {
      env: { ...process.env, VC_FROM_SOURCE: '1' },
      timeout: 60_000,
    });
    const e = (await run.then(
      () => undefined,
      (err: unknown) => err,
    )) as { code?: number; stderr?: string } | undefined;
    expect(e?.code).toBe(1);
    const lines = (e?.stderr ?? '').trim().split('\n');
    expect(lines).toEqual([expect.stringMatching(/superClusters names no super cluster "nosuch" \(known: r1, r2\)$/)]);
  }, 60_000);
});
