import type { PluginContext, TenantView } from '../contract.ts';
import { isPublic } from '../helpers.ts';
import type { KubeObject } from '../kube.ts';
import { LABEL, MANAGER, provenanceOf, superClusterName } from '../names.ts';
import { R } from '../resources.ts';
import { checkPodPolicy, type PodRefusal } from './policy.ts';

/** RuntimeClass is a node.k8s.io/v1 RuntimeClass. */
export interface RuntimeClass extends KubeObject {
  handler?: string;
  overhead?: { podFixed?: Record<string, string> };
  scheduling?: { nodeSelector?: Record<string, string>; tolerations?: unknown[] };
}

/** DEFAULT_HANDLERS are the handlers a tenant's own RuntimeClass may name when its policy names none. */
export const DEFAULT_HANDLERS: readonly string[] = ['runc'];

/** RUNTIME_CLASS_POLICY_VIOLATION is the event reason of a tenant RuntimeClass its policy refuses. */
export const RUNTIME_CLASS_POLICY_VIOLATION = 'RuntimeClassPolicyViolation';

/** RUNTIMECLASSES_PLUGIN is the name of the plugin that syncs the tenant's own RuntimeClasses down. */
export const RUNTIMECLASSES_PLUGIN = 'runtimeclasses';

/** isMirror tells a tenant RuntimeClass the syncer copied from a public super class from one the tenant made. */
export function isMirror(tenantClass: KubeObject): boolean {
  return tenantClass.metadata?.labels?.[LABEL.managedBy] === MANAGER;
}

/**
 * isPublicClass tells whether a super RuntimeClass is one the platform offers every tenant: labelled public and not a
 * tenant's own copy (a tenant cannot set the label, which the syncer strips; the provenance check is the second lock).
 */
export function isPublicClass(superClass: KubeObject): boolean {
  return isPublic(superClass) && !provenanceOf(superClass);
}

/**
 * checkTenantRuntimeClass returns why the tenant's policy refuses one of its own RuntimeClasses, or undefined: its
 * handler must be in runtimeClasses.handlers, and its scheduling (which the super apiserver merges into every Pod
 * naming the class) must pass the same pods policy as a Pod's own nodeSelector and tolerations.
 */
export function checkTenantRuntimeClass(
  rc: RuntimeClass,
  tenant: Pick<TenantView, 'runtimeClasses' | 'pods' | 'podSecurityLevel'>,
): PodRefusal | undefined {
  const handlers = tenant.runtimeClasses?.handlers ?? DEFAULT_HANDLERS;
  const handler = rc.handler ?? '';
  if (!handlers.includes(handler)) {
    return {
      field: 'handler',
      message: `handler "${handler}" is not allowed by the TenantPolicy (runtimeClasses.handlers: ${handlers.join(', ') || 'none'})`,
    };
  }
  const s = rc.scheduling ?? {};
  const refusal = checkPodPolicy(
    {
      containers: [],
      ...(s.nodeSelector && { nodeSelector: s.nodeSelector }),
      ...(s.tolerations && { tolerations: s.tolerations }),
    },
    tenant.pods,
    undefined,
    tenant.podSecurityLevel,
  );
  if (!refusal) return undefined;
  const rename = (t: string) => (t.startsWith('spec.') ? `scheduling.${t.slice('spec.'.length)}` : t);
  return { field: rename(refusal.field), message: rename(refusal.message) };
}

/**
 * PodRuntimeClass is what a new super Pod runs in: the super RuntimeClass name (undefined: none), a refusal naming
 * spec.runtimeClassName, or a wait while the tenant's class is on its way to the super cluster.
 */
export type PodRuntimeClass = { name: string | undefined } | { refusal: PodRefusal } | { wait: string };

const FIELD = 'spec.runtimeClassName';
const refused = (message: string): PodRuntimeClass => ({ refusal: { field: FIELD, message: `${FIELD}: ${message}` } });

/**
 * podRuntimeClass translates the runtimeClassName of a new tenant Pod into the super cluster's: a public class
 * mirrored into the tenant keeps its name, the tenant's own class becomes its tenant-unique super name
 * (superClusterName). A class missing in the tenant, refused by the policy or not really public refuses the Pod.
 * With runtimeClasses.required, a Pod naming no class gets the required one, and a Pod naming a class that runs
 * another handler is refused: it cannot leave the sandbox.
 */
export function podRuntimeClass(
  requested: string | undefined,
  ctx: Pick<PluginContext, 'tenant' | 'tenantCache' | 'superCache'>,
): PodRuntimeClass {
  const required = ctx.tenant.runtimeClasses?.required;
  const requiredClass = required ? ctx.superCache.get<RuntimeClass>(R.runtimeclasses, undefined, required) : undefined;
  if (required && !requiredClass) {
    return refused(
      `the RuntimeClass "${required}" this tenant's Pods must run in (runtimeClasses.required) does not exist in the super cluster`,
    );
  }
  if (!requested) return { name: required };
  const tc = ctx.tenantCache.get<RuntimeClass>(R.runtimeclasses, undefined, requested);
  if (!tc) return refused(`RuntimeClass "${requested}" does not exist in the tenant`);
  let superName: string;
  let handler: string | undefined;
  if (isMirror(tc)) {
    const sc = ctx.superCache.get<RuntimeClass>(R.runtimeclasses, undefined, requested);
    if (!sc || !isPublicClass(sc))
      return refused(`RuntimeClass "${requested}" is not a public RuntimeClass of the super cluster`);
    superName = requested;
    handler = sc.handler;
  } else {
    const r = checkTenantRuntimeClass(tc, ctx.tenant);
    if (r) return refused(`RuntimeClass "${requested}" is refused: ${r.field}: ${r.message}`);
    if (ctx.tenant.plugins?.disable?.includes(RUNTIMECLASSES_PLUGIN))
      return refused(
        `RuntimeClass "${requested}" is the tenant's own and this tenant disables the ${RUNTIMECLASSES_PLUGIN} plugin`,
      );
    superName = superClusterName(ctx.tenant.key, requested);
    const sc = ctx.superCache.get<RuntimeClass>(R.runtimeclasses, undefined, superName);
    const prov = provenanceOf(sc);
    if (sc && prov?.cluster !== ctx.tenant.key)
      return refused(`the super RuntimeClass ${superName} of RuntimeClass "${requested}" is not this tenant's`);
    if (!sc || prov?.uid !== tc.metadata?.uid)
      return { wait: `RuntimeClass "${requested}" is being synced to the super cluster as ${superName}` };
    handler = tc.handler;
  }
  if (required && superName !== required && handler !== requiredClass?.handler) {
    return refused(
      `RuntimeClass "${requested}" runs handler "${handler ?? ''}"; this tenant's Pods must run in RuntimeClass ` +
        `"${required}" (handler "${requiredClass?.handler ?? ''}", runtimeClasses.required)`,
    );
  }
  return { name: superName };
}
