import { describe, expect, it } from 'vitest';
import { kubernetesEndpoints, publishable } from './apiendpoint.ts';

describe('kubernetesEndpoints', () => {
  it('points the Endpoints (unmirrored) and the EndpointSlice of default/kubernetes at the address and port', () => {
    const [ep, slice] = kubernetesEndpoints('10.213.7.1', 41234) as Array<Record<string, unknown>>;
    expect(ep).toMatchObject({
      kind: 'Endpoints',
      metadata: {
        name: 'kubernetes',
        namespace: 'default',
        labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' },
      },
      subsets: [{ addresses: [{ ip: '10.213.7.1' }], ports: [{ name: 'https', port: 41234, protocol: 'TCP' }] }],
    });
    expect(slice).toMatchObject({
      kind: 'EndpointSlice',
      metadata: { labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.213.7.1'], conditions: { ready: true } }],
      ports: [{ name: 'https', port: 41234 }],
    });
  });
  const bad: Array<[string, number, RegExp]> = [
    ['localhost', 443, /"localhost" is not an IPv4 address/],
    ['10.0.0.1', 0, /port 0 is not a TCP port/],
    ['10.0.0.1', 70000, /port 70000 is not a TCP port/],
  ];
  for (const [a, p, msg] of bad) it(`refuses ${a}:${p}`, () => expect(() => kubernetesEndpoints(a, p)).toThrow(msg));
});

describe('publishable', () => {
  const cases: Array<[string, boolean]> = [
    ['10.213.7.1', true],
    ['192.168.49.1', true],
    ['127.0.0.1', false],
    ['169.254.0.5', false],
    ['0.0.0.0', false],
    ['10.0.0.256', false],
    ['apiserver.vc-root.svc', false],
    ['fd00::1', false],
  ];
  for (const [address, ok] of cases) it(`${address}: ${ok}`, () => expect(publishable(address)).toBe(ok));
});
