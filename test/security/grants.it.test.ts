/**
 * Hostile authors against grants (issue 31 §1): V names a TenantPolicy, a super cluster, a ClusterVersion or an import
 * Secret that the platform granted to somebody else, or to nobody. Each gate refuses on the real system: the
 * VirtualCluster controller (before it provisions anything), the GitOps applier (the definition is not applied), and
 * the apiserver's admission (deploy/policy/tenant-grants.yaml), each naming the object, the field and the grant.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject, type Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL, rootNamespace } from '../../core/names/names.ts';
import { managerIdentity } from '../../core/dev/embedded/embedded.ts';
import { ImportProvisioner } from '../../core/provisioners/import/provisioner.ts';
import { CapiProvider } from '../../core/lifecycle/capi.ts';
import { CAPI_CLUSTER_LABEL } from '../../core/lifecycle/kubeconfigsecret.ts';
import { pinnedVersions } from '../../core/toolchain/toolchain.ts';
import { ProvisionRefused } from '../../core/provisioners/provisioner.ts';
import type { TenantPolicy } from '../../core/tenancy/policy.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { Applier } from '../../gitops/applier/applier.ts';
import { scopeOf } from '../../gitops/applier/scope.ts';
import { makeArtifact, vcDoc } from '../../gitops/applier/testing.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { ensureNamespace, refusedBy, serviceAccountClient } from '../identities.ts';
import { startLocalSystem, type LocalSystem } from '../localsystem.ts';
import { Attempts } from './attempts.ts';

const API = 'tenancy.x-k8s.io/v1alpha1';
const source = { namespace: 'platform', name: 'tenants' };

const vcObject = (namespace: string, name: string, spec: Record<string, unknown> = {}, labels = {}): KubeObject => ({
  apiVersion: API,
  kind: 'VirtualCluster',
  metadata: { name, namespace, labels },
  spec: { provisioner: { type: 'local' }, ...spec },
});

/** gold is the wide policy the platform made for team-a, namespaces labelled tier=gold, and its tenants GitSource. */
const gold: TenantPolicy = {
  apiVersion: API,
  kind: 'TenantPolicy',
  metadata: { name: 'gold' },
  spec: {
    weight: { max: 100 },
    provisioners: { allowed: ['local', 'import'] },
    grants: {
      subjects: [
        { kind: 'Namespace', name: 'team-a' },
        { kind: 'Namespace', selector: { matchLabels: { tier: 'gold' } } },
        { kind: 'GitSource', namespace: source.namespace, name: source.name },
      ],
      superClusters: ['east'],
      clusterVersions: ['v1-36'],
      importSecrets: [{ namespace: 'team-a', name: 'granted-src' }],
    },
  },
};
/** silver is granted to team-a alone. */
const silver: TenantPolicy = {
  apiVersion: API,
  kind: 'TenantPolicy',
  metadata: { name: 'silver' },
  spec: { grants: { subjects: [{ kind: 'Namespace', name: 'team-a' }] } },
};

const byKind = new Map<string, Resource>(Object.values(R).map((r) => [r.kind, r]));

