import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { NativeProvisioner } from '../../core/provisioners/native/provisioner.ts';
import { rolloutDone, type RolledStatefulSet } from '../../core/provisioners/native/roll.ts';
import { pinnedVersions } from '../../core/toolchain/toolchain.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');
const CV = 'roll';
const STEP_TIMEOUT_MS = 30_000;

type StatefulSet = RolledStatefulSet & {
  spec: { template: { spec: { containers: Array<{ args: string[] }> } } };
};

/**
 * A running native tenant's spec change on a real super cluster (kwok runs the Pods, so a rollout is the StatefulSet
 * controller's own, with Pods that become ready at once): the provisioner applies the changed components in order,
 * the apiserver's StatefulSet rolled out before the controller manager's is touched; a step that cannot roll out (a
 * request no node can hold) stops the roll with the component and the scheduler's reason, leaves the controller
 * manager as it was, is not tried again until the spec changes, and a fixed spec rolls through.
 */
describe('native rolls in order on a real super cluster', () => {
  let t: TestSuper;
  let native: NativeProvisioner;
  let vc: VirtualCluster;
  let root: string;
  const sts = (name: string) => t.client.get<StatefulSet>(R.statefulsets, root, name);
  const args = async (name: string) => (await sts(name)).spec.template.spec.containers[0]!.args;
  const allRolledOut = () =>
    eventually(async () => {
      for (const name of ['etcd', 'apiserver', 'controller-manager'])
        expect(rolloutDone(await sts(name)), name).toBe(true);
    }, 60_000);
  const patchCV = (spec: unknown) => t.client.patch(R.clusterversions, undefined, CV, { spec }, 'merge');

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.clusterversions));
    await t.client.create(R.clusterversions, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'ClusterVersion',
      metadata: { name: CV },
      spec: { kubernetesVersion: pinnedVersions().kubernetes },
    });
    native = new NativeProvisioner(t.client, {
      etcdHostPathDir: '/nonexistent/vc-nativeroll',
      rollStepTimeoutMs: STEP_TIMEOUT_MS,
    });
    vc = await t.client.create<VirtualCluster>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'rolled', namespace: 'default' },
      spec: { provisioner: { type: 'native' }, clusterVersionName: CV },
    });
    root = rootNamespace('default', 'rolled', vc.metadata!.uid!);
    await native.ensure(vc, root);
    await allRolledOut();
  }, 300_000);

  afterAll(async () => {
    await native?.stop();
    await t?.stop();
  });

  it('rolls the apiserver out before it touches the controller manager, and leaves etcd alone', async () => {
    await patchCV({
      apiServer: { extraArgs: { 'max-requests-inflight': '333' } },
      controllerManager: { extraArgs: { 'concurrent-deployment-syncs': '7' } },
    });
    expect(await native.planRoll(vc, root)).toEqual(['kube-apiserver', 'kube-controller-manager']);
    const etcdGeneration = (await sts('etcd')).metadata!.generation;
    const kcmGeneration = (await sts('controller-manager')).metadata!.generation;
    // What the StatefulSets show while ensure rolls, read as often as the API answers: the controller manager first,
    // then the apiserver, so a reading with the controller manager applied and the apiserver not yet rolled out shows
    // the order broken (two changes seen in one reading, in the right order, do not).
    let apiserverDoneAt: number | undefined;
    let kcmChangedAt: number | undefined;
    let kcmBeforeApiserver = false;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const k = await sts('controller-manager');
        const a = await sts('apiserver');
        const now = performance.now();
        const apiserverDone = (a.metadata!.generation ?? 0) > 1 && rolloutDone(a);
        const kcmChanged = k.metadata!.generation !== kcmGeneration;
        if (kcmChanged && !apiserverDone) kcmBeforeApiserver = true;
        if (apiserverDoneAt === undefined && apiserverDone) apiserverDoneAt = now;
        if (kcmChangedAt === undefined && kcmChanged) kcmChangedAt = now;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      await native.ensure(vc, root);
    } finally {
      watching = false;
      await watcher;
    }
    expect(apiserverDoneAt, 'the apiserver rolled out').toBeDefined();
    expect(kcmChangedAt, 'the controller manager was applied').toBeDefined();
    expect(kcmBeforeApiserver, 'the controller manager was applied before the apiserver rolled out').toBe(false);
    expect(apiserverDoneAt!).toBeLessThanOrEqual(kcmChangedAt!);
    expect(await args('apiserver')).toContain('--max-requests-inflight=333');
    expect(await args('controller-manager')).toContain('--concurrent-deployment-syncs=7');
    expect((await sts('etcd')).metadata!.generation).toBe(etcdGeneration);
    await allRolledOut();
    expect(await native.planRoll(vc, root)).toEqual([]);
  });

  it('stops at a step that does not roll out, names it and why, and keeps the later component as it was', async () => {
    await patchCV({
      apiServer: { resources: { requests: { cpu: '100000' } } },
      controllerManager: { extraArgs: { 'concurrent-deployment-syncs': '9' } },
    });
    expect(await native.planRoll(vc, root)).toEqual(['kube-apiserver', 'kube-controller-manager']);
    const kcmGeneration = (await sts('controller-manager')).metadata!.generation;
    const state = await native.ensure(vc, root);
    expect(state.ready).toBe(true);
    const failure = state.ready ? state.rollFailed : undefined;
    expect(failure).toMatchObject({ component: 'kube-apiserver', kept: false });
    expect(failure!.message).toMatch(
      /not rolled out within 30 s: .*Pod apiserver-0 is not scheduled.*Insufficient cpu/,
    );
    expect((await sts('controller-manager')).metadata!.generation).toBe(kcmGeneration);
    expect(await args('controller-manager')).toContain('--concurrent-deployment-syncs=7');

    // The same spec again: reported at once, not rolled again, not announced as a roll.
    const t0 = performance.now();
    const again = await native.ensure(vc, root);
    expect(performance.now() - t0).toBeLessThan(STEP_TIMEOUT_MS);
    expect(again.ready && again.rollFailed).toMatchObject({ component: 'kube-apiserver' });
    expect(await native.planRoll(vc, root)).toEqual([]);
    expect((await sts('controller-manager')).metadata!.generation).toBe(kcmGeneration);

    // A spec the super cluster can hold rolls through, the controller manager last.
    await patchCV({ apiServer: { resources: null } });
    expect(await native.planRoll(vc, root)).toEqual(['kube-apiserver', 'kube-controller-manager']);
    const fixed = await native.ensure(vc, root);
    expect(fixed.ready && fixed.rollFailed).toBeFalsy();
    expect(await args('controller-manager')).toContain('--concurrent-deployment-syncs=9');
    await allRolledOut();
  });
});
