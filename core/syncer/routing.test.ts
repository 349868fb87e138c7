import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { ANN, LABEL, MANAGER } from '../names/names.ts';
import { PluginHost } from '../plugins/host.ts';
import { MapCache, testTenant } from '../plugins/testing.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { Router, superResources, tenantResources } from './routing.ts';
import type { TenantSession } from '../sessions/tenants.ts';

const tenant = testTenant();
const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });

/** routerOver returns a router for one served tenant and the keys it enqueues. */
function routerOver(view = tenant) {
  const keys: string[] = [];
  const session = { tenant: { ...view, kubeconfig: '', weight: 1 }, view, ready: true } as unknown as TenantSession;
  const router = new Router({
    host,
    queue: { add: (k: string) => void keys.push(k) },
    sessions: { get: (k: string) => (k === view.key ? session : undefined), all: () => [session] },
    superCache: new MapCache(),
  });
  return { router, session, keys };
}

const pod = (meta: Record<string, unknown>, nodeName?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: 'default', name: 'web', ...meta },
  spec: { containers: [], ...(nodeName && { nodeName }) },
});
const owned = {
  labels: { [LABEL.managedBy]: MANAGER },
  annotations: { [ANN.cluster]: tenant.key, [ANN.namespace]: 'default', [ANN.name]: 'web', [ANN.uid]: 'u' },
};

describe('watched resources come from declarations', () => {
  it('watches in a tenant the resources of its enabled plugins and what they read or watch', () => {
    const all = [...tenantResources(host, tenant).keys()];
    expect(all).toEqual(expect.arrayContaining(['pods', 'services', 'persistentvolumeclaims', 'nodes', 'secrets']));
    expect(all).not.toContain('ingresses');
  });

  it('drops what only a disabled plugin reads', () => {
    const noEndpoints = testTenant({
      plugins: { disable: ['endpoints', 'endpointslices', 'services', 'dns', 'events'] },
    });
    expect([...tenantResources(host, noEndpoints).keys()]).not.toContain('services');
  });

  it('watches super namespaces for naming, and all objects only of resources whose truth is the super cluster', () => {
    const s = superResources(host);
    expect(s.get('namespaces')).toMatchObject({ all: false });
    expect(s.get('nodes')).toMatchObject({ all: true });
    expect(s.get('pods')).toMatchObject({ all: false });
  });
});

describe('Router', () => {
  it("maps a tenant Pod to its own key and, through the nodes plugin's watch, to its node", () => {
    const { router, session, keys } = routerOver();
    router.tenantHandler(session, 'pods').onAdd!(pod({}, 'node-1'));
    expect(keys).toEqual([`${tenant.key}/pods/default/web`, `${tenant.key}/nodes//node-1`]);
  });

  it("maps a tenant Service to its key and, through the endpoints plugin's watch, to its Endpoints", () => {
    const { router, session, keys } = routerOver();
    router.tenantHandler(session, 'services').onAdd!({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: 'default', name: 'db' },
    });
    expect(keys).toEqual([`${tenant.key}/services/default/db`, `${tenant.key}/endpoints/default/db`]);
  });

  it("maps a bound tenant claim to its volume through the persistentvolumes plugin's watch", () => {
    const { router, session, keys } = routerOver();
    router.tenantHandler(session, 'persistentvolumeclaims').onAdd!({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { namespace: 'default', name: 'data' },
      spec: { volumeName: 'pv-1' },
    });
    expect(keys).toEqual([
      `${tenant.key}/persistentvolumeclaims/default/data`,
      `${tenant.key}/persistentvolumes//pv-1`,
    ]);
  });

  it('enqueues nothing for a plugin the tenant disabled', () => {
    const { router, session, keys } = routerOver(testTenant({ plugins: { disable: ['nodes'] } }));
    router.tenantHandler(session, 'pods').onAdd!(pod({}, 'node-1'));
    expect(keys).toEqual([`${tenant.key}/pods/default/web`]);
  });

  it("indexes super Pods by node for the nodes plugin's route, and requeues the node when a Pod leaves", () => {
    const { router, keys } = routerOver();
    const h = router.superHandler('pods');
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } };
    h.onAdd!(pod(owned, 'node-1'));
    expect(router.routeOf(host.get('nodes') as never, node)).toEqual([
      { tenant: tenant.key, namespace: '', name: 'node-1' },
    ]);
    keys.length = 0;
    h.onDelete!(pod(owned, 'node-1'));
    expect(keys).toEqual([`${tenant.key}/pods/default/web`, `${tenant.key}/nodes//node-1`]);
    expect(router.routeOf(host.get('nodes') as never, node)).toEqual([]);
  });
});

describe('the core names no plugin', () => {
  it('has no built-in plugin name in the syncer sources', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const dir = new URL('.', import.meta.url);
    // Namespaces are the core's own concern too: it reads super namespaces for naming and adoption.
    const names = builtinPlugins.map((p) => p.manifest.name).filter((n) => n !== 'namespaces');
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) {
      const src = readFileSync(new URL(f, dir), 'utf8');
      for (const n of names) expect(src, `${f} names plugin ${n}`).not.toMatch(new RegExp(`['"\`]${n}['"\`/]`));
    }
  });
});
