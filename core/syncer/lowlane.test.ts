import { describe, expect, it } from 'vitest';
import { R } from '../kube/resources.ts';
import type { PluginHost } from '../plugins/host.ts';
import { isEventKey } from './syncer.ts';

const host: Pick<PluginHost, 'get'> = {
  get: (name) =>
    (
      ({
        events: { manifest: { name: 'events', resource: R.events } },
        pods: { manifest: { name: 'pods', resource: R.pods } },
        dns: { manifest: { name: 'dns' } },
      }) as unknown as Record<string, ReturnType<PluginHost['get']>>
    )[name],
};

describe('isEventKey', () => {
  it.each([
    ['acme/events/default/web-1.17a', true],
    ['acme/pods/default/web-1', false],
    ['acme/dns/default/x', false],
    ['acme/unknown/default/x', false],
    ['events', false],
    ['acme/events', false],
  ])('%s on the low-priority lane: %s', (key, low) => {
    expect(isEventKey(host, key)).toBe(low);
  });
});
