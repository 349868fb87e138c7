import { childLogger } from '../log.ts';
import type { PluginProcess } from '../plugins/contract.ts';
import { PluginHost, type HostOptions } from '../plugins/host.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { genericPlugins, type GenericSyncConfig } from '../../plugins/generic/index.ts';

const log = childLogger({ controller: 'plugin-host' });

/** PluginsConfig is the `plugins` section the manager and vn-agent configurations share. */
export interface PluginsConfig {
  thirdParty?: string[];
  /** third-party plugins run each in a sandbox process (paths or npm package names) */
  sandboxed?: string[];
  /** Ed25519 public key files; when set, third-party packages load only with a signature one of them verifies */
  trustedKeys?: string[];
  /** the budget of one call of a sandboxed plugin */
  sandbox?: {
    cpuMillis?: number;
    memoryMiB?: number;
    wallMillis?: number;
    maxFailures?: number;
    /** isolated (default): a network namespace of its own; host: the host's network (see SandboxNetwork) */
    network?: 'isolated' | 'host';
  };
  enable?: string[];
  disable?: string[];
  /** resources synced by configuration (plugins/generic); the manager's configuration only */
  generic?: GenericSyncConfig[];
}

/** PluginHostExtras are the host options that do not come from the `plugins` section, and whether to log failures. */
export type PluginHostExtras = Partial<
  Omit<
    HostOptions,
    'process' | 'builtins' | 'thirdParty' | 'sandboxed' | 'sandbox' | 'trustedKeys' | 'enable' | 'disable'
  >
> & {
  /** false when the caller reports `host.failures` itself (default true) */
  logFailures?: boolean;
};

let tsxRegistered = false;

/**
 * allowTypeScriptPlugins lets compiled JavaScript import third-party plugins written in TypeScript: under dist/
 * nothing compiles `.ts` on the fly, so tsx is registered the first time a configuration names a plugin, where tsx is
 * installed (a checkout with its development dependencies). The image ships no tsx: there Node's own type stripping
 * loads a plugin in plain TypeScript, and a plugin that needs more fails to load with Node's reason; a published
 * plugin is JavaScript anyway (docs/guides/writing-a-plugin.md). From the sources (tsx, vitest) TypeScript already
 * loads.
 */
async function allowTypeScriptPlugins(): Promise<void> {
  if (tsxRegistered || !import.meta.url.endsWith('.js')) return;
  tsxRegistered = true;
  let api: { register: () => unknown };
  try {
    api = (await import('tsx/esm/api')) as typeof api;
  } catch {
    log.debug('tsx is not installed: TypeScript plugins load through Node type stripping');
    return;
  }
  api.register();
}

/**
 * pluginHostFromConfig loads the built-in plugins and those a program's configuration adds for one process, and
 * logs each plugin that failed to load (the host carries on without it).
 */
export async function pluginHostFromConfig(
  process: PluginProcess,
  cfg?: PluginsConfig,
  extras: PluginHostExtras = {},
): Promise<PluginHost> {
  const { logFailures = true, ...options } = extras;
  if (cfg?.thirdParty?.length) await allowTypeScriptPlugins();
  // Generic entries load after the built-ins, as built-ins do (no package, no SDK range): one for a resource a
  // built-in owns, or that breaks a rule, is refused by name like a plugin that fails to load.
  const generic = genericPlugins(cfg?.generic ?? [], builtinPlugins);
  const host = await PluginHost.load({
    ...options,
    process,
    builtins: [...builtinPlugins, ...generic.plugins],
    refused: generic.failures.map((f) => ({ ...f, source: 'plugins.generic' })),
    thirdParty: cfg?.thirdParty,
    ...(cfg?.sandboxed && { sandboxed: cfg.sandboxed }),
    ...(cfg?.sandbox && { sandbox: cfg.sandbox }),
    ...(cfg?.trustedKeys && { trustedKeys: cfg.trustedKeys }),
    enable: cfg?.enable,
    disable: cfg?.disable,
  });
  if (logFailures)
    for (const f of host.failures) log.error({ plugin: f.plugin, source: f.source }, `plugin failed: ${f.reason}`);
  return host;
}
