import { beforeAll, describe, expect, it } from 'vitest';
import { PLUGIN_API_VERSION, type Plugin } from '../plugins/contract.ts';
import { PluginHost } from '../plugins/host.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { createCA, fingerprintSha256 } from '../pki/pki.ts';
import { agentTenant, type AgentTenant } from './auth.ts';
import { kindOf, targetOf, translatePath } from './routes.ts';

describe('vn-agent routes', () => {
  let host: PluginHost;
  let t: AgentTenant;

  beforeAll(async () => {
    host = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
    const ca = await createCA('t-ca', 1);
    t = agentTenant({ key: 'team-a-111111-a', caPem: ca.certPem, fingerprint: fingerprintSha256(ca.certPem) });
  });

  it('activates only vn-agent plugins, among them pods', () => {
    expect(host.failures).toEqual([]);
    expect(host.names()).toContain('pods');
    expect(host.names()).not.toContain('nodes');
  });

  it('knows the kubelet kinds it serves', () => {
    expect(kindOf('/containerLogs/ns/p/c')).toBe('containerLogs');
    expect(kindOf('/exec/ns/p/c?command=ls')).toBe('exec');
    expect(kindOf('/portForward/ns/p')).toBe('portForward');
    expect(kindOf('/pods')).toBeUndefined();
    expect(kindOf('/metrics/cadvisor')).toBeUndefined();
    expect(kindOf('/stats/summary')).toBeUndefined();
    expect(kindOf('/constructor/x')).toBeUndefined();
  });

  it('reads the pod a path addresses', () => {
    expect(targetOf('/exec/ns1/p1/c?command=ls')).toEqual({ kind: 'exec', namespace: 'ns1', pod: 'p1' });
    expect(targetOf('/portForward/ns1/p1')).toEqual({ kind: 'portForward', namespace: 'ns1', pod: 'p1' });
    expect(targetOf('/exec/ns1')).toBeUndefined();
    expect(targetOf('/pods/a/b')).toBeUndefined();
  });

  it.each([
    ['a dot-dot container', '/exec/ns1/p1/..?command=ls'],
    ['a dot container', '/containerLogs/ns1/p1/.'],
    ['a dot-dot pod', '/containerLogs/ns1/../c'],
    ['an empty segment', '/exec/ns1//c'],
    ['an escaped dot', '/exec/ns1/p1/%2e%2e'],
    ['an escaped slash', '/containerLogs/ns1/p1%2Fx/c'],
    ['a trailing slash', '/containerLogs/ns1/p1/c/'],
    ['upper case', '/exec/NS/p1/c'],
  ])('refuses a path with %s', (_, path) => {
    expect(targetOf(path)).toBeUndefined();
  });

  it('translates tenant paths to super paths through the pods plugin', () => {
    expect(translatePath(host, t, '/containerLogs/default/web/c?follow=true')).toBe(
      '/containerLogs/team-a-111111-a-default/web/c?follow=true',
    );
    expect(translatePath(host, t, '/exec/default/web/0a2b-uid/c?command=echo&command=hi')).toBe(
      '/exec/team-a-111111-a-default/web/c?command=echo&command=hi',
    );
    expect(translatePath(host, t, '/portForward/kube-system/dns')).toBe('/portForward/team-a-111111-a-kube-system/dns');
  });

  it('refuses what the plugin refuses: other endpoints, traversal, encoded separators', () => {
    expect(translatePath(host, t, '/pods')).toBeNull();
    expect(translatePath(host, t, '/containerLogs/../../x/c')).toBeNull();
    expect(translatePath(host, t, '/containerLogs/default%2F..%2Fx/p/c')).toBeNull();
    expect(translatePath(host, t, '/containerLogs/default/p')).toBeNull();
  });

  it('skips plugins disabled for the tenant, and asks the others in load order', async () => {
    const off = agentTenant({ key: 'k', caPem: t.caPem, fingerprint: t.fingerprint, plugins: { disable: ['pods'] } });
    expect(translatePath(host, off, '/containerLogs/default/web/c')).toBeNull();
    const extra: Plugin = {
      manifest: {
        apiVersion: PLUGIN_API_VERSION,
        name: 'logs-only',
        version: '0.1.0',
        direction: 'down',
        sourceOfTruth: 'tenant',
        processes: ['vn-agent'],
        resource: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true },
      },
      toSuper: (o) => ({ object: o }),
      translateKubeletPath: (p) =>
        p.startsWith('/containerLogs/') ? p.replace('/containerLogs/', '/containerLogs/x-') : null,
    };
    const h = await PluginHost.load({ process: 'vn-agent', builtins: [extra, ...builtinPlugins] });
    expect(h.failures).toEqual([]);
    expect(translatePath(h, t, '/containerLogs/default/web/c')).toBe('/containerLogs/x-default/web/c');
    expect(translatePath(h, t, '/exec/default/web/c')).toBe('/exec/team-a-111111-a-default/web/c');
  });
});
