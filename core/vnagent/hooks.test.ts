import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLUGIN_API_VERSION, type NodeCall, type Plugin, type VnAgentCapability } from '../plugins/contract.ts';
import { pluginErrorsTotal } from '../plugins/failures.ts';
import { PluginHost } from '../plugins/host.ts';
import { createCA, fingerprintSha256 } from '../pki/pki.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { agentTenant, type AgentTenant } from './auth.ts';
import { translatePath } from './routes.ts';
import { filterNodeCall, lineFilter, MAX_LINE, nodeCallOf, outputFilter, queryOf, withQuery } from './hooks.ts';

/** hooked is a mutator of pods carrying node-call hooks, as a third-party plugin would. */
const hooked = (name: string, hooks: VnAgentCapability, optIn = false): Plugin =>
  ({
    manifest: {
      apiVersion: PLUGIN_API_VERSION,
      name,
      version: '0.0.1',
      direction: 'mutator',
      mutates: 'pods',
      sourceOfTruth: 'tenant',
      processes: ['manager', 'vn-agent'],
      ...(optIn && { optIn }),
    },
    mutate: (d: unknown) => ({ object: d }),
    ...hooks,
  }) as Plugin;

const logs = (query: Record<string, string[]> = {}): NodeCall => ({
  kind: 'containerLogs',
  method: 'GET',
  namespace: 'default',
  pod: 'p',
  container: 'c',
  query,
});

describe('vn-agent node-call hooks', () => {
  let t: AgentTenant;
  let other: AgentTenant;
  beforeAll(async () => {
    const ca = await createCA('t-ca', 1);
    const spec = { caPem: ca.certPem, fingerprint: fingerprintSha256(ca.certPem) };
    t = agentTenant({ key: 'team-a-111111-a', ...spec, plugins: { enable: ['opt'] } });
    other = agentTenant({ key: 'team-b-222222-b', ...spec });
  });

  const load = (plugins: Plugin[]) =>
    PluginHost.load({ process: 'vn-agent', builtins: [...builtinPlugins, ...plugins] });

  it('describes a call in tenant names: Pod, container (none for port-forward), every query value, Pod metadata', () => {
    const cases: Array<[NodeCall['kind'], string, Partial<NodeCall>]> = [
      ['containerLogs', '/containerLogs/ns/p/c?tailLines=5', { namespace: 'ns', pod: 'p', container: 'c' }],
      [
        'exec',
        '/exec/ns/p/uid-1/c?command=ls&command=-l',
        { namespace: 'ns', pod: 'p', container: 'c', query: { command: ['ls', '-l'] } },
      ],
      ['portForward', '/portForward/ns/p?port=80', { namespace: 'ns', pod: 'p', query: { port: ['80'] } }],
      ['statsSummary', '/stats/summary?only_cpu_and_memory=true', { query: { only_cpu_and_memory: ['true'] } }],
    ];
    for (const [kind, url, want] of cases) {
      const c = nodeCallOf(kind, 'GET', url, { labels: { a: 'b' } });
      expect(c, url).toMatchObject({ kind, method: 'GET', podLabels: { a: 'b' }, ...want });
      if (!want.container) expect(c.container, url).toBeUndefined();
    }
  });

  it('rewrites a query and leaves the path; an empty query leaves none', () => {
    expect(queryOf('/x?a=1&a=2&b=')).toEqual({ a: ['1', '2'], b: [''] });
    expect(withQuery('/containerLogs/n/p/c?tailLines=9', { tailLines: ['2'], follow: ['true'] })).toBe(
      '/containerLogs/n/p/c?tailLines=2&follow=true',
    );
    expect(withQuery('/exec/n/p/c?command=ls', {})).toBe('/exec/n/p/c');
  });

  it('runs request filters in load order: the first refusal stops the call; each sees the query the one before left', async () => {
    const seen: string[][] = [];
    const host = await load([
      hooked('cap', { filterNodeCall: () => ({ allow: true, query: { tailLines: ['2'] } }) }),
      hooked('look', {
        filterNodeCall: (c) => {
          seen.push([...(c.query.tailLines ?? [])]);
          return c.query.follow ? { allow: false, reason: 'no follow' } : { allow: true };
        },
      }),
    ]);
    expect(host.failures).toEqual([]);
    expect(filterNodeCall(host, t, logs({ tailLines: ['9'] }))).toEqual({
      ok: true,
      query: { tailLines: ['2'] },
      changed: true,
    });
    expect(seen).toEqual([['2']]);
    // the first plugin's rewrite dropped follow, so the second lets the call go
    expect(filterNodeCall(host, t, logs({ follow: ['true'] }))).toMatchObject({ ok: true });
    const refusing = await load([hooked('look', { filterNodeCall: () => ({ allow: false, reason: 'no follow' }) })]);
    expect(filterNodeCall(refusing, t, logs())).toEqual({ ok: false, plugin: 'look', reason: 'no follow' });
  });

  it('passes a call untouched when no plugin filters it, and skips a plugin the tenant has not enabled', async () => {
    const host = await load([hooked('opt', { filterNodeCall: () => ({ allow: false, reason: 'opted in' }) }, true)]);
    expect(filterNodeCall(host, other, logs({ a: ['1'] }))).toEqual({ ok: true, query: { a: ['1'] }, changed: false });
    expect(filterNodeCall(host, t, logs())).toMatchObject({ ok: false, plugin: 'opt' });
    expect(outputFilter(host, t, logs())).toBeUndefined();
  });

  it('refuses a call whose filter throws or answers nonsense, and counts it', async () => {
    const before = async () => (await pluginErrorsTotal.get()).values.filter((v) => v.labels.plugin === 'bad').length;
    const n = await before();
    for (const f of [
      () => {
        throw new Error('boom');
      },
      () => 'yes' as never,
      () => ({ allow: 'true' }) as never,
    ]) {
      const host = await load([hooked('bad', { filterNodeCall: f })]);
      expect(filterNodeCall(host, t, logs())).toEqual({
        ok: false,
        plugin: 'bad',
        reason: 'plugin bad failed to decide this call',
      });
    }
    expect(await before()).toBeGreaterThan(n);
  });

  it('composes output filters in order, and withholds the text when one throws', async () => {
    const host = await load([
      hooked('mask', { filterNodeOutput: (_c, s) => s.replace(/secret/g, '***') }),
      hooked('upper', { filterNodeOutput: (_c, s) => s.toUpperCase() }),
    ]);
    expect(outputFilter(host, t, logs())!('a secret\n')).toBe('A ***\n');
    const broken = await load([
      hooked('bad', {
        filterNodeOutput: () => {
          throw new Error('boom');
        },
      }),
    ]);
    expect(outputFilter(broken, t, logs())!('a secret\n')).toBe('');
  });

  it('filters a stream line by line, whatever the chunks, with a last line without its end and a cut endless line', async () => {
    const run = async (chunks: Buffer[]) =>
      (await buffer(Readable.from(chunks).pipe(lineFilter((l) => `[${l}]`)))).toString('utf8');
    expect(await run([Buffer.from('a\nb'), Buffer.from('c\n\nd')])).toBe('[a\n][bc\n][\n][d]');
    // a character split between two chunks is decoded whole
    const e = Buffer.from('é\n');
    expect(await run([e.subarray(0, 1), e.subarray(1)])).toBe('[é\n]');
    const long = 'x'.repeat(MAX_LINE);
    expect(await run([Buffer.from(long), Buffer.from('y\n')])).toBe(`[${long}][y\n]`);
  });
});

