import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compileSchema, type FieldError, formatErrors, validate } from '../../schemas/validate.ts';
import { childLogger } from '../log.ts';
import { PluginSandbox, type SandboxBudget, type SandboxNetwork } from './sandbox/sandbox.ts';
import { readTrustedKeys, signatureProblem, type TrustedKey } from './signing.ts';
import { nearestPackageJson, type SdkDeclaration, sdkDeclarationOf, sdkVersionProblem } from './compat.ts';
import {
  isMutator,
  type MutatorPlugin,
  PLUGIN_API_GROUP,
  PLUGIN_API_VERSION,
  type Plugin,
  type PluginProcess,
  type ResourcePlugin,
  type TenantView,
} from './contract.ts';

const log = childLogger({ controller: 'plugin-host' });

/** SUPPORTED_API_MAJORS are the major versions of the plugin contract (manifest apiVersion) this host loads. */
export const SUPPORTED_API_MAJORS: readonly number[] = [1];

/**
 * apiVersionProblem says why a manifest's apiVersion cannot be loaded by this host, or undefined when it can. A
 * manifest without one is refused too: it predates the versioned contract, so what it expects is unknown.
 */
export function apiVersionProblem(name: string, apiVersion: unknown): string | undefined {
  const supported = SUPPORTED_API_MAJORS.map((m) => `${PLUGIN_API_GROUP}/v${m}`).join(', ');
  if (apiVersion === undefined) {
    return (
      `plugin ${name} declares no apiVersion; this host supports ${supported}: rebuild it against ` +
      `@virtualcluster-ts/plugin-sdk and set manifest.apiVersion to PLUGIN_API_VERSION`
    );
  }
  const m = typeof apiVersion === 'string' ? /^(.+)\/v(\d+)$/.exec(apiVersion) : null;
  if (!m || m[1] !== PLUGIN_API_GROUP)
    return `plugin ${name} has apiVersion ${JSON.stringify(apiVersion)}, which is not a plugin contract version; this host supports ${supported}`;
  if (!SUPPORTED_API_MAJORS.includes(Number(m[2]))) {
    return `plugin ${name} is written for plugin contract ${apiVersion}; this host supports ${supported} (host contract ${PLUGIN_API_VERSION})`;
  }
  return undefined;
}

/** configErrorMessages renders pluginConfig violations as `<where>.<field path>: <message>` lines. */
function configErrorMessages(where: string, errors: FieldError[]): string[] {
  return errors.map((e) => `${where}${e.pointer === '/' ? '' : e.pointer.replaceAll('/', '.')}: ${e.message}`);
}

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
  /**
   * third-party plugins run in a sandbox process each (core/plugins/sandbox): paths or npm package names, as thirdParty
   */
  sandboxed?: string[];
  /**
   * Ed25519 public key files (PEM): when given, a third-party or sandboxed plugin loads only if its package's
   * signature (core/plugins/signing.ts) verifies against one of them
   */
  trustedKeys?: string[];
  /** what one call of a sandboxed plugin may use (DEFAULT_SANDBOX_BUDGET where unset) */
  sandbox?: Partial<SandboxBudget> & { network?: SandboxNetwork };
  /** opt-in plugins enabled for every tenant */
  enable?: string[];
  /** plugins disabled for every tenant */
  disable?: string[];
  /** plugins the caller refused before loading (an entry of plugins.generic that breaks a rule), reported as failures */
  refused?: PluginFailure[];
  /** the manager's `defaultPluginConfig`, keyed like pluginConfig: each entry is checked against its plugin's configSchema at load */
  defaultPluginConfig?: Record<string, unknown>;
}

/**
 * PluginHost loads, validates and activates plugins for one process (manager or vn-agent). A plugin that fails to
 * load or validate is recorded in `failures` with its reason and the others carry on.
 */
export class PluginHost {
  readonly failures: PluginFailure[] = [];
  private readonly plugins = new Map<string, Plugin>();
  private readonly sandboxes: PluginSandbox[] = [];
  /**
   * the pluginConfig keys of every plugin with a valid manifest, active in this process or not: which plugin owns
   * the key and its configSchema checker, if it declares one
   */
  private readonly configKeys = new Map<string, { plugin: string; check?: (value: unknown) => FieldError[] }>();

