import { describe, expect, it } from 'vitest';
import { checkIngressFields } from './fields.ts';

const backend = { service: { name: 'web', port: { number: 80 } } };

describe('checkIngressFields', () => {
  it.each([
    [
      'a host rule with a Service backend',
      { rules: [{ host: 'a.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend }] } }] },
      undefined,
    ],
    ['TLS and a class', { ingressClassName: 'nginx', tls: [{ hosts: ['a.example.com'], secretName: 's' }] }, undefined],
    ['an unknown spec field', { futureRouting: { anyHost: true } }, 'spec.futureRouting'],
    [
      'an unknown backend field',
      {
        rules: [
          {
            host: 'a',
            http: { paths: [{ path: '/', pathType: 'Prefix', backend: { ...backend, futureTarget: 'x' } }] },
          },
        ],
      },
      'spec.rules[0].http.paths[0].backend.futureTarget',
    ],
    [
      'a Service backend in another namespace (a field v1.36 does not have)',
      {
        rules: [
          {
            host: 'a',
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'w', namespace: 'kube-system', port: { number: 80 } } },
                },
              ],
            },
          },
        ],
      },
      'spec.rules[0].http.paths[0].backend.service.namespace',
    ],
  ])('%s', (_n, spec, field) => {
    const r = checkIngressFields(spec);
    expect(r?.field).toBe(field);
    if (r) expect(r.message).toMatch(/no rule exists for this field yet/);
  });
});
