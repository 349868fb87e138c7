import { Counter } from 'prom-client';
import { childLogger } from '../log.ts';
import { registry } from '../metrics/registry.ts';

const log = childLogger({ controller: 'plugin-host' });

/**
 * PLUGIN_HOOKS are the plugin functions the core calls (the `hook` label of vc_plugin_errors_total): the transforms,
 * the mutator chain, routing, super names, watch and index mappings, the vNode a bind needs, and the vn-agent's path
 * translation and node-call filters.
 */
export const PLUGIN_HOOKS = [
  'toSuper',
  'toTenant',
  'mutate',
  'route',
  'superName',
  'watch',
  'index',
  'beforeBind',
  'translateKubeletPath',
  'filterNodeCall',
  'filterNodeOutput',
] as const;

/** PluginHook is one of PLUGIN_HOOKS. */
export type PluginHook = (typeof PLUGIN_HOOKS)[number];

/**
 * PluginError is a plugin function that threw: it names the plugin and the hook, and keeps what was thrown as its
 * cause. The core catches it where the object and tenant are known, reports it and skips that object.
 */
export class PluginError extends Error {
  override readonly name = 'PluginError';

  constructor(
    readonly plugin: string,
    readonly hook: PluginHook,
    cause: unknown,
  ) {
    super(`plugin ${plugin} failed in ${hook}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** callPlugin runs one plugin function; whatever it throws is rethrown as a PluginError naming the plugin and hook. */
export function callPlugin<T>(plugin: string, hook: PluginHook, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof PluginError) throw e;
    throw new PluginError(plugin, hook, e);
  }
}

/** pluginErrorOf finds a PluginError in an error or its `cause` chain. */
export function pluginErrorOf(err: unknown): PluginError | undefined {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    if (e instanceof PluginError) return e;
    seen.add(e);
  }
  return undefined;
}

/** pluginErrorsTotal is vc_plugin_errors_total: plugin functions that threw, per plugin, hook and tenant. */
export const pluginErrorsTotal = new Counter({
  name: 'vc_plugin_errors_total',
  help:
    'Plugin functions that threw, per plugin, hook and tenant (empty when no tenant is known yet, as in route). ' +
    "Bounded: one series per tenant served now; a removed tenant's series are dropped.",
  labelNames: ['plugin', 'hook', 'tenant'],
  registers: [registry],
});

/**
 * reportPluginError counts a plugin failure in vc_plugin_errors_total and logs it with the plugin, hook, tenant and
 * whatever else the caller knows (the key). The caller skips the object; nothing is rethrown here.
 */
export function reportPluginError(err: PluginError, tenant: string, fields: Record<string, unknown> = {}): void {
  pluginErrorsTotal.inc({ plugin: err.plugin, hook: err.hook, tenant });
  log.error({ plugin: err.plugin, hook: err.hook, tenant, ...fields, err: err.cause }, 'plugin failed; object skipped');
}