describe('hostile authors against grants, on the real local system', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let sys: LocalSystem;
  let author: KubeClient;
  let manager: KubeClient;

  const getVC = (ns: string, name: string) => t.client.get<VirtualCluster>(R.virtualclusters, ns, name);

  /** refusedByController creates a VirtualCluster as admin and waits for the controller's PolicyViolation. */
  const refusedByController = async (ns: string, name: string, spec: Record<string, unknown>, want: string) => {
    await t.client.create(R.virtualclusters, vcObject(ns, name, spec));
    const vc = await eventually(async () => {
      const v = await getVC(ns, name);
      expect(v.status?.phase).toBe('Error');
      return v;
    });
    expect(vc.status!.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ reason: 'PolicyViolation' });
    expect(vc.status!.message).toContain(`VirtualCluster ${ns}/${name}: ${want}`);
    expect(sys.local.controlPlane(rootNamespace(ns, name, vc.metadata!.uid!))).toBeUndefined();
    expect(await t.client.getOrNull(R.secrets, ns, `${name}-kubeconfig`)).toBeNull();
    await t.client.delete(R.virtualclusters, ns, name);
    await eventually(async () => expect(await t.client.getOrNull(R.virtualclusters, ns, name)).toBeNull());
    return vc.status!.message!;
  };

  /** admitted tells whether the controller got past the policy check (Provisioning or Running), then deletes it. */
  const passesController = async (ns: string, name: string, spec: Record<string, unknown>) => {
    await t.client.create(R.virtualclusters, vcObject(ns, name, spec));
    await eventually(async () => expect(['Provisioning', 'Running']).toContain((await getVC(ns, name)).status?.phase));
    await t.client.delete(R.virtualclusters, ns, name);
    await eventually(async () => expect(await t.client.getOrNull(R.virtualclusters, ns, name)).toBeNull(), 90_000);
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    sys = await startLocalSystem(t, { name: 'security-grants' });
    await ensureNamespace(t.client, 'team-a');
    await ensureNamespace(t.client, 'team-b');
    await ensureNamespace(t.client, 'team-c', { tier: 'gold' });
    await ensureNamespace(t.client, 'platform');
    await eventually(() => t.client.list(R.tenantpolicies));
    for (const p of [gold, silver]) await t.client.apply(R.tenantpolicies, p, 'platform');
    for (const [ns, name] of [
      ['team-a', 'granted-src'],
      ['team-a', 'platform-admin'],
    ])
      await t.client.create(R.secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace: ns },
        data: { kubeconfig: Buffer.from(readFileSync(t.sc.kubeconfigPath, 'utf8')).toString('base64') },
      });
  }, 120_000);

  afterAll(async () => {
    attempts.report('security grants');
    author?.close();
    manager?.close();
    await sys?.stop();
    await t?.stop();
  });

  describe('the controller, before it provisions', () => {
    it('runs what is granted: the policy to its namespace, to a namespace by its labels, a granted super cluster', async () => {
      await passesController('team-a', 'ok', { policyName: 'gold', superCluster: 'east', weight: 50 });
      await passesController('team-c', 'by-label', { policyName: 'gold' });
    });

    it('judges a tenant again at once when the platform takes a label grant back', async () => {
      await ensureNamespace(t.client, 'team-d', { tier: 'gold' });
      await t.client.create(R.virtualclusters, vcObject('team-d', 'relabelled', { policyName: 'gold' }));
      await eventually(async () => {
        const vc = await getVC('team-d', 'relabelled');
        expect(vc.status?.phase).toBe('Running');
        expect(vc.status?.conditions?.find((c) => c.type === 'PolicyAccepted')).toMatchObject({ status: 'True' });
        // the generation the vn-agent serves plugin configuration from
        const policy = await t.client.get<KubeObject>(R.tenantpolicies, undefined, 'gold');
        expect(vc.status?.acceptedPolicy).toEqual({ name: 'gold', generation: policy.metadata!.generation });
      }, 90_000);
      await attempts.attempt('controller: a tenant keeps the policy its namespace label no longer grants', async () => {
        await t.client.patch(R.namespaces, undefined, 'team-d', { metadata: { labels: { tier: null } } }, 'merge');
        // nothing else changes: only the namespace's labels can bring the tenant back to the controller
        const vc = await eventually(async () => {
          const v = await getVC('team-d', 'relabelled');
          expect(v.status?.conditions?.find((c) => c.type === 'PolicyAccepted')).toMatchObject({
            status: 'False',
            reason: 'PolicyViolation',
          });
          return v;
        }, 30_000);
        expect(vc.status!.message).toContain('TenantPolicy "gold" is not granted to namespace "team-d"');
        return vc.status!.message!.split('\n').at(-1)!;
      });
      await t.client.delete(R.virtualclusters, 'team-d', 'relabelled');
      await eventually(
        async () => expect(await t.client.getOrNull(R.virtualclusters, 'team-d', 'relabelled')).toBeNull(),
        90_000,
      );
    });

    it.each([
      [
        "naming another team's policy",
        'team-b',
        { policyName: 'gold' },
        'spec.policyName: TenantPolicy "gold" is not granted to namespace "team-b"',
      ],
      [
        'a super cluster the policy does not grant',
        'team-a',
        { policyName: 'gold', superCluster: 'west' },
        'spec.superCluster: "west" is not granted by TenantPolicy "gold" (spec.grants.superClusters)',
      ],
      [
        'a super cluster with no TenantPolicy at all',
        'team-b',
        { superCluster: 'east' },
        'spec.superCluster: "east" is not granted by the built-in defaults',
      ],
      [
        'a ClusterVersion the policy does not grant',
        'team-a',
        { policyName: 'gold', clusterVersionName: 'wide-open' },
        'spec.clusterVersionName: "wide-open" is not granted by TenantPolicy "gold"',
      ],
      [
        "importing the platform's admin kubeconfig from a Secret not granted",
        'team-a',
        {
          policyName: 'gold',
          provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'platform-admin' } } },
        },
        'spec.provisioner.import.kubeconfigSecretRef.name: Secret team-a/platform-admin is not granted',
      ],
    ])('refuses %s', async (what, ns, spec, want) => {
      await attempts.attempt(`controller: ${what}`, () => refusedByController(ns, `x-${ns}`, spec, want));
    });

    it('refuses a GitSource label that a namespace writer set by hand, where no admission guards it', async () => {
      // Without the admission policy the controller trusts the label; the policy below is what keeps it the applier's.
      // Here the label names a GitSource the policy does not know, so it gains nothing.
      await attempts.attempt('controller: a forged label of an ungranted GitSource', async () => {
        await t.client.create(
          R.virtualclusters,
          vcObject('team-b', 'forged', { policyName: 'gold' }, { [LABEL.gitSource]: 'team-b.mine' }),
        );
        const v = await eventually(async () => {
          const x = await getVC('team-b', 'forged');
          expect(x.status?.phase).toBe('Error');
          return x;
        });
        expect(v.status!.message).toContain('or GitSource "team-b.mine" (its spec.grants.subjects)');
        await t.client.delete(R.virtualclusters, 'team-b', 'forged');
        return v.status!.message!;
      });
    });

    it('the import provisioner itself reads no Secret its policy does not grant', async () => {
      const vc = vcObject('team-a', 'direct', {
        provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'platform-admin' } } },
      }) as VirtualCluster;
      const p = new ImportProvisioner(t.client);
      await attempts.attempt('import provisioner: an ungranted Secret', async () => {
        const e = await p.ensure(vc, 'root', { importSecrets: [{ namespace: 'team-a', name: 'granted-src' }] }).then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(e).toBeInstanceOf(ProvisionRefused);
        return (e as Error).message;
      });
      const granted = {
        ...vc,
        spec: { provisioner: vc.spec.provisioner && { ...vc.spec.provisioner } },
      } as VirtualCluster;
      granted.spec.provisioner!.import = { kubeconfigSecretRef: { name: 'granted-src' } };
      const ok = await p.ensure(granted, 'root', { importSecrets: [{ namespace: 'team-a', name: 'granted-src' }] });
      expect(ok.ready).toBe(true);
    });
  });

  describe('the GitOps applier', () => {
    it('applies what is granted to its GitSource and refuses what is granted to a namespace only', async () => {
      await sys.stopController();
      const applier = new Applier({
        client: t.client,
        source,
        scope: scopeOf(source, { sources: { 'platform/tenants': { targetNamespaces: ['team-b'] } } }),
      });
      const out = await applier.reconcile(
        makeArtifact({
          'tenants/ok.yaml': [vcDoc('team-b', 'from-git', { policyName: 'gold' })],
          'tenants/steal.yaml': [vcDoc('team-b', 'steal', { policyName: 'silver' })],
        }),
        undefined,
        { generation: 1 },
      );
      expect((await getVC('team-b', 'from-git')).metadata!.labels![LABEL.gitSource]).toBe('platform.tenants');
      expect(await t.client.getOrNull(R.virtualclusters, 'team-b', 'steal')).toBeNull();
      await attempts.attempt('applier: a policy granted to another namespace', async () => {
        const errors = out.plan!.errors.filter((e) => e.object === 'VirtualCluster team-b/steal');
        expect(errors.map((e) => [e.file, e.pointer])).toEqual([['tenants/steal.yaml', '/spec/policyName']]);
        expect(errors[0]!.message).toContain(
          'spec.policyName: TenantPolicy "silver" is not granted to namespace "team-b" or GitSource "platform.tenants"',
        );
        expect(out.plan!.pruneBlocked?.reason).toBe('ValidationFailed');
        return errors[0]!.message;
      });
      await t.client.delete(R.virtualclusters, 'team-b', 'from-git');
    });
  });

  describe('the Cluster API provider, which picks a ClusterVersion for the author', () => {
    const NEW = pinnedVersions().kubernetes;
    let capi: CapiProvider;
    type ControlPlane = KubeObject & {
      status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
    };
    /** controlPlane is what a Cluster API Cluster `name` gives the provider: its control plane, labelled with it. */
    const controlPlane = (ns: string, name: string, spec: Record<string, unknown>): KubeObject => ({
      apiVersion: 'controlplane.tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualClusterControlPlane',
      metadata: { name, namespace: ns, labels: { [CAPI_CLUSTER_LABEL]: name } },
      spec: { version: NEW, ...spec },
    });
    /** refusedByProvider waits for the control plane's Available=False with `reason`, and checks no VirtualCluster */
    const refusedByProvider = async (ns: string, name: string, spec: Record<string, unknown>, want: string) => {
      await t.client.create(R.virtualclustercontrolplanes, controlPlane(ns, name, spec));
      const c = await eventually(async () => {
        const cp = await t.client.get<ControlPlane>(R.virtualclustercontrolplanes, ns, name);
        const a = cp.status?.conditions?.find((x) => x.type === 'Available');
        expect(a).toMatchObject({ status: 'False', reason: 'PolicyViolation' });
        expect(a?.message).toContain(want);
        return a!;
      });
      expect(await t.client.getOrNull(R.virtualclusters, ns, name)).toBeNull();
      return c.message!;
    };

    beforeAll(async () => {
      // Only the provider's choice is under test: the VirtualCluster it writes is not provisioned.
      await sys.stopController();
      // a-wide offers the pinned version and sorts before v1-36; gold grants v1-36 alone.
      for (const name of ['a-wide', 'v1-36'])
        await t.client.apply(
          R.clusterversions,
          {
            apiVersion: API,
            kind: 'ClusterVersion',
            metadata: { name },
            spec: { kubernetesVersion: NEW, apiServer: { replicas: 1 }, etcd: { storageSize: '1Gi' } },
          },
          'platform',
        );
      // The provider reads Cluster API's Clusters at v1beta2; the minimal Cluster CRD of a meta cluster without
      // Cluster API serves v1beta1 only, so this super serves v1beta2 as well (no Cluster is made here).
      await t.client.patch(
        R.crds,
        undefined,
        'clusters.cluster.x-k8s.io',
        [
          {
            op: 'add',
            path: '/spec/versions/-',
            value: {
              name: 'v1beta2',
              served: true,
              storage: false,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          },
        ],
        'json',
      );
      await eventually(() => t.client.list(R.capiclusters), 30_000);
      capi = new CapiProvider({ meta: t.client });
      await capi.start();
    }, 120_000);

    afterAll(async () => {
      await capi?.stop();
    });

    it('picks the granted ClusterVersion, not the first by name, for a control plane that names none', async () => {
      await attempts.attempt('Cluster API provider: an ungranted ClusterVersion that sorts first', async () => {
        await t.client.create(
          R.virtualclustercontrolplanes,
          controlPlane('team-a', 'capi-pick', {
            virtualCluster: { policyName: 'gold', provisioner: { type: 'local' } },
          }),
        );
        const vc = await eventually(() => getVC('team-a', 'capi-pick'));
        expect(vc.spec.clusterVersionName).toBe('v1-36');
        return 'the VirtualCluster written names v1-36, the ClusterVersion gold grants, not a-wide';
      });
    });

    it.each([
      [
        'a named ClusterVersion its policy does not grant',
        'capi-named',
        { clusterVersionName: 'a-wide', virtualCluster: { policyName: 'gold', provisioner: { type: 'local' } } },
        'spec.clusterVersionName: "a-wide" is not granted by TenantPolicy "gold" (spec.grants.clusterVersions)',
      ],
      [
        'a version offered only by ClusterVersions its policy does not grant',
        'capi-silver',
        { virtualCluster: { policyName: 'silver', provisioner: { type: 'local' } } },
        `spec.version: ${NEW} is offered by a-wide, v1-36, none granted by TenantPolicy "silver"`,
      ],
    ])('refuses %s on the control plane, writing no VirtualCluster', async (what, name, spec, want) => {
      await attempts.attempt(`Cluster API provider: ${what}`, () => refusedByProvider('team-a', name, spec, want));
    });

    it('the applier (and so `vc validate`) refuses a control plane naming an ungranted ClusterVersion', async () => {
      const applier = new Applier({
        client: t.client,
        source,
        scope: scopeOf(source, { sources: { 'platform/tenants': { targetNamespaces: ['team-a'] } } }),
      });
      const out = await applier.reconcile(
        makeArtifact({
          'tenants/capi.yaml': [
            controlPlane('team-a', 'capi-git', {
              clusterVersionName: 'a-wide',
              virtualCluster: { policyName: 'gold', provisioner: { type: 'local' } },
            }) as Record<string, unknown>,
          ],
        }),
        undefined,
        { generation: 1 },
      );
      await attempts.attempt('applier: a control plane naming an ungranted ClusterVersion', async () => {
        const errors = out.plan!.errors.filter((e) => e.object === 'VirtualClusterControlPlane team-a/capi-git');
        expect(errors.map((e) => [e.file, e.pointer])).toEqual([['tenants/capi.yaml', '/spec/clusterVersionName']]);
        expect(errors[0]!.message).toContain('"a-wide" is not granted by TenantPolicy "gold"');
        expect(await t.client.getOrNull(R.virtualclustercontrolplanes, 'team-a', 'capi-git')).toBeNull();
        return errors[0]!.message;
      });
    });
  });

  describe('admission (deploy/policy/tenant-grants.yaml)', () => {
    const DENIED = /ValidatingAdmissionPolicy 'vc-(tenant-grants|gitsource-label)'/;

    beforeAll(async () => {
      for (const d of parseAllDocuments(
        readFileSync(join(import.meta.dirname, '../../deploy/policy/tenant-grants.yaml'), 'utf8'),
      )) {
        const o = d.toJS() as KubeObject;
        await t.client.apply(byKind.get(o.kind!)!, o, 'test');
      }
      // V may write VirtualClusters in team-b (and nothing else).
      await t.client.create(R.serviceaccounts, {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'author', namespace: 'team-b' },
      });
      await t.client.apply(
        R.roles,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'vc-author', namespace: 'team-b' },
          rules: [{ apiGroups: ['tenancy.x-k8s.io'], resources: ['virtualclusters'], verbs: ['*'] }],
        },
        'test',
      );
      await t.client.apply(
        R.rolebindings,
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'vc-author', namespace: 'team-b' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'vc-author' },
          subjects: [{ kind: 'ServiceAccount', name: 'author', namespace: 'team-b' }],
        },
        'test',
      );
      author = await serviceAccountClient(t.sc, 'team-b', 'author');
      manager = await KubeClient.fromString(await managerIdentity(t.sc, 'kube-system'));
      // The apiserver starts enforcing each new policy on its own, within a second or two: wait for both.
      await eventually(
        () =>
          refusedBy(
            () => author.create(R.virtualclusters, vcObject('team-b', 'probe', { policyName: 'gold' })),
            DENIED,
          ),
        30_000,
      );
      await eventually(
        () =>
          refusedBy(
            () =>
              author.create(R.virtualclusters, vcObject('team-b', 'probe', {}, { [LABEL.gitSource]: 'probe.probe' }), {
                dryRun: true,
              }),
            DENIED,
          ),
        30_000,
      );
    }, 60_000);

    it.each([
      [
        "V names another team's policy",
        () => author,
        'team-b',
        { policyName: 'gold' },
        {},
        /spec\.policyName: TenantPolicy "gold" is not granted to namespace "team-b"/,
      ],
      [
        'V labels its definition as a GitSource, to borrow its grants later',
        () => author,
        'team-b',
        {},
        { [LABEL.gitSource]: 'platform.tenants' },
        /only the manager \(its GitOps applier\) sets this label/,
      ],
      [
        'even an admin names a super cluster the policy does not grant',
        () => t.client,
        'team-a',
        { policyName: 'gold', superCluster: 'west' },
        {},
        /spec\.superCluster: "west" is not granted by TenantPolicy "gold"/,
      ],
      [
        'a ClusterVersion the policy does not grant',
        () => t.client,
        'team-a',
        { policyName: 'gold', clusterVersionName: 'wide-open' },
        {},
        /spec\.clusterVersionName: "wide-open" is not granted/,
      ],
      [
        'an import Secret the policy does not grant',
        () => t.client,
        'team-a',
        {
          policyName: 'gold',
          provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'platform-admin' } } },
        },
        {},
        /Secret team-a\/platform-admin is not granted to the import provisioner/,
      ],
    ])('refuses: %s', async (what, who, ns, spec, labels, want) => {
      await attempts.attempt(`admission: ${what}`, () =>
        refusedBy(() => who().create(R.virtualclusters, vcObject(ns, 'denied', spec, labels), { dryRun: true }), want),
      );
    });

    it('refuses changing a definition to an ungranted policy, and lets V keep an allowed one', async () => {
      await author.create(R.virtualclusters, vcObject('team-b', 'mine'));
      await attempts.attempt('admission: V switches its definition to a policy not granted', () =>
        refusedBy(
          () => author.patch(R.virtualclusters, 'team-b', 'mine', { spec: { policyName: 'silver' } }, 'merge'),
          /TenantPolicy "silver" is not granted to namespace "team-b"/,
        ),
      );
      await author.patch(R.virtualclusters, 'team-b', 'mine', { spec: { weight: 2 } }, 'merge');
      await author.delete(R.virtualclusters, 'team-b', 'mine');
    });

    it('admits what is granted: by namespace, by namespace labels, and the GitSource only through the manager', async () => {
      const dry = { dryRun: true };
      const full = { policyName: 'gold', superCluster: 'east', clusterVersionName: 'v1-36' };
      await t.client.create(R.virtualclusters, vcObject('team-a', 'ok', full), dry);
      await t.client.create(R.virtualclusters, vcObject('team-c', 'ok', { policyName: 'gold' }), dry);
      await t.client.create(
        R.virtualclusters,
        vcObject('team-a', 'imp', {
          policyName: 'gold',
          provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'granted-src' } } },
        }),
        dry,
      );
      await manager.create(
        R.virtualclusters,
        vcObject('team-b', 'from-git', { policyName: 'gold' }, { [LABEL.gitSource]: 'platform.tenants' }),
        dry,
      );
      await author.create(R.virtualclusters, vcObject('team-b', 'plain'), dry);
    });
  });
});
