import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { Decision, PluginContext, ResourcePlugin } from '../../core/plugins/contract.ts';
import { clone, downMeta, newObject } from '../../core/plugins/helpers.ts';

/** ConfigMap is the part of a core/v1 ConfigMap this plugin touches. */
export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

/** ROOT_CA_CONFIGMAP is the ConfigMap every apiserver publishes in every namespace with its cluster CA. */
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';

/** TENANT_ROOT_CA_CONFIGMAP is the super name of the tenant's ROOT_CA_CONFIGMAP (the super keeps its own). */
export const TENANT_ROOT_CA_CONFIGMAP = 'tenant-kube-root-ca.crt';

/** superConfigMapName maps a tenant ConfigMap name to its super name (Pods referring to ConfigMaps use it too). */
export function superConfigMapName(name: string): string {
  return name === ROOT_CA_CONFIGMAP ? TENANT_ROOT_CA_CONFIGMAP : name;
}

function superName(tenantNamespace: string, tenantName: string, ctx: Pick<PluginContext, 'names' | 'tenant'>): { namespace: string; name: string } {
  return { namespace: ctx.names.superNamespace(tenantNamespace), name: superConfigMapName(tenantName) };
}

function toSuper(tenantObj: ConfigMap, superObj: ConfigMap | undefined, ctx: PluginContext): Decision<ConfigMap> {
  const tm = tenantObj.metadata ?? {};
  const namespace = tm.namespace ?? '';
  const name = tm.name ?? '';
  if (name === TENANT_ROOT_CA_CONFIGMAP) {
    const message = `ConfigMap name ${TENANT_ROOT_CA_CONFIGMAP} is reserved for the tenant's ${ROOT_CA_CONFIGMAP} in the super cluster; this ConfigMap is not synced`;
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
  if (superObj?.metadata?.finalizers?.length) meta.finalizers = [...superObj.metadata.finalizers];
  const desired: ConfigMap = superObj ? { ...clone(superObj), metadata: meta } : newObject<ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap' }, meta);
  for (const f of ['data', 'binaryData', 'immutable'] as const) {
    if (tenantObj[f] === undefined) delete desired[f];
    else desired[f] = clone(tenantObj[f]) as never;
  }
  return { object: desired };
}

/**
 * configmapsPlugin copies tenant ConfigMaps into their super namespace; the tenant's kube-root-ca.crt lands as
 * tenant-kube-root-ca.crt because the super publishes its own kube-root-ca.crt in every namespace.
 */
export const configmapsPlugin = {
  manifest: {
    name: 'configmaps',
    version: '0.1.0',
    description: "Copies tenant ConfigMaps to the super cluster; the tenant's kube-root-ca.crt becomes tenant-kube-root-ca.crt.",
    resource: { ...R.configmaps },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  toSuper,
  superName,
} satisfies ResourcePlugin<ConfigMap>;

export default configmapsPlugin;
