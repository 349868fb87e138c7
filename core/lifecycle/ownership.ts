import type { KubeClient, KubeObject, Resource } from '../kube/client.ts';
import { objectKey } from '../kube/informer.ts';
import { R } from '../kube/resources.ts';
import { childLogger } from '../log.ts';
import { ANN, IDENTITY, LABEL, provenanceOf } from '../names/names.ts';
import { caFromKubeconfig } from '../pki/kubeconfig.ts';
import type { Provisioned } from '../provisioners/provisioner.ts';
import {
  kubeconfigSecretName,
  TENANT_CA_KEY,
  tenantCAConfigMapName,
  type VirtualCluster,
} from '../api/virtualcluster.ts';
import { capiKubeconfig, kubeconfigSecretData } from './kubeconfigsecret.ts';

const log = childLogger({ controller: 'virtualcluster' });
/** VC_API_VERSION is the apiVersion of VirtualCluster objects, as owner references name it. */
export const VC_API_VERSION = 'tenancy.x-k8s.io/v1alpha1';

/**
 * MetaObjects writes and deletes the objects of the meta cluster that belong to one VirtualCluster (its kubeconfig
 * Secret and tenant-CA ConfigMap), never taking over one that is not that VirtualCluster's.
 */
export class MetaObjects {
  constructor(private readonly meta: KubeClient) {}

  /**
   * writeKubeconfig writes the admin kubeconfig Secret. It never takes over a Secret it did not write: an existing one
   * without the manager's label and this VirtualCluster as controlling owner is refused (returned, for a NotOwned
   * condition). A missing one is created (so a Secret made in the meantime fails the create instead of being
   * adopted), and an owned one is applied with its resourceVersion as a precondition.
   */
  async writeKubeconfig(vc: VirtualCluster, p: Provisioned): Promise<string | { refused: string }> {
    const m = vc.metadata!;
    const name = kubeconfigSecretName(m.name!);
    const data = kubeconfigSecretData(p);
    const capi = capiKubeconfig(m.name!, m.labels, data);
    const desired: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: m.namespace,
        labels: { [LABEL.managedBy]: IDENTITY.manager, ...capi.labels },
        ownerReferences: [
          { apiVersion: VC_API_VERSION, kind: 'VirtualCluster', name: m.name, uid: m.uid, controller: true },
        ],
      },
      type: 'Opaque',
      data: { ...data, ...capi.data },
    };
    const refused = await this.writeOwned(R.secrets, desired, m.uid!);
    return refused ? { refused } : name;
  }

  /**
   * writeOwned writes an object of the meta cluster that belongs to the VirtualCluster with uid `vcUid`: created when
   * missing (so one made in the meantime fails the create instead of being adopted), applied with the checked
   * resourceVersion as precondition when it carries the manager's label and the VirtualCluster as controlling owner,
   * and otherwise left alone: the reason is returned, for a NotOwned condition.
   */
  async writeOwned(r: Resource, desired: KubeObject, vcUid: string): Promise<string | undefined> {
    const md = desired.metadata!;
    const existing = await this.meta.getOrNull(r, md.namespace, md.name!);
    if (!existing) {
      await this.meta.create(r, desired, { fieldManager: IDENTITY.manager });
      return undefined;
    }
    const refusal = notOwnedObject(r.kind, existing, vcUid);
    if (refusal) return refusal;
    await this.meta.apply(r, guarded(desired, existing), IDENTITY.manager);
    return undefined;
  }

  /** foreignMetaObject is the refusal for an existing kubeconfig Secret or tenant-CA ConfigMap not this VirtualCluster's. */
  async foreignMetaObject(vc: VirtualCluster): Promise<string | undefined> {
    const m = vc.metadata!;
    for (const [r, name] of [
      [R.secrets, kubeconfigSecretName(m.name!)],
      [R.configmaps, tenantCAConfigMapName(m.name!)],
    ] as const) {
      const existing = await this.meta.getOrNull(r, m.namespace, name);
      const refusal = existing && notOwnedObject(r.kind, existing, m.uid!);
      if (refusal) return refusal;
    }
    return undefined;
  }

  /** deleteOwned deletes an object of the meta cluster only when it is the VirtualCluster's (uid precondition). */
  async deleteOwned(r: Resource, namespace: string, name: string, vcUid: string): Promise<void> {
    const o = await this.meta.getOrNull(r, namespace, name);
    if (o && !notOwnedObject(r.kind, o, vcUid)) await this.meta.delete(r, namespace, name, { uid: o.metadata!.uid });
  }

  /**
   * writeTenantCA publishes the tenant CA certificate, public data, for the vn-agent (which reads no Secret). The
   * agent trusts it only with this managed-by label and this VirtualCluster as controller owner; see
   * core/vnagent/directory.ts for why it is not in status. Like the kubeconfig Secret, it is never taken over: an
   * existing ConfigMap that is not this VirtualCluster's is returned as a refusal.
   */
  async writeTenantCA(vc: VirtualCluster, p: Provisioned): Promise<string | undefined> {
    const m = vc.metadata!;
    let caPem: string;
    try {
      caPem = caFromKubeconfig(p.kubeconfig);
    } catch (e) {
      // As before, such a tenant is simply not served by the vn-agent; its control plane still runs.
      log.warn(
        { vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) },
        'no tenant CA to publish for the vn-agent',
      );
      return undefined;
    }
    return this.writeOwned(
      R.configmaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: tenantCAConfigMapName(m.name!),
          namespace: m.namespace,
          labels: { [LABEL.managedBy]: IDENTITY.manager },
          ownerReferences: [
            { apiVersion: VC_API_VERSION, kind: 'VirtualCluster', name: m.name, uid: m.uid, controller: true },
          ],
        },
        data: { [TENANT_CA_KEY]: caPem },
      },
      m.uid!,
    );
  }
}

