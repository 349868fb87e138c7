import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { LABEL } from '../../names/names.ts';
import type { ComponentReport } from '../provisioner.ts';

/** NATIVE_COMPONENTS maps the `component` label of a native tenant's Pods to the component name health reports. */
export const NATIVE_COMPONENTS: ReadonlyArray<[label: string, name: string]> = [
  ['etcd', 'etcd'],
  ['apiserver', 'kube-apiserver'],
  ['controller-manager', 'kube-controller-manager'],
];

/** PodView is what componentsOfPods reads of a Pod. */
export type PodView = KubeObject & {
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      name: string;
      restartCount?: number;
      state?: { waiting?: { reason?: string; message?: string }; terminated?: { reason?: string } };
    }>;
  };
};

/**
 * componentsOfPods reports a native tenant's components from their Pods: a component runs while one of its Pods is
 * Ready (the StatefulSet's readiness probe passes), its restarts are the kubelet's restart counts of its containers
 * (liveness probe failures and crashes), and a component without a Ready Pod says why (a waiting reason such as
 * CrashLoopBackOff, or the Pod's phase).
 */
export function componentsOfPods(pods: readonly PodView[]): ComponentReport[] {
  return NATIVE_COMPONENTS.map(([label, name]) => {
    const mine = pods.filter((p) => p.metadata?.labels?.[LABEL.component] === label);
    const restarts = mine
      .flatMap((p) => p.status?.containerStatuses ?? [])
      .reduce((n, c) => n + (c.restartCount ?? 0), 0);
    const ready = mine.some((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    if (ready) return { name, running: true, restarts };
    if (!mine.length) return { name, running: false, restarts, message: `${name} has no Pod` };
    const why = mine.map((p) => {
      const c = p.status?.containerStatuses?.find((s) => s.state?.waiting || s.state?.terminated);
      const reason = c?.state?.waiting?.reason ?? c?.state?.terminated?.reason ?? p.status?.phase ?? 'Unknown';
      return `Pod ${p.metadata?.name}: ${reason}`;
    });
    return { name, running: false, restarts, message: `${name} has no Ready Pod (${why.join('; ')})` };
  });
}

/** nativeComponents lists the tenant's control-plane Pods in its root namespace and reports them. */
export async function nativeComponents(superClient: KubeClient, root: string): Promise<ComponentReport[]> {
  const pods = await superClient.list<PodView>(R.pods, {
    namespace: root,
    labelSelector: `${LABEL.cluster}=${root},${LABEL.component}`,
  });
  return componentsOfPods(pods.items);
}
