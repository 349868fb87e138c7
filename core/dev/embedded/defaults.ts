// What the embedded default configures: its TenantPolicy, the placement and defaults of tenant Pods, native settings.
import { join } from 'node:path';
import type { ManagerConfig } from '../../programs/manager/config.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import type { NativeOptions } from '../../provisioners/native/provisioner.ts';
import { DEFAULT_POLICY, DEFAULT_POLICY_ANNOTATION, type TenantPolicy } from '../../tenancy/policy.ts';
import { NODE_IMAGES } from '../../toolchain/node.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../local/realnode.ts';

/** EMBEDDED_POLICY_NAME is the TenantPolicy `vc up` creates (once) and annotates default. */
export const EMBEDDED_POLICY_NAME = 'embedded';

/**
 * embeddedPolicy is the TenantPolicy of the embedded default: the built-in defaults, except that tenant Pods may
 * tolerate the real node's NoSchedule taint and select nodes by its label. The platform thereby lets a tenant run a
 * Pod on a real node (the toolchain's images only) when the Pod asks for it; where `vc up` runs one super cluster with
 * a real node it places every tenant Pod there anyway (embeddedForcedPlacement). The toolchain's images, which `vc up`
 * imports into the real node, run from the node's image store (pods.preloadedImages): nothing can be pulled here.
 * It grants the super clusters `vc up` started (spec.superCluster may name them), and, being the default policy, is
 * everyone's. Nothing else is widened: no ClusterVersion and no import Secret is granted.
 */
export function embeddedPolicy(superClusters: readonly string[] = []): TenantPolicy {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'TenantPolicy',
    metadata: { name: EMBEDDED_POLICY_NAME, annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
    spec: {
      pods: {
        tolerations: [
          ...DEFAULT_POLICY.podTolerations.map((t) => ({ ...t })),
          { key: REAL_NODE_TAINT.key, effect: REAL_NODE_TAINT.effect },
        ],
        nodeLabelKeys: [...DEFAULT_POLICY.podNodeLabelKeys, REAL_NODE_LABEL],
        preloadedImages: Object.values(NODE_IMAGES),
      },
      ...(superClusters.length && { grants: { superClusters: [...superClusters] } }),
    },
  };
}

/**
 * embeddedForcedPlacement is what `vc up` forces onto every tenant Pod (the manager's tenantDefaults.pods.forced) when
 * it runs one super cluster with a real node: the real node's label and a toleration of its NoSchedule taint, so
 * tenant workloads run as real containers (DNS, Services, logs and exec work) rather than as kwok's simulations. It is
 * written into the manager configuration by every `vc up`, so it follows that run: `--real-nodes 0`, the fallback to
 * simulated nodes or several super clusters (whose others have no real node) force nothing. Unlike the embedded
 * TenantPolicy, created once and then the administrator's, it cannot outlive the real node it names.
 */
export function embeddedForcedPlacement(): ForcedPlacementView {
  return {
    nodeSelector: { [REAL_NODE_LABEL]: 'true' },
    tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
  };
}

/**
 * embeddedTenantDefaults is the manager's tenantDefaults under `vc up`, from the real nodes it started (each Ready by
 * then) and its super clusters: none without a real node; with one, the real node's images (imported with it, never
 * pulled) kept IfNotPresent, busybox among them as the image that writes the tenant's names into /etc/hosts of Pods
 * with a subdomain, and with a single super cluster every tenant Pod forced onto the real node.
 */
export function embeddedTenantDefaults(o: {
  realNodes: number;
  superClusters: number;
  preloadedImages: readonly string[];
}): Pick<ManagerConfig, 'tenantDefaults'> {
  if (o.realNodes < 1) return {};
  return {
    tenantDefaults: {
      pods: {
        preloadedImages: [...Object.values(NODE_IMAGES), ...o.preloadedImages],
        etcHostsImage: NODE_IMAGES.busybox,
        ...(o.superClusters === 1 && { forced: embeddedForcedPlacement() }),
      },
    },
  };
}

/**
 * nativeOnRealNodes are the native provisioner's settings on a local super cluster with real nodes: the control-plane
 * Pods run on a real node (the only nodes that run containers), the manager on this host reaches each tenant
 * apiserver at its Service's ClusterIP (kube-proxy routes it here), and etcd keeps its data under
 * `<stateDir>/native/<root>` (the local super cluster has no volume provisioner), deleted with the tenant. The tenants'
 * DNS servers read their Services through the manager's DNS view at dnsView (the real node's bridge gateway, where
 * Pods reach this host), which shows each with its super cluster IP.
 */
export function nativeOnRealNodes(stateDir: string, dnsView: { host: string; port: number }): NativeOptions {
  return {
    apiserverAccess: 'ClusterIP',
    placement: embeddedForcedPlacement(),
    etcdHostPathDir: join(stateDir, 'native'),
    dnsView,
  };
}
