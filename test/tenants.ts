/**
 * Helpers for tests that drive tenants of the embedded default through its meta cluster: a tenant once Running, and a
 * sliced tenant namespace once the namespace scheduler placed it.
 */
import { expect } from 'vitest';
import type { KubeClient, KubeObject } from '../core/kube/client.ts';
import { R } from '../core/kube/resources.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../core/api/virtualcluster.ts';
import { PLACEMENTS, SLICE, SUPER_CLUSTER } from '../core/scheduler/annotations.ts';
import { eventually, TENANT_START_MS } from './harness.ts';

/** RunningTenant is a VirtualCluster once Running: its root namespace in the super cluster and its kubeconfig. */
export interface RunningTenant {
  root: string;
  kubeconfig: string;
}

/** runningTenant waits until the VirtualCluster default/`name` is Running and its kubeconfig Secret exists. */
export async function runningTenant(
  meta: KubeClient,
  name: string,
  timeoutMs = TENANT_START_MS,
): Promise<RunningTenant> {
  return eventually(async () => {
    const vc = await meta.get<VirtualCluster>(R.virtualclusters, 'default', name);
    expect(vc.status?.phase).toBe('Running');
    const s = await meta.get<KubeObject & { data: Record<string, string> }>(
      R.secrets,
      'default',
      kubeconfigSecretName(name),
    );
    return { root: vc.status!.clusterNamespace!, kubeconfig: Buffer.from(s.data.kubeconfig!, 'base64').toString() };
  }, timeoutMs);
}

/**
 * slicedNamespace creates tenant namespace `name` with slices of 100m CPU and 100Mi memory and a ResourceQuota of two
 * slices, then waits until the scheduler wrote `placements` on it.
 */
export async function slicedNamespace(tenant: KubeClient, name: string, placements: Record<string, number>) {
  await tenant.create(R.namespaces, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, annotations: { [SLICE]: '{"cpu":"100m","memory":"100Mi"}' } },
  });
  await tenant.create(R.resourcequotas, {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'q', namespace: name },
    spec: { hard: { cpu: '200m', memory: '200Mi' } },
  });
  await eventually(async () => {
    const ns = await tenant.get(R.namespaces, undefined, name);
    expect(JSON.parse(ns.metadata?.annotations?.[PLACEMENTS] ?? '{}')).toEqual(placements);
  }, 60_000);
}

/**
 * demoDeployment creates the seed demo's workload in tenant namespace `ns`: Deployment `web`, two replicas of one
 * container `c` that fills a slice (100m CPU, 100Mi memory), with the default dnsPolicy. `container` adds to or
 * replaces fields of the container (image, command), `pod` to the Pod spec.
 */
export async function demoDeployment(
  tenant: KubeClient,
  ns: string,
  o: { container?: Record<string, unknown>; pod?: Record<string, unknown> } = {},
) {
  const res = { cpu: '100m', memory: '100Mi' };
  await tenant.create(R.deployments, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: ns },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          ...o.pod,
          containers: [{ name: 'c', image: 'busybox', resources: { requests: res, limits: res }, ...o.container }],
        },
      },
    },
  });
}

/**
 * namespaceOnlyOn makes sliced namespaces of one slice (`far-0`, `far-1`, ...) in the tenant until the scheduler
 * places one on the super cluster `cluster` alone (at most four tries), and returns its name.
 */
export async function namespaceOnlyOn(tenant: KubeClient, cluster: string): Promise<string> {
  let far = '';
  for (let i = 0; i < 4 && !far; i++) {
    const name = `far-${i}`;
    await tenant.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, annotations: { [SLICE]: '{"cpu":"100m","memory":"100Mi"}' } },
    });
    await tenant.create(R.resourcequotas, {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'q', namespace: name },
      spec: { hard: { cpu: '100m', memory: '100Mi' } },
    });
    const placed = await eventually(async () => {
      const p = (await tenant.get(R.namespaces, undefined, name)).metadata?.annotations?.[PLACEMENTS];
      expect(p).toBeDefined();
      return JSON.parse(p!) as Record<string, number>;
    }, 60_000);
    if (Object.keys(placed).join() === cluster) far = name;
  }
  expect(far).not.toBe('');
  return far;
}

/** SEED_DEMO names what seedDemo makes in the tenant's `default` namespace: its Deployment and the Pods' label. */
export const SEED_DEMO = { namespace: 'default', deployment: 'test-1', selector: 'app=test-1' } as const;

/**
 * seedDemo runs the seed's multi-super-cluster experiment in a tenant, step by step as it is written: the slice
 * annotation `{"cpu":"100m", "memory":"100Mi"}` added to the tenant's existing `default` namespace, the ResourceQuota
 * `mem-cpu-demo` of two slices (cpu 200m, memory 200Mi) there, the scheduler's placements on `default` awaited (they
 * must equal `placements`), then Deployment `test-1` (dnsPolicy ClusterFirst, the default; one container `test`
 * running `sh -c "sleep 1000000"` with limits of one slice and no requests, which default to the limits) with one
 * replica, and once its Pod is placed, scaled to two. `image` replaces the seed's docker.io/library/busybox:1.29
 * (and its imagePullPolicy Always) with one the host has, `pod` adds to the Pod spec. Returns when the second Pod
 * exists; the caller waits for what it checks.
 */
export async function seedDemo(
  tenant: KubeClient,
  placements: Record<string, number>,
  o: { image?: string; pod?: Record<string, unknown> } = {},
) {
  const ns = SEED_DEMO.namespace;
  await tenant.patch(
    R.namespaces,
    undefined,
    ns,
    { metadata: { annotations: { [SLICE]: '{"cpu":"100m", "memory":"100Mi"}' } } },
    'merge',
  );
  await tenant.create(R.resourcequotas, {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'mem-cpu-demo', namespace: ns },
    spec: { hard: { cpu: '200m', memory: '200Mi' } },
  });
  await eventually(async () => {
    const got = await tenant.get(R.namespaces, undefined, ns);
    expect(JSON.parse(got.metadata?.annotations?.[PLACEMENTS] ?? '{}')).toEqual(placements);
  }, 60_000);
  const labels = { app: SEED_DEMO.deployment };
  await tenant.create(R.deployments, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: SEED_DEMO.deployment, namespace: ns, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          ...o.pod,
          dnsPolicy: 'ClusterFirst',
          containers: [
            {
              name: 'test',
              command: ['sh', '-c', 'sleep 1000000'],
              image: o.image ?? 'docker.io/library/busybox:1.29',
              imagePullPolicy: o.image ? 'IfNotPresent' : 'Always',
              resources: { limits: { cpu: '100m', memory: '100Mi' } },
            },
          ],
        },
      },
    },
  });
  const placed = (n: number) =>
    eventually(async () => {
      const pods = (await tenant.list(R.pods, { namespace: ns, labelSelector: SEED_DEMO.selector })).items;
      expect(pods.filter((p) => p.metadata?.annotations?.[SUPER_CLUSTER])).toHaveLength(n);
    }, 120_000);
  await placed(1);
  await tenant.patch(R.deployments, ns, SEED_DEMO.deployment, { spec: { replicas: 2 } }, 'merge');
  await placed(2);
}
