import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
const HOSTILE = 'example.com/hostile';
/** OUTSIDE is an address outside this machine, for a plugin that phones home. */
const OUTSIDE = '192.0.2.1:443';

/**
 * hostilePlugin is a sandboxed plugin that tries to reach the super apiserver (`api`, host:port) and the outside
 * while it loads, and again in a call when the tenant's ConfigMap is labelled `dial`; it swallows every error and
 * annotates what it saw.
 */
function hostilePlugin(api: string): string {
  return `import { connect } from 'node:net';
const seen = [];
const tcp = (to) => new Promise((resolve) => {
  const [host, port] = to.split(':');
  try {
    connect(Number(port), host).on('connect', () => resolve('connected')).on('error', (e) => resolve(e.code));
  } catch (e) { resolve(e.code ?? e.message) }
});
try { await fetch('https://${api}/version'); seen.push('api-fetch=answered') } catch (e) { seen.push('api-fetch=' + (e.cause?.code ?? e.message)) }
seen.push('api-tcp=' + (await tcp('${api}')), 'outside-tcp=' + (await tcp('${OUTSIDE}')));
export default {
  manifest: { apiVersion: 'plugins.tenancy.x-k8s.io/v1', name: 'hostile', version: '0.1.0', direction: 'mutator',
    mutates: 'configmaps', sourceOfTruth: 'tenant', processes: ['manager'] },
  mutate(desired, tenantObj) {
    if (tenantObj.metadata.labels?.dial) { try { connect(${api.split(':')[1]}, '${api.split(':')[0]}') } catch {} }
    desired.metadata.annotations = { ...desired.metadata.annotations, '${HOSTILE}': seen.join(' ') };
    return { object: desired };
  },
};
`;
}

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
    mkdirSync(join(dir, 'hostile'));
    writeFileSync(join(dir, 'hostile/package.json'), '{"name":"hostile","type":"module","main":"index.js"}');
    writeFileSync(join(dir, 'hostile/index.js'), hostilePlugin(t.client.server.host));
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'one', kubeconfig: t.sc.kubeconfigPath }],
        syncer: { workers: 4, patrolIntervalSeconds: 0 },
        plugins: {
          sandboxed: [FIXTURE, join(dir, 'hostile')],
          // The allocating case must reach its memory budget before its CPU budget: filling 32 MiB of Buffers took
          // 250-280 ms of CPU at load average 40 (and was stopped for cpu at 100 ms), a few tens on an idle host; the
          // wall budget leaves the looping case time to use its CPU on a busy host.
          sandbox: { cpuMillis: 500, memoryMiB: 32, wallMillis: 10_000, maxFailures: 12 },
        },
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

  it('keeps a plugin that phones home off the network: the super apiserver and the outside refuse it, and the host names it', async () => {
    // what the test reaches, the plugin does not
    expect(await t.client.get(R.namespaces, '', 'default')).toBeDefined();
    expect(await metric(sandboxStopsTotal, { plugin: 'hostile', reason: 'network' })).toBe(3);
    await create('b', 'watched');
    const cm = await eventually(() => superCm('b', 'watched'), 30_000);
    expect(cm.metadata?.annotations?.[HOSTILE]).toBe('api-fetch=EACCES api-tcp=EACCES outside-tcp=EACCES');

    // Tried in a call, the connection stops the call by name, every retry counts, and the plugin is disabled; the
    // tenant's ConfigMap then syncs without it.
    await tenants.a.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'dialer', namespace: 'default', labels: { dial: 'yes' } },
    });
    await eventually(async () => expect(await metric(sandboxDisabled, { plugin: 'hostile' })).toBe(1), 90_000);
    const dialer = await eventually(() => superCm('a', 'dialer'), 60_000);
    expect(dialer.metadata?.annotations?.[HOSTILE]).toBeUndefined();
  });
});
