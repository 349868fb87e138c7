/**
 * Things a tenant Pod asks of its node on the real node (issue 36): a generic ephemeral volume (the tenant's
 * controller manager makes the claim `<pod>-<volume>` from the template, the syncer carries it down under the claim
 * rules and the super Pod reads it as a plain claim) that a container writes to; `spec.nodeName` naming the vNode of
 * the real node (run there, pinned by node affinity) or a node that is not the tenant's (refused, with the reason on
 * the Pod); and an in-place resize of a running Pod's CPU, which the real kubelet carries out and the tenant Pod
 * reports at its own generation.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { LABEL, provenanceOf, superNamespace } from '../../core/names/names.ts';
import { embeddedPolicy } from '../../core/dev/embedded/embedded.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { checkPolicies } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, realNodeSkipReason, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';

const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`podvolumes.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec: {
    nodeName?: string;
    affinity?: unknown;
    volumes?: Array<Record<string, unknown>>;
    containers?: Array<{ resources?: unknown }>;
  };
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    observedGeneration?: number;
    containerStatuses?: Array<{ resources?: unknown }>;
  };
}

interface Claim extends KubeObject {
  spec: { volumeName?: string; storageClassName?: string };
  status?: { phase?: string };
}

/** CLASS is the super StorageClass the platform shares with tenants (labelled public), for volumes made beforehand. */
const CLASS = 'node-local';
const WRITTEN = 'written by a tenant container';

/** onRealNode is what a tenant writes to run a Pod on the real node: its label and a toleration of its taint. */
const onRealNode = {
  nodeSelector: { [REAL_NODE_LABEL]: 'true' },
  tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
  terminationGracePeriodSeconds: 1,
};

