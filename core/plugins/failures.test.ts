import { describe, expect, it } from 'vitest';
import { callPlugin, PluginError, pluginErrorOf, pluginErrorsTotal, reportPluginError } from './failures.ts';

/** errorsOf reads vc_plugin_errors_total for one plugin, hook and tenant. */
async function errorsOf(plugin: string, hook: string, tenant: string): Promise<number> {
  const m = await pluginErrorsTotal.get();
  return (
    m.values.find((v) => v.labels.plugin === plugin && v.labels.hook === hook && v.labels.tenant === tenant)?.value ?? 0
  );
}

describe('plugin failures', () => {
  it('callPlugin returns what the plugin returns', () => {
    expect(callPlugin('p', 'toSuper', () => 42)).toBe(42);
  });

  it('callPlugin turns a throw into a PluginError naming the plugin and hook, keeping the cause', () => {
    const cause = new TypeError("Cannot read properties of undefined (reading 'spec')");
    let got: unknown;
    try {
      callPlugin('sandbox', 'mutate', () => {
        throw cause;
      });
    } catch (e) {
      got = e;
    }
    expect(got).toBeInstanceOf(PluginError);
    expect(got).toMatchObject({ plugin: 'sandbox', hook: 'mutate', cause });
    expect((got as Error).message).toBe(
      "plugin sandbox failed in mutate: Cannot read properties of undefined (reading 'spec')",
    );
  });

  it('callPlugin names a thrown non-Error too, and does not wrap a PluginError twice', () => {
    expect(() =>
      callPlugin('p', 'route', () => {
        throw 'a string';
      }),
    ).toThrow('plugin p failed in route: a string');
    const inner = new PluginError('inner', 'toTenant', new Error('x'));
    expect(() =>
      callPlugin('outer', 'toSuper', () => {
        throw inner;
      }),
    ).toThrow(inner);
  });

  it('pluginErrorOf finds a PluginError in the cause chain, and nothing in other errors', () => {
    const pe = new PluginError('p', 'toSuper', new Error('x'));
    expect(pluginErrorOf(new Error('wrapped', { cause: pe }))).toBe(pe);
    expect(pluginErrorOf(new Error('plain'))).toBeUndefined();
    expect(pluginErrorOf('not an error')).toBeUndefined();
  });

  it('reportPluginError counts vc_plugin_errors_total per plugin, hook and tenant', async () => {
    const before = await errorsOf('counted', 'toTenant', 't1');
    reportPluginError(new PluginError('counted', 'toTenant', new Error('x')), 't1');
    reportPluginError(new PluginError('counted', 'toTenant', new Error('y')), 't1');
    expect(await errorsOf('counted', 'toTenant', 't1')).toBe(before + 2);
    expect(await errorsOf('counted', 'toTenant', 't2')).toBe(0);
  });
});
