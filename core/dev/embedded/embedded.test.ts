import { describe, expect, it } from 'vitest';
import { checkPodPolicy } from '@virtualcluster-ts/plugin-sdk/pods';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../local/realnode.ts';
import { checkPolicies, DEFAULT_POLICY } from '../../tenancy/policy.ts';
import { NODE_IMAGES } from '../../toolchain/node.ts';
import { validate } from '../../../schemas/validate.ts';
import { managerDefaults } from '../../programs/manager/config.ts';
import { embeddedForcedPlacement, embeddedPolicy, embeddedTenantDefaults, startEmbedded } from './embedded.ts';

const sampleTenant = {
  spec: { provisioner: { type: 'local' as const }, weight: 1, podSecurityLevel: 'baseline' as const },
};
const onRealNode = (over: Partial<PodSpec> = {}): PodSpec => ({
  containers: [{ name: 'c', image: 'busybox' }],
  nodeSelector: { [REAL_NODE_LABEL]: 'true' },
  tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: 'NoSchedule' }],
  ...over,
});

describe('the embedded TenantPolicy', () => {
  const admitted = checkPolicies(sampleTenant, [embeddedPolicy()]);
  const pods = 'effective' in admitted ? admitted.effective.pods : undefined;

  it('is valid and admits the sample tenants', () => {
    expect(validate('tenantPolicy', embeddedPolicy())).toEqual([]);
    expect(admitted).toHaveProperty('effective.policyName', 'embedded');
  });

  it('lets a tenant Pod select the real node and tolerate its taint', () => {
    expect(checkPodPolicy(onRealNode(), pods)).toBeUndefined();
  });

  it('refuses both under the built-in defaults', () => {
    expect(checkPodPolicy(onRealNode(), undefined)?.field).toMatch(/^spec\.(tolerations|nodeSelector)/);
  });

  it.each([
    ['every taint', { tolerations: [{ operator: 'Exists' }] }, 'spec.tolerations[0]'],
    [
      'the real-node taint with NoExecute',
      { tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: 'NoExecute' }] },
      'spec.tolerations[0]',
    ],
    ['another node label', { nodeSelector: { 'node-role.kubernetes.io/control-plane': '' } }, 'spec.nodeSelector'],
  ])('widens nothing else: %s is refused', (_, over, field) => {
    expect(checkPodPolicy(onRealNode(over as Partial<PodSpec>), pods)?.field).toContain(field);
  });

  it('keeps every other setting at the built-in defaults', () => {
    const builtin = checkPolicies(sampleTenant, []);
    expect('effective' in builtin).toBe(true);
    if (!('effective' in builtin) || !('effective' in admitted)) return;
    const { pods: p1, policyName: _a, ...rest1 } = admitted.effective;
    const { pods: p2, policyName: _b, ...rest2 } = builtin.effective;
    expect(rest1).toEqual(rest2);
    const others = { tolerations: [], nodeLabelKeys: [], preloadedImages: [] };
    expect({ ...p1, ...others }).toEqual({ ...p2, ...others });
    expect(p1.preloadedImages).toEqual(Object.values(NODE_IMAGES));
    expect(p1.tolerations).toEqual([
      ...DEFAULT_POLICY.podTolerations,
      { key: REAL_NODE_TAINT.key, effect: 'NoSchedule' },
    ]);
  });
});

describe('the tenant defaults of vc up', () => {
  it.each([
    ['no real node', 0, 1],
    ['no real node, several super clusters', 0, 2],
  ])('are none with %s', (_, realNodes, superClusters) => {
    expect(embeddedTenantDefaults({ realNodes, superClusters, preloadedImages: ['x:1'] })).toEqual({});
  });

  it('force every tenant Pod of the single super cluster onto its real node, with its images preloaded', () => {
    const d = embeddedTenantDefaults({ realNodes: 1, superClusters: 1, preloadedImages: ['x:1'] });
    expect(d.tenantDefaults?.pods?.forced).toEqual({
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
    });
    expect(d.tenantDefaults?.pods?.preloadedImages).toEqual([...Object.values(NODE_IMAGES), 'x:1']);
    // under the embedded TenantPolicy the forced placement reaches every tenant's effective policy
    const admitted = checkPolicies(
      sampleTenant,
      [embeddedPolicy()],
      managerDefaults({ apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'ManagerConfiguration', ...d }),
    );
    expect(admitted).toHaveProperty('effective.pods.forced', embeddedForcedPlacement());
  });

  it('force nothing with several super clusters, whose others have no real node', () => {
    const d = embeddedTenantDefaults({ realNodes: 1, superClusters: 2, preloadedImages: [] });
    expect(d.tenantDefaults?.pods?.forced).toBeUndefined();
    expect(d.tenantDefaults?.pods?.preloadedImages).toEqual(Object.values(NODE_IMAGES));
  });
});

describe('startEmbedded realNodeSuper', () => {
  it.each([
    [{ realNodeSuper: 'r3', superClusters: 2 }, 'not one of the super clusters (r1, r2)'],
    [{ realNodeSuper: 'r2' }, 'not one of the super clusters (default)'],
  ])('refuses %j before starting anything', async (o, message) => {
    await expect(startEmbedded({ stateDir: '/nonexistent/vc-embedded-unit', ...o })).rejects.toThrow(
      `realNodeSuper "${o.realNodeSuper}": ${message}`,
    );
  });
});
