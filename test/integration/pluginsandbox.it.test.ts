import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { rootNamespace, superNamespace } from '../../core/names/names.ts';
import { sandboxDisabled, sandboxStopsTotal } from '../../core/plugins/sandbox/sandbox.ts';
import { pluginErrorsTotal } from '../../core/plugins/failures.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const FIXTURE = join(import.meta.dirname, '../../core/plugins/sandbox/testdata/misbehaving');
const ANN = 'example.com/sandboxed';

async function metric(
  m: { get(): Promise<{ values: Array<{ labels: Record<string, unknown>; value: number }> }> },
  labels: Record<string, string>,
) {
  const got = await m.get();
  return got.values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((a, v) => a + v.value, 0);
}

/**
 * A misbehaving third-party plugin (core/plugins/sandbox/testdata/misbehaving), run by the real manager's syncer in
 * the sandbox: a mutator of ConfigMaps that loops, allocates without end, throws or reads an undeclared resource
 * when tenant A's ConfigMap asks it to. Every call is stopped by name, the plugin is disabled after twelve stops, and
 * both tenants' ConfigMaps keep syncing throughout.
 */
describe('a sandboxed plugin on the real syncer', () => {
  let t: TestSuper;
  let dir: string;
  let manager: Manager;
  const tenants: Record<'a' | 'b', KubeClient> = {} as Record<'a' | 'b', KubeClient>;
  const superNs = (k: 'a' | 'b') => superNamespace(rootNamespace(`team-${k}`, k, `uid-${k}`), 'default');
  const superCm = (k: 'a' | 'b', name: string) => t.client.get<KubeObject>(R.configmaps, superNs(k), name);
  const create = (k: 'a' | 'b', name: string, misbehave?: string) =>
    tenants[k].create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'default', ...(misbehave && { labels: { misbehave } }) },
      data: { k: name },
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-plugin-sandbox-'));
    t = await startTestSuper({ nodes: 1 });
    const list = [];
    for (const k of ['a', 'b'] as const) {
      const cp = await t.sc.addControlPlane(`tenant-${k}`, { controllers: TENANT_CONTROLLERS });
      tenants[k] = await cp.client();
      list.push({ name: k, namespace: `team-${k}`, uid: `uid-${k}`, kubeconfig: cp.kubeconfigPath });
    }
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
        syncer: { workers: 4, patrolIntervalSeconds: 0 },
        plugins: { sandboxed: [FIXTURE], sandbox: { cpuMillis: 100, memoryMiB: 32, maxFailures: 12 } },
        tenants: list,
      }),
    );
    manager = await startManager(loadManagerConfig(file), file);
  });

  afterAll(async () => {
    await manager?.stop();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs the plugin in its sandbox for every tenant', async () => {
    await create('a', 'good-a1');
    await create('b', 'good-b1');
    for (const [k, name] of [
      ['a', 'good-a1'],
      ['b', 'good-b1'],
    ] as const) {
      const cm = await eventually(() => superCm(k, name), 60_000);
      expect(cm.metadata?.annotations?.[ANN]).toMatch(new RegExp(`^yes ns=${superNs(k)} peers=\\d+$`));
    }
  });

  it('stops a plugin that throws, loops, allocates or reads what it did not declare, disables it, and syncs on for both tenants', async () => {
    const thrown = await metric(pluginErrorsTotal, { plugin: 'misbehaving', hook: 'mutate' });
    await create('a', 'bad-throw', 'throw');
    await eventually(
      async () => expect(await metric(pluginErrorsTotal, { plugin: 'misbehaving' })).toBeGreaterThan(thrown),
      30_000,
    );
    // A plugin that throws is an ordinary plugin error: the object is skipped, the plugin is not stopped.
    expect(await metric(sandboxStopsTotal, { plugin: 'misbehaving' })).toBe(0);
    await create('b', 'good-b2');
    expect((await eventually(() => superCm('b', 'good-b2'), 30_000)).metadata?.annotations?.[ANN]).toMatch(/^yes /);

    // The syncer retries each stalled object with backoff, and every retry that is stopped counts: all three kinds
    // are created at once so each is stopped before the stops add up to maxFailures.
    for (const how of ['loop', 'alloc', 'peek']) await create('a', `bad-${how}`, how);
    for (const reason of ['cpu', 'memory', 'undeclared'])
      await eventually(
        async () => expect(await metric(sandboxStopsTotal, { plugin: 'misbehaving', reason })).toBeGreaterThan(0),
        60_000,
      );
    await create('b', 'good-b3');
    await eventually(() => superCm('b', 'good-b3'), 30_000);
    await eventually(async () => expect(await metric(sandboxDisabled, { plugin: 'misbehaving' })).toBe(1), 60_000);
    expect(await metric(sandboxDisabled, { plugin: 'misbehaving' })).toBe(1);
    // Disabled, the plugin is off for every tenant: what it stalled now syncs without it, for both tenants.
    const looped = await eventually(() => superCm('a', 'bad-loop'), 60_000);
    expect(looped.metadata?.annotations?.[ANN]).toBeUndefined();
    await create('a', 'good-a2');
    expect((await eventually(() => superCm('a', 'good-a2'), 30_000)).metadata?.annotations?.[ANN]).toBeUndefined();
  });
});
