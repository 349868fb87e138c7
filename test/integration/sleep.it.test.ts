import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { ETCD_DIR, LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { ANN, LABEL, rootNamespace } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry, type TenantEvent } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

/** counter reads one series of the manager's metrics (this process's registry, as its /metrics serves it); 0 when absent. */
const counter = async (series: string): Promise<number> => {
  const line = (await metricsRegistry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
};
const SLEEPS = 'vc_tenant_sleeps_total';
const WAKES = (cause: string) => `vc_tenant_wakes_total{cause="${cause}"}`;
const WAKE_TIMES = 'vc_tenant_wake_seconds_count';
const WAKE_SECONDS = 'vc_tenant_wake_seconds_sum';

const alive = (pid: number | undefined): boolean => {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('sleep and wake of a local tenant on real processes', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  const tenants = new MutableTenantRegistry();
  const seen = new Map<string, TenantEvent>();

  const getVC = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, 'default', name);
  const phase = (name: string, want: string, timeout = 90_000) =>
    eventually(async () => {
      const vc = await getVC(name);
      expect(vc.status?.phase, vc.status?.message).toBe(want);
      return vc;
    }, timeout);
  const create = (name: string, spec: Record<string, unknown>) =>
    t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name, namespace: 'default' },
      spec: { provisioner: { type: 'local' }, ...spec },
    });
  const askSleep = (name: string) =>
    t.client.patch(
      R.virtualclusters,
      'default',
      name,
      { metadata: { annotations: { [ANN.sleepRequested]: new Date().toISOString() } } },
      'merge',
    );
  /** kubeconfigFile writes the tenant's kubeconfig Secret (what its users get) to a file. */
  const kubeconfigFile = async (vc: VirtualCluster) => {
    const s = await t.client.get<{ data: Record<string, string> }>(
      R.secrets,
      'default',
      vc.status!.kubeconfigSecretName!,
    );
    const file = join(stateDir, `${vc.metadata!.name}.kubeconfig`);
    writeFileSync(file, Buffer.from(s.data.kubeconfig!, 'base64'));
    return file;
  };
  const events = async (name: string) =>
    (
      await t.client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(R.events, {
        namespace: 'default',
      })
    ).items
      .filter((e) => e.involvedObject?.name === name)
      .map((e) => e.reason);

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'sleep', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-sleep-'));
    tenants.subscribe((e) => seen.set(e.type === 'upsert' ? e.tenant.key : e.key, e));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
      health: false,
      idleCheckMs: 1000,
    });
    await controller.start();
  });

  afterAll(async () => {
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('sleeps after spec.sleep.afterIdle with its processes gone, and kubectl through its kubeconfig wakes it', async () => {
    const before = {
      sleeps: await counter(SLEEPS),
      wakes: await counter(WAKES('request')),
      times: await counter(WAKE_TIMES),
    };
    await create('dozy', { sleep: { afterIdle: '10s' } });
    let vc = await phase('dozy', 'Running');
    const root = rootNamespace('default', 'dozy', vc.metadata!.uid!);
    expect(vc.status!.conditions?.find((c) => c.type === 'Exposed')).toMatchObject({ reason: 'FrontDoor' });
    const file = await kubeconfigFile(vc);
    const direct = local.controlPlane(root)!;
    expect(readFileSync(file, 'utf8')).not.toContain(`:${direct.ports.apiserver}`);
    await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'create', 'namespace', 'kept']);
    // A user whom only RBAC lets list namespaces, with a service-account token: the wake's first request is theirs,
    // so the front door must relay only once the apiserver authorizes (and authenticates) from what it holds.
    const admin = (...args: string[]) => exec(binaryPath('kubectl'), ['--kubeconfig', file, ...args]);
    await admin('create', 'serviceaccount', 'reader', '-n', 'default');
    await admin('create', 'clusterrole', 'ns-reader', '--verb=get,list', '--resource=namespaces');
    await admin(
      'create',
      'clusterrolebinding',
      'ns-reader',
      '--clusterrole=ns-reader',
      '--serviceaccount=default:reader',
    );
    const token = (await admin('create', 'token', 'reader', '-n', 'default', '--duration=1h')).stdout.trim();
    const readerFile = join(stateDir, 'dozy-reader.kubeconfig');
    writeFileSync(readerFile, readFileSync(file));
    const reader = (...args: string[]) => exec(binaryPath('kubectl'), ['--kubeconfig', readerFile, ...args]);
    await reader('config', 'set-credentials', 'reader', `--token=${token}`);
    await reader('config', 'set-context', '--current', '--user=reader');
    expect((await reader('auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}')).stdout).toBe(
      'system:serviceaccount:default:reader',
    );
    // Each component runs now (a controller manager that lost its lease on a busy host exits and is started again,
    // with a new process id, so they are read until all three answer).
    const pids = await eventually(() => {
      const now = {
        apiserver: direct.apiserver.pid,
        controllerManager: direct.controllerManager?.pid,
        etcd: local.tenantEtcd(root)?.process.pid,
      };
      expect(Object.entries(now).filter(([, pid]) => !alive(pid))).toEqual([]);
      return Object.values(now);
    }, 20_000);

    vc = await phase('dozy', 'Sleeping', 60_000);
    expect(vc.status!.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Sleeping',
    });
    await eventually(() => expect(pids.some(alive)).toBe(false), 20_000);
    expect(local.controlPlane(root)).toBeUndefined();
    expect(seen.get(root)?.type).toBe('remove');
    // Its etcd's write-ahead log keeps its records, not the 64 MB etcd allocated for it.
    const wal = join(stateDir, root, ETCD_DIR, 'data', 'member', 'wal');
    await eventually(() => {
      const segments = readdirSync(wal).filter((f) => f.endsWith('.wal'));
      expect(segments.length).toBeGreaterThan(0);
      const onDisk = segments.reduce((a, f) => a + statSync(join(wal, f)).blocks * 512, 0);
      expect(onDisk).toBeLessThan(8 << 20);
    });
    expect(await events('dozy')).toContain('Sleeping');

    // The first request, the reader's, waits for the wake and then succeeds; the data is the tenant's own, kept while
    // it slept. kubectl gives up a TLS handshake after 10 s and the front door passes the handshake through, so on a
    // host too busy to wake the tenant in that time the first try fails as the docs say, and only then: the wake it
    // started must have taken about that long (the handshake also needs the relay's first round trip), and the
    // second try gets the answer.
    const get = () =>
      exec(binaryPath('kubectl'), ['--kubeconfig', readerFile, 'get', 'namespaces', '-o', 'name'], {
        timeout: 60_000,
      });
    const waitedBefore = await counter(WAKE_SECONDS);
    const out = await get().catch(async (e: Error) => {
      expect(e.message).toContain('TLS handshake timeout');
      await eventually(async () => expect(await counter(WAKE_TIMES)).toBe(before.times + 1));
      expect((await counter(WAKE_SECONDS)) - waitedBefore).toBeGreaterThan(9);
      return get();
    });
    expect(out.stdout).toContain('namespace/kept');
    vc = await phase('dozy', 'Running');
    expect(vc.metadata!.annotations?.[ANN.sleepRequested]).toBeUndefined();
    expect(seen.get(root)?.type).toBe('upsert');
    await eventually(async () => expect(await events('dozy')).toContain('Woken'));
    // The metrics count the sleep and the wake by its cause, and time the wake.
    await eventually(async () => {
      expect(await counter(SLEEPS)).toBe(before.sleeps + 1);
      expect(await counter(WAKES('request'))).toBe(before.wakes + 1);
      expect(await counter(WAKE_TIMES)).toBe(before.times + 1);
    });
  });

  /** vc runs the CLI as a user would against the meta cluster; it answers the exit code and output. */
  const vc = async (...args: string[]) =>
    exec(process.execPath, [vcBin, ...args, '--kubeconfig', t.sc.kubeconfigPath], { timeout: 120_000 }).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({
        code: e.code ?? 1,
        out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
      }),
    );

  it('sleeps by vc sleep, wakes by vc wake, and wakes when its spec changes', async () => {
    const [byCommand, bySpec] = [await counter(WAKES('command')), await counter(WAKES('spec'))];
    expect(await vc('sleep', 'dozy')).toMatchObject({ code: 0, out: expect.stringContaining('is Sleeping') });
    expect(await vc('wake', 'dozy')).toMatchObject({ code: 0, out: expect.stringContaining('is Running') });
    // The controller counts the wake and writes its Event after the Running status vc wake waits for.
    await eventually(async () => {
      expect(await counter(WAKES('command'))).toBe(byCommand + 1);
      expect(await events('dozy')).toContain('Woken');
    });
    await askSleep('dozy');
    const asleep = await phase('dozy', 'Sleeping');
    const root = asleep.status!.clusterNamespace!;
    expect(local.controlPlane(root)).toBeUndefined();
    await t.client.patch(
      R.virtualclusters,
      'default',
      'dozy',
      { spec: { weight: 2, sleep: { afterIdle: '1h' } } },
      'merge',
    );
    const woken = await phase('dozy', 'Running');
    expect(woken.metadata!.annotations?.[ANN.sleepRequested]).toBeUndefined();
    expect(seen.get(root)?.type === 'upsert' && seen.get(root)).toMatchObject({ tenant: { weight: 2 } });
    await eventually(async () => expect(await counter(WAKES('spec'))).toBe(bySpec + 1));
  });

  it("with its policy's sleep.etcd Keep, its etcd runs on while it sleeps and the wake uses that one", async () => {
    await t.client.apply(
      R.tenantpolicies,
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'keep-etcd' },
        spec: {
          provisioners: { allowed: ['local'] },
          sleep: { etcd: 'Keep' },
          grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
        },
      },
      'test',
    );
    await create('light', { policyName: 'keep-etcd', sleep: { afterIdle: '1h' } });
    let vc = await phase('light', 'Running');
    const root = rootNamespace('default', 'light', vc.metadata!.uid!);
    const file = await kubeconfigFile(vc);
    await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'create', 'namespace', 'kept-too']);
    const apiserver = local.controlPlane(root)!.apiserver.pid;
    const etcd = local.tenantEtcd(root)!.process.pid;
    expect([apiserver, etcd].every(alive)).toBe(true);

    await askSleep('light');
    await phase('light', 'Sleeping');
    await eventually(() => expect(alive(apiserver)).toBe(false), 20_000);
    expect(alive(etcd)).toBe(true);
    expect(local.tenantEtcd(root)?.process.pid).toBe(etcd);
    expect(await local.tenantEtcd(root)!.healthy()).toBe(true);

    const out = await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'get', 'namespaces', '-o', 'name'], {
      timeout: 60_000,
    });
    expect(out.stdout).toContain('namespace/kept-too');
    vc = await phase('light', 'Running');
    expect(local.tenantEtcd(root)?.process.pid).toBe(etcd);
    expect(local.controlPlane(root)?.apiserver.pid).not.toBe(apiserver);
  });

  it("with its policy's sleep.workloads KeepAwake, a Pod of its own running in the super cluster keeps it awake", async () => {
    await t.client.apply(
      R.tenantpolicies,
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'keep-awake' },
        spec: {
          provisioners: { allowed: ['local'] },
          sleep: { workloads: 'KeepAwake' },
          grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
        },
      },
      'test',
    );
    await create('busy', { policyName: 'keep-awake', sleep: { afterIdle: '10s' } });
    const vc = await phase('busy', 'Running');
    const root = rootNamespace('default', 'busy', vc.metadata!.uid!);
    // The tenant's Pod as the syncer copies it: in its prefixed namespace, labelled with its cluster, on a (kwok) node.
    const ns = `${root}-default`;
    await t.client.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, labels: { [LABEL.managedBy]: 'vc-syncer', [LABEL.cluster]: root } },
    });
    const node = (await t.client.list(R.nodes)).items[0]!.metadata!.name!;
    await t.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'worker', namespace: ns, labels: { [LABEL.managedBy]: 'vc-syncer', [LABEL.cluster]: root } },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    });
    await eventually(async () =>
      expect(
        (await t.client.get<KubeObject & { status?: { phase?: string } }>(R.pods, ns, 'worker')).status?.phase,
      ).toBe('Running'),
    );
    // Idle through its front door for three times its afterIdle, checked every second: it stays awake.
    await new Promise((r) => setTimeout(r, 30_000));
    expect((await getVC('busy')).status?.phase).toBe('Running');
    expect(local.controlPlane(root)?.apiserver.running).toBe(true);

    // Its Pod gone, it is idle and sleeps.
    await t.client.delete(R.pods, ns, 'worker', { gracePeriodSeconds: 0 });
    await phase('busy', 'Sleeping', 60_000);
    expect(local.controlPlane(root)).toBeUndefined();
  });

  it('refuses to sleep a tenant without spec.sleep, which has no front door, and keeps it running', async () => {
    await create('awake', {});
    const running = await phase('awake', 'Running');
    const refused = await vc('sleep', 'awake');
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain('has no spec.sleep');
    await askSleep('awake');
    await eventually(async () => expect(await events('awake')).toContain('SleepRefused'));
    const after = await getVC('awake');
    expect(after.status?.phase).toBe('Running');
    expect(after.metadata!.annotations?.[ANN.sleepRequested]).toBeUndefined();
    expect(local.controlPlane(running.status!.clusterNamespace!)?.apiserver.running).toBe(true);
  });
});
