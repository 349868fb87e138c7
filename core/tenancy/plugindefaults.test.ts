import { describe, expect, it } from 'vitest';
import { PLUGIN_DEFAULTS_CONFIGMAP, pluginDefaultsConfigMap, pluginDefaultsOf } from './plugindefaults.ts';

const published = (namespace: string, data: string, resourceVersion = '7') => {
  const cm = pluginDefaultsConfigMap(namespace, {});
  cm.metadata!.resourceVersion = resourceVersion;
  cm.data = { [PLUGIN_DEFAULTS_CONFIGMAP.key]: data };
  return cm;
};
const tenantCA = { metadata: { name: 'dev-tenant-ca', namespace: 'team-a' }, data: { 'ca.crt': 'x' } };

describe('pluginDefaultsOf', () => {
  it.each([
    { name: 'none published: the policy layer is all there is', maps: [tenantCA], want: { state: 'none' } },
    {
      name: 'the one published, with its resourceVersion',
      maps: [tenantCA, published('vc-system', '{"guard":{"maxBytes":2048}}')],
      want: { state: 'known', config: { guard: { maxBytes: 2048 } }, stamp: '7' },
    },
    {
      name: 'two, in two namespaces: which holds cannot be told',
      maps: [published('vc-system', '{}'), published('elsewhere', '{}')],
      want: { state: 'unusable', why: 'more than one: vc-system/vc-plugin-defaults, elsewhere/vc-plugin-defaults' },
    },
    {
      name: 'not JSON',
      maps: [published('vc-system', '{guard')],
      want: { state: 'unusable', why: 'vc-system/vc-plugin-defaults: defaultPluginConfig.json is not a JSON object' },
    },
    {
      name: 'JSON, but no object',
      maps: [published('vc-system', '[1]')],
      want: { state: 'unusable', why: 'vc-system/vc-plugin-defaults: defaultPluginConfig.json is not a JSON object' },
    },
  ])('$name', ({ maps, want }) => {
    expect(pluginDefaultsOf(maps)).toEqual(want);
  });

  it('publishes what it reads back, none as {}', () => {
    expect(pluginDefaultsOf([pluginDefaultsConfigMap('vc-system', undefined)])).toMatchObject({ config: {} });
    const cm = pluginDefaultsConfigMap('vc-system', { guard: { maxTailLines: 3 } });
    expect(cm.metadata!.labels).toEqual({ 'tenancy.x-k8s.io/managed-by': 'vc-manager' });
    expect(pluginDefaultsOf([cm])).toMatchObject({ config: { guard: { maxTailLines: 3 } } });
  });
});
