/**
 * A client without credentials against the front door of a sleeping local tenant (issue 31): whoever reaches the door
 * can wake the tenant, since TLS passes through to the apiserver, which alone authenticates. The attacker tries to wake
 * it without speaking TLS (a port scan, plain HTTP), to hold a silent connection open, and, with the definition in
 * hand, to cycle it through sleeps and wakes (a sleep request re-applied after every wake, as a GitSource does). The
 * real VirtualCluster controller and local provisioner run the tenant on real processes; the policy allows one wake
 * an hour.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { SLEEP_DEFERRED } from '../../core/lifecycle/sleep.ts';
import { ANN } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

const exec = promisify(execFile);

interface Event extends KubeObject {
  involvedObject: { name?: string };
  reason?: string;
  message?: string;
}

/** knock connects to 127.0.0.1:port, sends `bytes` (nothing when undefined) and resolves with what came back once closed. */
const knock = (port: number, bytes?: string) =>
  new Promise<string>((resolve, reject) => {
    const got: Buffer[] = [];
    const c = net.connect(port, '127.0.0.1', () => {
      if (bytes !== undefined) c.write(bytes);
    });
    const guard = setTimeout(() => {
      c.destroy();
      reject(new Error('the front door held the connection open for 30 s'));
    }, 30_000);
    c.on('data', (b: Buffer) => got.push(b));
    c.on('error', () => undefined);
    c.once('close', () => {
      clearTimeout(guard);
      resolve(Buffer.concat(got).toString());
    });
  });

describe('a client without credentials against the front door of a sleeping tenant', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;

  const getVC = () => t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'dozy');
  const phase = (want: string, timeout = 120_000) =>
    eventually(async () => {
      const vc = await getVC();
      expect(vc.status?.phase, vc.status?.message).toBe(want);
      return vc;
    }, timeout);
  const events = async (reason: string) =>
    (await t.client.list<Event>(R.events, { namespace: 'default' })).items.filter(
      (e) => e.involvedObject?.name === 'dozy' && e.reason === reason,
    );

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'one-wake', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] }, sleep: { maxWakesPerHour: 1 } },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-frontdoor-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
      health: false,
      idleCheckMs: 1000,
    });
    await controller.start();
  }, 240_000);

  afterAll(async () => {
    attempts.report('front doors of sleeping tenants');
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('is not woken or kept awake without TLS, and is not cycled through wakes past its policy', async () => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'dozy', namespace: 'default' },
      spec: { provisioner: { type: 'local' }, sleep: { afterIdle: '10s' } },
    });
    let vc = await phase('Running', 180_000);
    const root = vc.status!.clusterNamespace!;
    const secret = await t.client.get<{ data: Record<string, string> }>(
      R.secrets,
      'default',
      vc.status!.kubeconfigSecretName!,
    );
    const kubeconfig = Buffer.from(secret.data.kubeconfig!, 'base64').toString();
    const port = Number(/server: https:\/\/127\.0\.0\.1:(\d+)/.exec(kubeconfig)?.[1]);
    expect(port).toBeGreaterThan(0);
    const file = join(stateDir, 'dozy.kubeconfig');
    writeFileSync(file, kubeconfig);
    await phase('Sleeping', 90_000);

    await attempts.attempt('wake a sleeping tenant with plain HTTP to its front door', async () => {
      const answer = await knock(port, 'GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      expect(answer).toBe('');
      await new Promise((r) => setTimeout(r, 3000));
      expect((await getVC()).status?.phase).toBe('Sleeping');
      expect(local.controlPlane(root)).toBeUndefined();
      return 'closed unanswered (not a TLS handshake); the tenant sleeps on';
    });

    await attempts.attempt('wake or hold a sleeping tenant with a silent connection', async () => {
      const answer = await knock(port);
      expect(answer).toBe('');
      expect((await getVC()).status?.phase).toBe('Sleeping');
      expect(local.controlPlane(root)).toBeUndefined();
      return 'closed after the hello timeout; the tenant sleeps on';
    });

    // A user's request wakes it: the one wake an hour its policy allows.
    const out = await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'get', 'namespaces', '-o', 'name'], {
      timeout: 90_000,
    });
    expect(out.stdout).toContain('namespace/default');
    vc = await phase('Running');

    await attempts.attempt(
      'cycle a tenant through sleeps and wakes with a sleep request from its definition',
      async () => {
        await t.client.patch(
          R.virtualclusters,
          'default',
          'dozy',
          { metadata: { annotations: { [ANN.sleepRequested]: '2099-01-01T00:00:00Z' } } },
          'merge',
        );
        const deferred = await eventually(async () => {
          const e = await events(SLEEP_DEFERRED);
          expect(e.length).toBeGreaterThan(0);
          return e[0]!;
        }, 60_000);
        expect(deferred.message).toContain('sleep.maxWakesPerHour');
        await eventually(async () =>
          expect((await getVC()).metadata?.annotations?.[ANN.sleepRequested]).toBeUndefined(),
        );
        // Idle past its afterIdle (10 s, checked every second) and still awake.
        await new Promise((r) => setTimeout(r, 15_000));
        expect((await getVC()).status?.phase).toBe('Running');
        expect(local.controlPlane(root)).toBeDefined();
        return `${SLEEP_DEFERRED}: ${deferred.message ?? ''}`;
      },
    );
  });
});
