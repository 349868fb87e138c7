import type { KubeClient, KubeObject, Resource } from './client.ts';

/**
 * NOT_CONFIGURED is how the apiserver refuses a write that a ValidatingAdmissionPolicy matches while it cannot yet
 * evaluate that policy: its paramKind is a resource of a CRD installed moments before, not yet in the admission
 * plugin's REST mapping ("failed to configure policy: failed to find resource referenced by paramKind"). A policy
 * with failurePolicy Fail refuses every such write until the apiserver catches up.
 */
const NOT_CONFIGURED = /failed to configure policy/;

/**
 * waitAdmissionConfigured returns once the apiserver evaluates the admission policies that match `probe`: it creates
 * the probe with dryRun (nothing is stored) until the answer is anything but NOT_CONFIGURED (created, or refused by a
 * policy that ran). An installer calls it after it installs CRDs and the policies that take them as parameters, so
 * that the first VirtualCluster a user writes is judged, not refused for a reason of the apiserver's start.
 */
export async function waitAdmissionConfigured(
  c: KubeClient,
  resource: Resource,
  probe: KubeObject,
  o: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  for (;;) {
    try {
      await c.create(resource, probe, { dryRun: true });
      return;
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (!NOT_CONFIGURED.test(message)) return;
      if (Date.now() >= deadline)
        throw new Error(`admission policies matching ${resource.resource} still not configured: ${message}`);
    }
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 1000));
  }
}

/**
 * VIRTUAL_CLUSTER_PROBE is the VirtualCluster an installer probes the admission policies of deploy/policy with
 * (never stored: dryRun). Whether they allow or refuse it does not matter, only that they run.
 */
export const VIRTUAL_CLUSTER_PROBE: KubeObject = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'vc-admission-probe', namespace: 'default' },
  spec: {},
};
