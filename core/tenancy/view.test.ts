import { describe, expect, it } from 'vitest';
import { tenantView, type Tenant } from './tenant.ts';

describe('tenantView', () => {
  const tenant: Tenant = {
    key: 'team-a-1a2b3c-dev',
    vcName: 'dev',
    vcNamespace: 'team-a',
    vcUid: 'uid',
    kubeconfig: 'apiVersion: v1\nusers: [{name: admin, user: {client-key-data: c2VjcmV0}}]',
    weight: 3,
    clusterDomain: 'cluster.local',
    podSecurityLevel: 'restricted',
    plugins: { enable: ['ingresses'] },
    pluginConfig: { sandbox: { runtimeClassName: 'kata' } },
    apiserverEndpoint: { host: '10.0.0.1', port: 6443 },
    pods: { priorityClasses: ['batch'], tolerations: [{ key: 'dedicated', effect: 'NoSchedule' }] },
    runtimeClasses: { handlers: ['runc'], required: 'kata' },
    services: { nodePort: { allowed: true, max: 2 } },
    ingresses: { hosts: ['*.a.example.com'], classes: ['nginx'], annotations: [] },
    endpoints: { allowedCIDRs: ['192.0.2.0/24'] },
  };

  it('gives plugins identity and settings, never the kubeconfig or the queue weight', () => {
    const v = tenantView(tenant);
    expect(Object.keys(v)).not.toContain('kubeconfig');
    expect(Object.keys(v)).not.toContain('weight');
    expect(JSON.stringify(v)).not.toContain('c2VjcmV0');
    expect(v).toMatchObject({
      key: tenant.key,
      podSecurityLevel: 'restricted',
      pluginConfig: { sandbox: { runtimeClassName: 'kata' } },
    });
    expect(Object.isFrozen(v)).toBe(true);
  });

  it('carries the effective pods policy the pods plugin checks tenant Pods against', () => {
    expect(tenantView(tenant).pods).toEqual(tenant.pods);
  });

  it('carries the effective runtimeClasses policy the runtimeclasses and pods plugins check against', () => {
    expect(tenantView(tenant).runtimeClasses).toEqual(tenant.runtimeClasses);
  });

  it('carries the effective services, ingresses and endpoints policies their plugins check against', () => {
    const v = tenantView(tenant);
    expect(v.services).toEqual(tenant.services);
    expect(v.ingresses).toEqual(tenant.ingresses);
    expect(v.endpoints).toEqual(tenant.endpoints);
  });
});
