import { describe, expect, it } from 'vitest';
import { createCA, issueCert } from '../../pki/pki.ts';
import type { KubeObject } from '../../kube/client.ts';
import { pruneSet, rolloutState } from './apply.ts';
import { holdingUp } from './install.ts';
import { preflightLines, type PreflightFacts } from './preflight.ts';
import { kustomizationFor, parseComponents, parseImage, type InstallComponent } from './render.ts';
import { certificateUsable } from './vnagent.ts';

describe('parseComponents', () => {
  it.each<[string, InstallComponent[] | RegExp]>([
    ['manager', ['manager']],
    ['manager,vn-agent', ['manager', 'vn-agent']],
    [' manager , scheduler ,vn-agent', ['manager', 'scheduler', 'vn-agent']],
    ['vn-agent', /manager is the base of every installation and must be listed/],
    ['manager,syncer', /unknown component "syncer" \(choose from manager, vn-agent, scheduler\)/],
    ['manager,manager', /"manager" is listed twice/],
  ])('%s', (text, want) => {
    if (want instanceof RegExp) expect(() => parseComponents(text)).toThrow(want);
    else expect(parseComponents(text)).toEqual(want);
  });
});

describe('parseImage', () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  it.each<[string, object | RegExp]>([
    ['registry.example.com/vc:0.2.0', { newName: 'registry.example.com/vc', newTag: '0.2.0' }],
    ['localhost:5000/team/vc:v1', { newName: 'localhost:5000/team/vc', newTag: 'v1' }],
    ['localhost:5000/vc', { newName: 'localhost:5000/vc' }],
    [`ghcr.io/x/vc@${digest}`, { newName: 'ghcr.io/x/vc', digest }],
    ['ghcr.io/x/vc@sha256:short', /the digest must be sha256:<64 hex digits>/],
    ['Registry/VC:1', /"Registry\/VC" is not a valid image name/],
    ['vc:bad tag', /"bad tag" is not a valid tag/],
  ])('%s', (ref, want) => {
    if (want instanceof RegExp) expect(() => parseImage(ref)).toThrow(want);
    else expect(parseImage(ref)).toEqual({ name: 'virtualcluster-ts', ...want });
  });
});

describe('kustomizationFor', () => {
  it('lists deploy/ as the base, the chosen components but manager, the image and labels outside selectors', () => {
    const k = kustomizationFor(
      { components: ['manager', 'vn-agent', 'scheduler'], image: 'r.example/vc:1', version: '0.1.0' },
      '../deploy',
    );
    expect(k).toEqual({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: ['../deploy'],
      components: ['../deploy/vn-agent', '../deploy/scheduler'],
      images: [{ name: 'virtualcluster-ts', newName: 'r.example/vc', newTag: '1' }],
      labels: [
        {
          pairs: {
            'app.kubernetes.io/managed-by': 'vc-install',
            'app.kubernetes.io/part-of': 'virtualcluster-ts',
            'app.kubernetes.io/version': '0.1.0',
          },
          includeSelectors: false,
        },
      ],
    });
    const bare = kustomizationFor({ components: ['manager'], version: '0.1.0' }, 'd');
    expect(bare).not.toHaveProperty('components');
    expect(bare).not.toHaveProperty('images');
  });
});

const good: PreflightFacts = {
  server: { gitVersion: 'v1.36.3', major: 1, minor: 36 },
  crdApi: true,
  vapApi: true,
  csrApi: true,
  podSecurity: { state: 'ok' },
  nodeAuthorizer: { state: 'ok' },
  nodeRestriction: { state: 'ok' },
  csrRights: { state: 'ok' },
  kubeletCA: { source: 'flag', file: 'ca.crt', pem: 'x' },
  clusterCrd: true,
};

