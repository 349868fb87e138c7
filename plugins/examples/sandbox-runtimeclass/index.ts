import { type Decision, type MutatorPlugin, PLUGIN_API_VERSION, type PluginContext } from '../../sdk/src/index.ts';

type KubeObject = Parameters<MutatorPlugin['mutate']>[0];

/** Pod is the part of a core/v1 Pod this plugin reads and writes. */
export interface Pod extends KubeObject {
  spec?: { runtimeClassName?: string; [field: string]: unknown };
}

/** SandboxConfig is what a tenant puts under `pluginConfig.sandbox` to have its Pods sandboxed. */
export interface SandboxConfig {
  /** the super RuntimeClass the tenant's new Pods run with, e.g. "kata" */
  runtimeClassName: string;
  /** when true, a runtimeClassName the tenant gave its Pod is replaced too */
  enforce: boolean;
}

/** sandboxConfig reads a tenant's `pluginConfig.sandbox`; undefined when the tenant does not ask (or asks malformed). */
export function sandboxConfig(pluginConfig: Record<string, unknown> | undefined): SandboxConfig | undefined {
  const raw = pluginConfig?.sandbox;
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { runtimeClassName, enforce } = raw as Record<string, unknown>;
  if (typeof runtimeClassName !== 'string' || runtimeClassName === '') return undefined;
  return { runtimeClassName, enforce: enforce === true };
}

/**
 * sandboxRuntimeClassPlugin sets spec.runtimeClassName on the new super Pods of tenants that configure
 * `pluginConfig.sandbox.runtimeClassName`. A Pod that names its own runtime class keeps it unless the tenant sets
 * `enforce`. Existing Pods are never changed: runtimeClassName is immutable.
 */
export const sandboxRuntimeClassPlugin: MutatorPlugin<Pod> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'sandbox-runtimeclass',
    version: '0.1.0',
    description: 'Runs the new super Pods of tenants that ask for it under a sandbox RuntimeClass.',
    direction: 'mutator',
    mutates: 'pods',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },

  mutate(desired: Pod, tenantObj: Pod, ctx: PluginContext): Decision<Pod> {
    const cfg = sandboxConfig(ctx.tenant.pluginConfig);
    if (!cfg || desired.metadata?.uid) return { object: desired };
    const own = desired.spec?.runtimeClassName;
    if (own === cfg.runtimeClassName || (own && !cfg.enforce)) return { object: desired };
    const out = structuredClone(desired);
    out.spec = { ...out.spec, runtimeClassName: cfg.runtimeClassName };
    if (!own) return { object: out };
    const tm = tenantObj.metadata ?? {};
    return {
      object: out,
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: { apiVersion: 'v1', kind: 'Pod', namespace: tm.namespace, name: tm.name ?? '', uid: tm.uid },
          eventType: 'Normal',
          reason: 'RuntimeClassEnforced',
          message: `runtimeClassName ${own} replaced by ${cfg.runtimeClassName}, which this tenant enforces`,
        },
      ],
    };
  },
};

export default sandboxRuntimeClassPlugin;
