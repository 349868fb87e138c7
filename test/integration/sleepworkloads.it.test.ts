// A sleeping tenant's workloads in the super cluster, kept or scaled to zero as its TenantPolicy's sleep.workloads
// says, on real processes: a super cluster with kwok nodes, two local tenants (etcd, apiserver, controller manager
// each) and the syncer that copies their Pods down.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { SCALED_TO_ZERO } from '../../core/lifecycle/sleep.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { ANN, LABEL } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);

type Pod = KubeObject & { spec: { nodeName?: string }; status?: { phase?: string } };
type Deployment = KubeObject & { status?: { availableReplicas?: number } };

describe("a sleeping tenant's super workloads, per its policy's sleep.workloads", () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  let syncer: Syncer;
  const tenants = new MutableTenantRegistry();

  const getVC = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, 'default', name);
  const phase = (name: string, want: string, timeout = 120_000) =>
    eventually(async () => {
      const vc = await getVC(name);
      expect(vc.status?.phase, vc.status?.message).toBe(want);
      return vc;
    }, timeout);
  const askSleep = (name: string) =>
    t.client.patch(
      R.virtualclusters,
      'default',
      name,
      { metadata: { annotations: { [ANN.sleepRequested]: new Date().toISOString() } } },
      'merge',
    );
  const events = async (name: string) =>
    (
      await t.client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(
        R.events,
        { namespace: 'default' },
      )
    ).items.filter((e) => e.involvedObject?.name === name);
  /** superPods are the tenant's Pods in the super cluster (its control plane runs as processes, not Pods). */
  const superPods = async (root: string) =>
    (await t.client.list<Pod>(R.pods, { labelSelector: `${LABEL.cluster}=${root}` })).items;
  /** runningWeb waits for the tenant's one web Pod Running in the super cluster, and returns it. */
  const runningWeb = (root: string) =>
    eventually(async () => {
      const pods = (await superPods(root)).filter((p) => !p.metadata!.deletionTimestamp);
      expect(pods.map((p) => p.status?.phase)).toEqual(['Running']);
      return pods[0]!;
    }, 120_000);

  /** start makes a tenant under policy with a one-replica Deployment, and waits for its Pod in the super cluster. */
  const start = async (name: string, policyName?: string) => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name, namespace: 'default' },
      spec: { provisioner: { type: 'local' }, sleep: { afterIdle: '1h' }, ...(policyName ? { policyName } : {}) },
    });
    const vc = await phase(name, 'Running');
    const root = vc.status!.clusterNamespace!;
    const tenant: KubeClient = await local.controlPlane(root)!.client();
    await tenant.create(R.deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
        },
      },
    });
    return { vc, root, pod: await runningWeb(root) };
  };
  /** kubectl runs kubectl through the tenant's kubeconfig Secret, the front door its users have. */
  const kubectl = async (vc: VirtualCluster, args: string[]) => {
    const s = await t.client.get<{ data: Record<string, string> }>(
      R.secrets,
      'default',
      vc.status!.kubeconfigSecretName!,
    );
    const file = join(stateDir, `${vc.metadata!.name}.kubeconfig`);
    writeFileSync(file, Buffer.from(s.data.kubeconfig!, 'base64'), { mode: 0o600 });
    return (await exec(binaryPath('kubectl'), ['--kubeconfig', file, ...args], { timeout: 60_000 })).stdout;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    const policy = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name, ...(annotations ? { annotations } : {}) },
          spec: { provisioners: { allowed: ['local'] }, ...spec },
        },
        'test',
      );
    await eventually(() => policy('sleep', {}, { [DEFAULT_POLICY_ANNOTATION]: 'true' }));
    await policy('scale-to-zero', {
      sleep: { workloads: 'ScaleToZero' },
      grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
    });
    stateDir = mkdtempSync(join(tmpdir(), 'vc-sleepworkloads-'));
    local = new LocalProvisioner(join(stateDir, 'tenants'), t.sc.etcd);
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({ superClient: t.client, host, registry: tenants, patrolIntervalMs: 0, workers: 4 });
    await syncer.start();
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants,
      health: false,
      idleCheckMs: 1000,
    });
    await controller.start();
  }, 240_000);

  afterAll(async () => {
    await controller?.stop();
    await syncer?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('with Ignore (the default) its Pod runs on in the super cluster while it sleeps, the same Pod', async () => {
    const { root, pod } = await start('steady');
    await askSleep('steady');
    await phase('steady', 'Sleeping');
    expect(local.controlPlane(root)).toBeUndefined();
    // Sleeping for a while, with the syncer no longer watching it: the same Pod, Running.
    await new Promise((r) => setTimeout(r, 5_000));
    const pods = await superPods(root);
    expect(pods.map((p) => [p.metadata!.uid, p.status?.phase])).toEqual([[pod.metadata!.uid, 'Running']]);
    expect((await events('steady')).map((e) => e.reason)).not.toContain(SCALED_TO_ZERO);
  });

  it('with ScaleToZero its Pod is deleted from the super cluster as it sleeps, and made again after the wake', async () => {
    const { vc, root, pod } = await start('thrifty', 'scale-to-zero');
    await askSleep('thrifty');
    await phase('thrifty', 'Sleeping');
    expect(local.controlPlane(root)).toBeUndefined();
    await eventually(async () => expect(await superPods(root)).toEqual([]), 60_000);
    // the event is recorded after the deletions it reports, so it may come a moment after the Pods are gone
    await eventually(async () => {
      const scaled = (await events('thrifty')).find((e) => e.reason === SCALED_TO_ZERO);
      expect(scaled?.message).toContain('1 Pod of this tenant deleted from the super cluster');
    }, 30_000);

    // A user's first request through the front door wakes it and is answered: the Deployment is still there.
    expect(await kubectl(vc, ['get', 'deployments', '-o', 'name'])).toContain('deployment.apps/web');
    await phase('thrifty', 'Running');
    // Its controllers make the Pod again, which the syncer copies down: a new Pod, Running, and the Deployment
    // available again in the tenant.
    const again = await runningWeb(root);
    expect(again.metadata!.uid).not.toBe(pod.metadata!.uid);
    expect(again.metadata!.name).not.toBe(pod.metadata!.name);
    const tenant = await local.controlPlane(root)!.client();
    await eventually(async () => {
      const d = await tenant.get<Deployment>(R.deployments, 'default', 'web');
      expect(d.status?.availableReplicas).toBe(1);
      const pods = (await tenant.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=web' })).items;
      expect(pods.map((p) => [p.metadata!.name, p.status?.phase])).toEqual([[again.metadata!.name, 'Running']]);
    }, 120_000);
  });
});
