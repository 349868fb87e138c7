import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../kube/resources.ts';
import { isMutator, type MutatorPlugin } from '../contract.ts';
import { MapCache, testContext } from '../testing.ts';
import { PluginSandbox, sandboxStopsTotal } from './sandbox.ts';

const dir = join(import.meta.dirname, 'testdata/misbehaving');

function cm(name: string, misbehave?: string) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'app', ...(misbehave && { labels: { misbehave } }) },
    data: { a: '1' },
  };
}

async function stops(plugin: string, reason: string): Promise<number> {
  const m = await sandboxStopsTotal.get();
  return m.values.find((v) => v.labels.plugin === plugin && v.labels.reason === reason)?.value ?? 0;
}

describe('a plugin in the sandbox', () => {
  let sandbox: PluginSandbox;
  let plugin: MutatorPlugin;
  const ctx = testContext({
    tenantCache: new MapCache([[R.configmaps, [cm('one'), cm('two')]]]),
    superCache: new MapCache([[R.secrets, [{ metadata: { name: 's', namespace: 'x' } }]]]),
  });
  const mutate = (name: string, misbehave?: string) => plugin.mutate(cm(name, misbehave), cm(name, misbehave), ctx);

  beforeAll(() => {
    sandbox = new PluginSandbox({
      entry: join(dir, 'index.js'),
      source: dir,
      readPaths: [dir],
      budget: { cpuMillis: 200, memoryMiB: 32, wallMillis: 3000, maxFailures: 100 },
    });
    const [p] = sandbox.load();
    expect(p && isMutator(p)).toBe(true);
    plugin = p as MutatorPlugin;
  });
  afterAll(() => sandbox.close());

  it('runs the transform on plain data, reading a declared cache and the naming rules through the host', () => {
    const d = mutate('one');
    expect(d.object?.metadata?.annotations).toEqual({
      'example.com/sandboxed': 'yes ns=team-a-1a2b3c-dev-app peers=2',
    });
  });

  it('reaches no environment, no file outside its folder, no process, and writes nothing', () => {
    expect(mutate('one', 'reach').object?.metadata?.annotations?.['example.com/sandboxed']).toBe(
      'env=0 token=refused: ERR_ACCESS_DENIED passwd=refused: ERR_ACCESS_DENIED ' +
        'write=refused: ERR_ACCESS_DENIED exec=refused: ERR_ACCESS_DENIED',
    );
  });

  const cases = [
    { misbehave: 'loop', reason: 'cpu', error: /plugin misbehaving used more than 200 ms of CPU in mutate/ },
    {
      misbehave: 'alloc',
      reason: 'memory',
      error: /plugin misbehaving (ran out of its 32 MiB heap|grew by \d+ MiB) in mutate/,
    },
    { misbehave: 'peek', reason: 'undeclared', error: /plugin misbehaving may not read secrets in the super cache/ },
    { misbehave: 'kind', reason: 'undeclared', error: /returned a Secret, but may write only ConfigMap objects/ },
    { misbehave: 'effect', reason: 'undeclared', error: /asked for a superServiceAccount effect/ },
  ];
  for (const c of cases) {
    it(`stops a call that misbehaves (${c.misbehave}) by name and reason, and serves the next call`, async () => {
      const before = await stops('misbehaving', c.reason);
      expect(() => mutate('bad', c.misbehave)).toThrow(c.error);
      expect(await stops('misbehaving', c.reason)).toBe(before + 1);
      expect(mutate('two').object?.metadata?.annotations?.['example.com/sandboxed']).toMatch(/^yes /);
    });
  }

  it('passes on what the plugin throws as an ordinary error, not a stop', async () => {
    const before = await sandboxStopsTotal.get();
    expect(() => mutate('bad', 'throw')).toThrow('cannot handle bad');
    expect(await sandboxStopsTotal.get()).toEqual(before);
  });
});

describe('maxFailures', () => {
  it('disables a plugin after that many stops, and only then', () => {
    const sandbox = new PluginSandbox({
      entry: join(dir, 'index.js'),
      source: dir,
      readPaths: [dir],
      budget: { cpuMillis: 50, maxFailures: 2 },
    });
    try {
      const p = sandbox.load()[0] as MutatorPlugin;
      const ctx = testContext();
      expect(() => p.mutate(cm('a', 'loop'), cm('a', 'loop'), ctx)).toThrow(/CPU/);
      expect(sandbox.isDisabled('misbehaving')).toBe(false);
      expect(() => p.mutate(cm('a', 'peek'), cm('a', 'peek'), ctx)).toThrow(/may not read/);
      expect(sandbox.isDisabled('misbehaving')).toBe(true);
      expect(() => p.mutate(cm('a'), cm('a'), ctx)).toThrow('plugin misbehaving is disabled after 2 stops');
    } finally {
      void sandbox.close();
    }
  });

  it('refuses a module that does not load, with its reason', () => {
    const sandbox = new PluginSandbox({ entry: join(dir, 'missing.js'), source: 'missing', readPaths: [dir] });
    try {
      expect(() => sandbox.load()).toThrow(/Cannot find module|ERR_MODULE_NOT_FOUND|missing\.js/);
    } finally {
      void sandbox.close();
    }
  });
});
