import {
  buildOn,
  type Decision,
  downMeta,
  keepSuperOwned,
  type KubeObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  R,
  type ResourcePlugin,
} from '@virtualcluster-ts/plugin-sdk';
import { isolationEffect, isolationWatch } from '@virtualcluster-ts/plugin-sdk/network';
import { quotaEffect, quotaWatches } from './quota.ts';

/** Namespace is the part of a core/v1 Namespace this plugin touches. */
export interface Namespace extends KubeObject {
  spec?: { finalizers?: string[] };
  status?: { phase?: string; [field: string]: unknown };
}

/** POD_SECURITY_MODES are the Pod Security admission modes labelled with the tenant's level on its super namespaces. */
export const POD_SECURITY_MODES = ['enforce', 'audit', 'warn'] as const;

/** POD_SECURITY_PREFIX is the label prefix of Pod Security admission; the tenant never sets keys under it in the super. */
export const POD_SECURITY_PREFIX = 'pod-security.kubernetes.io/';

/** NAME_LABEL is the label the apiserver sets on every Namespace to its own name. */
export const NAME_LABEL = 'kubernetes.io/metadata.name';

/**
 * SUPER_ANNOTATION_PREFIXES are namespace annotations that configure super admission for the Pods of the namespace
 * (PodNodeSelector, PodTolerationRestriction). They belong to the super admin: tenant values are dropped and the
 * super's values are kept, so a tenant cannot pick nodes or whitelist tolerations for itself.
 */
export const SUPER_ANNOTATION_PREFIXES = ['scheduler.alpha.kubernetes.io/'] as const;

const superOwned = (key: string): boolean => SUPER_ANNOTATION_PREFIXES.some((p) => key.startsWith(p));

function superName(
  _tenantNamespace: string,
  tenantName: string,
  ctx: Pick<PluginContext, 'names' | 'tenant'>,
): { name: string } {
  return { name: ctx.names.superNamespace(tenantName) };
}

function toSuper(tenantObj: Namespace, superObj: Namespace | undefined, ctx: PluginContext): Decision<Namespace> {
  const target = superName('', tenantObj.metadata?.name ?? '', ctx);
  const meta = downMeta(tenantObj, superObj, ctx, target, {}, { namespace: true });
  const sm = superObj?.metadata;

  // The allow-list (namespaceLabels) decides first; whatever it lists, these keys stay the syncer's and the super's.
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(meta.labels ?? {}))
    if (!k.startsWith(POD_SECURITY_PREFIX) && k !== NAME_LABEL) labels[k] = v;
  for (const mode of POD_SECURITY_MODES) labels[`${POD_SECURITY_PREFIX}${mode}`] = ctx.tenant.podSecurityLevel;
  const ownName = sm?.labels?.[NAME_LABEL];
  if (ownName !== undefined) labels[NAME_LABEL] = ownName;
  meta.labels = labels;

  const annotations = keepSuperOwned(meta.annotations, sm?.annotations, superOwned);
  if (annotations) meta.annotations = annotations;
  else delete meta.annotations;

  const object = buildOn<Namespace>(superObj, { apiVersion: 'v1', kind: 'Namespace' }, meta);
  const name = tenantObj.metadata?.name ?? '';
  return { object, effects: [isolationEffect(name, ctx.tenant), ...quotaEffect(name, ctx.tenant)] };
}

/**
 * namespacesPlugin creates one super Namespace per tenant Namespace, named by the names module, carrying the
 * tenant's labels and annotations that pass the namespace allow-lists and the tenant's Pod Security level. Spec and
 * finalizers stay the super's. Each super namespace gets the tenant isolation NetworkPolicy
 * (plugins/networkpolicies/isolation.ts) and the tenant's ResourceQuota and LimitRange (./quota.ts).
 */
export const namespacesPlugin = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'namespaces',
    version: '0.1.0',
    description:
      'Creates a prefixed super Namespace for every tenant Namespace, labelled with the tenant Pod Security level.',
    resource: { ...R.namespaces },
    direction: 'down',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  toSuper,
  superName,
  watches: [isolationWatch, ...quotaWatches],
} satisfies ResourcePlugin<Namespace>;

export default namespacesPlugin;