describe('preflightLines', () => {
  it('passes a conformant cluster with one line per requirement of the chosen components', () => {
    const manager = preflightLines(good, ['manager']);
    expect(manager.map((l) => l.text)).toEqual([
      'server version v1.36.3 (minimum 1.30)',
      'CustomResourceDefinitions (apiextensions.k8s.io/v1) served',
      'ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) served',
      'Pod Security admission: on',
    ]);
    expect(manager.every((l) => l.ok && !l.fix)).toBe(true);
    expect(preflightLines(good, ['manager', 'vn-agent'])).toHaveLength(8);
    expect(preflightLines(good, ['manager', 'scheduler'])).toHaveLength(5);
  });

  it.each<[string, Partial<PreflightFacts>, InstallComponent[], RegExp, RegExp]>([
    [
      'an old server',
      { server: { gitVersion: 'v1.29.4', major: 1, minor: 29 } },
      ['manager'],
      /^server version v1\.29\.4 \(minimum 1\.30\)$/,
      /upgrade the cluster to Kubernetes 1\.30/,
    ],
    [
      'no ValidatingAdmissionPolicy v1',
      { vapApi: false },
      ['manager'],
      /ValidatingAdmissionPolicy .* not served/,
      /enable the admissionregistration\.k8s\.io\/v1 API/,
    ],
    [
      'no Pod Security admission',
      { podSecurity: { state: 'missing', detail: 'an invalid label was accepted' } },
      ['manager'],
      /^Pod Security admission: off \(an invalid label was accepted\)$/,
      /enable the PodSecurity admission plugin/,
    ],
    [
      'no Node authorizer',
      { nodeAuthorizer: { state: 'missing', detail: 'a node identity may not read its own Node' } },
      ['manager', 'vn-agent'],
      /^Node authorizer: off/,
      /--authorization-mode=Node,RBAC/,
    ],
    [
      'NodeRestriction undecidable',
      { nodeRestriction: { state: 'unknown', detail: 'HTTP 403: impersonation refused' } },
      ['manager', 'vn-agent'],
      /^NodeRestriction admission: cannot tell \(HTTP 403/,
      /--enable-admission-plugins/,
    ],
    [
      'no right to approve the CSR',
      { csrRights: { state: 'missing', detail: 'this identity may not approve signers' } },
      ['manager', 'vn-agent'],
      /kubelet client certificate for the vn-agent: this identity may not approve signers/,
      /kubernetes\.io\/kube-apiserver-client, or create the Secret vc-vn-agent\/vc-vn-agent-kubelet-client by hand/,
    ],
    [
      'no kubelet CA',
      { kubeletCA: { source: 'none', detail: 'node n1: cannot reach its kubelet' } },
      ['manager', 'vn-agent'],
      /kubelet CA for the vn-agent: not found: node n1: cannot reach its kubelet/,
      /pass --kubelet-ca FILE/,
    ],
    [
      'the scheduler without a Cluster CRD',
      { clusterCrd: false },
      ['manager', 'scheduler'],
      /Cluster API Clusters \(cluster\.x-k8s\.io\) not served/,
      /kubectl create -f deploy\/crds\/clusters\.yaml/,
    ],
  ])('fails on %s, saying how to fix it', (_case, facts, components, text, fix) => {
    const lines = preflightLines({ ...good, ...facts }, components);
    const failed = lines.filter((l) => !l.ok);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.text).toMatch(text);
    expect(failed[0]!.fix).toMatch(fix);
    expect(failed[0]!.fatal).toBe(true);
  });

  it('does not ask for the vn-agent prerequisites when the vn-agent is not chosen', () => {
    const lines = preflightLines({ ...good, nodeAuthorizer: { state: 'missing', detail: 'x' } }, ['manager']);
    expect(lines.every((l) => l.ok)).toBe(true);
  });
});

const obj = (kind: string, name: string, namespace?: string, apiVersion = 'v1'): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace && { namespace }) },
});

