import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LABEL, rootNamespace, superNamespace } from '../../core/names/names.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { saidByTheObject } from '../../plugins/events/index.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { killManager, type ManagerProc, ManagerSpawner, nonZero, scrape, sum } from '../managerproc.ts';

/**
 * The manager killed with SIGKILL while its tenants' Pods are synced: a standby replica, whose caches were synced
 * while it stood by, takes the Lease and writes nothing for objects that did not change, then syncs a change made
 * afterwards. Then that leader is paused (SIGSTOP) past its Lease: a third replica takes over, and the paused one,
 * woken, writes nothing. The managers are separate processes (`vc manager`), as in production.
 */

interface Pod extends KubeObject {
  status?: { phase?: string };
}

const TENANTS = 2;
const PODS = Number(process.env.RESTART_PODS ?? 100);

const spawner = new ManagerSpawner();
const progress = (msg: string) => process.stdout.write(`[restart ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);

async function startManager(config: string): Promise<ManagerProc> {
  const m = spawner.spawn({ config, keep: /lead|"level":"(warn|error|fatal)"/, keepLines: 200 });
  const port = await m.ready;
  progress(`manager ${m.child.pid} serving /metrics on ${port}`);
  return m;
}

describe('manager restart after kill -9', () => {
  let t: TestSuper;
  let dir: string;
  let config: string;
  const cps: LocalControlPlane[] = [];
  const clients: KubeClient[] = [];
  const keys: string[] = [];

  beforeAll(async () => {
    t = await startTestSuper({ nodes: Math.ceil((TENANTS * PODS + 10) / 100) });
    dir = mkdtempSync(join(tmpdir(), 'vc-restart-'));
    for (let i = 0; i < TENANTS; i++) {
      const cp = await t.sc.addControlPlane(`tenant-${i}`, { controllers: TENANT_CONTROLLERS });
      cps.push(cp);
      clients.push(await cp.client());
      keys.push(rootNamespace('team', `t${i}`, `uid-${i}`));
    }
    config = join(dir, 'manager.yaml');
    writeFileSync(
      config,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
        syncer: { workers: 8, patrolIntervalSeconds: 0 },
        leaderElection: { enabled: true, leaseDurationSeconds: 10, renewDeadlineSeconds: 8, retryPeriodSeconds: 1 },
        tenants: cps.map((cp, i) => ({
          name: `t${i}`,
          namespace: 'team',
          uid: `uid-${i}`,
          kubeconfig: cp.kubeconfigPath,
          superCluster: 'one',
        })),
      }),
    );
  });

  afterAll(async () => {
    for (const m of spawner.managers) progress(`manager ${m.child.pid} log:\n${m.log.join('\n')}`);
    await spawner.stopAll();
    for (const c of clients) c.close();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** settled waits until a manager's queue is empty and its pods plugin has reconciled at least `pods` keys. */
  const settled = (m: ManagerProc, pods: number, timeoutMs: number) =>
    eventually(async () => {
      const done = sum(
        (await scrape(m, 'vc_syncer_sync_duration_seconds_count')).filter((x) => x.labels.plugin === 'pods'),
      );
      expect(done).toBeGreaterThanOrEqual(pods);
      const depth = await scrape(m, 'vc_syncer_queue_depth');
      expect(depth.length).toBe(TENANTS);
      expect(sum(depth)).toBe(0);
      expect(sum(await scrape(m, 'vc_syncer_in_flight'))).toBe(0);
    }, timeoutMs);

  /**
   * lostCopies lists the super events about each tenant's Pods that should have a copy in the tenant and have none:
   * the events plugin copies each once, so after a settle none may be missing, or the next leader would write it.
   * Those it does not copy (saidByTheObject: the scheduler's Scheduled, which the Binding says) are counted apart, and
   * none of them may have a copy.
   */
  const lostCopies = async (): Promise<{ copied: number; lost: string[]; notCopied: number }> => {
    type Ev = KubeObject & { involvedObject?: { kind?: string }; reason?: string };
    let copied = 0;
    let notCopied = 0;
    const lost: string[] = [];
    for (const [i, c] of clients.entries()) {
      const sns = superNamespace(keys[i]!, 'default');
      const supers = (await t.client.listAll<Ev>(R.events, { namespace: sns })).items;
      const copies = new Set(
        (await c.listAll<Ev>(R.events, { namespace: 'default' })).items.map((e) => e.metadata?.name),
      );
      for (const e of supers.filter((x) => x.involvedObject?.kind === 'Pod'))
        if (saidByTheObject(e as Parameters<typeof saidByTheObject>[0])) {
          if (copies.has(e.metadata?.name)) lost.push(`${sns}/${e.metadata?.name} (copied, should not be)`);
          else notCopied++;
        } else if (copies.has(e.metadata?.name)) copied++;
        else lost.push(`${sns}/${e.metadata?.name}`);
    }
    return { copied, lost, notCopied };
  };

  /** warm checks that a manager stands by with the super cache and every tenant's cache synced, having written nothing. */
  const warm = (m: ManagerProc) =>
    eventually(async () => {
      expect(sum(await scrape(m, 'vc_leader_is_leader'))).toBe(0);
      const synced = await scrape(m, 'vc_syncer_cache_synced');
      expect(synced.map((x) => `${x.labels.side} ${x.labels.tenant} ${x.value}`).sort()).toEqual(
        ['super  1', ...keys.map((k) => `tenant ${k} 1`)].sort(),
      );
      expect(await nonZero(m, 'vc_syncer_sync_duration_seconds_count')).toEqual([]);
      expect(await nonZero(m, 'vc_syncer_writes_total')).toEqual([]);
    }, 120_000);

  it(
    'a warm standby writes nothing for unchanged objects after a kill -9, and a leader paused past its Lease writes nothing once woken',
    { timeout: 500_000 },
    async () => {
      const first = await startManager(config);
      // Standby replicas from the start, as deployed: their caches follow everything the first one syncs.
      const standbys = await Promise.all([startManager(config), startManager(config)]);
      for (const c of clients) await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 30_000);
      progress(`creating ${TENANTS}x${PODS} Pods`);
      await Promise.all(
        clients.map(async (c) => {
          for (let j = 0; j < PODS; j += 10)
            await Promise.all(
              Array.from({ length: Math.min(10, PODS - j) }, (_, k) =>
                c.create(R.pods, {
                  apiVersion: 'v1',
                  kind: 'Pod',
                  metadata: { name: `p-${j + k}`, namespace: 'default' },
                  spec: { containers: [{ name: 'c', image: 'nginx' }] },
                }),
              ),
            );
        }),
      );
      await eventually(async () => {
        if (first.child.exitCode !== null) throw new Error(`manager exited: ${first.log.join('\n')}`);
        for (const c of clients) {
          const pods = (await c.listAll<Pod & { spec?: { nodeName?: string } }>(R.pods, { namespace: 'default' }))
            .items;
          expect(pods.filter((p) => p.status?.phase === 'Running' && p.spec?.nodeName)).toHaveLength(PODS);
        }
      }, 120_000).catch((e: unknown) => {
        throw new Error(`tenant Pods not Running; manager log:\n${first.log.join('\n')}\n${String(e)}`);
      });
      progress('tenant Pods Running; waiting for the first manager to settle');
      await settled(first, TENANTS * PODS, 60_000).catch((e: unknown) => {
        throw new Error(`first manager did not settle; its log:\n${first.log.join('\n')}\n${String(e)}`);
      });
      const written = await scrape(first, 'vc_syncer_writes_total');
      const perPod = (side: string) =>
        sum(written.filter((x) => x.labels.side === side && x.labels.plugin === 'pods')) / (TENANTS * PODS);
      expect(perPod('super')).toBeGreaterThan(0);
      // Every super event about the Pods that is copied has its copy, and none that is not: none was lost.
      const events = await lostCopies();
      const waited = sum(
        (await scrape(first, 'vc_syncer_skips_total')).filter((x) => x.labels.reason === 'WaitingForInvolvedObject'),
      );
      progress(
        `first manager settled; ${events.copied} event copies (${waited} plans waited for the Pod), ` +
          `lost ${JSON.stringify(events.lost)}`,
      );
      expect(events.lost).toEqual([]);
      // kwok Pods get no kubelet events: each has its Scheduled, which stays in the super cluster.
      expect(events.notCopied).toBeGreaterThanOrEqual(TENANTS * PODS);

      for (const m of standbys) await warm(m);
      progress('standbys warm');
      await killManager(first);
      const killedAt = performance.now();
      progress('first manager killed');
      // Either standby may take the Lease; the other stands by on.
      const second = await eventually(() => {
        const m = standbys.find((x) => x.leaderAt !== undefined);
        expect(m).toBeDefined();
        return m!;
      }, 60_000);
      const third = standbys.find((x) => x !== second)!;
      await settled(second, TENANTS * PODS, 60_000).catch((e: unknown) => {
        throw new Error(`second manager did not settle; its log:\n${second.log.join('\n')}\n${String(e)}`);
      });
      const servingMs = performance.now() - killedAt;
      progress('second manager settled');
      const afterLeaderMs = performance.now() - (second.leaderAt ?? second.startedAt);
      // Quiet for a moment more: late writes (a token refresh, a status) would show up here.
      await new Promise((r) => setTimeout(r, 2000));
      const after = (await scrape(second, 'vc_syncer_writes_total')).filter((x) => x.value > 0);
      process.stdout.write(
        `restart: ${TENANTS}x${PODS} Pods; first manager wrote ${perPod('tenant').toFixed(2)} tenant + ` +
          `${perPod('super').toFixed(2)} super writes per Pod (pods plugin); the warm standby serving ` +
          `${(servingMs / 1000).toFixed(1)} s after the kill (${(afterLeaderMs / 1000).toFixed(1)} s after it took the ` +
          `Lease), writes ${JSON.stringify(after)}\n`,
      );
      expect(after).toEqual([]);

      // A change made now is synced, and written.
      await clients[0]!.patch(
        R.pods,
        'default',
        'p-0',
        [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:1.27' }],
        'json',
      );
      const sns = superNamespace(keys[0]!, 'default');
      await eventually(async () =>
        expect(
          (await t.client.get<Pod & { spec: { containers: Array<{ image: string }> } }>(R.pods, sns, 'p-0')).spec
            .containers[0]?.image,
        ).toBe('nginx:1.27'),
      );
      const patched = await scrape(second, 'vc_syncer_writes_total');
      expect(
        patched.filter((x) => x.labels.op === 'patchSuper' && x.labels.resource === 'pods').map((x) => x.value),
      ).toEqual([1]);
      expect((await t.client.list(R.pods, { labelSelector: `${LABEL.cluster}=${keys[0]}` })).items.length).toBe(PODS);

      // The leader paused past its Lease (a frozen VM, a long GC): the third replica takes over; the paused one, woken
      // with a change of its tenants in its watch streams, writes nothing.
      const wroteBefore = await nonZero(second, 'vc_syncer_writes_total');
      process.kill(second.child.pid!, 'SIGSTOP');
      try {
        progress('second manager paused');
        await eventually(() => expect(third.leaderAt).toBeDefined(), 60_000);
        await clients[0]!.patch(
          R.pods,
          'default',
          'p-1',
          [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:1.28' }],
          'json',
        );
        await eventually(async () =>
          expect(
            (await t.client.get<Pod & { spec: { containers: Array<{ image: string }> } }>(R.pods, sns, 'p-1')).spec
              .containers[0]?.image,
          ).toBe('nginx:1.28'),
        );
      } finally {
        process.kill(second.child.pid!, 'SIGCONT');
      }
      progress('third manager leads and synced the change; second manager woken');
      await eventually(() => expect(second.leaderAt).toBeUndefined(), 60_000);
      await new Promise((r) => setTimeout(r, 2000));
      expect(await nonZero(second, 'vc_syncer_writes_total')).toEqual(wroteBefore);
      expect(
        (await scrape(third, 'vc_syncer_writes_total'))
          .filter((x) => x.value > 0 && x.labels.op !== 'event')
          .map((x) => `${x.labels.op} ${x.labels.resource} ${x.value}`),
      ).toEqual(['patchSuper pods 1']);
      await killManager(second);
      await killManager(third);
    },
  );
});
