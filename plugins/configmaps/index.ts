import {
  buildOn,
  copyFields,
  type Decision,
  downMeta,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
  ROOT_CA_CONFIGMAP,
  superConfigMapName,
  TENANT_ROOT_CA_CONFIGMAP,
} from '@virtualcluster-ts/plugin-sdk';

/** ConfigMap is the part of a core/v1 ConfigMap this plugin touches. */
export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

/** ROOT_CA_CONFIGMAP, TENANT_ROOT_CA_CONFIGMAP and superConfigMapName are the root CA rename, shared with the pods plugin. */
export { ROOT_CA_CONFIGMAP, superConfigMapName, TENANT_ROOT_CA_CONFIGMAP } from '@virtualcluster-ts/plugin-sdk';

function superName(
  tenantNamespace: string,
  tenantName: string,
  ctx: Pick<PluginContext, 'names' | 'tenant'>,
): { namespace: string; name: string } {
  return { namespace: ctx.names.superNamespace(tenantNamespace), name: superConfigMapName(tenantName) };
}

function toSuper(tenantObj: ConfigMap, superObj: ConfigMap | undefined, ctx: PluginContext): Decision<ConfigMap> {
  const tm = tenantObj.metadata ?? {};
  const namespace = tm.namespace ?? '';
  const name = tm.name ?? '';
  if (name === TENANT_ROOT_CA_CONFIGMAP) {
    const message =
      `ConfigMap name ${TENANT_ROOT_CA_CONFIGMAP} is reserved for the tenant's ${ROOT_CA_CONFIGMAP} in the ` +
      `super cluster; this ConfigMap is not synced`;
    return {
      object: null,
      skip: { reason: 'ReservedName', message },
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace, name, uid: tm.uid },
          eventType: 'Warning',
          reason: 'ReservedName',
          message,
        },
      ],
    };
  }
  const meta = downMeta(tenantObj, superObj, ctx, superName(namespace, name, ctx));
  const desired = buildOn<ConfigMap>(superObj, { apiVersion: 'v1', kind: 'ConfigMap' }, meta);
  copyFields(tenantObj, desired, ['data', 'binaryData', 'immutable']);
  return { object: desired };
}

/**
 * configmapsPlugin copies tenant ConfigMaps into their super namespace; the tenant's kube-root-ca.crt lands as
 * tenant-kube-root-ca.crt because the super publishes its own kube-root-ca.crt in every namespace.
 */
export const configmapsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'configmaps',
    version: '0.1.0',
    description:
      "Copies tenant ConfigMaps to the super cluster; the tenant's kube-root-ca.crt becomes tenant-kube-root-ca.crt.",
    resource: { ...R.configmaps },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  toSuper,
  superName,
} satisfies ResourcePlugin<ConfigMap>;

export default configmapsPlugin;
