import {
  buildOn,
  copyFields,
  type Decision,
  downMeta,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  PREFIX,
  R,
  type ResourcePlugin,
  SERVICE_ACCOUNT_TOKEN,
} from '@virtualcluster-ts/plugin-sdk';

/** Secret is the part of a core/v1 Secret this plugin touches. */
export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  immutable?: boolean;
}

/** SERVICE_ACCOUNT_TOKEN is the Secret type the token controller fills with a token of its own cluster. */
export { SERVICE_ACCOUNT_TOKEN } from '@virtualcluster-ts/plugin-sdk';

/**
 * ORIGINAL_TYPE_ANNOTATION records, on a super Secret, the tenant type it was converted from. It is under the
 * reserved prefix, so a tenant cannot forge it (stripDown drops tenant keys there).
 */
export const ORIGINAL_TYPE_ANNOTATION = `${PREFIX}/secret-type`;

/** superSecretType is the type a tenant Secret type gets in the super cluster. */
export function superSecretType(tenantType: string | undefined): string | undefined {
  return tenantType === SERVICE_ACCOUNT_TOKEN ? 'Opaque' : tenantType;
}

function toSuper(tenantObj: Secret, superObj: Secret | undefined, ctx: PluginContext): Decision<Secret> {
  const tm = tenantObj.metadata ?? {};
  const converted = tenantObj.type === SERVICE_ACCOUNT_TOKEN;
  const meta = downMeta(
    tenantObj,
    superObj,
    ctx,
    { namespace: ctx.names.superNamespace(tm.namespace ?? ''), name: tm.name ?? '' },
    converted ? { [ORIGINAL_TYPE_ANNOTATION]: SERVICE_ACCOUNT_TOKEN } : {},
  );
  const desired = buildOn<Secret>(superObj, { apiVersion: 'v1', kind: 'Secret' }, meta);
  const type = superSecretType(tenantObj.type);
  if (type === undefined) delete desired.type;
  else desired.type = type;
  copyFields(tenantObj, desired, ['data', 'immutable']);
  return { object: desired };
}

/**
 * secretsPlugin copies tenant Secrets into their super namespace. Service account token Secrets become Opaque there
 * (keeping the tenant token), so the super token controller neither fills nor deletes them.
 */
export const secretsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'secrets',
    version: '0.1.0',
    description: 'Copies tenant Secrets to the super cluster; service account token Secrets become Opaque there.',
    resource: { ...R.secrets },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  toSuper,
} satisfies ResourcePlugin<Secret>;

export default secretsPlugin;
