import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { R } from '../kube/resources.ts';
import { MapCache } from '../plugins/testing.ts';
import { FairQueue } from '../queue/fairqueue.ts';
import { tenantFrom } from '../tenancy/tenant.ts';
import { TenantSessions } from './tenants.ts';

/** unreachable is a tenant kubeconfig whose apiserver refuses connections: its caches never sync. */
const unreachable = stringify({
  apiVersion: 'v1',
  kind: 'Config',
  clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
  users: [{ name: 'u', user: { token: 't' } }],
  contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
  'current-context': 'x',
});

describe('TenantSessions', () => {
  it('removeAll also ends a tenant whose add has not registered its session yet: no informer starts', async () => {
    let informersStarted!: () => void;
    const started = new Promise<'started'>((res) => (informersStarted = () => res('started')));
    const sessions = new TenantSessions({
      queue: new FairQueue(),
      superCache: new MapCache(),
      resourcesFor: () => {
        informersStarted();
        return new Map([['configmaps', R.configmaps]]);
      },
      handlerFor: () => ({}),
      onServed: () => {},
      requestTimeoutMs: 1000,
    });
    const t = tenantFrom({ vcNamespace: 'team-a', vcName: 'dev', vcUid: 'u1', kubeconfig: unreachable });
    const adding = sessions.upsert(t).then(() => 'returned' as const);
    try {
      await sessions.removeAll();
      expect(await Promise.race([adding, started])).toBe('returned');
      expect(sessions.keys()).toEqual([]);
    } finally {
      await sessions.removeAll();
    }
  });
});
