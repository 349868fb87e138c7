import {
  buildOn,
  copyFields,
  type Decision,
  isPublic,
  type KubeObject,
  PLUGIN_API_VERSION,
  R,
  type ResourcePlugin,
  type RouteContext,
  routeToAllTenants,
  type TenantKey,
  upMeta,
} from '@virtualcluster-ts/plugin-sdk';

/** PriorityClass is a scheduling.k8s.io/v1 PriorityClass. */
export interface PriorityClass extends KubeObject {
  value?: number;
  globalDefault?: boolean;
  preemptionPolicy?: string;
  description?: string;
}

/** RESERVED_PREFIX starts the names of the PriorityClasses every apiserver creates itself; they are never copied. */
export const RESERVED_PREFIX = 'system-';

const isReserved = (o: KubeObject): boolean => (o.metadata?.name ?? '').startsWith(RESERVED_PREFIX);

/**
 * priorityclassesPlugin copies the super PriorityClasses labelled public into every tenant that enables it, so tenant Pods
 * can name them. The tenant copy is never the global default: the super's default must not silently become the
 * default of tenant Pods that name no class.
 */
export const priorityclassesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'priorityclasses',
    version: '0.1.0',
    description:
      'Copies the super PriorityClasses labelled tenancy.x-k8s.io/super.public=true into tenants, never as global default.',
    resource: { ...R.priorityclasses },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
    optIn: true,
  },

  route(superObj: PriorityClass, rctx: RouteContext): TenantKey[] {
    if (!isPublic(superObj) || isReserved(superObj)) return [];
    return routeToAllTenants(superObj, rctx);
  },

  toTenant(superObj: PriorityClass | undefined, tenantObj: PriorityClass | undefined): Decision<PriorityClass> {
    if (superObj && isReserved(superObj)) {
      return {
        object: tenantObj ?? null,
        skip: {
          reason: 'ReservedName',
          message: `priority class ${superObj.metadata?.name ?? ''} is built into every apiserver`,
        },
      };
    }
    if (!superObj || !isPublic(superObj)) return { object: null };
    const desired = buildOn<PriorityClass>(tenantObj, superObj, upMeta(superObj, tenantObj));
    desired.value = superObj.value ?? 0;
    desired.globalDefault = false;
    copyFields(superObj, desired, ['preemptionPolicy', 'description']);
    return { object: desired };
  },
} satisfies ResourcePlugin<PriorityClass>;

export default priorityclassesPlugin;
