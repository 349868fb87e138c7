import type { PluginContext } from './contract.ts';

/**
 * pluginConfigOf returns a tenant's `pluginConfig.<plugin>` entry when it is an object. The host has validated it
 * against the plugin's configSchema before the tenant was admitted, so a plugin that declares one may rely on it.
 */
export function pluginConfigOf(
  ctx: Pick<PluginContext, 'tenant'>,
  plugin: string,
): Record<string, unknown> | undefined {
  const raw = ctx.tenant.pluginConfig?.[plugin];
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
}
