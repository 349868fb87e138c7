/**
 * Helpers for tests that drive tenants of the embedded default through its meta cluster: a tenant once Running, and a
 * sliced tenant namespace once the namespace scheduler placed it.
 */
import { expect } from 'vitest';
import type { KubeClient, KubeObject } from '../core/kube/client.ts';
import { R } from '../core/kube/resources.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../core/api/virtualcluster.ts';
import { PLACEMENTS, SLICE } from '../core/scheduler/annotations.ts';
import { eventually } from './harness.ts';

/** RunningTenant is a VirtualCluster once Running: its root namespace in the super cluster and its kubeconfig. */
export interface RunningTenant {
  root: string;
  kubeconfig: string;
}

/** runningTenant waits until the VirtualCluster default/`name` is Running and its kubeconfig Secret exists. */
export async function runningTenant(meta: KubeClient, name: string, timeoutMs = 120_000): Promise<RunningTenant> {
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