/**
 * notOwnedRoot says why an existing namespace named like a VirtualCluster's root is not that VirtualCluster's, or
 * returns undefined when it is: the manager's managed-by label and the VirtualCluster's uid annotation.
 */
export function notOwnedRoot(ns: KubeObject, vcUid: string): string | undefined {
  const md = ns.metadata ?? {};
  if (md.labels?.[LABEL.managedBy] === IDENTITY.manager && md.annotations?.[ANN.vcUid] === vcUid) return undefined;
  return (
    `super namespace ${md.name} exists and is not this VirtualCluster's (it lacks the ` +
    `${LABEL.managedBy}=${IDENTITY.manager} label or its ${ANN.vcUid} annotation is not ${vcUid}); the ` +
    `manager does not take it over`
  );
}

/**
 * notOwnedObject says why an existing object the manager writes for a VirtualCluster (its kubeconfig Secret, its
 * tenant CA ConfigMap) is not that VirtualCluster's, or returns undefined when it is: the manager's managed-by label
 * and the VirtualCluster (by uid) as its controlling owner.
 */
export function notOwnedObject(kind: string, o: KubeObject, vcUid: string): string | undefined {
  const md = o.metadata ?? {};
  const controller = md.ownerReferences?.find((r) => r.controller === true);
  if (md.labels?.[LABEL.managedBy] === IDENTITY.manager && controller?.uid === vcUid) return undefined;
  return (
    `${kind} ${md.namespace}/${md.name} exists and was not written by the manager for this VirtualCluster ` +
    `(it lacks the ${LABEL.managedBy}=${IDENTITY.manager} label or this VirtualCluster as controlling ` +
    `owner); the manager does not take it over: delete or rename it`
  );
}

/**
 * ownedNamespace reports whether clean-up of the VirtualCluster whose root is `root` may delete a super namespace: its
 * root, when it carries the VirtualCluster's uid, or a namespace the syncer wrote for this tenant (provenance).
 */
export function ownedNamespace(ns: KubeObject, root: string, vcUid: string): boolean {
  const md = ns.metadata ?? {};
  if (md.name === root) return !notOwnedRoot(ns, vcUid);
  return provenanceOf(ns)?.cluster === root;
}

/** guarded adds the resourceVersion of the object that was checked to an apply, so a swap in between conflicts. */
export function guarded(desired: KubeObject, checked: KubeObject | null): KubeObject {
  const rv = checked?.metadata?.resourceVersion;
  return rv ? { ...desired, metadata: { ...desired.metadata, resourceVersion: rv } } : desired;
}