describe('pruneSet', () => {
  const ds = obj('DaemonSet', 'vc-vn-agent', 'vc-vn-agent', 'apps/v1');
  const ns = obj('Namespace', 'vc-vn-agent');
  const crd = obj('CustomResourceDefinition', 'old.tenancy.x-k8s.io', undefined, 'apiextensions.k8s.io/v1');
  const dep = obj('Deployment', 'vc-manager', 'vc-system', 'apps/v1');
  const secret = obj('Secret', 'vc-vn-agent-kubelet-client', 'vc-vn-agent');
  it.each<[string, KubeObject[], KubeObject[], KubeObject[], KubeObject[]]>([
    ['nothing when the render has everything live', [dep, ns], [dep, ns], [], []],
    ['a component dropped: its workload first, its namespace last', [ns, dep, ds, secret], [dep], [], [ds, secret, ns]],
    ['the prerequisites kept while the vn-agent stays', [dep, ds, secret], [dep, ds], [secret], []],
    ['never a CRD (only uninstall --crds removes one)', [dep, crd], [dep], [], []],
    [
      'an object of the same name in another namespace is another object',
      [obj('ConfigMap', 'vc-manager', 'other')],
      [obj('ConfigMap', 'vc-manager', 'vc-system')],
      [],
      [obj('ConfigMap', 'vc-manager', 'other')],
    ],
    [
      'one already being deleted is left to finish',
      [{ ...ds, metadata: { ...ds.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }],
      [],
      [],
      [],
    ],
  ])('%s', (_case, live, rendered, keep, want) => {
    expect(pruneSet(live, rendered, keep)).toEqual(want);
  });
});

describe('rolloutState', () => {
  it.each<[string, KubeObject, boolean, string]>([
    [
      'a Deployment with every replica updated and available',
      {
        kind: 'Deployment',
        metadata: { generation: 2 },
        spec: { replicas: 2 },
        status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
      } as KubeObject,
      true,
      '2/2 replicas available',
    ],
    [
      'a Deployment whose new generation is not observed yet',
      {
        kind: 'Deployment',
        metadata: { generation: 3 },
        spec: { replicas: 2 },
        status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
      } as KubeObject,
      false,
      '2/2 replicas available',
    ],
    [
      'a Deployment with an old Pod still around',
      {
        kind: 'Deployment',
        metadata: { generation: 1 },
        spec: { replicas: 2 },
        status: { observedGeneration: 1, replicas: 3, updatedReplicas: 2, availableReplicas: 2 },
      } as KubeObject,
      false,
      '2/2 replicas available',
    ],
    [
      'a DaemonSet on every node',
      {
        kind: 'DaemonSet',
        metadata: { generation: 1 },
        status: { observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3 },
      } as KubeObject,
      true,
      '3/3 nodes available',
    ],
    [
      'a DaemonSet with one node not available',
      {
        kind: 'DaemonSet',
        metadata: { generation: 1 },
        status: { observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2 },
      } as KubeObject,
      false,
      '2/3 nodes available',
    ],
  ])('%s', (_case, w, done, text) => {
    expect(rolloutState(w)).toEqual({ done, text });
  });
});

describe('certificateUsable', () => {
  it('keeps a vc-vn-agent certificate with time left, and says why another is replaced', async () => {
    const ca = await createCA('ca', 400);
    const agent = await issueCert(ca, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 365 });
    const other = await issueCert(ca, { commonName: 'someone', usages: ['client'], validityDays: 365 });
    const now = Date.now();
    expect(certificateUsable(agent.certPem, now)).toBe(true);
    // renewed two thirds of the way through its life (243 of 365 days), as every certificate the manager issues
    expect(certificateUsable(agent.certPem, now + 240 * 86_400_000)).toBe(true);
    expect(certificateUsable(agent.certPem, now + 245 * 86_400_000)).toMatch(/^due for renewal since .* \(expires /);
    expect(certificateUsable(agent.certPem, now + 100 * 86_400_000, 0.25)).toMatch(/^due for renewal/);
    expect(certificateUsable(other.certPem, now)).toBe('subject CN=someone');
    expect(certificateUsable(undefined, now)).toBe('no certificate');
    expect(certificateUsable('garbage', now)).toMatch(/^not a certificate/);
  });
});

describe('holdingUp', () => {
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'vc-system' } };
  it.each<[string, Parameters<typeof holdingUp>[0], string]>([
    ['an object whose status says nothing: its name alone', ns, 'Namespace vc-system'],
    [
      "a namespace: its phase and the namespace controller's conditions that hold, not those that do not",
      {
        ...ns,
        status: {
          phase: 'Terminating',
          conditions: [
            { type: 'NamespaceDeletionDiscoveryFailure', status: 'False', reason: 'ResourcesDiscovered' },
            {
              type: 'NamespaceContentRemaining',
              status: 'True',
              reason: 'SomeResourcesRemain',
              message: 'Some resources are remaining: pods. has 1 resource instances',
            },
            { type: 'NamespaceFinalizersRemaining', status: 'True', reason: 'SomeFinalizersRemain' },
          ],
        },
      },
      'Namespace vc-system (phase Terminating; NamespaceContentRemaining: Some resources are remaining: pods. has 1 ' +
        'resource instances; NamespaceFinalizersRemaining: SomeFinalizersRemain)',
    ],
    [
      'a CustomResourceDefinition: Terminating while its objects go, not Established, and the finalizer',
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: {
          name: 'virtualclusters.tenancy.x-k8s.io',
          finalizers: ['customresourcecleanup.apiextensions.k8s.io'],
        },
        status: {
          conditions: [
            { type: 'Established', status: 'True', reason: 'InitialNamesAccepted' },
            {
              type: 'Terminating',
              status: 'True',
              reason: 'InstanceDeletionInProgress',
              message: 'CustomResource deletion is in progress',
            },
          ],
        },
      },
      'apiextensions.k8s.io/CustomResourceDefinition virtualclusters.tenancy.x-k8s.io (Terminating: CustomResource ' +
        'deletion is in progress; finalizers customresourcecleanup.apiextensions.k8s.io)',
    ],
    [
      'a VirtualCluster: its phase and message, and the finalizer of its controller',
      {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: 'team-a', namespace: 'tenants', finalizers: ['tenancy.x-k8s.io/virtualcluster'] },
        status: { phase: 'Deleting', message: 'waiting for 2 Pods to stop' },
      },
      'tenancy.x-k8s.io/VirtualCluster tenants/team-a (phase Deleting (waiting for 2 Pods to stop); finalizers ' +
        'tenancy.x-k8s.io/virtualcluster)',
    ],
    [
      'a Pod: its phase',
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'vc-manager-1', namespace: 'vc-system' },
        status: { phase: 'Running' },
      },
      'Pod vc-system/vc-manager-1 (phase Running)',
    ],
  ])('%s', (_, object, want) => {
    expect(holdingUp(object)).toBe(want);
  });
});
