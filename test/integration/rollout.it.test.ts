/**
 * Changes roll out (issue 33, §2) on real processes: the VirtualCluster controller and the local provisioner on a real
 * super cluster restart only the components a spec change touches, in order, each health-checked; a step that fails
 * stops the roll and the previous component serves again; a ClusterVersion edit reaches its tenants at most
 * maxUnavailable at a time.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { InformerFactory } from '../../core/kube/factory.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { reissueServingCert } from '../../core/dev/local/controlplane.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, TENANT_START_MS, type TestSuper } from '../harness.ts';

const crds = join(import.meta.dirname, '../../deploy/crds');
const NS = 'default';

const tenant = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name, namespace: NS },
  spec: { provisioner: { type: 'local' }, ...spec },
});

/** served is the certificate a TLS server on 127.0.0.1:port presents to a new connection. */
const served = (port: number) =>
  new Promise<X509Certificate>((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', reject);
  });

/** cmdline is a process's command line, one argument a line. */
const cmdline = (pid: number | undefined) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

describe('rolling spec changes through local tenant control planes', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;
  const get = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, NS, name);
  const condition = (vc: VirtualCluster, type: string) => vc.status?.conditions?.find((c) => c.type === type);
  const running = (name: string) =>
    eventually(async () => {
      const vc = await get(name);
      expect(vc.status?.phase, vc.status?.message).toBe('Running');
      return vc;
    }, TENANT_START_MS);
  const events = async (name: string) =>
    (
      await t.client.list<KubeObject & { reason?: string; type?: string; message?: string }>(R.events, {
        namespace: NS,
      })
    ).items
      .filter((e) => (e as { involvedObject?: { name?: string } }).involvedObject?.name === name)
      .map((e) => `${e.type}/${e.reason}: ${e.message}`);
  const root = (vc: VirtualCluster) => vc.status!.clusterNamespace!;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml'])
      for (const d of parseAllDocuments(readFileSync(join(crds, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    await eventually(() => t.client.list(R.clusterversions));
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'rollout', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: {
            controlPlane: {
              tenantSettableArgs: {
                apiServer: ['max-requests-inflight'],
                controllerManager: ['concurrent-deployment-syncs'],
              },
            },
            provisioners: { allowed: ['local'] },
            grants: { clusterVersions: ['cv-roll'] },
          },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-rollout-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
    });
    await controller.start();
  });

  afterAll(async () => {
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('restarts only the component a change touches, reports Updating and then SpecApplied', async () => {
    await t.client.create(R.virtualclusters, tenant('one'));
    const vc = await running('one');
    const cp = local.controlPlane(root(vc))!;
    const etcdPid = local.tenantEtcd(root(vc))!.process.pid;
    const apiserverPid = cp.apiserver.pid;
    const cmPid = cp.controllerManager!.pid;
    await t.client.patch(
      R.virtualclusters,
      NS,
      'one',
      { spec: { controllerManager: { extraArgs: { 'concurrent-deployment-syncs': '7' } } } },
      'merge',
    );
    await eventually(async () => {
      const v = await get('one');
      expect(condition(v, 'SpecApplied')).toMatchObject({ status: 'True', reason: 'Applied' });
      expect(v.status?.phase).toBe('Running');
    }, 90_000);
    const now = local.controlPlane(root(vc))!;
    expect(now.controllerManager!.pid).not.toBe(cmPid);
    expect(cmdline(now.controllerManager!.pid)).toContain('--concurrent-deployment-syncs=7');
    expect(now.apiserver.pid).toBe(apiserverPid);
    expect(local.tenantEtcd(root(vc))!.process.pid).toBe(etcdPid);
    const seen = await events('one');
    expect(seen).toContain('Normal/Updating: rolling kube-controller-manager to the new spec');
    expect(seen).toContain('Normal/Updated: control plane rolled to the new spec');
  });

  it('stops at an apiserver that does not come back, serves with the previous one and names it', async () => {
    const vc = await running('one');
    const before = local.controlPlane(root(vc))!.apiserver.pid;
    // A value kube-apiserver refuses at start: the new process exits at once.
    await t.client.patch(
      R.virtualclusters,
      NS,
      'one',
      { spec: { apiServer: { extraArgs: { 'max-requests-inflight': 'lots' } } } },
      'merge',
    );
    const failed = await eventually(async () => {
      const v = await get('one');
      expect(v.status?.reason).toBe('RolloutFailed');
      return v;
    }, 120_000);
    expect(failed.status?.phase).toBe('Running');
    expect(failed.status?.message).toMatch(
      /^kube-apiserver did not come back healthy .*previous kube-apiserver serves/,
    );
    expect(condition(failed, 'SpecApplied')).toMatchObject({ status: 'False', reason: 'RolloutFailed' });
    expect(condition(failed, 'Ready')).toMatchObject({ status: 'True' });
    // The Event is written after the status that reports the failure.
    await eventually(async () =>
      expect((await events('one')).some((e) => e.startsWith('Warning/RolloutFailed: kube-apiserver'))).toBe(true),
    );
    const cp = local.controlPlane(root(vc))!;
    expect(cp.apiserver.pid).not.toBe(before);
    expect(cmdline(cp.apiserver.pid).join(' ')).not.toContain('lots');
    const s = await t.client.get<{ data: { kubeconfig: string } }>(R.secrets, NS, vc.status!.kubeconfigSecretName!);
    const c = await KubeClient.fromString(Buffer.from(s.data.kubeconfig, 'base64').toString());
    try {
      expect((await c.list(R.namespaces)).items.length).toBeGreaterThan(0);
    } finally {
      c.close();
    }
    // Taking the bad value back is running the spec again: no roll, SpecApplied True.
    const pid = cp.apiserver.pid;
    await t.client.patch(
      R.virtualclusters,
      NS,
      'one',
      { spec: { apiServer: { extraArgs: { 'max-requests-inflight': null } } } },
      'merge',
    );
    await eventually(async () => {
      const v = await get('one');
      expect(condition(v, 'SpecApplied')).toMatchObject({ status: 'True' });
      expect(v.status?.reason).toBe('Running');
    }, 60_000);
    expect(local.controlPlane(root(vc))!.apiserver.pid).toBe(pid);
  });

  it('rolls a ClusterVersion edit through its tenants one at a time', async () => {
    await t.client.create(R.clusterversions, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ClusterVersion',
      metadata: { name: 'cv-roll' },
      spec: { kubernetesVersion: 'v1.36.3', rollout: { maxUnavailable: 1 } },
    });
    await t.client.create(R.virtualclusters, tenant('two', { clusterVersionName: 'cv-roll' }));
    await t.client.create(R.virtualclusters, tenant('three', { clusterVersionName: 'cv-roll' }));
    await running('two');
    await running('three');
    // Every phase either tenant passes through, as the watch delivers each status write.
    const factory = new InformerFactory(t.client, 'rollout-test');
    const vcs = factory.informer<VirtualCluster>({ resource: R.virtualclusters });
    let most = 0;
    const seenUpdating = new Set<string>();
    const count = () => {
      const updating = vcs.list().filter((v) => v.status?.phase === 'Updating');
      for (const v of updating) seenUpdating.add(v.metadata!.name!);
      most = Math.max(most, updating.length);
    };
    vcs.addHandler({ onAdd: count, onUpdate: count, onDelete: count });
    vcs.start();
    await vcs.waitForSync();
    try {
      await t.client.patch(
        R.clusterversions,
        undefined,
        'cv-roll',
        { spec: { apiServer: { extraArgs: { 'max-requests-inflight': '321' } } } },
        'merge',
      );
      for (const name of ['two', 'three'])
        await eventually(async () => {
          const v = await get(name);
          expect(condition(v, 'SpecApplied')).toMatchObject({ status: 'True', reason: 'Applied' });
          expect(v.status?.phase).toBe('Running');
          expect(cmdline(local.controlPlane(root(v))!.apiserver.pid)).toContain('--max-requests-inflight=321');
        }, 120_000);
    } finally {
      await vcs.stop();
    }
    expect([...seenUpdating].sort()).toEqual(['three', 'two']);
    expect(most).toBe(1);
  });

  it('renews a serving certificate of a one-minute life without a restart; the apiserver keeps answering', async () => {
    const vc = await running('one');
    const cp = local.controlPlane(root(vc))!;
    const pid = cp.apiserver.pid;
    // A certificate about to run out, as after a minute of a one-minute lifetime's life.
    await reissueServingCert(join(cp.dir, 'pki'), 1 / 1440);
    const short = await eventually(async () => {
      const c = await served(cp.ports.apiserver);
      expect(new Date(c.validTo).getTime() - Date.now()).toBeLessThan(2 * 60_000);
      return c;
    }, 30_000);
    // Any edit wakes the key; from then on the controller comes back when the certificate is due.
    await t.client.patch(R.virtualclusters, NS, 'one', { metadata: { annotations: { touch: '1' } } }, 'merge');
    const c = await cp.client();
    await eventually(async () => {
      expect((await c.list(R.namespaces)).items.length).toBeGreaterThan(0);
      const now = await served(cp.ports.apiserver);
      expect(now.serialNumber).not.toBe(short.serialNumber);
      expect(new Date(now.validTo).getTime() - Date.now()).toBeGreaterThan(86_400_000);
    }, 120_000);
    expect(cp.apiserver.pid).toBe(pid);
    await eventually(async () =>
      expect(condition(await get('one'), 'CertificatesValid')).toMatchObject({ status: 'True' }),
    );
  });
});