describe.skipIf(!!skip)('tenant Pods on the real node: ephemeral volumes, spec.nodeName, in-place resize', () => {
  let t: TestSuper;
  let cp: LocalControlPlane;
  let a: KubeClient;
  let tenant: Tenant;
  let syncer: Syncer;
  let pvDir = '';
  let sns = '';

  const phase = (name: string, want: string, timeoutMs = 120_000) =>
    eventually(
      async () => {
        const p = await a.get<Pod>(R.pods, 'default', name);
        expect(p.status?.phase).toBe(want);
        return p;
      },
      timeoutMs,
      500,
    );

  beforeAll(
    async () => {
      t = await startTestSuper({ nodes: 1, realNodes: 1 });
      cp = await t.sc.addControlPlane('tenant-v', { controllers: TENANT_CONTROLLERS });
      a = await cp.client();
      const admitted = checkPolicies({ spec: { provisioner: { type: 'local' } } }, [embeddedPolicy()]);
      if (!('effective' in admitted)) throw new Error(`embedded policy refused: ${JSON.stringify(admitted)}`);
      tenant = tenantFor(cp, 'team-v', 'v', '36363636-aaaa-4aaa-8aaa-000000000036', { pods: admitted.effective.pods });
      sns = superNamespace(tenant.key, 'default');
      // the platform's volume for the claim: a host directory of the real node (same host), made beforehand
      pvDir = join(t.stateDir, 'pv-scratch');
      mkdirSync(pvDir, { recursive: true });
      await t.client.create(R.storageclasses, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: CLASS, labels: { [LABEL.public]: 'true' } },
        provisioner: 'kubernetes.io/no-provisioner',
        volumeBindingMode: 'WaitForFirstConsumer',
      });
      await t.client.create(R.persistentvolumes, {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv-scratch' },
        spec: {
          capacity: { storage: '16Mi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: CLASS,
          persistentVolumeReclaimPolicy: 'Retain',
          hostPath: { path: pvDir, type: 'Directory' },
        },
      });
      syncer = new Syncer({
        superClient: t.client,
        host: await PluginHost.load({ process: 'manager', builtins: builtinPlugins }),
        registry: new MutableTenantRegistry([tenant]),
        patrolIntervalMs: 0,
        workers: 4,
      });
      await syncer.start();
      await eventually(() => a.get(R.serviceaccounts, 'default', 'default'), 60_000);
      // the harness waits up to 30 minutes for another set of real nodes on this host to stop (host lock)
    },
    30 * 60_000 + 240_000,
  );

  afterAll(async () => {
    await syncer?.stop();
    await t?.stop();
  });

  it('runs a Pod with a generic ephemeral volume: its container writes to the claim the tenant made', async () => {
    await a.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'scratch', namespace: 'default' },
      spec: {
        ...onRealNode,
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: NODE_IMAGES.busybox,
            imagePullPolicy: 'Never',
            command: ['sh', '-c', `echo "${WRITTEN}" > /data/out && grep -q ' /data ' /proc/mounts`],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [
          {
            name: 'data',
            ephemeral: {
              volumeClaimTemplate: {
                spec: {
                  accessModes: ['ReadWriteOnce'],
                  storageClassName: CLASS,
                  resources: { requests: { storage: '8Mi' } },
                },
              },
            },
          },
        ],
      },
    });
    const done = await phase('scratch', 'Succeeded').catch(async (e: unknown) => {
      const events = (await t.client.list<KubeObject & { reason?: string; message?: string }>(R.events)).items;
      process.stdout.write(`super events:\n${events.map((x) => `${x.reason}: ${x.message}`).join('\n')}\n`);
      throw e;
    });
    // the tenant's controller manager made the claim, owned by the Pod, as upstream does
    const claim = await a.get<Claim>(R.persistentvolumeclaims, 'default', 'scratch-data');
    expect(claim.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Pod', name: 'scratch', uid: done.metadata?.uid, controller: true }),
    ]);
    // the super Pod reads the synced claim (syncer provenance), bound by the super cluster to the platform's volume
    const sp = await t.client.get<Pod>(R.pods, sns, 'scratch');
    expect(sp.spec.volumes?.find((v) => v.name === 'data')).toEqual({
      name: 'data',
      persistentVolumeClaim: { claimName: 'scratch-data' },
    });
    const superClaim = await t.client.get<Claim>(R.persistentvolumeclaims, sns, 'scratch-data');
    expect(provenanceOf(superClaim)).toMatchObject({ cluster: tenant.key, name: 'scratch-data' });
    expect(superClaim.spec.volumeName).toBe('pv-scratch');
    await eventually(async () => {
      const c = await a.get<Claim>(R.persistentvolumeclaims, 'default', 'scratch-data');
      expect(c.status?.phase).toBe('Bound');
    });
    // what the container wrote is on the volume
    expect(readFileSync(join(pvDir, 'out'), 'utf8').trim()).toBe(WRITTEN);
    // deleting the Pod deletes its claim in the tenant (garbage collector) and so in the super cluster
    await a.delete(R.pods, 'default', 'scratch');
    await eventually(async () => {
      expect(await t.client.getOrNull(R.persistentvolumeclaims, sns, 'scratch-data')).toBeNull();
    }, 90_000);
    expect(existsSync(join(pvDir, 'out'))).toBe(true);
  });

  it("runs a Pod naming the real node's vNode there, and refuses one naming a node that is not the tenant's", async () => {
    const real = t.sc.realNodes[0]!.name;
    // a simulated node of the super cluster, where this tenant never ran a Pod: not one of its nodes
    const other = (await t.client.list(R.nodes)).items.map((n) => n.metadata!.name!).find((n) => n !== real)!;
    const busy = (name: string, nodeName: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: {
        ...onRealNode,
        nodeName,
        containers: [{ name: 'c', image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
      },
    });
    // the tenant sees the real node's vNode once one of its Pods runs there (the default withPods view)
    await a.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'first', namespace: 'default' },
      spec: {
        ...onRealNode,
        containers: [{ name: 'c', image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
      },
    });
    await phase('first', 'Running');
    await eventually(async () => expect((await a.list(R.nodes)).items.map((n) => n.metadata?.name)).toContain(real));
    await a.create(R.pods, busy('pinned', real));
    await a.create(R.pods, busy('elsewhere', other));
    const p = await phase('pinned', 'Running');
    expect(p.spec.nodeName).toBe(real);
    const sp = await t.client.get<Pod>(R.pods, sns, 'pinned');
    expect(sp.spec.nodeName).toBe(real);
    expect(sp.spec.affinity).toBeUndefined();
    const refused = await eventually(async () => {
      const x = await a.get<Pod>(R.pods, 'default', 'elsewhere');
      const c = x.status?.conditions?.find((y) => y.type === 'VCSynced');
      expect(c?.reason).toBe('NodeNameRefused');
      return c!;
    });
    expect(refused.message).toContain(`spec.nodeName "${other}" is not a node of this tenant`);
    expect(await t.client.getOrNull(R.pods, sns, 'elsewhere')).toBeNull();
    for (const n of ['first', 'pinned', 'elsewhere']) await a.delete(R.pods, 'default', n);
    await eventually(async () => expect((await t.client.list(R.pods, { namespace: sns })).items).toEqual([]), 90_000);
  });

  it('resizes a running Pod in place: the super container gets the CPU, the tenant sees it at its own generation', async () => {
    const cpu = (v: string) => ({ requests: { cpu: v, memory: '32Mi' }, limits: { cpu: v, memory: '32Mi' } });
    await a.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'grow', namespace: 'default' },
      spec: {
        ...onRealNode,
        containers: [
          {
            name: 'c',
            image: NODE_IMAGES.busybox,
            imagePullPolicy: 'Never',
            command: ['sleep', '3600'],
            resources: cpu('100m'),
          },
        ],
      },
    });
    await phase('grow', 'Running');
    // a new toleration moves only the tenant's generation: the super Pod's stays where it was
    await a.patch(
      R.pods,
      'default',
      'grow',
      [{ op: 'add', path: '/spec/tolerations/-', value: { key: 'k', operator: 'Exists', effect: 'NoSchedule' } }],
      'json',
    );
    const resized = await a.patch<Pod>(
      R.pods,
      'default',
      'grow',
      [{ op: 'replace', path: '/spec/containers/0/resources', value: cpu('200m') }],
      'json',
      { subresource: 'resize' },
    );
    expect(resized.metadata?.generation).toBe(3);
    const sp = await eventually(async () => {
      const x = await t.client.get<Pod>(R.pods, sns, 'grow');
      expect(x.spec.containers?.[0]?.resources).toEqual(cpu('200m'));
      return x;
    });
    expect(sp.metadata?.generation).toBe(2);
    // the real kubelet resized the container; the tenant Pod says so, observed at the tenant's generation 3
    const p = await eventually(
      async () => {
        const x = await a.get<Pod>(R.pods, 'default', 'grow');
        expect(x.status?.containerStatuses?.[0]?.resources).toEqual(cpu('200m'));
        expect(x.status?.observedGeneration).toBe(3);
        return x;
      },
      120_000,
      500,
    );
    expect(p.status?.phase).toBe('Running');
    await a.delete(R.pods, 'default', 'grow');
    await eventually(async () => expect((await t.client.list(R.pods, { namespace: sns })).items).toEqual([]), 90_000);
  });
});
