import {
  ApiError,
  isAlreadyExists,
  isNotFound,
  type KubeClient,
  type KubeObject,
  type Resource,
} from '../kube/client.ts';
import { MANAGER } from '../names/names.ts';
import type { Write } from './metrics.ts';
import type { Step } from './plan.ts';

/** resourceName is how vc_syncer_writes_total names a resource: its plural, with the subresource if any. */
export function resourceName(r: Resource, subresource?: string): string {
  const plural = r.group ? `${r.resource}.${r.group}` : r.resource;
  return subresource ? `${plural}/${subresource}` : plural;
}

/** stepWrite is the side, verb and resource a step writes, for vc_syncer_writes_total. */
export function stepWrite(r: Resource, step: Step): Pick<Write, 'side' | 'verb' | 'resource'> {
  const side = step.op.endsWith('Super') ? 'super' : 'tenant';
  const verb = step.op.startsWith('create') ? 'create' : step.op.startsWith('delete') ? 'delete' : 'patch';
  const sub = step.op === 'patchTenantStatus' ? 'status' : step.op === 'patchSuper' ? step.subresource : undefined;
  return { side, verb, resource: resourceName(r, sub) };
}

/** Clients are the two API clients the steps of one tenant write through. */
export interface Clients {
  superClient: KubeClient;
  tenantClient: KubeClient;
}

/** write performs one step and returns the object written, if the step writes one. */
export async function write(c: Clients, r: Resource, step: Step): Promise<KubeObject | undefined> {
  const fm = { fieldManager: MANAGER };
  switch (step.op) {
    case 'createSuper':
      return c.superClient.create(r, step.obj, fm);
    case 'patchSuper':
      return c.superClient.patch(r, step.namespace, step.name, step.ops, 'json', {
        ...fm,
        ...(step.subresource && { subresource: step.subresource }),
      });
    case 'deleteSuper':
      await c.superClient.delete(r, step.namespace, step.name, { uid: step.uid, propagationPolicy: 'Background' });
      return;
    case 'createTenant':
      return c.tenantClient.create(r, step.obj, fm);
    case 'patchTenant':
      return c.tenantClient.patch(r, step.namespace, step.name, step.ops, 'json', fm);
    case 'patchTenantStatus':
      return c.tenantClient.patch(r, step.namespace, step.name, step.ops, 'json', { ...fm, subresource: 'status' });
    case 'deleteTenant':
      await c.tenantClient.delete(r, step.namespace, step.name, { uid: step.uid });
      return;
  }
}

const RV_PATH = '/metadata/resourceVersion';

/** StepRunner carries out the steps of one plan. */
export interface StepRunner {
  /** write performs one step */
  write(step: Step): Promise<KubeObject | undefined>;
  /**
   * adopt is called when a createSuper finds the object already there (the super apiserver made it itself, like the
   * `default` ServiceAccount of a new namespace); it returns the uid of the super object it settled on.
   */
  adopt(obj: KubeObject): Promise<string | undefined>;
}

/**
 * runSteps performs the steps of a plan in order and returns the uid of the super object written, if any. A patch
 * that follows another write of the same object (a status patch after a spec patch) tests the resourceVersion the
 * previous write produced, not the cached one, which is already stale.
 */
export async function runSteps(steps: readonly Step[], run: StepRunner): Promise<string | undefined> {
  let superUid: string | undefined;
  const written = new Map<string, string>();
  for (const original of steps) {
    const side = original.op.endsWith('Super') ? 'super' : 'tenant';
    const target = `${side}/${'obj' in original ? '' : `${original.namespace ?? ''}/${original.name}`}`;
    const rv = written.get(target);
    let step = original;
    if (rv && 'ops' in original && original.ops[0]?.op === 'test' && original.ops[0].path === RV_PATH) {
      step = { ...original, ops: [{ ...original.ops[0], value: rv }, ...original.ops.slice(1)] };
    }
    try {
      const out = await run.write(step);
      if (side === 'super' && out?.metadata?.uid) superUid = out.metadata.uid;
      if (out?.metadata?.resourceVersion) written.set(target, out.metadata.resourceVersion);
    } catch (e) {
      if (!(step.op === 'createSuper' && isAlreadyExists(e))) throw e;
      superUid = await run.adopt(step.obj);
    }
  }
  return superUid;
}

/**
 * isStalePatch recognises the apiserver's answer to a JSON Patch whose resourceVersion test failed (422 with no
 * field causes): the cache was behind, not the request wrong.
 */
export function isStalePatch(e: unknown): boolean {
  if (!(e instanceof ApiError) || e.code !== 422 || !e.message.startsWith('PATCH ')) return false;
  const causes = (e.body as { details?: { causes?: unknown[] } } | undefined)?.details?.causes;
  return !causes?.length;
}

/**
 * isMissingNamespace recognises a create refused because its namespace does not exist yet: at start-up the super
 * namespace of a tenant namespace and the objects in it are synced in parallel, so this is an ordering race.
 */
export function isMissingNamespace(e: unknown): boolean {
  if (!isNotFound(e) || !(e instanceof ApiError)) return false;
  const details = (e.body as { details?: { kind?: string } } | undefined)?.details;
  return details?.kind === 'namespaces';
}

/**
 * isTerminatingNamespace recognises a create refused because its namespace is being deleted: a super namespace that
 * is removed and wanted again at once (the copy of a tenant's DNS namespace on a super cluster the tenant leaves and
 * comes back to, placement.ts) is another ordering race, over once the old namespace is gone and its key made it again.
 */
export function isTerminatingNamespace(e: unknown): boolean {
  if (!(e instanceof ApiError) || e.code !== 403) return false;
  const causes = (e.body as { details?: { causes?: Array<{ reason?: string }> } } | undefined)?.details?.causes;
  return causes?.some((c) => c.reason === 'NamespaceTerminating') ?? false;
}
