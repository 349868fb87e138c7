import { describe, expect, it } from 'vitest';
import { PLUGIN_API_VERSION, type Plugin } from '../plugins/contract.ts';
import { pluginErrorsTotal } from '../plugins/failures.ts';
import { PluginHost } from '../plugins/host.ts';
import { createCA, fingerprintSha256 } from '../pki/pki.ts';
import { agentTenant } from './auth.ts';
import { translatePath } from './routes.ts';
import { builtinPlugins } from '../../plugins/registry.ts';

describe('vn-agent path translation with a plugin that throws', () => {
  it('refuses the path (no other plugin answers in its place) and counts the failure', async () => {
    const throwing = {
      manifest: {
        apiVersion: PLUGIN_API_VERSION,
        name: 'translate-boom',
        version: '0.1.0',
        direction: 'mutator',
        sourceOfTruth: 'tenant',
        processes: ['vn-agent'],
        mutates: 'pods',
      },
      mutate: (d: unknown) => ({ object: d }),
      translateKubeletPath: () => {
        throw new Error('boom');
      },
    } as unknown as Plugin;
    const host = await PluginHost.load({ process: 'vn-agent', builtins: [throwing, ...builtinPlugins] });
    expect(host.failures).toEqual([]);
    const ca = await createCA('t-ca', 1);
    const t = agentTenant({ key: 'team-a-111111-a', caPem: ca.certPem, fingerprint: fingerprintSha256(ca.certPem) });
    expect(translatePath(host, t, '/containerLogs/default/web/c')).toBeNull();
    const m = await pluginErrorsTotal.get();
    const v = m.values.find((x) => x.labels.plugin === 'translate-boom' && x.labels.hook === 'translateKubeletPath');
    expect(v?.labels.tenant).toBe('team-a-111111-a');
    expect(v?.value).toBe(1);
  });
});
