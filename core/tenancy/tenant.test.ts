import { describe, expect, it } from 'vitest';
import { rootNamespace } from '../names/names.ts';
import { TENANT_DEFAULTS } from './defaults.ts';
import { MutableTenantRegistry, tenantFrom, type TenantEvent } from './tenant.ts';

describe('tenantFrom', () => {
  it('fills every setting left out from TENANT_DEFAULTS and keys the tenant by its root namespace', () => {
    expect(tenantFrom({ vcNamespace: 'team-a', vcName: 'dev', vcUid: 'u1' })).toEqual({
      key: rootNamespace('team-a', 'dev', 'u1'),
      vcName: 'dev',
      vcNamespace: 'team-a',
      vcUid: 'u1',
      kubeconfig: '',
      weight: TENANT_DEFAULTS.weight,
      clusterDomain: TENANT_DEFAULTS.clusterDomain,
      podSecurityLevel: TENANT_DEFAULTS.podSecurityLevel,
      opaqueMetaPrefixes: [],
      transparentMetaPrefixes: [],
    });
  });

  it('keeps what the source sets', () => {
    const t = tenantFrom({
      vcNamespace: 'team-a',
      vcName: 'dev',
      vcUid: 'u1',
      key: 'k',
      kubeconfig: 'kc',
      apiserverEndpoint: { host: 'h', port: 1 },
      settings: {
        weight: 3,
        clusterDomain: 'corp.local',
        podSecurityLevel: 'restricted',
        opaqueMetaPrefixes: ['a/'],
        transparentMetaPrefixes: ['b/'],
        plugins: { enable: ['sandbox'] },
        pluginConfig: { sandbox: { runtimeClassName: 'kata' } },
      },
    });
    expect(t).toMatchObject({
      key: 'k',
      kubeconfig: 'kc',
      weight: 3,
      clusterDomain: 'corp.local',
      podSecurityLevel: 'restricted',
    });
    expect(t).toMatchObject({
      opaqueMetaPrefixes: ['a/'],
      transparentMetaPrefixes: ['b/'],
      plugins: { enable: ['sandbox'] },
    });
    expect(t.pluginConfig).toEqual({ sandbox: { runtimeClassName: 'kata' } });
    expect(t.apiserverEndpoint).toEqual({ host: 'h', port: 1 });
  });
});

describe('MutableTenantRegistry', () => {
  it('replays current tenants to a new subscriber, then reports changes until unsubscribed', () => {
    const a = tenantFrom({ vcNamespace: 'n', vcName: 'a', vcUid: '1' });
    const r = new MutableTenantRegistry([a]);
    const seen: TenantEvent[] = [];
    const stop = r.subscribe((e) => seen.push(e));
    const b = tenantFrom({ vcNamespace: 'n', vcName: 'b', vcUid: '2' });
    r.upsert(b);
    r.remove(a.key);
    stop();
    r.remove(b.key);
    expect(seen).toEqual([
      { type: 'upsert', tenant: a },
      { type: 'upsert', tenant: b },
      { type: 'remove', key: a.key },
    ]);
  });
});
