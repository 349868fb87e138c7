/**
 * Hostile tenant Pod fields that the node or the super cluster act on outside the fields' own Pod (issue 31 §2, §3).
 *
 * Images: the node's container runtime connects, as the node, to the registry an image names. A tenant with
 * cluster-admin on its own apiserver names registries inside the platform (the node's own ports, the super apiserver,
 * etcd, the cloud metadata address, the Service range) in every form a resolver accepts, in containers, init
 * containers and image volumes, and by changing the image of a Pod already running. Each must be refused with a
 * reason on the tenant Pod (an event and VCSynced=False) and reach no super Pod.
 *
 * Pod-level resources: `spec.resources` (PodLevelResources) is what the super scheduler reserves for a Pod whose
 * containers ask for nothing; the tenant's compute quota must count it, not the containers' defaults.
 * Runs the real syncer against a real local super cluster and a real tenant control plane.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';
import { Attempts } from './attempts.ts';

interface Pod extends KubeObject {
  spec: { containers: Array<{ name: string; image: string }> };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

interface Event extends KubeObject {
  involvedObject: { uid?: string; name?: string };
  reason?: string;
  message?: string;
}

const pod = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec },
});
const image = (img: string) => ({ containers: [{ name: 'c', image: img }] });

describe('hostile tenant Pod fields the node and the super scheduler act on', () => {
  const attempts = new Attempts();
  let t: SharedTestSuper;
  let cp: LocalControlPlane;
  let a: KubeClient;
  let tenant: Tenant;
  let syncer: Syncer;
  let superPort: string;

  /** refused waits for the refusal on the tenant Pod (condition and event naming `field`) and returns its message. */
  const refused = async (name: string, field: string): Promise<string> => {
    const p = await eventually(async () => {
      const got = await a.get<Pod>(R.pods, 'default', name);
      const c = got.status?.conditions?.find((x) => x.type === 'VCSynced');
      expect(c).toMatchObject({ status: 'False', reason: 'PodPolicyViolation' });
      expect(c?.message).toContain(field);
      return got;
    });
    const events = await eventually(async () => {
      const list = (await a.list<Event>(R.events, { namespace: 'default' })).items.filter(
        (e) => e.involvedObject.uid === p.metadata?.uid && e.reason === 'PodPolicyViolation',
      );
      expect(list.length).toBeGreaterThan(0);
      return list;
    });
    return events[0]!.message ?? '';
  };

  beforeAll(async () => {
    t = await sharedTestSuper();
    superPort = String(t.sc.cluster.ports.apiserver);
    cp = await t.sc.addControlPlane('tenant-img', { controllers: TENANT_CONTROLLERS });
    a = await cp.client();
    tenant = tenantFor(cp, 'team-img', 'img', randomUUID(), {
      pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
      // the platform's registries: a public name that resolves inward is refused by the list, not by its address
      pods: { registries: ['docker.io', 'ghcr.io'] },
      quota: {
        resourceQuota: {},
        limitRange: [],
        objects: {},
        compute: { hard: { 'requests.cpu': '2' }, defaultRequests: { cpu: '100m', memory: '64Mi' } },
      },
    });
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([tenant]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenant.key)).toBe(true));
    await eventually(() => a.get(R.serviceaccounts, 'default', 'default'));
  }, 240_000);

  afterAll(async () => {
    attempts.report('Pod fields the node acts on');
    await syncer?.stop();
    await t?.stop();
  });

  const superPod = (name: string) => t.client.getOrNull<Pod>(R.pods, superNamespace(tenant.key, 'default'), name);

  // Every form a resolver or the runtime reads as the node itself or an address inside the platform.
  const cases: Array<[string, string, Record<string, unknown>, string]> = [
    ['the super apiserver on loopback', 'apiserver', {}, 'spec.containers[0].image'],
    ['etcd on localhost', 'etcd', image('localhost:2379/x:1'), 'spec.containers[0].image'],
    ['a *.localhost name', 'dotlocal', image('registry.localhost:10250/x:1'), 'spec.containers[0].image'],
    ['the cloud metadata address', 'metadata', image('169.254.169.254/latest/x:1'), 'spec.containers[0].image'],
    ['the metadata service by name', 'metaname', image('metadata.google.internal/x:1'), 'spec.containers[0].image'],
    ['IPv6 loopback', 'v6', image('[::1]:10250/x:1'), 'spec.containers[0].image'],
    ['IPv4-mapped IPv6 loopback', 'mapped', image('[::ffff:127.0.0.1]:10250/x:1'), 'spec.containers[0].image'],
    ['a decimal address (2130706433)', 'decimal', image('2130706433:10250/x:1'), 'spec.containers[0].image'],
    ['a short address (127.1)', 'short', image('127.1:10250/x:1'), 'spec.containers[0].image'],
    ['a single-label name the node completes', 'label', image('registry:5000/x:1'), 'spec.containers[0].image'],
    [
      "a name the node's hosts file maps to loopback",
      'hostsfile',
      image('localhost.localdomain:10250/x:1'),
      'spec.containers[0].image',
    ],
    ["a cloud's private node name", 'private', image('ip-10-0-0-1.ec2.internal:5000/x:1'), 'spec.containers[0].image'],
    [
      'the Service range in an init container',
      'init',
      { initContainers: [{ name: 'i', image: '10.96.0.1:443/x:1' }] },
      'spec.initContainers[0].image',
    ],
    [
      'an image volume on loopback',
      'imgvol',
      {
        volumes: [{ name: 'v', image: { reference: '127.0.0.1:10250/x:1' } }],
        containers: [{ name: 'c', image: 'nginx', volumeMounts: [{ name: 'v', mountPath: '/v' }] }],
      },
      'spec.volumes[0].image.reference',
    ],
  ];

  it.each(cases)('refuses an image from %s', async (what, name, spec, field) => {
    const s = name === 'apiserver' ? image(`127.0.0.1:${superPort}/x:1`) : spec;
    await attempts.attempt(`image registry: ${what}`, async () => {
      await a.create(R.pods, pod(name, s));
      const reason = await refused(name, field);
      expect(reason).toContain('pods.internalRegistries');
      expect(await superPod(name)).toBeNull();
      return reason;
    });
  });

  it('refuses a public name that resolves to loopback: it is not one of the registries the policy lists', async () => {
    await attempts.attempt('image registry: a public wildcard-DNS name for 127.0.0.1', async () => {
      // 127.0.0.1.nip.io answers 127.0.0.1 from the public DNS: no check of the name itself can see that.
      await a.create(R.pods, pod('wildcard', image('r.127.0.0.1.nip.io:10250/x:1')));
      const reason = await refused('wildcard', 'spec.containers[0].image');
      expect(reason).toContain('pods.registries: docker.io, ghcr.io');
      expect(await superPod('wildcard')).toBeNull();
      return reason;
    });
  });

  it('keeps the running image when the tenant changes it to the node itself', async () => {
    await a.create(R.pods, pod('running', image('docker.io/library/nginx:1')));
    await eventually(async () =>
      expect((await superPod('running'))?.spec.containers[0]?.image).toBe('docker.io/library/nginx:1'),
    );
    await attempts.attempt('image registry: a running Pod changed to localhost', async () => {
      await a.patch(
        R.pods,
        'default',
        'running',
        { spec: { containers: [{ name: 'c', image: 'localhost:10250/x:1' }] } },
        'strategic',
      );
      const reason = await refused('running', 'spec.containers[0].image');
      expect((await superPod('running'))?.spec.containers[0]?.image).toBe('docker.io/library/nginx:1');
      return reason;
    });
  });

  it('refuses a grace period that would outlive the tenant\u2019s deletion', async () => {
    await attempts.attempt('terminationGracePeriodSeconds of ten years (bound 3600)', async () => {
      await a.create(R.pods, pod('forever', { terminationGracePeriodSeconds: 315_360_000 }));
      const reason = await refused('forever', 'spec.terminationGracePeriodSeconds');
      expect(reason).toContain('pods.maxTerminationGracePeriodSeconds');
      expect(await superPod('forever')).toBeNull();
      return reason;
    });
  });

  it('refuses a Windows gMSA identity of the node\u2019s domain', async () => {
    await attempts.attempt('windowsOptions.gmsaCredentialSpecName naming a domain account', async () => {
      await a.create(
        R.pods,
        pod('gmsa', { securityContext: { windowsOptions: { gmsaCredentialSpecName: 'platform-admin' } } }),
      );
      const reason = await refused('gmsa', 'spec.securityContext.windowsOptions.gmsaCredentialSpecName');
      expect(reason).toContain('identity of the Windows node');
      expect(await superPod('gmsa')).toBeNull();
      return reason;
    });
  });

  it('copies an image from a public registry (the control)', async () => {
    await a.create(R.pods, pod('public', image('ghcr.io/example/app:1')));
    await eventually(async () =>
      expect((await superPod('public'))?.spec.containers[0]?.image).toBe('ghcr.io/example/app:1'),
    );
  });

  it('counts Pod-level resources against the compute quota, not the containers\u2019 defaults', async () => {
    await attempts.attempt('Pod-level requests.cpu 64 over containers without requests (quota 2 CPUs)', async () => {
      await a.create(R.pods, pod('podlevel', { resources: { requests: { cpu: '64' }, limits: { cpu: '64' } } }));
      const message = await eventually(async () => {
        const list = (await a.list<Event>(R.events, { namespace: 'default' })).items;
        const e = list.find((x) => x.reason === 'QuotaExceeded' && x.involvedObject.name === 'podlevel');
        expect(e?.message).toContain('quota.compute.hard["requests.cpu"]');
        return e!.message!;
      }, 60_000);
      expect(message).toMatch(/would hold 64\d*m? of requests\.cpu/);
      expect(await superPod('podlevel')).toBeNull();
      return message;
    });
  });
});