  private constructor(private readonly o: HostOptions) {}

  /** PluginHost.load loads the built-ins and every third-party plugin named in the options. */
  static async load(o: HostOptions): Promise<PluginHost> {
    const h = new PluginHost(o);
    for (const f of o.refused ?? []) h.fail(f.plugin, f.source, f.reason);
    for (const p of o.builtins) h.admit(p, 'builtin');
    let keys: TrustedKey[] | undefined;
    try {
      keys = o.trustedKeys && readTrustedKeys(o.trustedKeys);
    } catch (e) {
      // Without the keys nothing third-party can be checked, so nothing third-party loads.
      for (const spec of [...(o.thirdParty ?? []), ...(o.sandboxed ?? [])])
        h.fail(spec, spec, `not loaded: ${e instanceof Error ? e.message : String(e)}`);
      return h.finish();
    }
    const unsigned = (spec: string): string | undefined =>
      keys && signatureProblem(packageRoot(pluginEntry(spec, o.baseDir ?? process.cwd())), keys);
    for (const spec of o.thirdParty ?? []) {
      try {
        const problem = unsigned(spec);
        if (problem) {
          h.fail(spec, spec, `not installed: ${problem}`);
          continue;
        }
        const loaded = await importPlugin(spec, o.baseDir ?? process.cwd());
        for (const p of loaded.plugins) h.admit(p, spec, loaded.sdk);
      } catch (e) {
        h.fail(spec, spec, `failed to load: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    for (const spec of o.sandboxed ?? []) {
      let sandbox: PluginSandbox | undefined;
      try {
        const problem = unsigned(spec);
        if (problem) {
          h.fail(spec, spec, `not installed: ${problem}`);
          continue;
        }
        const { entry, sdk, readPaths } = sandboxedEntry(spec, o.baseDir ?? process.cwd());
        const { network, ...budget } = o.sandbox ?? {};
        sandbox = new PluginSandbox({ entry, source: spec, readPaths, budget, ...(network && { network }) });
        const plugins = sandbox.load();
        h.sandboxes.push(sandbox);
        for (const p of plugins) h.admit(p, spec, sdk);
      } catch (e) {
        void sandbox?.close();
        h.fail(spec, spec, `failed to load in the sandbox: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    return h.finish();
  }

  /** finish drops mutators of unknown plugins and plugins whose default configuration is invalid. */
  private finish(): PluginHost {
    for (const p of [...this.plugins.values()]) {
      if (isMutator(p) && !this.plugins.has(p.manifest.mutates ?? '')) {
        this.plugins.delete(p.manifest.name);
        this.fail(p.manifest.name, 'builtin', `mutates unknown plugin "${p.manifest.mutates}"`);
      }
    }
    for (const [key, value] of Object.entries(this.o.defaultPluginConfig ?? {})) {
      const owner = this.configKeys.get(key);
      const errors = owner?.check?.(value) ?? [];
      if (!owner || !errors.length || !this.plugins.has(owner.plugin)) continue;
      this.plugins.delete(owner.plugin);
      this.fail(
        owner.plugin,
        'defaultPluginConfig',
        `invalid default configuration:\n${configErrorMessages(`defaultPluginConfig.${key}`, errors).join('\n')}`,
      );
    }
    return this;
  }

  /**
   * admit validates one plugin and activates it for this process. `sdk` is the SDK range its package declares
   * (built-ins, built with the host, have none to check).
   */
  private admit(p: unknown, source: string, sdk?: SdkDeclaration): void {
    const manifest = (p as Plugin | undefined)?.manifest;
    const name = typeof manifest?.name === 'string' ? manifest.name : source;
    const versionProblem =
      (manifest && apiVersionProblem(name, (manifest as { apiVersion?: unknown }).apiVersion)) ??
      sdkVersionProblem(name, sdk);
    if (versionProblem) return this.fail(name, source, versionProblem);
    const errors = validate('plugin', manifest);
    if (errors.length) return this.fail(name, source, `invalid manifest:\n${formatErrors(`plugin ${name}`, errors)}`);
    const plugin = p as Plugin;
    if (this.plugins.has(name)) return this.fail(name, source, `a plugin named "${name}" is already loaded`);
    if (isMutator(plugin)) {
      if (typeof plugin.mutate !== 'function') return this.fail(name, source, 'a mutator must implement mutate()');
    } else if (typeof plugin.toSuper !== 'function' && typeof plugin.toTenant !== 'function') {
      return this.fail(name, source, 'a resource plugin must implement toSuper() or toTenant()');
    }
    const key = plugin.manifest.configKey ?? name;
    const taken = this.configKeys.get(key);
    if (taken)
      return this.fail(
        name,
        source,
        `pluginConfig key "${key}" is already the configuration of plugin ${taken.plugin}`,
      );
    let check: ((value: unknown) => FieldError[]) | undefined;
    try {
      check = plugin.manifest.configSchema && compileSchema(plugin.manifest.configSchema);
    } catch (e) {
      return this.fail(name, source, `invalid configSchema: ${e instanceof Error ? e.message : String(e)}`);
    }
    this.configKeys.set(key, check ? { plugin: name, check } : { plugin: name });
    if (!plugin.manifest.processes.includes(this.o.process)) return;
    this.plugins.set(name, plugin);
  }

  private fail(plugin: string, source: string, reason: string): void {
    this.failures.push({ plugin, source, reason });
    log.error({ plugin, source, reason }, 'plugin not loaded');
  }

  /**
   * validatePluginConfig checks a tenant's `pluginConfig` (keyed by plugin name, or the configKey a plugin
   * declares) against the configSchema of each plugin, and reports keys no loaded plugin reads. Messages read
   * `<where>.<key>.<field>: <problem>`.
   */
  validatePluginConfig(cfg: Record<string, unknown> | undefined, where = 'spec.pluginConfig'): string[] {
    const out: string[] = [];
    for (const [key, value] of Object.entries(cfg ?? {})) {
      const owner = this.configKeys.get(key);
      if (!owner) {
        out.push(
          `${where}.${key}: no loaded plugin reads this key (keys: ${[...this.configKeys.keys()].sort().join(', ')})`,
        );
        continue;
      }
      out.push(...configErrorMessages(`${where}.${key}`, owner.check?.(value) ?? []));
    }
    return out;
  }

  /** close ends the sandbox processes of sandboxed plugins; a second close does nothing. */
  async close(): Promise<void> {
    await Promise.all(this.sandboxes.splice(0).map((s) => s.close()));
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
    if (this.sandboxes.some((s) => s.isDisabled(name))) return false;
    if (!p.manifest.optIn) return true;
    return !!(this.o.enable?.includes(name) || tenant.plugins?.enable?.includes(name));
  }
}

/**
 * sandboxedEntry resolves a sandboxed plugin as importPlugin does, and lists what its sandbox process may read: the
 * plugin's package folder (or the entry's folder outside a package) and the plugin SDK's package when the plugin's
 * package resolves one. Dependencies must be installed inside the plugin's package (its own node_modules).
 */
function sandboxedEntry(spec: string, baseDir: string): { entry: string; sdk?: SdkDeclaration; readPaths: string[] } {
  const entry = pluginEntry(spec, baseDir);
  const packageJson = nearestPackageJson(entry);
  const sdk = packageJson ? sdkDeclarationOf(packageJson) : undefined;
  const root = packageRoot(entry);
  const readPaths = [root];
  try {
    readPaths.push(dirname(nearestPackageJson(resolvePackage('@virtualcluster-ts/plugin-sdk', root)) ?? root));
  } catch {
    // A plugin that imports no SDK needs none.
  }
  return { entry, ...(sdk && { sdk }), readPaths };
}

/** packageRoot is the folder of the package a plugin's entry file belongs to, or the entry's folder outside a package. */
function packageRoot(entry: string): string {
  return dirname(nearestPackageJson(entry) ?? entry);
}

/** pluginEntry finds the entry file of a third-party plugin named by path (relative to baseDir) or package name. */
function pluginEntry(spec: string, baseDir: string): string {
  const isPath = spec.startsWith('.') || isAbsolute(spec);
  if (!isPath) return resolvePackage(spec, baseDir);
  let entry = resolve(baseDir, spec);
  if (!existsSync(entry)) throw new Error(`no such file or directory: ${entry}`);
  if (statSync(entry).isDirectory())
    entry = existsSync(join(entry, 'package.json'))
      ? packageEntry(entry, entry, undefined, 'index.ts')
      : join(entry, 'index.ts');
  return entry;
}

/**
 * importPlugin imports a third-party plugin module by path or package name and returns the plugins it exports, with
 * the SDK range declared by the package the module belongs to (the nearest package.json), if any.
 */
async function importPlugin(spec: string, baseDir: string): Promise<{ plugins: unknown[]; sdk?: SdkDeclaration }> {
  const entry = pluginEntry(spec, baseDir);
  const packageJson = nearestPackageJson(entry);
  const sdk = packageJson ? sdkDeclarationOf(packageJson) : undefined;
  const mod = (await import(pathToFileURL(entry).href)) as { default?: unknown; plugins?: unknown[] };
  const exported = mod.plugins ?? mod.default;
  if (!exported) throw new Error('the module has no default export (a plugin or an array of plugins)');
  return { plugins: Array.isArray(exported) ? exported : [exported], ...(sdk && { sdk }) };
}

/**
 * resolvePackage finds the entry file of an installed npm package the way Node finds a dependency of a module in
 * `baseDir` (the configuration's folder): the nearest node_modules/<name> up the tree, then its `exports["."]`
 * (conditions import, node, default) or `main`. A plugin installed next to a manager configuration is found
 * wherever the manager is installed; failing that, one installed into the manager's own installation (the container
 * image's `npm install <plugin>` layer) is.
 */
export function resolvePackage(spec: string, baseDir: string): string {
  const m = /^((?:@[^/]+\/)?[^/]+)(\/.*)?$/.exec(spec);
  if (!m) throw new Error(`"${spec}" is neither a path nor a package name`);
  const [, name, subpath] = m;
  const dirs = [
    ...(createRequire(join(resolve(baseDir), 'noop.js')).resolve.paths(name!) ?? []),
    ...(createRequire(import.meta.url).resolve.paths(name!) ?? []),
  ];
  const dir = dirs.map((d) => join(d, name!)).find((d) => existsSync(join(d, 'package.json')));
  if (!dir)
    throw new Error(
      `package ${name} is not installed in ${resolve(baseDir)}, a parent folder or the manager's installation (npm install ${name})`,
    );
  return packageEntry(dir, name!, subpath, 'index.js');
}

/** packageEntry reads a package folder's package.json and returns the file its `exports` or `main` names for import. */
function packageEntry(dir: string, name: string, subpath: string | undefined, defaultMain: string): string {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports?: unknown; main?: string };
  const key = subpath ? `.${subpath}` : '.';
  const map = hasDotKeys(pkg.exports) ? (pkg.exports as Record<string, unknown>) : { '.': pkg.exports };
  const exported = pkg.exports === undefined ? undefined : exportTarget(map[key]);
  if (pkg.exports !== undefined && !exported) throw new Error(`package ${name} does not export "${key}" for import`);
  const entry = join(dir, exported ?? (subpath ? subpath.slice(1) : (pkg.main ?? defaultMain)));
  if (!existsSync(entry))
    throw new Error(`package ${name} names ${entry}, which does not exist (is the package built?)`);
  return entry;
}

function hasDotKeys(exports: unknown): boolean {
  return typeof exports === 'object' && exports !== null && Object.keys(exports).some((k) => k.startsWith('.'));
}

function exportTarget(t: unknown): string | undefined {
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return t.map(exportTarget).find((x) => x !== undefined);
  if (typeof t !== 'object' || t === null) return undefined;
  for (const [cond, v] of Object.entries(t)) if (['import', 'node', 'default'].includes(cond)) return exportTarget(v);
  return undefined;
}
