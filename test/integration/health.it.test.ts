import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

/**
 * A local tenant's components die and hang on real processes; the manager's health monitor sees it, the
 * VirtualCluster shows which component and why (Degraded, Ready=False, events), the dead process is restarted with
 * its count in status, and the tenant returns to Running.
 */
describe('tenant health on a real local control plane', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  /** every phase the poller saw, in order, collapsed */
  const phases: string[] = [];
  let polling = true;
  let poller: Promise<void> | undefined;

  const getVC = () => t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'hc');
  const events = async () =>
    (
      await t.client.list<KubeObject & { reason?: string; message?: string; type?: string }>(R.events, {
        namespace: 'default',
        fieldSelector: 'involvedObject.kind=VirtualCluster,involvedObject.name=hc',
      })
    ).items;
  /** runningAndHealthy waits for Running with every component healthy (and what `also` asserts on the same status). */
  const runningAndHealthy = (also?: (vc: VirtualCluster) => void) =>
    eventually(async () => {
      const vc = await getVC();
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
    stateDir = mkdtempSync(join(tmpdir(), 'vc-health-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      health: { intervalMs: 1000, timeoutMs: 1500 },
    });
    await controller.start();
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'hc', namespace: 'default' },
      spec: { provisioner: { type: 'local' } },
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
    const ev = await events();
    const down = ev.filter((e) => e.type === 'Warning' && e.message?.startsWith('kube-apiserver: '));
    expect(down.length, JSON.stringify(ev.map((e) => [e.reason, e.message]))).toBeGreaterThan(0);
    expect(ev.some((e) => e.reason === 'Recovered')).toBe(true);
    expect(
      ev.some(
        (e) => e.reason === 'ComponentRestarted' && e.message?.startsWith('kube-apiserver died and was restarted'),
      ),
    ).toBe(true);
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
    // etcd is back within a second or two: the Warning naming it, written with the Degraded status, is the lasting proof.
    await eventually(async () => {
      const now = await etcdWarnings();
      expect(
        now.filter((w) => !before.has(w)),
        JSON.stringify(await events()),
      ).not.toEqual([]);
    }, 30_000);
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
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const vc = await runningAndHealthy();
    // Not a restart: the same process answers again.
    expect(local.controlPlane(root)!.apiserver.pid).toBe(pid);
    expect(restartsOf(vc, 'kube-apiserver')).toBe(1);
  });
});
