import { describe, expect, it } from 'vitest';
import {
  exposedCondition,
  kubeconfigSecretData,
  MANAGER_KUBECONFIG_KEY,
  provisionedOfSecret,
} from './kubeconfigsecret.ts';

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

describe('kubeconfig Secret data of an exposed tenant', () => {
  const outside = kubeconfig.replace('https://10.0.0.9:6443', 'https://203.0.113.11:31234');
  const unb64 = (s?: string) => (s === undefined ? undefined : Buffer.from(s, 'base64').toString());

  it.each([
    ['ClusterIP: the manager kubeconfig for people too', { type: 'ClusterIP' }, kubeconfig, undefined],
    [
      'waiting for a load balancer: the manager kubeconfig meanwhile',
      { type: 'LoadBalancer', waiting: { reason: 'WaitingForLoadBalancer', message: 'x' } },
      kubeconfig,
      undefined,
    ],
    [
      'NodePort: the outside kubeconfig, the manager one beside it',
      { type: 'NodePort', server: 'https://203.0.113.11:31234', kubeconfig: outside },
      outside,
      kubeconfig,
    ],
  ])('%s', (_, externalAccess, people, manager) => {
    const data = kubeconfigSecretData({
      kubeconfig,
      apiserverEndpoint: { host: '10.0.0.9', port: 6443 },
      externalAccess,
    });
    expect(unb64(data.kubeconfig)).toBe(people);
    expect(unb64(data[MANAGER_KUBECONFIG_KEY])).toBe(manager);
    // A syncer or a standing-by manager reading the Secret dials what the manager dials.
    expect(provisionedOfSecret(data)).toEqual({ kubeconfig, apiserverEndpoint: { host: '10.0.0.9', port: 6443 } });
  });
});

describe('exposedCondition', () => {
  it.each([
    [
      'ClusterIP',
      { type: 'ClusterIP' },
      {
        status: 'True',
        reason: 'ClusterIP',
        message: 'reached inside the super cluster at https://10.0.0.9:6443 (Service type ClusterIP)',
      },
    ],
    [
      'NodePort with its server',
      { type: 'NodePort', server: 'https://203.0.113.11:31234' },
      {
        status: 'True',
        reason: 'NodePort',
        message: 'reached from outside the super cluster at https://203.0.113.11:31234',
      },
    ],
    [
      'a load balancer awaited',
      { type: 'LoadBalancer', waiting: { reason: 'WaitingForLoadBalancer', message: 'an address' } },
      {
        status: 'False',
        reason: 'WaitingForLoadBalancer',
        message: 'LoadBalancer: waiting for an address; the kubeconfig Secret names https://10.0.0.9:6443 meanwhile',
      },
    ],
  ])('%s', (_, access, want) => {
    expect(exposedCondition(access, kubeconfig)).toEqual({ type: 'Exposed', ...want });
  });
});
