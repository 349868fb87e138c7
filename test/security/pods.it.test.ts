/**
 * Hostile tenant Pods (issue 12, Pods): a tenant with cluster-admin on its own apiserver tries to reach beyond its
 * Pods through the fields the syncer copies to the super cluster. Each attempt must be refused or neutralised with a
 * reason the tenant can see (an event and a VCSynced condition on its Pod), and leave the super cluster and the
 * other tenant as they were. Runs the real syncer against a real local super cluster and two tenant control planes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LABEL, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { PUBLIC_LABEL } from '@virtualcluster-ts/plugin-sdk';
import { Attempts } from './attempts.ts';

interface Pod extends KubeObject {
  spec: {
    serviceAccountName?: string;
    volumes?: Array<{ name: string; projected?: { sources?: Array<{ secret?: { name: string } }> } }>;
  };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

interface FieldsPod extends KubeObject {
  spec: {
    containers: Array<{ securityContext?: { capabilities?: { drop?: string[] } } }>;
    volumes?: Array<{ name: string; [source: string]: unknown }>;
    affinity?: {
      podAffinity?: {
        preferredDuringSchedulingIgnoredDuringExecution?: Array<{ podAffinityTerm?: { namespaces?: string[] } }>;
      };
    };
  };
}

interface Event extends KubeObject {
  involvedObject: { name?: string; uid?: string };
  reason?: string;
  message?: string;
}

const TOKEN_REVIEWS: Resource = {
  group: 'authentication.k8s.io',
  version: 'v1',
  resource: 'tokenreviews',
  kind: 'TokenReview',
  namespaced: false,
};

const pod = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels: { attempt: name } },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
});

describe('hostile tenant Pods against the pods policy and the token boundary', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let syncer: Syncer;
  let superPodsBefore: string[];

  const superPodNames = async (): Promise<string[]> =>
    (await t.client.list(R.pods)).items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort();

  /** refusedWithReason waits for the tenant-visible refusal of a Pod: the VCSynced condition and a Warning event. */
  const refusedWithReason = async (name: string, field: string): Promise<string> => {
    const p = await eventually(async () => {
      const got = await a.get<Pod>(R.pods, 'default', name);
      const c = got.status?.conditions?.find((x) => x.type === 'VCSynced');
      expect(c).toMatchObject({ status: 'False', reason: 'PodPolicyViolation' });
      expect(c?.message).toContain(field);
      return got;
    });
    const events = await eventually(async () => {
      const list = (await a.list<Event>(R.events, { namespace: 'default' })).items.filter(
        (e) => e.involvedObject.uid === p.metadata?.uid,
      );
      expect(list.map((e) => e.reason)).toContain('PodPolicyViolation');
      return list;
    });
    expect(await t.client.getOrNull(R.pods, superNamespace(tenantA.key, 'default'), name)).toBeNull();
    return events.find((e) => e.reason === 'PodPolicyViolation')?.message ?? '';
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    [cpA, cpB] = await Promise.all([
      t.sc.addControlPlane('tenant-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    a = await cpA.client();
    tenantA = tenantFor(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000a1', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
    });
    tenantB = tenantFor(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000b2', {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
    });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([tenantA, tenantB]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
    // A Pod of the other tenant, synced before the attacks: it must stay as it is.
    const b = await cpB.client();
    // Pods wait for the tenant's default ServiceAccount, which its controller-manager creates shortly after start.
    await eventually(() => b.create(R.pods, pod('bystander', {})));
    await eventually(() => a.get(R.serviceaccounts, 'default', 'default'));
    await eventually(() => t.client.get(R.pods, superNamespace(tenantB.key, 'default'), 'bystander'), 90_000);
    superPodsBefore = await superPodNames();
  }, 240_000);

  afterAll(async () => {
    attempts.report('pods boundary');
    await syncer?.stop();
    await t?.stop();
  });

  it('refuses a Pod naming a system- priority class, with a reason on the Pod', async () => {
    await attempts.attempt('priorityClassName system-node-critical', async () => {
      await a.create(R.pods, pod('preempt', { priorityClassName: 'system-node-critical' }));
      return refusedWithReason('preempt', 'spec.priorityClassName');
    });
  });

  it('refuses a Pod tolerating every taint, with a reason on the Pod', async () => {
    await attempts.attempt('tolerations [{operator: Exists}]', async () => {
      await a.create(R.pods, pod('tolerate-all', { tolerations: [{ operator: 'Exists' }] }));
      return refusedWithReason('tolerate-all', 'spec.tolerations[0]');
    });
  });

  it('refuses a Pod pinned by name to a super node none of its Pods run on, even behind a vNode it made itself', async () => {
    // tenant A has no Pod running yet; the super node runs tenant B's bystander
    const superNode = (await t.client.list(R.nodes)).items[0]!.metadata!.name!;
    const pin = (operator: string) => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator, values: [superNode] }] }],
          },
        },
      },
    });
    const field = 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]';
    await attempts.attempt(
      `a forged Node ${superNode} in the tenant and a Pod pinned to it (matchFields)`,
      async () => {
        await a.create(R.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: superNode } });
        await a.create(R.pods, pod('pinned', pin('In')));
        return refusedWithReason('pinned', `${field}.matchFields[0].values[0]`);
      },
    );
    await attempts.attempt('a Pod keeping off a super node by name (matchFields NotIn)', async () => {
      await a.create(R.pods, pod('pinned-notin', pin('NotIn')));
      return refusedWithReason('pinned-notin', `${field}.matchFields[0].key`);
    });
    await a.delete(R.nodes, undefined, superNode).catch(() => undefined);
  });

  it.each([
    [
      'hostPort 22',
      'host-port',
      { containers: [{ name: 'c', image: 'nginx', ports: [{ containerPort: 22, hostPort: 22 }] }] },
      'spec.containers[0].ports[0].hostPort',
    ],
    ['hostPath /', 'host-path', { volumes: [{ name: 'root', hostPath: { path: '/' } }] }, 'spec.volumes[0].hostPath'],
    ['nfs volume', 'nfs', { volumes: [{ name: 'n', nfs: { server: '10.0.0.1', path: '/' } }] }, 'spec.volumes[0].nfs'],
    ['hostNetwork', 'host-network', { hostNetwork: true }, 'spec.hostNetwork'],
    [
      'nodeSelector on the control-plane role',
      'control-plane',
      { nodeSelector: { 'node-role.kubernetes.io/control-plane': '' } },
      'spec.nodeSelector',
    ],
    [
      'a privileged container',
      'privileged',
      { containers: [{ name: 'c', image: 'nginx', securityContext: { privileged: true } }] },
      'spec.containers[0].securityContext.privileged',
    ],
    [
      'anti-affinity against every namespace of the super cluster (namespaceSelector {})',
      'across',
      {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              {
                topologyKey: 'kubernetes.io/hostname',
                labelSelector: { matchLabels: { attempt: 'bystander' } },
                namespaceSelector: {},
              },
            ],
          },
        },
      },
      'spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector',
    ],
    [
      'a liveness probe the kubelet sends to the metadata address',
      'probe-host',
      {
        containers: [
          { name: 'c', image: 'nginx', livenessProbe: { httpGet: { host: '169.254.169.254', path: '/', port: 80 } } },
        ],
      },
      'spec.containers[0].livenessProbe.httpGet.host',
    ],
    [
      'a preStop hook the kubelet sends to the super etcd',
      'hook-host',
      {
        containers: [
          {
            name: 'c',
            image: 'nginx',
            lifecycle: { preStop: { httpGet: { host: '127.0.0.1', path: '/', port: 2379 } } },
          },
        ],
      },
      'spec.containers[0].lifecycle.preStop.httpGet.host',
    ],
    [
      'an inline CSI volume',
      'inline-csi',
      {
        volumes: [
          {
            name: 's',
            csi: { driver: 'secrets-store.csi.k8s.io', volumeAttributes: { secretProviderClass: 'platform' } },
          },
        ],
      },
      'spec.volumes[0].csi',
    ],
    [
      'a cloud disk by volume id',
      'ebs',
      { volumes: [{ name: 'd', awsElasticBlockStore: { volumeID: 'vol-0123456789abcdef0' } }] },
      'spec.volumes[0].awsElasticBlockStore',
    ],
    [
      'a resource claim the super cluster would look up among its own',
      'dra',
      { resourceClaims: [{ name: 'gpu', resourceClaimName: 'platform-gpu' }] },
      'spec.resourceClaims',
    ],
    [
      'an unconfined seccomp profile',
      'unconfined',
      { securityContext: { seccompProfile: { type: 'Unconfined' } } },
      'spec.securityContext.seccompProfile.type',
    ],
  ])('refuses a Pod asking for %s, with a reason on the Pod', async (what, name, spec, field) => {
    await attempts.attempt(what, async () => {
      await a.create(R.pods, pod(name, spec));
      return refusedWithReason(name, field);
    });
  });

  it('mints a custom projected token with the tenant issuer and runs the super Pod under the token-less account', async () => {
    await attempts.attempt('projected serviceAccountToken "vault" with audience vault', async () => {
      await a.create(
        R.pods,
        pod('token-thief', {
          volumes: [
            {
              name: 'vault',
              projected: {
                sources: [{ serviceAccountToken: { audience: 'vault', expirationSeconds: 900, path: 'vault-token' } }],
              },
            },
          ],
          containers: [{ name: 'c', image: 'nginx', volumeMounts: [{ name: 'vault', mountPath: '/vault' }] }],
        }),
      );
      const sns = superNamespace(tenantA.key, 'default');
      const sp = await eventually(() => t.client.get<Pod>(R.pods, sns, 'token-thief'), 90_000);
      expect(sp.spec.serviceAccountName).toBe('vc-tenant-pod');
      const secretName = sp.spec.volumes?.find((v) => v.name === 'vault')?.projected?.sources?.[0]?.secret?.name;
      expect(secretName).toBeTruthy();
      const secret = await eventually(async () => {
        const s = await t.client.get<KubeObject & { data?: Record<string, string> }>(R.secrets, sns, secretName!);
        expect(s.data?.['token-0']).toBeTruthy();
        return s;
      });
      const token = Buffer.from(secret.data!['token-0']!, 'base64').toString();
      const review = async (c: KubeClient) =>
        (
          (await c.create(TOKEN_REVIEWS, {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenReview',
            metadata: {},
            spec: { token, audiences: ['vault'] },
          })) as KubeObject & {
            status: { authenticated?: boolean; user?: { username?: string } };
          }
        ).status;
      const tenantSays = await review(a);
      expect(tenantSays.authenticated).toBe(true);
      expect(tenantSays.user?.username).toBe('system:serviceaccount:default:default');
      expect((await review(t.client)).authenticated).not.toBe(true);
      const sa = await t.client.get<KubeObject & { automountServiceAccountToken?: boolean }>(
        R.serviceaccounts,
        sns,
        'vc-tenant-pod',
      );
      expect(sa.automountServiceAccountToken).toBe(false);
      const bindings = (
        await t.client.list<KubeObject & { subjects?: Array<{ name?: string }> }>(R.rolebindings, { namespace: sns })
      ).items;
      expect(bindings.filter((rb) => rb.subjects?.some((s) => s.name === 'vc-tenant-pod'))).toEqual([]);
      return 'token minted by the tenant apiserver (TokenReview: tenant authenticated, super not); super Pod under vc-tenant-pod';
    });
  });

  it('keeps a workload-identity annotation of a tenant ServiceAccount out of the super cluster', async () => {
    await attempts.attempt('ServiceAccount annotated eks.amazonaws.com/role-arn', async () => {
      await a.create(R.serviceaccounts, {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: {
          name: 'cloud',
          namespace: 'default',
          annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/platform-admin' },
        },
      });
      const copy = await eventually(() =>
        t.client.get(R.serviceaccounts, superNamespace(tenantA.key, 'default'), 'cloud'),
      );
      expect(Object.keys(copy.metadata?.annotations ?? {}).filter((k) => k.startsWith('eks.amazonaws.com/'))).toEqual(
        [],
      );
      return 'the super copy of the ServiceAccount carries no tenant annotation';
    });
  });

  it("refuses a claim without a class where the super's default would not be a class it shares", async () => {
    // A classless volume the platform made beforehand (another team's, say): with no default StorageClass the super's
    // volume controller binds a claim without a class to it, as it would a claim of class "".
    const made = 'platform-made-classless';
    await t.client.create(R.persistentvolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: made, labels: { team: 'b' } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        hostPath: { path: '/var/lib/team-b' },
        persistentVolumeReclaimPolicy: 'Retain',
      },
    });
    const claimRefused = async (name: string): Promise<string> => {
      const claim = await a.create(R.persistentvolumeclaims, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
      });
      const event = await eventually(async () => {
        const list = (await a.list<Event>(R.events, { namespace: 'default' })).items.filter(
          (e) => e.involvedObject.uid === claim.metadata?.uid && e.reason === 'ClaimPolicyViolation',
        );
        expect(list).not.toEqual([]);
        return list[0]!;
      });
      expect(
        await t.client.getOrNull(R.persistentvolumeclaims, superNamespace(tenantA.key, 'default'), name),
      ).toBeNull();
      const pv = await t.client.get<KubeObject & { spec?: { claimRef?: unknown } }>(
        R.persistentvolumes,
        undefined,
        made,
      );
      expect(pv.spec?.claimRef).toBeUndefined();
      await a.delete(R.persistentvolumeclaims, 'default', name);
      return event.message ?? '';
    };
    try {
      await attempts.attempt('a claim without a class where the super has no default class', () =>
        claimRefused('no-class-no-default'),
      );
      // A default class the platform keeps to itself: the super's admission would give it to the claim.
      await t.client.create(R.storageclasses, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: 'platform-default', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
        provisioner: 'platform.example/none',
      });
      await attempts.attempt("a claim without a class where the super's default is the platform's own", async () => {
        await eventually(() => t.client.get(R.storageclasses, undefined, 'platform-default'));
        return claimRefused('no-class-platform-default');
      });
    } finally {
      await t.client.delete(R.storageclasses, undefined, 'platform-default').catch(() => undefined);
      await t.client.delete(R.persistentvolumes, undefined, made);
    }
  });

  it('confines Pod affinity to the tenant, drops NET_RAW, and makes ephemeral volumes claims of the tenant', async () => {
    const sns = superNamespace(tenantA.key, 'default');
    const forged = { [LABEL.cluster]: tenantB.key, [LABEL.managedBy]: 'tenant' };
    // The platform shares a default StorageClass: the ephemeral claim, which names no class, gets it.
    await t.client.create(R.storageclasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: {
        name: 'shared-default',
        labels: { [PUBLIC_LABEL]: 'true' },
        annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
      },
      provisioner: 'platform.example/none',
    });
    // The tenant sees it once the syncer's cache holds it (the storageclasses plugin shows shared classes).
    await eventually(() => a.get(R.storageclasses, undefined, 'shared-default'), 60_000);
    await a.create(
      R.pods,
      pod('confined', {
        affinity: {
          podAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', namespaces: ['kube-system'] } },
            ],
          },
        },
        volumes: [
          {
            name: 'scratch',
            ephemeral: {
              volumeClaimTemplate: {
                metadata: { labels: forged },
                spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
              },
            },
          },
        ],
      }),
    );
    const sp = await eventually(() => t.client.get<FieldsPod>(R.pods, sns, 'confined'), 90_000);
    await attempts.attempt('affinity naming the namespace kube-system', async () => {
      const term = sp.spec.affinity?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm;
      expect(term?.namespaces).toEqual([superNamespace(tenantA.key, 'kube-system')]);
      return `the super Pod's term names ${term?.namespaces?.join(', ')}`;
    });
    await attempts.attempt('raw sockets (NET_RAW) in a default container', async () => {
      expect(sp.spec.containers[0]?.securityContext?.capabilities?.drop).toContain('NET_RAW');
      return 'the super container drops NET_RAW';
    });
    await attempts.attempt('an ephemeral volume template forging another tenant as owner', async () => {
      expect(sp.spec.volumes?.find((v) => v.name === 'scratch')).toEqual({
        name: 'scratch',
        persistentVolumeClaim: { claimName: 'confined-scratch' },
      });
      const claim = await eventually(() => t.client.get(R.persistentvolumeclaims, sns, 'confined-scratch'), 90_000);
      expect(claim.metadata?.labels?.[LABEL.cluster]).toBe(tenantA.key);
      expect(claim.metadata?.labels?.[LABEL.managedBy]).not.toBe('tenant');
      expect((claim as { spec?: { storageClassName?: string } }).spec?.storageClassName).toBe('shared-default');
      return 'the super Pod reads the claim the tenant made, synced with the syncer provenance and the shared default class';
    });
  });

  it('refuses an ephemeral volume whose claim name is a claim the Pod does not own', async () => {
    await attempts.attempt(
      'an ephemeral volume named onto a claim made by hand (<pod>-<volume> collides)',
      async () => {
        // Pod "collide" with volume "data" reads claim "collide-data"; the tenant made one of that name itself.
        await a.create(R.persistentvolumeclaims, {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'collide-data', namespace: 'default' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
        });
        await a.create(
          R.pods,
          pod('collide', {
            volumes: [
              {
                name: 'data',
                ephemeral: {
                  volumeClaimTemplate: {
                    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
                  },
                },
              },
            ],
          }),
        );
        const c = await eventually(async () => {
          const got = await a.get<KubeObject & { status?: { conditions?: Array<Record<string, string>> } }>(
            R.pods,
            'default',
            'collide',
          );
          const cond = got.status?.conditions?.find((x) => x.type === 'VCSynced');
          expect(cond).toMatchObject({ status: 'False', reason: 'PodPolicyViolation' });
          return cond!;
        });
        expect(c.message).toContain('was not created for this Pod');
        expect(await t.client.getOrNull(R.pods, superNamespace(tenantA.key, 'default'), 'collide')).toBeNull();
        await a.delete(R.pods, 'default', 'collide');
        return c.message ?? '';
      },
    );
  });

  it.each([
    ['a claim without a class, binding any classless volume of the super', 'no-class', { storageClassName: '' }],
    ['a claim selecting volumes of the super by label', 'by-label', { selector: { matchLabels: { team: 'b' } } }],
    ['a claim naming a class the platform keeps to itself', 'platform-class', { storageClassName: 'platform-local' }],
    ['a claim naming a volume of the super cluster to bind', 'by-name', { volumeName: 'platform-made-classless' }],
    ['a claim naming a VolumeAttributesClass of the platform', 'by-vac', { volumeAttributesClassName: 'gold' }],
  ])('refuses %s, with a reason on the claim', async (what, name, spec) => {
    await attempts.attempt(what, async () => {
      const claim = await a.create(R.persistentvolumeclaims, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } }, ...spec },
      });
      const event = await eventually(async () => {
        const list = (await a.list<Event>(R.events, { namespace: 'default' })).items.filter(
          (e) => e.involvedObject.uid === claim.metadata?.uid && e.reason === 'ClaimPolicyViolation',
        );
        expect(list).not.toEqual([]);
        return list[0]!;
      });
      expect(
        await t.client.getOrNull(R.persistentvolumeclaims, superNamespace(tenantA.key, 'default'), name),
      ).toBeNull();
      return event.message ?? '';
    });
  });

  it("changed nothing of the other tenant's or the super's Pods, and counts every attempt refused", async () => {
    const after = await superPodNames();
    const added = after.filter((n) => !superPodsBefore.includes(n));
    expect(added.sort()).toEqual(
      ['confined', 'token-thief'].map((n) => `${superNamespace(tenantA.key, 'default')}/${n}`),
    );
    expect(superPodsBefore.every((n) => after.includes(n))).toBe(true);
    const mine = (await t.client.list(R.pods, { labelSelector: `${LABEL.cluster}=${tenantA.key}` })).items.map(
      (p) => p.metadata?.name,
    );
    expect(mine.sort()).toEqual(['confined', 'token-thief']);
    expect(attempts.summary()).toBe('attempts 30, refused 30, succeeded 0');
  });
});
