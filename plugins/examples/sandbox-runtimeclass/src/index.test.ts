import { describe, expect, it } from 'vitest';
import type { Decision, Effect, PluginContext } from '@virtualcluster-ts/plugin-sdk';
import { checkConformance, runTransforms, testTenant } from '@virtualcluster-ts/plugin-sdk/testing';
import plugin, { CONFIG_SCHEMA, sandboxRuntimeClassPlugin, type Pod } from './index.ts';

const tenantPod = (runtimeClassName?: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: 'web', name: 'api-0', uid: 'tenant-pod-uid' },
  spec: { containers: [{ name: 'api', image: 'api:1' }], ...(runtimeClassName ? { runtimeClassName } : {}) },
});

const superPod = (o: { runtimeClassName?: string; existing?: boolean } = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: 'team-a-1a2b3c-dev-web', name: 'api-0', ...(o.existing ? { uid: 'super-pod-uid' } : {}) },
  spec: {
    containers: [{ name: 'api', image: 'api:1' }],
    ...(o.runtimeClassName ? { runtimeClassName: o.runtimeClassName } : {}),
  },
});

const enforcedEvent = (from: string, to: string): Effect => ({
  type: 'event',
  side: 'tenant',
  regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'web', name: 'api-0', uid: 'tenant-pod-uid' },
  eventType: 'Normal',
  reason: 'RuntimeClassEnforced',
  message: `runtimeClassName ${from} replaced by ${to}, which this tenant enforces`,
});

const kata = { sandbox: { runtimeClassName: 'kata' } };
const kataEnforced = { sandbox: { runtimeClassName: 'kata', enforce: true } };

const cases: Array<{
  name: string;
  pluginConfig?: Record<string, unknown>;
  tenantObj: Pod;
  desired: Pod;
  want: Decision<Pod>;
}> = [
  {
    name: 'tenant asks: new Pod gets the runtime class',
    pluginConfig: kata,
    tenantObj: tenantPod(),
    desired: superPod(),
    want: { object: superPod({ runtimeClassName: 'kata' }) },
  },
  {
    name: 'tenant without pluginConfig: untouched',
    tenantObj: tenantPod(),
    desired: superPod(),
    want: { object: superPod() },
  },
  {
    name: 'tenant configuring other plugins only: untouched',
    pluginConfig: { dns: { x: 1 } },
    tenantObj: tenantPod(),
    desired: superPod(),
    want: { object: superPod() },
  },
  {
    name: 'malformed sandbox config (no name): untouched',
    pluginConfig: { sandbox: { runtimeClassName: 5, enforce: true } },
    tenantObj: tenantPod(),
    desired: superPod(),
    want: { object: superPod() },
  },
  {
    name: 'Pod already names a runtime class, not enforced: kept',
    pluginConfig: kata,
    tenantObj: tenantPod('gvisor'),
    desired: superPod({ runtimeClassName: 'gvisor' }),
    want: { object: superPod({ runtimeClassName: 'gvisor' }) },
  },
  {
    name: 'enforce "true" as a string is not enforce: kept',
    pluginConfig: { sandbox: { runtimeClassName: 'kata', enforce: 'true' } },
    tenantObj: tenantPod('gvisor'),
    desired: superPod({ runtimeClassName: 'gvisor' }),
    want: { object: superPod({ runtimeClassName: 'gvisor' }) },
  },
  {
    name: 'Pod already names a runtime class, enforced: replaced, tenant told',
    pluginConfig: kataEnforced,
    tenantObj: tenantPod('gvisor'),
    desired: superPod({ runtimeClassName: 'gvisor' }),
    want: { object: superPod({ runtimeClassName: 'kata' }), effects: [enforcedEvent('gvisor', 'kata')] },
  },
  {
    name: 'enforced, Pod without a runtime class: set, no event',
    pluginConfig: kataEnforced,
    tenantObj: tenantPod(),
    desired: superPod(),
    want: { object: superPod({ runtimeClassName: 'kata' }) },
  },
  {
    name: 'enforced, Pod already names the same class: unchanged, no event',
    pluginConfig: kataEnforced,
    tenantObj: tenantPod('kata'),
    desired: superPod({ runtimeClassName: 'kata' }),
    want: { object: superPod({ runtimeClassName: 'kata' }) },
  },
  {
    name: 'existing super Pod (has a uid): untouched even when enforced',
    pluginConfig: kataEnforced,
    tenantObj: tenantPod(),
    desired: superPod({ existing: true }),
    want: { object: superPod({ existing: true }) },
  },
];

describe('sandbox-runtimeclass mutate', () => {
  it.each(cases)('$name', (c) => {
    // runTransforms hands the mutator the super Pod as the desired object and throws if the plugin edits its input.
    const tenant = testTenant(c.pluginConfig ? { pluginConfig: c.pluginConfig } : {});
    expect(
      runTransforms(sandboxRuntimeClassPlugin, { tenant, tenantObj: c.tenantObj, superObj: c.desired }),
    ).toStrictEqual({ down: c.want });
  });
});

describe('sandbox-runtimeclass manifest', () => {
  it('is a mutator of the pods plugin and the default export', () => {
    expect(plugin).toBe(sandboxRuntimeClassPlugin);
    expect(plugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'sandbox-runtimeclass',
      version: '0.1.0',
      description: expect.any(String),
      direction: 'mutator',
      mutates: 'pods',
      sourceOfTruth: 'tenant',
      processes: ['manager'],
      configKey: 'sandbox',
      configSchema: CONFIG_SCHEMA,
    });
  });
});

describe('sandbox-runtimeclass conformance', () => {
  it('is pure, sends plain data, reads nothing undeclared and stays within the sandbox budget on every row', () => {
    const rows = Object.fromEntries(
      cases.map((c) => [
        c.name,
        {
          tenant: testTenant(c.pluginConfig ? { pluginConfig: c.pluginConfig } : {}),
          tenantObj: c.tenantObj,
          superObj: c.desired,
        },
      ]),
    );
    const report = checkConformance(sandboxRuntimeClassPlugin, rows, { cpuMillis: 250 });
    expect(Object.keys(report)).toEqual(cases.map((c) => c.name));
  });

  it('fails a plugin that is not: impure, reading undeclared caches, over budget', () => {
    let calls = 0;
    const bad = {
      manifest: { ...sandboxRuntimeClassPlugin.manifest, name: 'bad' },
      mutate: (desired: Pod, _t: Pod, ctx: PluginContext) => {
        calls++;
        ctx.superCache.list({ group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true });
        const until = process.cpuUsage().user + 30_000;
        while (process.cpuUsage().user < until);
        return { object: { ...desired, metadata: { ...desired.metadata, annotations: { n: String(calls) } } } };
      },
    };
    const run = () =>
      checkConformance(bad, { one: { tenantObj: tenantPod(), superObj: superPod() } }, { cpuMillis: 20 });
    expect(run).toThrow(
      /^plugin bad is not conformant:\none: reads secrets in the super cache, which the plugin does not declare\n/,
    );
    calls = 0;
    expect(run).toThrow(/one: gives another result for the same input on another run \(not a pure function\)/);
    calls = 0;
    expect(run).toThrow(/one: used [\d.]+ ms of CPU, over the budget of 20 ms/);
    // The bad plugin spins for 30 ms of CPU on each of its calls: on a busy host that takes far longer in wall time.
  }, 60_000);
});
