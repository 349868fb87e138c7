import {
  clone,
  type Decision,
  type KubeObject,
  type MutatorPlugin,
  PLUGIN_API_VERSION,
  type PluginContext,
} from '@virtualcluster-ts/plugin-sdk';

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

/** CONFIG_SCHEMA is the JSON Schema of `pluginConfig.sandbox`; the host checks tenants' values against it. */
export const CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['runtimeClassName'],
  properties: {
    runtimeClassName: {
      description: 'a RuntimeClass that exists in the super cluster, e.g. kata',
      type: 'string',
      minLength: 1,
    },
    enforce: { description: 'true: also replace a runtimeClassName the tenant gave its Pod', type: 'boolean' },
  },
};

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
    configKey: 'sandbox',
    configSchema: CONFIG_SCHEMA,
  },

  mutate(desired: Pod, tenantObj: Pod, ctx: PluginContext): Decision<Pod> {
    const cfg = sandboxConfig(ctx.tenant.pluginConfig);
    if (!cfg || desired.metadata?.uid) return { object: desired };
    const own = desired.spec?.runtimeClassName;
    if (own === cfg.runtimeClassName || (own && !cfg.enforce)) return { object: desired };
    const out = clone(desired);
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
