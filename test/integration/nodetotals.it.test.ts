/**
 * Node totals follow the tenant's TenantPolicy (nodes.totals) in the vn-agent: its VirtualClusterDirectory, running as
 * the vn-agent's ServiceAccount under deploy/vn-agent/rbac.yaml, resolves each Running VirtualCluster's policy as the
 * manager does (the one it names, else the one annotated default) and follows edits of it; a policy it cannot resolve
 * withholds. The tenant's plugins and their configuration reach the agent's plugins as the policy accepts them, never
 * as the spec alone says. What the agent then serves and the syncer writes on vNodes under each mode is shown on the real node
 * (test/realnode/tenantpods.it.test.ts); kwok's nodes report no usage to filter.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { applyCRDs } from '../../core/dev/embedded/superobjects.ts';
import { LABEL, rootNamespace } from '../../core/names/names.ts';
import { createCA, fingerprintSha256 } from '../../core/pki/pki.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { PLUGIN_DEFAULTS_CONFIGMAP, publishPluginDefaults } from '../../core/tenancy/plugindefaults.ts';
import { tenantCACommonName } from '../../core/vnagent/auth.ts';
import { VirtualClusterDirectory } from '../../core/vnagent/directory.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { serviceAccountClient } from '../identities.ts';

const byKind = new Map<string, Resource>(Object.values(R).map((r) => [r.kind, r]));

describe('node totals as the TenantPolicy says, in the vn-agent (nodes.totals)', () => {
  let t: TestSuper;
  let agentClient: KubeClient;
  let directory: VirtualClusterDirectory;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    await eventually(() => t.client.list(R.tenantpolicies));
    for (const d of parseAllDocuments(
      readFileSync(join(import.meta.dirname, '../../deploy/vn-agent/rbac.yaml'), 'utf8'),
    )) {
      const o = d.toJS() as KubeObject;
      await t.client.apply(byKind.get(o.kind!)!, o, 'test');
    }
    agentClient = await serviceAccountClient(t.sc, 'vc-vn-agent', 'vc-vn-agent');
    directory = new VirtualClusterDirectory({ meta: agentClient });
    await directory.start();
  }, 240_000);

  afterAll(async () => {
    await directory?.stop();
    agentClient?.close();
    await t?.stop();
  });

  /** runningTenant makes a VirtualCluster the directory serves: its CA ConfigMap as the manager writes it, Running. */
  const runningTenant = async (
    ns: string,
    name: string,
    policyName?: string,
    spec: Record<string, unknown> = {},
  ): Promise<string> => {
    await t.client.apply(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, 'test');
    const vc = await t.client.create<KubeObject>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name, namespace: ns },
      spec: { provisioner: { type: 'local' }, ...(policyName && { policyName }), ...spec },
    });
    const key = rootNamespace(ns, name, vc.metadata!.uid!);
    const ca = await createCA(tenantCACommonName(key), 1);
    await t.client.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `${name}-tenant-ca`,
        namespace: ns,
        labels: { [LABEL.managedBy]: 'vc-manager' },
        ownerReferences: [
          {
            apiVersion: 'tenancy.x-k8s.io/v1alpha1',
            kind: 'VirtualCluster',
            name,
            uid: vc.metadata!.uid!,
            controller: true,
          },
        ],
      },
      data: { 'ca.crt': ca.certPem },
    });
    await t.client.patch(
      R.virtualclusters,
      ns,
      name,
      { status: { phase: 'Running', kubeletClientCertFingerprint: fingerprintSha256(ca.certPem) } },
      'merge',
      { subresource: 'status' },
    );
    return key;
  };

  /** totalsOf is what the directory hands the agent for a tenant: its node totals, or 'absent' when not served. */
  const totalsOf = (key: string): string =>
    [...directory.tenants()].find((x) => x.key === key)?.tenant.nodes?.totals ?? 'absent';

  const policy = (name: string, totals?: string, isDefault = false): KubeObject => ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'TenantPolicy',
    metadata: { name, ...(isDefault && { annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } }) },
    spec: totals ? { nodes: { totals } } : {},
  });

  it('follows the policy a VirtualCluster names: withheld while it is missing, then as it says, edits included', async () => {
    const key = await runningTenant('team-a', 'a', 'quiet');
    // no such policy yet: the manager would refuse the tenant, the agent shows it nothing of the node
    await eventually(() => expect(totalsOf(key)).toBe('withheld'));
    await t.client.create(R.tenantpolicies, policy('quiet', 'scaled'));
    await eventually(() => expect(totalsOf(key)).toBe('scaled'));
    await t.client.patch(R.tenantpolicies, undefined, 'quiet', { spec: { nodes: { totals: 'withheld' } } }, 'merge');
    await eventually(() => expect(totalsOf(key)).toBe('withheld'));
    // the schema refuses a mode the platform did not mean, by field, and the policy stays as it was
    const refused = await t.client
      .patch(R.tenantpolicies, undefined, 'quiet', { spec: { nodes: { totals: 'hidden' } } }, 'merge')
      .then(
        () => 'accepted',
        (e: unknown) => String(e),
      );
    expect(refused).toMatch(/spec\.nodes\.totals: Unsupported value: "hidden"/);
    expect(totalsOf(key)).toBe('withheld');
  });

  it('follows the default policy of a VirtualCluster that names none, and the built-in default (scaled) without one', async () => {
    const key = await runningTenant('team-b', 'b');
    await eventually(() => expect(totalsOf(key)).toBe('scaled'));
    await t.client.create(R.tenantpolicies, policy('platform-default', 'withheld', true));
    await eventually(() => expect(totalsOf(key)).toBe('withheld'));
    await t.client.patch(R.tenantpolicies, undefined, 'platform-default', { spec: { nodes: null } }, 'merge');
    await eventually(() => expect(totalsOf(key)).toBe('scaled'));
    // a second default makes the policy unresolvable (the manager refuses the tenant): withheld
    await t.client.create(R.tenantpolicies, policy('second-default', 'scaled', true));
    await eventually(() => expect(totalsOf(key)).toBe('withheld'));
    await t.client.delete(R.tenantpolicies, undefined, 'second-default');
    await t.client.delete(R.tenantpolicies, undefined, 'platform-default');
    await eventually(() => expect(totalsOf(key)).toBe('scaled'));
  });

  it("hands the agent's plugins only what the policy accepts of spec.plugins and spec.pluginConfig", async () => {
    const key = await runningTenant('team-c', 'c', 'plugins', {
      plugins: { enable: ['node-call-guard'], disable: ['dns'] },
      pluginConfig: { 'node-call-guard': { maxTailLines: 2 } },
    });
    const served = () => [...directory.tenants()].find((x) => x.key === key)?.tenant;
    // dns enforced: the spec is refused (as the manager refuses it), and the agent keeps every tenant's plugins
    await t.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'plugins' },
      spec: {
        plugins: { enforced: ['namespaces', 'pods', 'dns'], allowedOptIn: ['node-call-guard'] },
        pluginConfig: { 'node-call-guard': { maxBytes: 4096 } },
      },
    });
    await eventually(() => {
      expect(served()).toBeDefined();
      expect(served()!.plugins).toBeUndefined();
      expect(served()!.pluginConfig ?? {}).toEqual({});
    });
    // dns no longer enforced: the choice is accepted, and the policy's setting is layered under the tenant's own
    await t.client.patch(
      R.tenantpolicies,
      undefined,
      'plugins',
      { spec: { plugins: { enforced: ['namespaces', 'pods'] } } },
      'merge',
    );
    await eventually(() => {
      expect(served()!.plugins).toEqual({ enable: ['node-call-guard'], disable: ['dns'] });
      expect(served()!.pluginConfig).toEqual({ 'node-call-guard': { maxTailLines: 2, maxBytes: 4096 } });
    });
    // The controller refuses the tenant from now on (a grant revoked, which the agent cannot judge): a policy widened
    // afterwards does not reach the agent, which keeps what it served. (The rotating fingerprint only shows when the
    // agent's cache has the new status.)
    const fingerprint = (
      await t.client.get<KubeObject & { status?: { kubeletClientCertFingerprint?: string } }>(
        R.virtualclusters,
        'team-c',
        'c',
      )
    ).status!.kubeletClientCertFingerprint!;
    await t.client.patch(
      R.virtualclusters,
      'team-c',
      'c',
      {
        status: {
          phase: 'Running',
          rotatingKubeletClientCertFingerprints: [fingerprint],
          conditions: [
            {
              type: 'PolicyAccepted',
              status: 'False',
              reason: 'PolicyViolation',
              message: 'spec.policyName: TenantPolicy "plugins" is not granted to namespace "team-c"',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
      'merge',
      { subresource: 'status' },
    );
    await eventually(() =>
      expect([...directory.tenants()].find((x) => x.key === key)?.rotating).toEqual([fingerprint]),
    );
    // nodes.totals in the same write shows when the agent has the widened policy
    await t.client.patch(
      R.tenantpolicies,
      undefined,
      'plugins',
      { spec: { nodes: { totals: 'withheld' }, pluginConfig: { 'node-call-guard': { maxBytes: 1 << 30 } } } },
      'merge',
    );
    await eventually(() => expect(totalsOf(key)).toBe('withheld'));
    expect(served()!.pluginConfig).toEqual({ 'node-call-guard': { maxTailLines: 2, maxBytes: 4096 } });
    await t.client.delete(R.tenantpolicies, undefined, 'plugins');
  });

  it('serves plugin configuration from the policy generation the controller accepted (status.acceptedPolicy) only', async () => {
    const key = await runningTenant('team-d', 'd', 'recorded', {
      pluginConfig: { 'node-call-guard': { maxTailLines: 2 } },
    });
    const served = () => [...directory.tenants()].find((x) => x.key === key)?.tenant;
    const created = await t.client.create<KubeObject>(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'recorded' },
      spec: { pluginConfig: { 'node-call-guard': { maxBytes: 4096 } } },
    });
    /** accept records what the controller accepted, as it writes it after evaluating the policy */
    const accept = (generation: number) =>
      t.client.patch(
        R.virtualclusters,
        'team-d',
        'd',
        { status: { acceptedPolicy: { name: 'recorded', generation } } },
        'merge',
        { subresource: 'status' },
      );
    await accept(created.metadata!.generation!);
    const first = { 'node-call-guard': { maxTailLines: 2, maxBytes: 4096 } };
    await eventually(() => expect(served()?.pluginConfig).toEqual(first));
    // The platform widens the policy; the controller has not judged the tenant against it yet (it may be about to
    // refuse it: a grant taken back). nodes.totals in the same write shows when the agent has the new generation.
    const widened = await t.client.patch<KubeObject>(
      R.tenantpolicies,
      undefined,
      'recorded',
      { spec: { nodes: { totals: 'withheld' }, pluginConfig: { 'node-call-guard': { maxBytes: 1 << 30 } } } },
      'merge',
    );
    await eventually(() => expect(totalsOf(key)).toBe('withheld'));
    expect(served()!.pluginConfig).toEqual(first);
    // The controller accepts the new generation: now it is served.
    await accept(widened.metadata!.generation!);
    await eventually(() =>
      expect(served()!.pluginConfig).toEqual({ 'node-call-guard': { maxTailLines: 2, maxBytes: 1 << 30 } }),
    );
    await t.client.delete(R.tenantpolicies, undefined, 'recorded');
  });

  it("layers the manager's published plugin defaults under the policy's, as the manager does", async () => {
    const key = await runningTenant('team-e', 'e', 'layered', {
      pluginConfig: { 'node-call-guard': { maxTailLines: 2 } },
    });
    const served = () => [...directory.tenants()].find((x) => x.key === key)?.tenant;
    await t.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'layered' },
      spec: { pluginConfig: { 'node-call-guard': { maxBytes: 4096 } } },
    });
    await eventually(() =>
      expect(served()?.pluginConfig).toEqual({ 'node-call-guard': { maxTailLines: 2, maxBytes: 4096 } }),
    );
    // what the manager publishes at the start of its term, in its namespace (made here: it does not exist yet)
    expect(await t.client.getOrNull(R.namespaces, undefined, 'vc-system')).toBeNull();
    const publish = (ns: string, config: Record<string, unknown>) => publishPluginDefaults(t.client, ns, config);
    await publish('vc-system', { 'node-call-guard': { timeoutSeconds: 5 } });
    await eventually(() =>
      expect(served()!.pluginConfig).toEqual({
        'node-call-guard': { maxTailLines: 2, maxBytes: 4096, timeoutSeconds: 5 },
      }),
    );
    // the platform's defaults take a key the tenant set: the manager refuses the spec, and so does the agent
    await publish('vc-system', { 'node-call-guard': { maxTailLines: 50 } });
    await eventually(() => expect(served()!.pluginConfig ?? {}).toEqual({}));
    // which of two published layers holds cannot be told: no tenant configuration at all
    await publish('vc-system', {});
    await eventually(() =>
      expect(served()!.pluginConfig).toEqual({ 'node-call-guard': { maxTailLines: 2, maxBytes: 4096 } }),
    );
    await publish('team-e', {});
    await eventually(() => expect(served()!.pluginConfig ?? {}).toEqual({}));
    await t.client.delete(R.configmaps, 'team-e', PLUGIN_DEFAULTS_CONFIGMAP.name);
    await t.client.delete(R.configmaps, 'vc-system', PLUGIN_DEFAULTS_CONFIGMAP.name);
    await t.client.delete(R.tenantpolicies, undefined, 'layered');
  });
});
