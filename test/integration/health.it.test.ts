import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { registry as metrics } from '../../core/metrics/registry.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { tenantSyncerLag } from '../../core/syncer/metrics.ts';
import type { UpStatus } from '../../core/programs/cli/up.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

/** vc runs the CLI as a user would and answers what it printed (a failed command fails the test with its stderr). */
async function cli(...args: string[]): Promise<string> {
  const r = await execP(process.execPath, [vcBin, ...args], { timeout: 120_000 });
  return r.stdout;
}

/** MAX_WAITING is the syncer backlog this file's health monitor tolerates per tenant (the default is 10 000). */
const MAX_WAITING = 50;

/**
 * A local tenant's components die and hang on real processes; the manager's health monitor sees it, the
 * VirtualCluster shows which component and why (Degraded, Ready=False, events), the dead process is restarted with
 * its count in status, and the tenant returns to Running. A second tenant runs its controller manager with leader
 * election (its policy's extraArgs), so a hung controller manager shows as a Lease not renewed; a syncer in this
 * process serves both tenants, so its backlog on one is read into that tenant's health.
 */
describe('tenant health on a real local control plane', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let syncer: Syncer;
  /** every phase the poller saw, in order, collapsed */
  const phases: string[] = [];
  let polling = true;
  let poller: Promise<void> | undefined;

  const getVC = (name = 'hc') => t.client.get<VirtualCluster>(R.virtualclusters, 'default', name);
  const events = async () =>
    (
      await t.client.list<KubeObject & { reason?: string; message?: string; type?: string }>(R.events, {
        namespace: 'default',
        fieldSelector: 'involvedObject.kind=VirtualCluster,involvedObject.name=hc',
      })
    ).items;
  /** runningAndHealthy waits for Running with every component healthy (and what `also` asserts on the same status). */
  const runningAndHealthy = (also?: (vc: VirtualCluster) => void, name = 'hc') =>
    eventually(async () => {
      const vc = await getVC(name);
      expect(vc.status?.phase, vc.status?.message).toBe('Running');
      expect(vc.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      const names = (vc.status?.components ?? []).filter((c) => c.healthy).map((c) => c.name);
      expect(names).toEqual(expect.arrayContaining(['etcd', 'kube-apiserver', 'kube-controller-manager']));
      also?.(vc);
      return vc;
    }, 90_000);
  const restartsOf = (vc: VirtualCluster, name: string) =>
    vc.status?.components?.find((c) => c.name === name)?.restarts ?? 0;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'health', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    // The platform turns on the controller manager's leader election for the tenants of this policy (kube's own
    // defaults: a 15 s Lease, renewed within 10 s).
    await t.client.apply(
      R.tenantpolicies,
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'health-lease' },
        spec: {
          provisioners: { allowed: ['local'] },
          grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
          controlPlane: { controllerManager: { extraArgs: { 'leader-elect': 'true' } } },
        },
      },
      'test',
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-health-'));
    // `vc status` lists the tenants of the cluster that the state file of a running `vc up` names. This file's super
    // cluster stands in for vc up's: the record names its kubeconfig, and this process as the one that runs it.
    const up: UpStatus = {
      pid: process.pid,
      ready: true,
      startedAt: new Date().toISOString(),
      superKubeconfig: t.sc.kubeconfigPath,
      managerConfig: '-',
      gitURL: '-',
      opsURL: '-',
      kubectl: '-',
    };
    writeFileSync(join(stateDir, 'status.json'), JSON.stringify(up));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    const tenants = new MutableTenantRegistry();
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({ superClient: t.client, host, registry: tenants, patrolIntervalMs: 0, workers: 4 });
    await syncer.start();
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
      // as the manager wires it (core/programs/manager/lifecycle.ts), with a backlog limit a test can pass
      health: {
        intervalMs: 1000,
        timeoutMs: 1500,
        syncerLag: tenantSyncerLag,
        limits: { syncerMaxWaiting: MAX_WAITING },
      },
    });
    await controller.start();
    for (const [name, policyName] of [
      ['hc', undefined],
      ['hl', 'health-lease'],
    ] as const)
      await t.client.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name, namespace: 'default' },
        spec: { provisioner: { type: 'local' }, ...(policyName && { policyName }) },
      });
    poller = (async () => {
      while (polling) {
        const p = (await getVC().catch(() => undefined))?.status?.phase;
        if (p && phases.at(-1) !== p) phases.push(p);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }, 180_000);

  afterAll(async () => {
    polling = false;
    await poller;
    await controller?.stop();
    await syncer?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('reports every component healthy with the apiserver version once Running', async () => {
    const vc = await runningAndHealthy();
    const apiserver = vc.status!.components!.find((c) => c.name === 'kube-apiserver')!;
    expect(apiserver.version).toMatch(/^v1\.\d+\.\d+/);
    expect(restartsOf(vc, 'kube-apiserver')).toBe(0);
  });

  it('a killed apiserver: Degraded naming kube-apiserver, a Warning, restarted, Running again with its count', async () => {
    const root = (await getVC()).status!.clusterNamespace!;
    phases.length = 0;
    local.controlPlane(root)!.apiserver.kill();
    await eventually(() => expect(phases).toContain('Degraded'), 30_000);
    const vc = await runningAndHealthy();
    expect(restartsOf(vc, 'kube-apiserver')).toBe(1);
    // the per-tenant metrics say the same: healthy again, and the restart counted
    const metric = async (name: string, component?: string) => {
      const text = await metrics.getSingleMetricAsString(name);
      const line = text
        .split('\n')
        .find((l) => l.includes(`tenant="${root}"`) && (!component || l.includes(`component="${component}"`)));
      return Number(line?.split(' ').pop());
    };
    await eventually(async () => {
      expect(await metric('vc_tenant_healthy')).toBe(1);
      expect(await metric('vc_tenant_component_healthy', 'kube-apiserver')).toBe(1);
      expect(await metric('vc_tenant_component_restarts', 'kube-apiserver')).toBe(1);
    });
    // The events are recorded after the status they describe is written, so they are read until they are there.
    await eventually(async () => {
      const ev = await events();
      const seen = JSON.stringify(ev.map((e) => [e.reason, e.message]));
      const down = ev.filter((e) => e.type === 'Warning' && e.message?.startsWith('kube-apiserver: '));
      expect(down.length, seen).toBeGreaterThan(0);
      expect(
        ev.some((e) => e.reason === 'Recovered'),
        seen,
      ).toBe(true);
      expect(
        ev.some(
          (e) => e.reason === 'ComponentRestarted' && e.message?.startsWith('kube-apiserver died and was restarted'),
        ),
        seen,
      ).toBe(true);
    });
  });

  it('a killed etcd: Degraded naming etcd (not the apiserver that fails with it), restarted, Running again', async () => {
    const root = (await getVC()).status!.clusterNamespace!;
    // A loaded host can time out an etcd /health probe before this test: only a Warning written after the kill counts
    // (a new event, or a repeated one whose count went up).
    const etcdWarnings = async () =>
      (await events())
        .filter((e) => e.type === 'Warning' && e.message?.startsWith('etcd: '))
        .map((e) => `${e.metadata?.uid}/${(e as { count?: number }).count ?? 1}`);
    const before = new Set(await etcdWarnings());
    phases.length = 0;
    local.tenantEtcd(root)!.process.kill();
    // etcd is back within a second or two, often before a probe looks: the provisioner's word that it died is enough
    // for the Warning naming it, written with the Degraded status, which is the lasting proof.
    await eventually(async () => {
      const now = await etcdWarnings();
      expect(
        now.filter((w) => !before.has(w)),
        JSON.stringify(await events()),
      ).not.toEqual([]);
    }, 90_000);
    const vc = await runningAndHealthy((v) => expect(restartsOf(v, 'etcd')).toBe(1));
    expect(restartsOf(vc, 'kube-apiserver')).toBe(1);
  });

  it('a hung apiserver (stopped, not dead): Degraded with ApiserverUnreachable until it answers again', async () => {
    const root = (await getVC()).status!.clusterNamespace!;
    const pid = await eventually(() => {
      const p = local.controlPlane(root)!.apiserver.pid;
      expect(p).toBeDefined();
      return p!;
    });
    process.kill(pid, 'SIGSTOP');
    try {
      const vc = await eventually(async () => {
        const v = await getVC();
        expect(v.status?.phase).toBe('Degraded');
        return v;
      }, 30_000);
      const ready = vc.status!.conditions!.find((c) => c.type === 'Ready')!;
      expect(ready).toMatchObject({ status: 'False', reason: 'ApiserverUnreachable' });
      expect(ready.message).toMatch(/^kube-apiserver: /);
      // What a user reads meanwhile: `vc get`'s HEALTH column, `vc status`'s tenant line and `vc describe` name the
      // hung component and why.
      const kc = ['--kubeconfig', t.sc.kubeconfigPath];
      expect(await cli('get', '-n', 'default', ...kc)).toMatch(
        /^default\s+hc\s+Degraded\s+kube-apiserver: ApiserverUnreachable\s+local\s/m,
      );
      const up = JSON.parse(await cli('status', '--state-dir', stateDir, '-o', 'json')) as {
        tenants: Array<{ name: string; phase: string; health: string }>;
      };
      expect(up.tenants.find((x) => x.name === 'hc')).toMatchObject({
        phase: 'Degraded',
        health: 'kube-apiserver: ApiserverUnreachable',
      });
      const text = await cli('status', '--state-dir', stateDir);
      expect(text).toMatch(/^ {2}default\/hc {2}Degraded {2}kube-apiserver: ApiserverUnreachable/m);
      const described = await cli('describe', 'hc', ...kc);
      expect(described).toMatch(/^Phase:\s+Degraded$/m);
      expect(described).toMatch(/^ {2}kube-apiserver\s+false\s+\S+\s+\S+\s+ApiserverUnreachable\s/m);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const vc = await runningAndHealthy();
    // Not a restart: the same process answers again.
    expect(local.controlPlane(root)!.apiserver.pid).toBe(pid);
    expect(restartsOf(vc, 'kube-apiserver')).toBe(1);
    // and the CLI says so
    await eventually(async () =>
      expect(await cli('get', 'hc', '--kubeconfig', t.sc.kubeconfigPath)).toMatch(
        /^default\s+hc\s+Running\s+Healthy\s/m,
      ),
    );
  });

  it('a hung controller manager with leader election: Degraded naming its Lease not renewed, Running once it renews', async () => {
    const vc0 = await runningAndHealthy((v) => {
      const kcm = v.status!.components!.find((c) => c.name === 'kube-controller-manager')!;
      // the Lease is read: the healthy line names its holder
      expect(kcm.message).toMatch(/^leader \S+/);
    }, 'hl');
    const root = vc0.status!.clusterNamespace!;
    const pid = local.controlPlane(root)!.controllerManager!.pid!;
    expect(pid).toBeDefined();
    process.kill(pid, 'SIGSTOP');
    try {
      // The process lives on, so only the Lease tells: 15 s of Lease and 5 s of grace after its last renewal.
      const vc = await eventually(async () => {
        const v = await getVC('hl');
        expect(v.status?.phase).toBe('Degraded');
        expect(v.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('LeaseNotRenewed');
        return v;
      }, 60_000);
      const ready = vc.status!.conditions!.find((c) => c.type === 'Ready')!;
      expect(ready).toMatchObject({ status: 'False', reason: 'LeaseNotRenewed' });
      expect(ready.message).toMatch(
        /^kube-controller-manager: leader Lease kube-system\/kube-controller-manager \(holder \S+\) not renewed within 20 s$/,
      );
      const kcm = vc.status!.components!.find((c) => c.name === 'kube-controller-manager')!;
      expect(kcm).toMatchObject({ healthy: false, reason: 'LeaseNotRenewed' });
      // the other components are not blamed
      for (const c of vc.status!.components!.filter((x) => x.name !== 'kube-controller-manager'))
        expect(c.healthy, c.name).toBe(true);
      const ev = await t.client.list<KubeObject & { reason?: string; type?: string }>(R.events, {
        namespace: 'default',
        fieldSelector: 'involvedObject.kind=VirtualCluster,involvedObject.name=hl',
      });
      expect(ev.items.some((e) => e.type === 'Warning' && e.reason === 'LeaseNotRenewed')).toBe(true);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // Woken past its renew deadline, the controller manager either renews or exits and is restarted by the
    // manager; either way a controller manager holds a fresh Lease again.
    await runningAndHealthy(undefined, 'hl');
  });

  it("a syncer that falls behind on a tenant: Degraded naming the syncer's backlog, Running once it catches up", async () => {
    const root = (await runningAndHealthy()).status!.clusterNamespace!;
    const tenant = await local.controlPlane(root)!.client();
    const count = MAX_WAITING * 3;
    // Paused, the syncer's workers hold their keys and the tenant's new ConfigMaps queue up behind them.
    syncer.pause();
    try {
      for (let i = 0; i < count; i += 25)
        await Promise.all(
          Array.from({ length: Math.min(25, count - i) }, (_, j) =>
            tenant.create(R.configmaps, {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: `lag-${i + j}`, namespace: 'default' },
              data: { n: String(i + j) },
            }),
          ),
        );
      const vc = await eventually(async () => {
        const v = await getVC();
        expect(v.status?.phase).toBe('Degraded');
        expect(v.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('SyncerBacklog');
        return v;
      }, 30_000);
      const ready = vc.status!.conditions!.find((c) => c.type === 'Ready')!;
      expect(ready).toMatchObject({ status: 'False', reason: 'SyncerBacklog' });
      expect(ready.message).toBe(`syncer: more than ${MAX_WAITING} of the tenant's keys wait in the syncer's queue`);
      expect(vc.status!.components!.find((c) => c.name === 'syncer')).toMatchObject({
        healthy: false,
        reason: 'SyncerBacklog',
      });
      // the lag itself is the syncer's queue depth for the tenant, in the metrics
      const depth = await metrics.getSingleMetricAsString('vc_syncer_queue_depth');
      const line = depth.split('\n').find((l) => l.includes(`tenant="${root}"`));
      expect(Number(line?.split(' ').pop()), depth).toBeGreaterThan(MAX_WAITING);
      // the control plane itself is fine
      for (const c of vc.status!.components!.filter((x) => x.name !== 'syncer')) expect(c.healthy, c.name).toBe(true);
    } finally {
      syncer.resume();
    }
    await runningAndHealthy((v) =>
      expect(v.status!.components!.find((c) => c.name === 'syncer')).toMatchObject({ healthy: true }),
    );
    // and it caught up: every ConfigMap reached the super cluster
    await eventually(async () => {
      const copied = await t.client.list(R.configmaps, { namespace: superNamespace(root, 'default') });
      const names = new Set(copied.items.map((c) => c.metadata?.name));
      expect(Array.from({ length: count }, (_, i) => `lag-${i}`).filter((n) => !names.has(n))).toEqual([]);
    }, 60_000);
  });
});
