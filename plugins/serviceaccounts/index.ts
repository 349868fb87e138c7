import {
  buildOn,
  type Decision,
  downMeta,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
  SERVICE_ACCOUNT_TOKEN,
  SUPER_POD_SERVICE_ACCOUNT,
} from '@virtualcluster-ts/plugin-sdk';

/** LocalObjectReference names an object in the same namespace. */
export interface LocalObjectReference {
  name?: string;
}

/** ServiceAccount is the part of a core/v1 ServiceAccount this plugin touches. */
export interface ServiceAccount extends KubeObject {
  automountServiceAccountToken?: boolean;
  secrets?: Array<LocalObjectReference & Record<string, unknown>>;
  imagePullSecrets?: LocalObjectReference[];
}

/** RESERVED_NAME is the skip reason of a tenant ServiceAccount named SUPER_POD_SERVICE_ACCOUNT. */
export const RESERVED_NAME = 'ReservedName';

function toSuper(
  tenantObj: ServiceAccount,
  superObj: ServiceAccount | undefined,
  ctx: PluginContext,
): Decision<ServiceAccount> {
  const tm = tenantObj.metadata ?? {};
  const namespace = tm.namespace ?? '';
  if (tm.name === SUPER_POD_SERVICE_ACCOUNT) {
    return {
      object: null,
      skip: {
        reason: RESERVED_NAME,
        message: `ServiceAccount name ${SUPER_POD_SERVICE_ACCOUNT} is reserved for the super Pods' own account`,
      },
    };
  }
  const meta = downMeta(tenantObj, superObj, ctx, {
    namespace: ctx.names.superNamespace(namespace),
    name: tm.name ?? '',
  });
  // Super-side webhooks act on ServiceAccount annotations (cloud workload identity: eks.amazonaws.com/role-arn,
  // iam.gke.io/gcp-service-account, azure.workload.identity/*); none of the tenant's is copied.
  delete meta.annotations;
  const desired = buildOn<ServiceAccount>(superObj, { apiVersion: 'v1', kind: 'ServiceAccount' }, meta);
  desired.automountServiceAccountToken = false;
  const pull = (tenantObj.imagePullSecrets ?? []).filter((ref) => {
    const s = ref.name
      ? ctx.tenantCache.get<KubeObject & { type?: string }>(R.secrets, namespace, ref.name)
      : undefined;
    return !!ref.name && s?.type !== SERVICE_ACCOUNT_TOKEN;
  });
  if (pull.length) desired.imagePullSecrets = pull.map((ref) => ({ name: ref.name }));
  else delete desired.imagePullSecrets;
  return { object: desired };
}

/**
 * serviceaccountsPlugin copies tenant ServiceAccounts into their super namespace with token automounting off and
 * without the tenant's annotations, which super-side webhooks (cloud workload identity) would act on: super Pods run
 * under SUPER_POD_SERVICE_ACCOUNT and get tokens minted by the tenant apiserver (mounted by the pods plugin), never
 * super tokens. The tenant's `secrets`
 * list is not copied; imagePullSecrets keep their names (those Secrets are synced under the same name) except
 * references to token Secrets. A super ServiceAccount the syncer did not write (the `default` one the super creates
 * in every namespace) is built on, so its own fields such as `secrets` stay; whether it is adopted is the core's call.
 */
export const serviceaccountsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'serviceaccounts',
    version: '0.1.0',
    description: 'Copies tenant ServiceAccounts to the super cluster with token automounting disabled.',
    resource: { ...R.serviceaccounts },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  reads: [{ resource: R.secrets, side: 'tenant' }],
  toSuper,
} satisfies ResourcePlugin<ServiceAccount>;

export default serviceaccountsPlugin;