/** BOXED is a third-party plugin package with all three node-call hooks, for the vn-agent to run in a sandbox. */
const BOXED = `export default {
  manifest: { apiVersion: 'plugins.tenancy.x-k8s.io/v1', name: 'boxed', version: '0.1.0', direction: 'mutator',
    mutates: 'pods', sourceOfTruth: 'tenant', processes: ['manager', 'vn-agent'] },
  mutate: (desired) => ({ object: desired }),
  translateKubeletPath(path, ctx) {
    const m = /^\\/boxed\\/([^/]+)\\/(.+)$/.exec(path);
    return m ? '/containerLogs/' + ctx.names.superNamespace(m[1]) + '/' + m[2] : null;
  },
  filterNodeCall(call, ctx) {
    if (call.kind === 'exec') return { allow: false, reason: 'no exec into ' + call.pod + ' of ' + ctx.tenant.vcName };
    return { allow: true, query: { ...call.query, tailLines: ['2'] } };
  },
  filterNodeOutput: (call, text) => text.replace(/password=\\S+/g, 'password=***'),
};
`;

describe('node-call hooks of a sandboxed plugin', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vc-hooks-sandboxed-'));
  let host: PluginHost;
  let t: AgentTenant;
  beforeAll(async () => {
    mkdirSync(join(dir, 'boxed'));
    writeFileSync(join(dir, 'boxed/package.json'), '{"name":"boxed","type":"module","main":"index.js"}');
    writeFileSync(join(dir, 'boxed/index.js'), BOXED);
    host = await PluginHost.load({
      process: 'vn-agent',
      builtins: builtinPlugins,
      sandboxed: [join(dir, 'boxed')],
    });
    const ca = await createCA('t-ca', 1);
    t = agentTenant({
      key: 'team-a-111111-a',
      vcName: 'a',
      caPem: ca.certPem,
      fingerprint: fingerprintSha256(ca.certPem),
    });
  });
  afterAll(async () => {
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs in the vn-agent as an in-process plugin would: path, request filter and output filter', () => {
    expect(host.failures).toEqual([]);
    expect(translatePath(host, t, '/boxed/default/p/c')).toBe(
      `/containerLogs/${t.names.superNamespace('default')}/p/c`,
    );
    expect(filterNodeCall(host, t, logs({ tailLines: ['9'] }))).toEqual({
      ok: true,
      query: { tailLines: ['2'] },
      changed: true,
    });
    expect(filterNodeCall(host, t, { ...logs(), kind: 'exec' })).toEqual({
      ok: false,
      plugin: 'boxed',
      reason: 'no exec into p of a',
    });
    expect(outputFilter(host, t, logs())!('user=x password=hunter2\n')).toBe('user=x password=***\n');
  });
});
