import { describe, expect, it } from 'vitest';
import { localProvisioners } from '../../dev/provisioner/offer.ts';
import { KubeClient } from '../../kube/client.ts';
import { InformerFactory } from '../../kube/factory.ts';
import { MutableTenantRegistry } from '../../tenancy/tenant.ts';
import { pluginHostFromConfig } from '../plugins.ts';
import type { ManagerConfig } from './config.ts';
import { lifecycleControllers, vnAgentsOf } from './lifecycle.ts';

const config = (local: boolean): ManagerConfig => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ManagerConfiguration',
  virtualClusters: {
    enabled: true,
    ...(local && { local: { stateDir: '/nonexistent/tenants', etcdEndpoint: 'http://127.0.0.1:1' } }),
  },
});

// The manager imports no local provisioner: the program running it offers one (vc up does), and a configuration that
// asks for local control planes where none is offered is refused by name rather than failing each VirtualCluster.
describe('lifecycleControllers', () => {
  const cases: Array<{ name: string; local: boolean; offered: boolean; refused: boolean }> = [
    { name: 'no local settings, nothing offered', local: false, offered: false, refused: false },
    { name: 'local settings, nothing offered (vc manager)', local: true, offered: false, refused: true },
    { name: 'local settings, local offered (vc up)', local: true, offered: true, refused: false },
  ];
  it.each(cases)('$name', async ({ local, offered, refused }) => {
    const cfg = config(local);
    const meta = KubeClient.fromSafe({ server: 'https://127.0.0.1:1', context: 'x' });
    const host = await pluginHostFromConfig('manager');
    const make = () =>
      lifecycleControllers(
        cfg,
        meta,
        new InformerFactory(meta, 'meta'),
        new MutableTenantRegistry(),
        host,
        () => true,
        undefined,
        offered ? localProvisioners(cfg) : {},
      );
    if (refused) expect(make).toThrow(/\/virtualClusters\/local is set, but this program offers no local provisioner/);
    else await make().stopProvisioners();
  });
});

describe('vnAgentsOf', () => {
  it.each<[string, Record<string, unknown> | undefined, { vnAgents?: Array<{ host?: string; port: number }> }]>([
    ['no defaults', undefined, {}],
    ['no vn-agent named', { nodes: {} }, {}],
    [
      'one vn-agent',
      { nodes: { vnAgent: { host: '10.1.0.1', port: 41234 } } },
      { vnAgents: [{ host: '10.1.0.1', port: 41234 }] },
    ],
    ['a vn-agent on every node (no host)', { nodes: { vnAgent: { port: 10550 } } }, { vnAgents: [{ port: 10550 }] }],
    [
      'a host that is no address is no host',
      { nodes: { vnAgent: { host: 'agent.local', port: 10550 } } },
      { vnAgents: [{ port: 10550 }] },
    ],
    [
      'one per super cluster, each overriding host and port, repeats once',
      {
        nodes: {
          vnAgent: {
            host: '10.1.0.1',
            port: 41234,
            superClusters: { r2: { host: '127.0.0.1', port: 41300 }, r3: { port: 41234 }, r4: { host: '127.0.0.1' } },
          },
        },
      },
      {
        vnAgents: [
          { host: '10.1.0.1', port: 41234 },
          { host: '127.0.0.1', port: 41300 },
          { host: '127.0.0.1', port: 41234 },
        ],
      },
    ],
    ['a port that is no port is left out', { nodes: { vnAgent: { port: '10550' } } }, {}],
  ])('%s', (_what, defaults, want) => {
    expect(vnAgentsOf(defaults)).toEqual(want);
  });
});
