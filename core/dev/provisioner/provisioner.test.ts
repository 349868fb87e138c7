import { describe, expect, it } from 'vitest';
import type { ApiServerExpose } from '../../api/virtualcluster.ts';
import { ProvisionRefused } from '../../provisioners/provisioner.ts';
import { assertLocalExpose, localApiserverArgs } from './provisioner.ts';

describe('localApiserverArgs', () => {
  it.each([
    ['no extraArgs', undefined, { 'enable-aggregator-routing': 'true' }],
    ['other flags', { 'audit-log-maxage': '3' }, { 'audit-log-maxage': '3', 'enable-aggregator-routing': 'true' }],
    ["the tenant's own value", { 'enable-aggregator-routing': 'false' }, { 'enable-aggregator-routing': 'false' }],
    [
      'its own value with dashes',
      { '--enable-aggregator-routing': 'false' },
      { '--enable-aggregator-routing': 'false' },
    ],
  ])('%s', (_name, extra, want) => {
    expect(localApiserverArgs(extra)).toEqual(want);
  });
});

describe('assertLocalExpose', () => {
  const run = (expose?: ApiServerExpose) => () => assertLocalExpose({ spec: { apiServer: { expose } } });
  it.each<[string, ApiServerExpose | undefined]>([
    ['nothing asked', undefined],
    ['ClusterIP', { type: 'ClusterIP' }],
    ['empty lists', { extraDNSNames: [], extraIPs: [] }],
  ])('serves %s', (_name, expose) => {
    expect(run(expose)).not.toThrow();
  });

  it.each<[string, ApiServerExpose, string]>([
    [
      'NodePort',
      { type: 'NodePort' },
      'spec.apiServer.expose.type NodePort: the local provisioner runs the apiserver on 127.0.0.1',
    ],
    ['LoadBalancer', { type: 'LoadBalancer' }, 'spec.apiServer.expose.type LoadBalancer:'],
    ['extra DNS names', { extraDNSNames: ['api.example.com'] }, 'spec.apiServer.expose.extraDNSNames:'],
    ['extra IPs', { extraIPs: ['192.0.2.1'] }, 'spec.apiServer.expose.extraIPs:'],
  ])('refuses %s with reason ExposeUnsupported, naming the field', (_name, expose, message) => {
    let err: unknown;
    try {
      run(expose)();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProvisionRefused);
    expect((err as ProvisionRefused).reason).toBe('ExposeUnsupported');
    expect((err as ProvisionRefused).message).toContain(message);
  });
});
