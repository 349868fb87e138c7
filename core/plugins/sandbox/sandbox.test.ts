import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../kube/resources.ts';
import { isMutator, type MutatorPlugin } from '../contract.ts';
import { MapCache, testContext } from '../testing.ts';
import { networkIsolation, PluginSandbox, sandboxStopsTotal, SandboxStop } from './sandbox.ts';

const dir = join(import.meta.dirname, 'testdata/misbehaving');
const misbehaving = dir;

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

describe('the network', () => {
  // A real listener on loopback that the test process reaches: what a sandboxed plugin must not reach.
  let server: Server;
  let target: string;
  let sandbox: PluginSandbox;
  let plugin: MutatorPlugin;
  let dir: string;
  beforeAll(async () => {
    server = createServer((s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    sandbox = new PluginSandbox({
      entry: join(misbehaving, 'index.js'),
      source: misbehaving,
      readPaths: [misbehaving],
    });
    plugin = sandbox.load()[0] as MutatorPlugin;
    dir = mkdtempSync(join(tmpdir(), 'vc-sandbox-net-'));
  });
  afterAll(async () => {
    await sandbox.close();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const connectScript = (t: string) =>
    `const [h, p] = ${JSON.stringify(t.split(':'))}; require('node:net').connect(Number(p), h)` +
    `.on('connect', () => { console.log('connected'); process.exit(0) }).on('error', (e) => console.log(e.code))`;

  it('starts the sandbox process in a network namespace of its own, where the kernel refuses what the host reaches', () => {
    const iso = networkIsolation();
    if ('error' in iso) throw new Error(iso.error);
    const run = (prefix: string[]) => {
      const cmd = [...prefix, process.execPath, '-e', connectScript(target)];
      return spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8', timeout: 30_000 }).stdout.trim();
    };
    expect(run([])).toBe('connected');
    expect(run(iso.prefix)).toBe('ENETUNREACH');
  });

  it('refuses a connect and a datagram in a call, stops the call by name with the destination, and serves the next', async () => {
    const before = await stops('misbehaving', 'network');
    const obj = { ...cm('dial', 'connect'), data: { target } };
    const err = (() => {
      try {
        plugin.mutate(obj, obj, testContext());
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(SandboxStop);
    expect((err as SandboxStop).reason).toBe('network');
    expect((err as SandboxStop).message).toBe(
      `plugin misbehaving tried to connect to ${target} in mutate; a sandboxed plugin has no network, and the connection was refused`,
    );
    expect(await stops('misbehaving', 'network')).toBe(before + 1);
    expect(plugin.mutate(cm('two'), cm('two'), testContext()).object?.metadata?.annotations).toBeDefined();
  });

  it('reports connections a module tries while it loads against its plugin, and the module sees them fail', async () => {
    writeFileSync(
      join(dir, 'index.js'),
      `import { connect } from 'node:net';
const errors = [];
const [host, port] = ${JSON.stringify(target.split(':'))};
try { await fetch('http://' + host + ':' + port + '/'); errors.push('fetch=ok') } catch (e) { errors.push('fetch=' + (e.cause?.code ?? e.message)) }
await new Promise((resolve) => {
  try {
    connect(Number(port), host).on('connect', () => { errors.push('tcp=ok'); resolve() }).on('error', (e) => { errors.push('tcp=' + e.code); resolve() });
  } catch (e) { errors.push('tcp=' + e.code); resolve() }
});
export default {
  manifest: { apiVersion: 'plugins.tenancy.x-k8s.io/v1', name: 'phones-home', version: '0.1.0', direction: 'mutator',
    mutates: 'configmaps', sourceOfTruth: 'tenant', processes: ['manager'] },
  mutate(desired) { desired.metadata.annotations = { seen: errors.join(' ') }; return { object: desired }; },
};
`,
    );
    const before = await stops('phones-home', 'network');
    const s = new PluginSandbox({ entry: join(dir, 'index.js'), source: dir, readPaths: [dir] });
    try {
      const p = s.load()[0] as MutatorPlugin;
      expect(await stops('phones-home', 'network')).toBe(before + 2);
      expect(p.mutate(cm('a'), cm('a'), testContext()).object?.metadata?.annotations?.seen).toBe(
        'fetch=EACCES tcp=EACCES',
      );
    } finally {
      await s.close();
    }
  });
});
