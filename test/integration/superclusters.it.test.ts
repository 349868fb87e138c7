import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { freePorts } from '../../core/dev/local/process.ts';
import { REGISTRATION_NAMESPACE } from '../../core/dev/local/registration.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import type { Condition } from '../../core/controller/status.ts';
import { CLUSTER_NAME_LABEL, CLUSTERS, readyOf } from '../../core/superclusters/registration.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const ns = REGISTRATION_NAMESPACE;
const clusters = CLUSTERS as Resource;

interface ClusterObj extends KubeObject {
  status?: { conditions?: Condition[] };
}

describe('super clusters registered in the meta cluster', () => {
  let t: TestSuper;
  let dir: string;
  let m: Manager;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1, superClusters: 2 });
    dir = mkdtempSync(join(tmpdir(), 'vc-superclusters-'));
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'meta', kubeconfig: t.sc.kubeconfigPath }],
        superClusterRegistry: { enabled: true, probeIntervalSeconds: 2, connectTimeoutSeconds: 2 },
        syncer: { patrolIntervalSeconds: 0 },
      }),
    );
    m = await startManager(loadManagerConfig(file), file);
  });

  afterAll(async () => {
    await m?.stop();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const state = (name: string) => m.registry?.list().find((r) => r.name === name);
  const condition = async (name: string) => readyOf((await t.client.get<ClusterObj>(clusters, ns, name)).status);
  const kubeconfigSecret = (name: string, value: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${name}-kubeconfig`, namespace: ns, labels: { [CLUSTER_NAME_LABEL]: name } },
    data: { value: Buffer.from(value).toString('base64') },
  });
  const expectCondition = (name: string, reason: string, ...parts: string[]) =>
    eventually(async () => {
      const c = await condition(name);
      expect(c?.reason).toBe(reason);
      expect(c?.status).toBe('False');
      for (const p of parts) expect(c?.message).toContain(p);
    }, 20_000);

  it('registers both local super clusters Ready and runs a syncer for each', async () => {
    await eventually(() => {
      expect(state('r1')?.state).toBe('ready');
      expect(state('r2')?.state).toBe('ready');
      expect([...m.registeredSyncers().keys()]).toEqual(['r1', 'r2']);
    }, 30_000);
    // the condition is written to the Cluster after the registration's state changes in memory
    await eventually(async () => expect((await condition('r2'))?.status).toBe('True'), 30_000);
    expect(m.superClusters().map((s) => `${s.name}:${s.state}`)).toEqual(['meta:ready', 'r1:ready', 'r2:ready']);
    const nodes = (await (await t.supers[1]!.cp.client()).list(R.nodes)).items.map((n) => n.metadata?.name);
    expect(nodes).toEqual(['r2-node-0']);
  });

  it('reports a bad registration in its status, naming the field, and nothing else stops', async () => {
    const before = m.registeredSyncers();
    await t.client.apply(
      clusters,
      { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', metadata: { name: 'r3', namespace: ns }, spec: {} },
      'test',
    );
    await expectCondition('r3', 'SecretMissing', `Secret ${ns}/r3-kubeconfig not found`);
    await t.client.apply(R.secrets, kubeconfigSecret('r3', 'garbage: ['), 'test');
    await expectCondition('r3', 'KubeconfigInvalid', `Secret ${ns}/r3-kubeconfig (data.value)`);
    const [closed] = await freePorts(1);
    const r2 = readFileSync(t.supers[1]!.cp.kubeconfigPath, 'utf8');
    const elsewhere = r2.replace(/https:\/\/127\.0\.0\.1:\d+/, `https://127.0.0.1:${closed}`);
    await t.client.apply(R.secrets, kubeconfigSecret('r3', elsewhere), 'test');
    await expectCondition('r3', 'Unreachable', `(data.value): server https://127.0.0.1:${closed}`);
    // Credentials of another super cluster: its supercluster-info names it r2, so they are not used for r3.
    await t.client.apply(R.secrets, kubeconfigSecret('r3', r2), 'test');
    await expectCondition('r3', 'InfoInvalid', 'data.id "r2" differs from the Cluster\'s name "r3"');
    expect(state('r3')).toMatchObject({ state: 'unreachable', client: undefined });
    expect(m.registeredSyncers().has('r3')).toBe(false);
    expect(m.registeredSyncers().get('r1')).toBe(before.get('r1'));
    expect(m.registeredSyncers().get('r2')).toBe(before.get('r2'));
    expect(state('r2')?.state).toBe('ready');
    await t.client.delete(clusters, ns, 'r3');
    await eventually(() => expect(state('r3')).toBeUndefined(), 20_000);
  });

  it('never registers a Cluster in a tenant namespace, where synced tenant objects live', async () => {
    // As if a plugin had copied a tenant's Cluster and Secret down: valid credentials of a live super cluster, under a
    // registered name, which must neither be registered twice nor take the name from the real r2.
    const tenantNs = 'tenant-a-1a2b3c-dev-default';
    await t.client.apply(
      R.namespaces,
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: tenantNs, labels: { 'tenancy.x-k8s.io/cluster': 'x' } },
      },
      'test',
    );
    const r2 = readFileSync(t.supers[1]!.cp.kubeconfigPath, 'utf8');
    await t.client.apply(
      R.secrets,
      { ...kubeconfigSecret('r2', r2), metadata: { name: 'r2-kubeconfig', namespace: tenantNs } },
      'test',
    );
    await t.client.apply(
      clusters,
      {
        apiVersion: 'cluster.x-k8s.io/v1beta1',
        kind: 'Cluster',
        metadata: { name: 'r2', namespace: tenantNs },
        spec: {},
      },
      'test',
    );
    await new Promise((r) => setTimeout(r, 5000));
    expect(m.registry?.list().filter((r) => r.namespace === tenantNs)).toEqual([]);
    expect((await t.client.get<ClusterObj>(clusters, tenantNs, 'r2')).status).toBeUndefined();
    expect(state('r2')).toMatchObject({ namespace: ns, state: 'ready' });
    await t.client.delete(R.namespaces, undefined, tenantNs);
  });

  it('vc superclusters lists registrations with state and capacity', async () => {
    const { stdout } = await execP(process.execPath, [vcBin, 'superclusters', '--kubeconfig', t.sc.kubeconfigPath], {
      timeout: 60_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+NAMESPACE\s+STATE\s+CAPACITY\s+SLICES\s+NAMESPACES\s+MESSAGE$/);
    // One kwok node each: 32 cpu, 256Gi, 110 pods; no scheduler summary yet.
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^r1\s+vc-system\s+ready\s+cpu=32,memory=256Gi,pods=110\s+-\s+-\s+-$/),
      expect.stringMatching(/^r2\s+vc-system\s+ready\s+cpu=32,memory=256Gi,pods=110\s+-\s+-\s+-$/),
    ]);
  });

  it('a registration that breaks loses its syncer and gets it back once fixed', async () => {
    const good = (await t.client.get<KubeObject & { data: Record<string, string> }>(R.secrets, ns, 'r2-kubeconfig'))
      .data.value!;
    await t.client.apply(R.secrets, kubeconfigSecret('r2', 'not a kubeconfig'), 'test');
    await expectCondition('r2', 'KubeconfigInvalid', '(document)');
    await eventually(() => expect(m.registeredSyncers().has('r2')).toBe(false), 20_000);
    await t.client.apply(R.secrets, kubeconfigSecret('r2', Buffer.from(good, 'base64').toString('utf8')), 'test');
    await eventually(async () => {
      // the condition is written to the Cluster after the registration's state changes in memory
      await eventually(async () => expect((await condition('r2'))?.status).toBe('True'), 30_000);
      expect(state('r2')?.state).toBe('ready');
      expect(m.registeredSyncers().has('r2')).toBe(true);
    }, 20_000);
  });

  it('deleting a Cluster deregisters it and stops its syncer', async () => {
    expect(m.registeredSyncers().has('r2')).toBe(true);
    // A finalizer (Cluster API's, say) holds the Cluster while it is being deleted: it is deregistered meanwhile.
    const hold = { metadata: { finalizers: ['test.invalid/hold'] } };
    await t.client.patch(clusters, ns, 'r2', hold, 'merge');
    await t.client.delete(clusters, ns, 'r2');
    await eventually(async () => {
      expect(state('r2')).toMatchObject({ state: 'deregistered', client: undefined });
      expect([...m.registeredSyncers().keys()]).toEqual(['r1']);
      expect((await condition('r2'))?.reason).toBe('Deregistering');
    }, 20_000);
    await t.client.patch(clusters, ns, 'r2', { metadata: { finalizers: null } }, 'merge');
    await eventually(() => expect(state('r2')).toBeUndefined(), 20_000);
    expect(state('r1')?.state).toBe('ready');
  });
});
