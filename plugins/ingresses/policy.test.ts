import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import type { IngressesPolicyView } from '../sdk/src/index.ts';
import {
  checkIngress,
  CLASS_ANNOTATION,
  DEFAULT_INGRESSES_POLICY,
  hostAllowed,
  type IngressShape,
  isSnippet,
  splitAnnotations,
} from './policy.ts';

const A = ['*.tenant-a.example.com', 'shop.example.org'];

describe('hostAllowed', () => {
  it.each<[string, readonly string[], boolean]>([
    ['web.tenant-a.example.com', A, true],
    ['deep.web.tenant-a.example.com', A, true],
    ['*.tenant-a.example.com', A, true],
    ['*.x.tenant-a.example.com', A, true],
    ['WEB.Tenant-A.example.com', A, true],
    ['shop.example.org', A, true],
    ['tenant-a.example.com', A, false],
    ['web.tenant-b.example.com', A, false],
    ['eviltenant-a.example.com', A, false],
    ['*.example.com', A, false],
    ['x.shop.example.org', A, false],
    ['web.tenant-a.example.com.evil.io', A, false],
    ['anything.example.com', [], false],
  ])('%s under %j: %s', (host, patterns, want) => {
    expect(hostAllowed(host, patterns)).toBe(want);
  });
});

const rule = (host?: string) => ({
  ...(host !== undefined && { host }),
  http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } }] },
});
const ing = (spec: IngressShape['spec'], annotations?: Record<string, string>): IngressShape => ({
  metadata: annotations ? { annotations } : {},
  spec,
});
const policyA: IngressesPolicyView = { hosts: A, classes: ['nginx'] };

// [name, Ingress, policy, refused fields]
const cases: Array<[string, IngressShape, IngressesPolicyView | undefined, string[]]> = [
  [
    'an allowed host and class',
    ing({ ingressClassName: 'nginx', rules: [rule('web.tenant-a.example.com')] }),
    policyA,
    [],
  ],
  ['no class named: the super default class', ing({ rules: [rule('web.tenant-a.example.com')] }), policyA, []],
  [
    "another tenant's host",
    ing({ rules: [rule('web.tenant-a.example.com'), rule('web.tenant-b.example.com')] }),
    policyA,
    ['spec.rules[1].host'],
  ],
  [
    'any host under the built-in defaults',
    ing({ rules: [rule('web.tenant-a.example.com')] }),
    undefined,
    ['spec.rules[0].host'],
  ],
  ['a rule without a host', ing({ rules: [rule()] }), policyA, ['spec.rules[0].host']],
  [
    'a default backend',
    ing({ defaultBackend: { service: { name: 's', port: { number: 80 } } } }),
    policyA,
    ['spec.defaultBackend'],
  ],
  [
    "a TLS host of another tenant (certificate for someone else's name)",
    ing({
      rules: [rule('web.tenant-a.example.com')],
      tls: [{ hosts: ['web.tenant-a.example.com', 'bank.example.com'] }],
    }),
    policyA,
    ['spec.tls[0].hosts[1]'],
  ],
  [
    'a class the policy does not list',
    ing({ ingressClassName: 'internal-admin', rules: [rule('web.tenant-a.example.com')] }),
    policyA,
    ['spec.ingressClassName'],
  ],
  [
    'a class named by the old annotation',
    ing({ rules: [rule('web.tenant-a.example.com')] }, { [CLASS_ANNOTATION]: 'internal-admin' }),
    policyA,
    [`metadata.annotations[${CLASS_ANNOTATION}]`],
  ],
  [
    'an allowed class named by the old annotation',
    ing({ rules: [rule('web.tenant-a.example.com')] }, { [CLASS_ANNOTATION]: 'nginx' }),
    policyA,
    [],
  ],
  [
    'a resource backend',
    ing({
      rules: [
        {
          host: 'web.tenant-a.example.com',
          http: { paths: [{ backend: { resource: { apiGroup: 'x.io', kind: 'Bucket', name: 'b' } } }] },
        },
      ],
    }),
    policyA,
    ['spec.rules[0].http.paths[0].backend.resource'],
  ],
];

describe('checkIngress', () => {
  it.each(cases)('%s', (_name, i, policy, fields) => {
    expect(checkIngress(i, policy).map((r) => r.field)).toEqual(fields);
  });

  it("names the host and the policy's hosts in the message", () => {
    const [r] = checkIngress(ing({ rules: [rule('web.tenant-b.example.com')] }), policyA);
    expect(r?.message).toBe(
      'host "web.tenant-b.example.com" is not among the hosts the tenant\'s policy allows (ingresses.hosts: *.tenant-a.example.com, shop.example.org)',
    );
  });
});

describe('splitAnnotations', () => {
  const tenantAnnotations = {
    'nginx.ingress.kubernetes.io/configuration-snippet': 'more_set_headers "x: y";',
    'nginx.ingress.kubernetes.io/server-snippet': 'location /x { }',
    'nginx.ingress.kubernetes.io/auth-url': 'http://10.0.0.1/',
    'nginx.ingress.kubernetes.io/rewrite-target': '/',
    'nginx.ingress.kubernetes.io/proxy-body-size': '8m',
    'nginx.org/server-snippets': 'x',
    [CLASS_ANNOTATION]: 'nginx',
    'team.example.com/owner': 'a',
  };

  it.each<[string, IngressesPolicyView | undefined, string[]]>([
    ['built-in defaults: only the (checked) class annotation', undefined, [CLASS_ANNOTATION]],
    [
      'listed keys',
      { annotations: ['nginx.ingress.kubernetes.io/rewrite-target', 'team.example.com/owner'] },
      [CLASS_ANNOTATION, 'nginx.ingress.kubernetes.io/rewrite-target', 'team.example.com/owner'],
    ],
    [
      'a prefix: every key under it but the snippets',
      { annotations: ['nginx.ingress.kubernetes.io/*'] },
      [
        CLASS_ANNOTATION,
        'nginx.ingress.kubernetes.io/auth-url',
        'nginx.ingress.kubernetes.io/proxy-body-size',
        'nginx.ingress.kubernetes.io/rewrite-target',
      ],
    ],
    [
      'snippets even when listed by name',
      { annotations: ['nginx.ingress.kubernetes.io/server-snippet', 'nginx.org/server-snippets'] },
      [CLASS_ANNOTATION],
    ],
  ])('%s', (_name, policy, kept) => {
    const r = splitAnnotations(tenantAnnotations, policy);
    expect(r.kept).toEqual(kept);
    expect([...r.kept, ...r.dropped].sort()).toEqual(Object.keys(tenantAnnotations).sort());
  });

  it.each([
    ['nginx.ingress.kubernetes.io/configuration-snippet', true],
    ['nginx.ingress.kubernetes.io/stream-snippet', true],
    ['haproxy.org/backend-config-snippet', true],
    ['nginx.org/location-snippets', true],
    ['snippet.example.com/name', false],
    ['nginx.ingress.kubernetes.io/rewrite-target', false],
  ])('isSnippet(%s) is %s', (key, want) => {
    expect(isSnippet(key)).toBe(want);
  });
});

describe('DEFAULT_INGRESSES_POLICY', () => {
  it('equals the TenantPolicy defaults', () => {
    expect(DEFAULT_INGRESSES_POLICY).toEqual({
      hosts: DEFAULT_POLICY.ingressHosts,
      classes: DEFAULT_POLICY.ingressClasses,
      annotations: DEFAULT_POLICY.ingressAnnotations,
    });
  });
});
