import { describe, expect, it } from 'vitest';
import { kubeconfigSecretData, provisionedOfSecret } from './kubeconfigsecret.ts';

const kubeconfig = 'apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.9:6443\n  name: t\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const ep = (e?: { host: string; port: number }) => (e ? `${e.host}:${e.port}` : '-');

describe('kubeconfig Secret data', () => {
  it.each([
    ['no endpoint (import provisioner)', { kubeconfig }],
    ['workloads endpoint', { kubeconfig, apiserverEndpoint: { host: '127.0.0.1', port: 31000 } }],
    [
      'both endpoints',
      {
        kubeconfig,
        apiserverEndpoint: { host: 'fd00::5', port: 443 },
        dnsApiEndpoint: { host: '127.0.0.1', port: 31001, tlsServerName: 'view.t1' },
      },
    ],
  ])('reads back exactly what it wrote: %s', (_, p) => {
    expect(provisionedOfSecret(kubeconfigSecretData(p))).toEqual(p);
  });

  it.each([
    ['no data', undefined, undefined],
    ['no kubeconfig', { endpoints: b64('{}') }, undefined],
    [
      'written before endpoints were recorded: the kubeconfig server',
      { kubeconfig: b64(kubeconfig) },
      '10.0.0.9:6443 -',
    ],
    ['endpoints not JSON', { kubeconfig: b64(kubeconfig), endpoints: b64('a:1') }, '10.0.0.9:6443 -'],
    ['endpoints a list', { kubeconfig: b64(kubeconfig), endpoints: b64('[]') }, '10.0.0.9:6443 -'],
    [
      'port out of range',
      { kubeconfig: b64(kubeconfig), endpoints: b64('{"apiserverEndpoint":{"host":"a","port":70000}}') },
      '- -',
    ],
    [
      'port not a number',
      { kubeconfig: b64(kubeconfig), endpoints: b64('{"apiserverEndpoint":{"host":"a","port":"1"}}') },
      '- -',
    ],
    ['empty host', { kubeconfig: b64(kubeconfig), endpoints: b64('{"dnsApiEndpoint":{"host":"","port":53}}') }, '- -'],
    [
      'a DNS endpoint only',
      { kubeconfig: b64(kubeconfig), endpoints: b64('{"dnsApiEndpoint":{"host":"h","port":53}}') },
      '- h:53',
    ],
  ])('%s: read without throwing', (_, data, want) => {
    const p = provisionedOfSecret(data);
    expect(p && `${ep(p.apiserverEndpoint)} ${ep(p.dnsApiEndpoint)}`).toBe(want);
  });
});
