// The manager's defaultPluginConfig is the platform's bottom layer of every tenant's plugin configuration, under the
// TenantPolicy's. The vn-agents evaluate a tenant's plugins as the manager does but read no manager configuration:
// the manager publishes that layer in the meta cluster, in a ConfigMap only it may label as its own (the same rule
// that protects the tenant CA ConfigMaps the agents already read), and the agents layer it as the manager does.
import type { KubeClient, KubeObject } from '../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import { R } from '../kube/resources.ts';
import { IDENTITY, LABEL } from '../names/names.ts';

/**
 * PLUGIN_DEFAULTS_CONFIGMAP is the ConfigMap holding defaultPluginConfig as JSON, in the manager's namespace: by
 * default vc-system, where the manager's admission policy lets it keep this one (deploy/policy/manager-scope.yaml).
 */
export const PLUGIN_DEFAULTS_CONFIGMAP = {
  name: 'vc-plugin-defaults',
  key: 'defaultPluginConfig.json',
  namespace: 'vc-system',
} as const;

type ConfigMap = KubeObject & { data?: Record<string, string> };

/** pluginDefaultsConfigMap is the ConfigMap publishPluginDefaults writes. */
export function pluginDefaultsConfigMap(namespace: string, config: Record<string, unknown> | undefined): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: PLUGIN_DEFAULTS_CONFIGMAP.name,
      namespace,
      labels: { [LABEL.managedBy]: IDENTITY.manager },
    },
    data: { [PLUGIN_DEFAULTS_CONFIGMAP.key]: JSON.stringify(config ?? {}) },
  };
}

/**
 * publishPluginDefaults writes the manager's defaultPluginConfig (none: `{}`) where the vn-agents read it, making the
 * manager's namespace first where it is missing (a manager of the embedded default has none of its own yet).
 */
export async function publishPluginDefaults(
  meta: KubeClient,
  namespace: string,
  config: Record<string, unknown> | undefined,
): Promise<void> {
  const cm = pluginDefaultsConfigMap(namespace, config);
  try {
    await meta.apply(R.configmaps, cm, IDENTITY.manager);
  } catch (e) {
    if (!isNotFound(e)) throw e;
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } };
    await meta.create(R.namespaces, ns, { fieldManager: IDENTITY.manager }).catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
    await meta.apply(R.configmaps, cm, IDENTITY.manager);
  }
}

/**
 * PluginDefaults is what the agent knows of the manager's layer: `none` when no manager publishes one (an agent
 * beside an older manager, or a directory used alone: the policy's layer is all there is), `unusable` when it cannot
 * be told which one holds (two ConfigMaps, or one that is not a JSON object), else the layer and its ConfigMap's
 * resourceVersion.
 */
export type PluginDefaults =
  | { state: 'none' }
  | { state: 'unusable'; why: string }
  | { state: 'known'; config: Record<string, unknown>; stamp: string };

/**
 * pluginDefaultsOf picks the manager's layer out of the ConfigMaps labelled as the manager's (any namespace: only
 * the manager can label one so).
 */
export function pluginDefaultsOf(configMaps: readonly ConfigMap[]): PluginDefaults {
  const found = configMaps.filter((c) => c.metadata?.name === PLUGIN_DEFAULTS_CONFIGMAP.name);
  if (found.length === 0) return { state: 'none' };
  const where = found.map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`);
  if (found.length > 1) return { state: 'unusable', why: `more than one: ${where.join(', ')}` };
  let config: unknown;
  try {
    config = JSON.parse(found[0]!.data?.[PLUGIN_DEFAULTS_CONFIGMAP.key] ?? '');
  } catch {
    config = undefined;
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    return { state: 'unusable', why: `${where[0]}: ${PLUGIN_DEFAULTS_CONFIGMAP.key} is not a JSON object` };
  return {
    state: 'known',
    config: config as Record<string, unknown>,
    stamp: found[0]!.metadata?.resourceVersion ?? '',
  };
}
