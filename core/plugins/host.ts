import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatErrors, validate } from '../../schemas/validate.ts';
import { childLogger } from '../log.ts';
import { isMutator, type MutatorPlugin, type Plugin, type PluginProcess, type ResourcePlugin, type TenantView } from './contract.ts';

const log = childLogger({ controller: 'plugin-host' });

/** PluginFailure records a plugin that could not be loaded or validated, by name (or source) and reason. */
export interface PluginFailure {
  plugin: string;
  source: string;
  reason: string;
}

/** HostOptions configure the plugin host. */
export interface HostOptions {
  /** the process the host runs in: only plugins declaring it are activated */
  process: PluginProcess;
  /** the built-in plugins (plugins/registry.ts) */
  builtins: Plugin[];
  /** third-party plugins: paths (relative to baseDir) or npm package names */
  thirdParty?: string[];
  baseDir?: string;
  /** opt-in plugins enabled for every tenant */
  enable?: string[];
  /** plugins disabled for every tenant */
  disable?: string[];
}

/**
 * PluginHost loads, validates and activates plugins for one process (manager or vn-agent). A plugin that fails to
 * load or validate is recorded in `failures` with its reason and the others carry on.
 */
export class PluginHost {
  readonly failures: PluginFailure[] = [];
  private readonly plugins = new Map<string, Plugin>();

  private constructor(private readonly o: HostOptions) {}

  /** PluginHost.load loads the built-ins and every third-party plugin named in the options. */
  static async load(o: HostOptions): Promise<PluginHost> {
    const h = new PluginHost(o);
    for (const p of o.builtins) h.admit(p, 'builtin');
    for (const spec of o.thirdParty ?? []) {
      try {
        const loaded = await importPlugin(spec, o.baseDir ?? process.cwd());
        for (const p of loaded) h.admit(p, spec);
      } catch (e) {
        h.fail(spec, spec, `failed to load: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    for (const p of [...h.plugins.values()]) {
      if (isMutator(p) && !h.plugins.has(p.manifest.mutates ?? '')) {
        h.plugins.delete(p.manifest.name);
        h.fail(p.manifest.name, 'builtin', `mutates unknown plugin "${p.manifest.mutates}"`);
      }
    }
    return h;
  }

  private admit(p: unknown, source: string): void {
    const manifest = (p as Plugin | undefined)?.manifest;
    const name = typeof manifest?.name === 'string' ? manifest.name : source;
    const errors = validate('plugin', manifest);
    if (errors.length) return this.fail(name, source, `invalid manifest:\n${formatErrors(`plugin ${name}`, errors)}`);
    const plugin = p as Plugin;
    if (this.plugins.has(name)) return this.fail(name, source, `a plugin named "${name}" is already loaded`);
    if (isMutator(plugin)) {
      if (typeof plugin.mutate !== 'function') return this.fail(name, source, 'a mutator must implement mutate()');
    } else if (typeof plugin.toSuper !== 'function' && typeof plugin.toTenant !== 'function') {
      return this.fail(name, source, 'a resource plugin must implement toSuper() or toTenant()');
    }
    if (!plugin.manifest.processes.includes(this.o.process)) return;
    this.plugins.set(name, plugin);
  }

  private fail(plugin: string, source: string, reason: string): void {
    this.failures.push({ plugin, source, reason });
    log.error({ plugin, source, reason }, 'plugin not loaded');
  }

  /** names lists the active plugins. */
  names(): string[] {
    return [...this.plugins.keys()];
  }

  /** get returns an active plugin by name. */
  get(name: string): Plugin | undefined {
    return this.plugins.get(name);
  }

  /** resourcePlugins lists the active resource plugins. */
  resourcePlugins(): ResourcePlugin[] {
    return [...this.plugins.values()].filter((p): p is ResourcePlugin => !isMutator(p));
  }

  /** mutatorsOf lists the active mutators of a plugin in chain order: built-ins in registry order, then third-party in load order. */
  mutatorsOf(name: string): MutatorPlugin[] {
    return [...this.plugins.values()].filter((p): p is MutatorPlugin => isMutator(p) && p.manifest.mutates === name);
  }

  /**
   * enabledFor says whether a plugin runs for a tenant: opt-in plugins need enabling (globally or by the tenant),
   * and either level can disable any plugin.
   */
  enabledFor(tenant: Pick<TenantView, 'plugins'>, name: string): boolean {
    const p = this.plugins.get(name);
    if (!p) return false;
    if (this.o.disable?.includes(name) || tenant.plugins?.disable?.includes(name)) return false;
    if (!p.manifest.optIn) return true;
    return !!(this.o.enable?.includes(name) || tenant.plugins?.enable?.includes(name));
  }
}

async function importPlugin(spec: string, baseDir: string): Promise<unknown[]> {
  const isPath = spec.startsWith('.') || isAbsolute(spec);
  let target = spec;
  if (isPath) {
    let p = resolve(baseDir, spec);
    if (!existsSync(p)) throw new Error(`no such file or directory: ${p}`);
    if (statSync(p).isDirectory()) {
      const pkg = join(p, 'package.json');
      const main = existsSync(pkg) ? ((JSON.parse(readFileSync(pkg, 'utf8')) as { main?: string }).main ?? 'index.ts') : 'index.ts';
      p = join(p, main);
    }
    target = pathToFileURL(p).href;
  }
  const mod = (await import(target)) as { default?: unknown; plugins?: unknown[] };
  const exported = mod.plugins ?? mod.default;
  if (!exported) throw new Error('the module has no default export (a plugin or an array of plugins)');
  return Array.isArray(exported) ? exported : [exported];
}
