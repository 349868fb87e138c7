import {
  buildOn,
  copyFields,
  type Decision,
  downMeta,
  PLUGIN_API_VERSION,
  R,
  type ResourcePlugin,
  type RouteContext,
  routeToAllTenants,
  superClusterName,
  type TenantKey,
  upMeta,
} from '@virtualcluster-ts/plugin-sdk';
import {
  checkTenantRuntimeClass,
  isMirror,
  isPublicClass,
  RUNTIMECLASSES_PLUGIN,
  RUNTIME_CLASS_POLICY_VIOLATION,
  type RuntimeClass,
} from '@virtualcluster-ts/plugin-sdk/pods';

export {
  checkTenantRuntimeClass,
  DEFAULT_HANDLERS,
  isMirror,
  isPublicClass,
  podRuntimeClass,
  type PodRuntimeClass,
  RUNTIME_CLASS_POLICY_VIOLATION,
  type RuntimeClass,
} from '@virtualcluster-ts/plugin-sdk/pods';

/** NAME_TAKEN is the skip reason of a public class not copied because the tenant has its own class of that name. */
export const NAME_TAKEN = 'NameTaken';

const RC_API_VERSION = `${R.runtimeclasses.group}/${R.runtimeclasses.version}`;

/**
 * runtimeclassesPlugin syncs the tenant's own RuntimeClasses to the super cluster under the tenant-unique name
 * superClusterName gives (so no tenant can take another's class or the platform's), with handler, overhead and
 * scheduling as the tenant wrote them, once the policy allows the handler and the scheduling. A refused class gets a
 * Warning event and no super copy (an existing copy is deleted). Classes the syncer mirrored from public super
 * classes are not the tenant's and are not synced down.
 */
export const runtimeclassesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: RUNTIMECLASSES_PLUGIN,
    version: '0.1.0',
    description:
      "Syncs tenant RuntimeClasses to the super cluster under tenant-unique names, within the tenant's policy.",
    resource: { ...R.runtimeclasses },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },

  superName(_ns, name, ctx) {
    return { name: superClusterName(ctx.tenant.key, name) };
  },

  toSuper(tenantObj: RuntimeClass, superObj: RuntimeClass | undefined, ctx): Decision<RuntimeClass> {
    if (isMirror(tenantObj) || tenantObj.metadata?.deletionTimestamp) return { object: null };
    const name = tenantObj.metadata?.name ?? '';
    const refusal = checkTenantRuntimeClass(tenantObj, ctx.tenant);
    if (refusal) {
      // No skip: a class the policy stopped allowing must lose its super copy, which only a null object does.
      return {
        object: null,
        effects: [
          {
            type: 'event',
            side: 'tenant',
            regarding: { apiVersion: RC_API_VERSION, kind: 'RuntimeClass', name, uid: tenantObj.metadata?.uid },
            eventType: 'Warning',
            reason: RUNTIME_CLASS_POLICY_VIOLATION,
            message: `RuntimeClass ${name} is not synced to the super cluster: ${refusal.field}: ${refusal.message}`,
          },
        ],
      };
    }
    const target = { name: superClusterName(ctx.tenant.key, name) };
    const desired = buildOn<RuntimeClass>(superObj, tenantObj, downMeta(tenantObj, superObj, ctx, target));
    desired.handler = tenantObj.handler;
    copyFields(tenantObj, desired, ['overhead', 'scheduling']);
    return { object: desired };
  },
} satisfies ResourcePlugin<RuntimeClass>;

/**
 * publicRuntimeclassesPlugin copies the super RuntimeClasses labelled public (a sandbox such as Kata) into every tenant
 * under their own names, the way public StorageClasses are, with handler and overhead (so the tenant apiserver
 * accounts for the overhead in quotas). Their scheduling is left out: the super apiserver adds it to the super Pod,
 * and a copy in the tenant would make the tenant apiserver write the platform's tolerations and node selector into
 * tenant Pods, where the tenant's pods policy would judge them as the tenant's own. A tenant class of the same name
 * that the tenant made itself is left alone.
 */
export const publicRuntimeclassesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: `${RUNTIMECLASSES_PLUGIN}-public`,
    version: '0.1.0',
    description: 'Copies the super RuntimeClasses labelled tenancy.x-k8s.io/super.public=true into every tenant.',
    resource: { ...R.runtimeclasses },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
  },

  route(superObj: RuntimeClass, rctx: RouteContext): TenantKey[] {
    return isPublicClass(superObj) ? routeToAllTenants(superObj, rctx) : [];
  },

  toTenant(superObj: RuntimeClass | undefined, tenantObj: RuntimeClass | undefined): Decision<RuntimeClass> {
    if (!superObj || !isPublicClass(superObj)) return { object: null };
    if (tenantObj && !isMirror(tenantObj)) {
      const name = tenantObj.metadata?.name ?? '';
      return {
        object: tenantObj,
        skip: {
          reason: NAME_TAKEN,
          message: `the tenant has a RuntimeClass ${name} of its own; the public one is not copied`,
        },
      };
    }
    // The handler is immutable: a copy of a class the platform recreated with another handler is replaced.
    if (tenantObj && tenantObj.handler !== superObj.handler) return { object: null };
    const desired = buildOn<RuntimeClass>(tenantObj, superObj, upMeta(superObj, tenantObj));
    desired.handler = superObj.handler;
    copyFields(superObj, desired, ['overhead']);
    delete desired.scheduling;
    return { object: desired };
  },
} satisfies ResourcePlugin<RuntimeClass>;

/** runtimeclassesPlugins are both RuntimeClass plugins: the tenant's own classes down, the public ones up. */
export const runtimeclassesPlugins = [runtimeclassesPlugin, publicRuntimeclassesPlugin] as const;

export default runtimeclassesPlugins;
