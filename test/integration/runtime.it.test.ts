import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { LeaderElector } from '../../core/leader/election.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { eventually } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';

/** NS holds this file's Leases: on the shared super cluster no other file uses it. */
const NS = 'runtime-it';

describe('runtime on a real super cluster', () => {
  let t: SharedTestSuper;
  beforeAll(async () => {
    t = await sharedTestSuper();
    await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  });
  afterAll(async () => {
    await t?.client.delete(R.namespaces, undefined, NS).catch(() => undefined);
    await t?.stop();
  });

  it('moves leadership to the second candidate when the holder stops', async () => {
    const events: string[] = [];
    const elector = (identity: string) =>
      new LeaderElector({
        client: t.client,
        namespace: NS,
        name: 'vc-manager',
        identity,
        leaseDurationSeconds: 4,
        renewDeadlineSeconds: 3,
        retryPeriodSeconds: 1,
        onStartedLeading: () => void events.push(`${identity} started`),
        onStoppedLeading: () => void events.push(`${identity} stopped`),
      });
    const a = elector('a');
    const b = elector('b');
    const stopA = new AbortController();
    const stopB = new AbortController();
    const runA = a.run(stopA.signal);
    await eventually(() => expect(a.isLeader()).toBe(true), 20_000);
    const runB = b.run(stopB.signal);
    // b must wait while a renews.
    await new Promise((r) => setTimeout(r, 5000));
    expect(b.isLeader()).toBe(false);
    const lease = await t.client.get<KubeObject & { spec: { holderIdentity: string } }>(R.leases, NS, 'vc-manager');
    expect(lease.spec.holderIdentity).toBe('a');

    stopA.abort();
    await runA;
    await eventually(() => expect(b.isLeader()).toBe(true), 20_000);
    const after = await t.client.get<KubeObject & { spec: { holderIdentity: string; leaseTransitions: number } }>(
      R.leases,
      NS,
      'vc-manager',
    );
    expect(after.spec.holderIdentity).toBe('b');
    expect(after.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
    expect(events).toEqual(['a started', 'a stopped', 'b started']);
    stopB.abort();
    await runB;
  });

  it('releases the lease when the work of a term fails to start, so a candidate that can run takes over', async () => {
    type Lease = KubeObject & { spec: { holderIdentity?: string } };
    const events: string[] = [];
    const elector = (identity: string, startFails: boolean) =>
      new LeaderElector({
        client: t.client,
        namespace: NS,
        name: 'vc-failing-start',
        identity,
        leaseDurationSeconds: 30,
        renewDeadlineSeconds: 20,
        retryPeriodSeconds: 1,
        onStartedLeading: async () => {
          events.push(`${identity} started`);
          if (startFails) throw new Error('start failed halfway');
        },
        onStoppedLeading: () => void events.push(`${identity} stopped`),
      });
    const failing = elector('failing', true);
    // run returns by itself: the term ended although nothing cancelled it and no renewal failed.
    await failing.run(new AbortController().signal);
    expect(failing.isLeader()).toBe(false);
    expect(events).toEqual(['failing started', 'failing stopped']);
    const lease = await t.client.get<Lease>(R.leases, NS, 'vc-failing-start');
    expect(lease.spec.holderIdentity ?? '').toBe('');
    // Released, not left to expire (30 s): the next candidate leads at once.
    const working = elector('working', false);
    const stop = new AbortController();
    const run = working.run(stop.signal);
    await eventually(() => expect(working.isLeader()).toBe(true), 20_000);
    expect((await t.client.get<Lease>(R.leases, NS, 'vc-failing-start')).spec.holderIdentity).toBe('working');
    stop.abort();
    await run;
  });

  it('a candidate stopped while its write takes the lease gives the lease back, though it never heard the answer', async () => {
    type Lease = KubeObject & { spec: { holderIdentity?: string } };
    const stop = new AbortController();
    // The real apiserver applies the candidate's first write; its answer is then lost to the stop (as when SIGTERM
    // aborts a request already on the wire), so the candidate only sees an aborted request.
    let cut = false;
    const client = Object.create(t.client) as KubeClient;
    client.request = async <T>(method: string, path: string, opts?: Parameters<KubeClient['request']>[2]) => {
      const answer = await t.client.request<T>(method, path, opts);
      if (cut || method === 'GET') return answer;
      cut = true;
      stop.abort();
      throw new DOMException('This operation was aborted', 'AbortError');
    };
    const events: string[] = [];
    const candidate = new LeaderElector({
      client,
      namespace: NS,
      name: 'vc-cut-short',
      identity: 'cut-short',
      leaseDurationSeconds: 30,
      renewDeadlineSeconds: 20,
      retryPeriodSeconds: 1,
      onStartedLeading: () => void events.push('started'),
      onStoppedLeading: () => void events.push('stopped'),
    });
    await candidate.run(stop.signal);
    expect(cut).toBe(true);
    expect(events).toEqual([]);
    // Given back, not left to expire (30 s) with nobody renewing it.
    expect((await t.client.get<Lease>(R.leases, NS, 'vc-cut-short')).spec.holderIdentity ?? '').toBe('');
  });

  it('answers requests while watches hold as many connections as requests may use', async () => {
    // A manager's informers hold more watches than its request connections: none of them may queue a request (a
    // lease renewal) until a watch ends.
    const kc = new KubeConfig();
    kc.loadFromFile(t.sc.kubeconfigPath);
    const c = await KubeClient.fromKubeConfig(kc, { maxSockets: 2 });
    const stop = new AbortController();
    try {
      // Three watches on a client of two request connections; each shows the objects that exist, so it is open.
      const seen = new Set<string>();
      const watches = [R.configmaps, R.serviceaccounts, R.namespaces].map((r) =>
        c.watch(r, { timeoutSeconds: 120 }, () => void seen.add(r.resource), stop.signal),
      );
      await eventually(() => expect(seen.size).toBe(3), 20_000);
      const ns = await c.request('GET', '/api/v1/namespaces/default', { timeoutMs: 5000 });
      expect(ns).toMatchObject({ metadata: { name: 'default' } });
      stop.abort();
      await Promise.all(watches);
    } finally {
      stop.abort();
      c.close();
    }
  });

  it('runs an extra apiserver on the shared etcd as an isolated control plane', async () => {
    const tenant = await t.sc.addControlPlane('tenant-a');
    const tc = await tenant.client();
    await tc.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'only-in-tenant-a' } });
    expect(await tc.getOrNull(R.namespaces, undefined, 'only-in-tenant-a')).not.toBeNull();
    expect(await t.client.getOrNull(R.namespaces, undefined, 'only-in-tenant-a')).toBeNull();
    // Its own controller-manager runs: the namespace gets its default ServiceAccount.
    await eventually(() => tc.get(R.serviceaccounts, 'only-in-tenant-a', 'default'), 30_000);
    // No nodes of the super cluster leak into the tenant.
    expect((await tc.list(R.nodes)).items).toHaveLength(0);
  });
});

describe('process cleanup', () => {
  it('leaves no component running when the parent process is SIGKILLed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-kill-'));
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join(import.meta.dirname, '../fixtures/start-super.ts'), dir],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const line = await new Promise<string>((res, rej) => {
        createInterface({ input: child.stdout! }).once('line', res);
        child.once('exit', (c) => rej(new Error(`fixture exited ${c}`)));
      });
      const { pids } = JSON.parse(line) as { pids: number[] };
      expect(pids).toHaveLength(5);
      for (const pid of pids) expect(alive(pid)).toBe(true);
      child.kill('SIGKILL');
      await eventually(() => {
        for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
      }, 15_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
