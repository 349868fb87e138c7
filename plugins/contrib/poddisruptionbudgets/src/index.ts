import {
  buildOn,
  checkFields,
  clone,
  copiedMetadataOf,
  copyFields,
  type Decision,
  downMeta,
  type FieldShape,
  fieldRule as F,
  type KubeObject,
  metaKeyMatches,
  PLUGIN_API_VERSION,
  type PluginContext,
  type ResourcePlugin,
} from '@virtualcluster-ts/plugin-sdk';

/** LabelSelector is a metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** PodDisruptionBudget is the part of a policy/v1 PodDisruptionBudget this plugin reads and writes. */
export interface PodDisruptionBudget extends KubeObject {
  spec?: {
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    selector?: LabelSelector;
    unhealthyPodEvictionPolicy?: string;
  };
  status?: { observedGeneration?: number; [field: string]: unknown };
}

/** SPEC_FIELDS are the PodDisruptionBudget spec fields copied to the super cluster as they are. */
export const SPEC_FIELDS = ['minAvailable', 'maxUnavailable', 'selector', 'unhealthyPodEvictionPolicy'] as const;

/**
 * PDB_SPEC_FIELDS is the rule of every policy/v1 PodDisruptionBudgetSpec field of Kubernetes v1.36; a field it does not
 * name refuses the budget (FIELD_REFUSED) instead of being dropped unseen.
 */
export const PDB_SPEC_FIELDS: FieldShape = {
  minAvailable: F.check('not 100% (refusal)'),
  maxUnavailable: F.check('not 0 (refusal)'),
  selector: F.object(
    { matchLabels: F.copy, matchExpressions: F.list({ key: F.copy, operator: F.copy, values: F.copy }) },
    'check',
    'only label keys copied to super Pods (refusal)',
  ),
  unhealthyPodEvictionPolicy: F.copy,
};

/** FIELD_REFUSED is the skip and event reason of a budget with a spec field PDB_SPEC_FIELDS does not name. */
export const FIELD_REFUSED = 'FieldRefused';

/** BLOCKS_EVICTION is the skip and event reason of a budget that would allow no voluntary disruption at all. */
export const BLOCKS_EVICTION = 'BlocksEviction';
/** SELECTOR_NOT_COPIED is the skip and event reason of a budget whose selector keys never reach the super Pods. */
export const SELECTOR_NOT_COPIED = 'SelectorNotCopied';

const zero = (v: number | string | undefined) => v === 0 || v === '0' || v === '0%';

/**
 * refusal says why a tenant budget must not reach the super cluster, or undefined. A budget that allows no
 * disruption (maxUnavailable 0, minAvailable 100%) would let a tenant hold up the platform's node drains (no setting
 * lifts this: a tenant's pluginConfig is the tenant's to write); a selector on label keys the tenant's
 * copiedMetadata does not carry to super Pods would match nothing there and protect nothing while looking as if it did.
 */
export function refusal(
  pdb: PodDisruptionBudget,
  ctx: Pick<PluginContext, 'tenant'>,
): { reason: string; message: string } | undefined {
  const unknown = checkFields(
    pdb.spec,
    PDB_SPEC_FIELDS,
    'spec',
    'the plugin knows the PodDisruptionBudget fields of Kubernetes v1.36, and refuses a budget with a field added ' +
      'since until a rule says how it is kept within the tenant',
  );
  if (unknown) return { reason: FIELD_REFUSED, message: unknown.message };
  const spec = pdb.spec ?? {};
  if (zero(spec.maxUnavailable) || spec.minAvailable === '100%')
    return {
      reason: BLOCKS_EVICTION,
      message:
        'a budget that allows no disruption would block the platform draining nodes; allow at least one ' +
        '(maxUnavailable >= 1, or minAvailable below 100%)',
    };
  const allowed = copiedMetadataOf(ctx.tenant).labels;
  const keys = [
    ...Object.keys(spec.selector?.matchLabels ?? {}),
    ...(spec.selector?.matchExpressions ?? []).map((e) => e.key),
  ];
  const missing = keys.filter((k) => !allowed.some((p) => metaKeyMatches(p, k)));
  if (missing.length)
    return {
      reason: SELECTOR_NOT_COPIED,
      message: `selector keys ${missing.join(', ')} are not copied to super Pods (copiedMetadata.labels), so the budget would protect nothing`,
    };
  return undefined;
}

function toSuper(
  tenantObj: PodDisruptionBudget,
  superObj: PodDisruptionBudget | undefined,
  ctx: PluginContext,
): Decision<PodDisruptionBudget> {
  const tm = tenantObj.metadata ?? {};
  const refused = refusal(tenantObj, ctx);
  if (refused)
    return {
      object: null,
      skip: refused,
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: {
            apiVersion: 'policy/v1',
            kind: 'PodDisruptionBudget',
            namespace: tm.namespace,
            name: tm.name ?? '',
            uid: tm.uid,
          },
          eventType: 'Warning',
          ...refused,
        },
      ],
    };
  const target = { namespace: ctx.names.superNamespace(tm.namespace ?? ''), name: tm.name ?? '' };
  const desired = buildOn<PodDisruptionBudget>(superObj, tenantObj, downMeta(tenantObj, superObj, ctx, target));
  desired.spec = { ...desired.spec };
  copyFields(tenantObj.spec, desired.spec, SPEC_FIELDS);
  return { object: desired };
}

/**
 * toTenant copies the super budget's status to the tenant's: the disruption controller of the super cluster counts
 * the Pods that really run. observedGeneration is the super object's; the tenant sees its own generation once the
 * super controller has observed the super object's current one, and no observedGeneration before.
 */
function toTenant(
  superObj: PodDisruptionBudget | undefined,
  tenantObj: PodDisruptionBudget | undefined,
): Decision<PodDisruptionBudget> {
  if (!tenantObj || !superObj) return { object: null };
  const desired = clone(tenantObj);
  if (!superObj.status) return { object: desired };
  const status = clone(superObj.status);
  if (status.observedGeneration === superObj.metadata?.generation && tenantObj.metadata?.generation !== undefined)
    status.observedGeneration = tenantObj.metadata.generation;
  else delete status.observedGeneration;
  desired.status = status;
  return { object: desired };
}

/**
 * poddisruptionbudgetsPlugin copies tenant PodDisruptionBudgets into their super namespace, where the super cluster's
 * disruption controller and eviction API enforce them on the super Pods, and carries their status back.
 */
export const poddisruptionbudgetsPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'poddisruptionbudgets',
    version: '0.1.0',
    description: 'Copies tenant PodDisruptionBudgets to the super cluster and their status back.',
    resource: {
      group: 'policy',
      version: 'v1',
      resource: 'poddisruptionbudgets',
      kind: 'PodDisruptionBudget',
      namespaced: true,
    },
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
    rbac: [
      {
        apiGroups: ['policy'],
        resources: ['poddisruptionbudgets'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ],
  },
  toSuper,
  toTenant,
} satisfies ResourcePlugin<PodDisruptionBudget>;

export default poddisruptionbudgetsPlugin;
