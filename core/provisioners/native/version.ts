import type { KubeObject } from '../../kube/client.ts';
import { upgradeVerdict } from '../upgrade.ts';
import { ProvisionRefused } from '../provisioner.ts';

/**
 * This module is the native provisioner's side of a Kubernetes version change: which version a tenant's apiserver
 * StatefulSet runs (its image's tag: the provisioner tags every kube-apiserver image with the ClusterVersion's
 * kubernetesVersion, core/provisioners/native/render.ts), and the skew policy's verdict on a change before anything
 * is applied. The roll itself, in the skew policy's order, is core/provisioners/native/roll.ts's.
 */

/** RunningStatefulSet is as much of a StatefulSet as the version is read from. */
type RunningStatefulSet = KubeObject & {
  spec?: { template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } } };
};

/** runningKubernetesVersion is the tag of the apiserver StatefulSet's kube-apiserver image, when it is vX.Y.Z. */
export function runningKubernetesVersion(sts: RunningStatefulSet | null | undefined): string | undefined {
  const containers = sts?.spec?.template?.spec?.containers ?? [];
  const image = (containers.find((c) => c.name === 'apiserver') ?? containers[0])?.image;
  const tag = image?.split('@')[0]!.match(/:([^:/]+)$/)?.[1];
  return tag && /^v\d+\.\d+\.\d+/.test(tag) ? tag : undefined;
}

/**
 * judgeNativeChange refuses (ProvisionRefused, so nothing is applied and the Pods keep running) a change from the
 * running version `from` to `to` that the skew policy forbids, and calls beforeUpgrade (the snapshot) before a move
 * to the next minor. Without a running version (a first start) there is nothing to judge.
 */
export async function judgeNativeChange(
  from: string | undefined,
  to: string,
  cvName: string | undefined,
  beforeUpgrade?: (from: string, to: string) => Promise<void>,
): Promise<void> {
  if (!from) return;
  const v = upgradeVerdict(from, to);
  const where = cvName ? `ClusterVersion ${cvName} spec.kubernetesVersion` : 'spec.kubernetesVersion';
  if (v.kind === 'refused')
    throw new ProvisionRefused(v.reason, `${where}: ${v.message}; the tenant keeps running ${from}`);
  if (v.kind === 'minor') await beforeUpgrade?.(from, to);
}

/** MEMBERS_CHANGE_REFUSED is the reason of a refused change of a running tenant's etcd member count. */
export const MEMBERS_CHANGE_REFUSED = 'ControlPlaneReplicasChangeRefused';

/**
 * judgeMembersChange refuses (ProvisionRefused: nothing applied, the Pods keep running) a change of the member count
 * of a running tenant's etcd (`running`, its StatefulSet's replicas) to `wanted`: each member count has its own data
 * layout and initial cluster (core/provisioners/native/parts.ts etcdFlags), and moving between them needs etcd's
 * member add and remove, which this provisioner does not do; rendered as asked, the new members would start an
 * empty cluster. A first start (no StatefulSet) is not judged.
 */
export function judgeMembersChange(running: number | undefined, wanted: number): void {
  if (running === undefined || running === wanted) return;
  throw new ProvisionRefused(
    MEMBERS_CHANGE_REFUSED,
    `spec.controlPlane.replicas: the tenant's etcd runs ${running} member(s) and keeps that count (asked: ${wanted}); ` +
      'changing it needs etcd member add and remove, which the native provisioner does not do: make a new tenant ' +
      'with the count and move the data into it (etcdctl snapshot save, then etcdutl snapshot restore)',
  );
}
