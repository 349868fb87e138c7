/**
 * Several super clusters, one syncer each, each syncing only what is placed on it (issue 14). Two local super clusters
 * r1 and r2, two tenants with the same namespace name, and the manager with syncer.placedOnly. In the first part the
 * scheduler controller is not involved: the test writes and signs the placements as the scheduler would, with the
 * manager's signing key. The last part is the issue's demo end to end, as a user runs it: a second manager with the
 * namespace scheduler and the filtered syncers, one vn-agent per super cluster, and kubectl against the tenant.
 */
import { execFile, spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { kwokNode } from '../../core/dev/local/controlplane.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { LABEL, rootNamespace, superNamespace } from '../../core/names/names.ts';
import { PLACEMENTS, SLICE, SUPER_CLUSTER } from '../../core/scheduler/annotations.ts';
import { PlacementRecords } from '../../core/scheduler/placementrecord.ts';
import { loadSigningKey, sign, SIGNATURE } from '../../core/scheduler/signature.ts';
import { UP_OWNER_LABEL } from '../../core/syncer/placement.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { createCA, fingerprintSha256, issueCert, PKI_FILES } from '../../core/pki/pki.ts';
import { DnsView, joinedNetworks } from '../../core/provisioners/dnsview.ts';
import {
  dnsKubeconfig,
  TENANT_DNS_NAME,
  TENANT_DNS_NAMESPACE,
  tenantDnsObjects,
} from '../../core/lifecycle/tenantdns.ts';
import { freePorts } from '../../core/dev/local/process.ts';
import { nodeBinaryPath } from '../../core/toolchain/node.ts';
import { perSuperKubeconfig } from '../../plugins/dns/view.ts';
import { readyEndpointsOn, superClusterIPOn } from '@virtualcluster-ts/plugin-sdk';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { startVnAgent, type VnAgent } from '../../core/vnagent/agent.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { InformerSuperView } from '../../core/vnagent/superview.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { apiserverWatches, eventually, startTestSuper, type TestSuper } from '../harness.ts';

interface Pod extends KubeObject {
  spec?: { nodeName?: string; containers?: Array<{ name: string }> };
  status?: { phase?: string; conditions?: Array<{ type: string; reason?: string }> };
}

const crdDir = join(import.meta.dirname, '../../deploy/crds');

describe('two super clusters, each syncer syncing only what is placed on it', () => {
  let r1: TestSuper;
  let r2: LocalControlPlane;
  let c2: KubeClient;
  let cpX: LocalControlPlane;
  let dir: string;
  let manager: Manager;
  let x: KubeClient;
  let y: KubeClient;
  let z: KubeClient;
  let key: Buffer;
  let records: PlacementRecords;
  const keyX = rootNamespace('team-x', 'x', 'uid-x');
  const keyY = rootNamespace('team-y', 'y', 'uid-y');
  const keyZ = rootNamespace('team-z', 'z', 'uid-z');

  beforeAll(async () => {
    r1 = await startTestSuper({ nodes: 1, name: 'r1' });
    dir = mkdtempSync(join(tmpdir(), 'vc-multisuper-'));
    // r2 is a super cluster of its own (apiserver, controller manager, scheduler, kwok node) on r1's etcd under a
    // prefix of its own, as `vc up --super-clusters 2` runs them; r1 stops it with itself.
    r2 = await r1.sc.addSuperCluster('r2', { nodes: 1 });
    c2 = await r2.client();
    const cps = await Promise.all(
      ['tenant-x', 'tenant-y', 'tenant-z'].map((n) => r1.sc.addControlPlane(n, { controllers: TENANT_CONTROLLERS })),
    );
    [x, y, z] = await Promise.all(cps.map((cp) => cp.client()));
    cpX = cps[0]!;
    // The lifecycle controller watches VirtualClusters and TenantPolicies: both CRDs, established. The ClusterVersion
    // CRD is left out on purpose: a manager starts without it (see the test of a VirtualCluster that names one).
    for (const f of ['virtualclusters.yaml', 'tenantpolicies.yaml'])
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await r1.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    await eventually(() => Promise.all([r1.client.list(R.virtualclusters), r1.client.list(R.tenantpolicies)]));
    const file = join(dir, 'manager.yaml');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [
          { name: 'r1', kubeconfig: r1.sc.kubeconfigPath },
          { name: 'r2', kubeconfig: r2.kubeconfigPath },
        ],
        syncer: { workers: 4, patrolIntervalSeconds: 0, placedOnly: true },
        virtualClusters: { enabled: true },
        tenants: [
          { name: 'x', namespace: 'team-x', uid: 'uid-x', kubeconfig: cps[0]!.kubeconfigPath },
          { name: 'y', namespace: 'team-y', uid: 'uid-y', kubeconfig: cps[1]!.kubeconfigPath },
          { name: 'z', namespace: 'team-z', uid: 'uid-z', kubeconfig: cps[2]!.kubeconfigPath, superCluster: 'r2' },
        ],
      }),
    );
    manager = await startManager(loadManagerConfig(file), file);
    key = await loadSigningKey(r1.client, 'kube-system');
    records = new PlacementRecords(r1.client, 'kube-system');
  }, 240_000);

  afterAll(async () => {
    await manager?.stop();
    await r1?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** place records a namespace's placements and writes them with their signature, as the scheduler does. */
  const place = async (c: KubeClient, tenant: string, ns: string, placements: string) => {
    const uid = (await c.get(R.namespaces, undefined, ns)).metadata!.uid!;
    const sig = sign(key, { tenant, kind: 'Namespace', namespace: ns, name: ns, uid, value: placements });
    await records.set(tenant, ns, { uid, placements });
    await c.patch(
      R.namespaces,
      undefined,
      ns,
      { metadata: { annotations: { [PLACEMENTS]: placements, [SIGNATURE]: sig } } },
      'merge',
    );
  };

  /** schedule writes a Pod's super cluster and its signature, as the scheduler does. */
  const schedule = async (c: KubeClient, tenant: string, ns: string, name: string, cluster: string) => {
    const uid = (await c.get(R.pods, ns, name)).metadata!.uid!;
    const sig = sign(key, { tenant, kind: 'Pod', namespace: ns, name, uid, value: cluster });
    await c.patch(
      R.pods,
      ns,
      name,
      { metadata: { annotations: { [SUPER_CLUSTER]: cluster, [SIGNATURE]: sig } } },
      'merge',
    );
  };

  const setup = async (c: KubeClient, ns: string) => {
    await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await eventually(() => c.get(R.serviceaccounts, ns, 'default'), 30_000);
    await c.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: ns },
      data: { a: '1' },
    });
  };

  const createPod = (c: KubeClient, ns: string, name: string) =>
    c.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m', memory: '100Mi' } } }] },
    });

  const running = (c: KubeClient, ns: string, name: string) =>
    eventually(async () => {
      const p = await c.get<Pod>(R.pods, ns, name);
      expect(p.status?.phase).toBe('Running');
      return p;
    }, 60_000);

  const superHas = async (c: KubeClient, tenant: string, ns: string, r: typeof R.pods, name: string) =>
    !!(await c.getOrNull(r, superNamespace(tenant, ns), name));

  it('syncs nothing of an unplaced namespace: its Pod stays Pending', async () => {
    await setup(x, 'idle');
    await createPod(x, 'idle', 'waiting');
    await new Promise((r) => setTimeout(r, 3000));
    for (const c of [r1.client, c2])
      expect(await c.getOrNull(R.namespaces, undefined, superNamespace(keyX, 'idle'))).toBeNull();
    expect((await x.get<Pod>(R.pods, 'idle', 'waiting')).status?.phase).toBe('Pending');
  });

  it("runs a spread namespace's Pods each on its own super cluster, the namespace's objects on both", async () => {
    await setup(x, 'team');
    await place(x, keyX, 'team', '{"r1":1,"r2":1}');
    await eventually(async () => {
      expect(await superHas(r1.client, keyX, 'team', R.configmaps, 'settings')).toBe(true);
      expect(await superHas(c2, keyX, 'team', R.configmaps, 'settings')).toBe(true);
    }, 30_000);
    await createPod(x, 'team', 'web-1');
    await schedule(x, keyX, 'team', 'web-1', 'r1');
    await createPod(x, 'team', 'web-2');
    await schedule(x, keyX, 'team', 'web-2', 'r2');
    const [p1, p2] = await Promise.all([running(x, 'team', 'web-1'), running(x, 'team', 'web-2')]);
    expect(await superHas(r1.client, keyX, 'team', R.pods, 'web-1')).toBe(true);
    expect(await superHas(c2, keyX, 'team', R.pods, 'web-1')).toBe(false);
    expect(await superHas(c2, keyX, 'team', R.pods, 'web-2')).toBe(true);
    expect(await superHas(r1.client, keyX, 'team', R.pods, 'web-2')).toBe(false);
    // Each on a vNode mirroring a node of its own super cluster, named `<super cluster>.<node>`.
    expect(p1.spec?.nodeName).toMatch(/^r1\.r1-node-/);
    expect(p2.spec?.nodeName).toMatch(/^r2\.r2-node-/);
    const vNodes = (await x.list(R.nodes)).items.map((n) => n.metadata?.name).sort();
    expect(vNodes).toEqual([p1.spec!.nodeName, p2.spec!.nodeName].sort());
  });

  /**
   * askR1 starts the stock CoreDNS binary reading r1's DNS view of tenant x's apiserver (the kubeconfig the dnsview
   * plugin gives r1's copy), with the tenant DNS ServiceAccount's token, the networks of r1 and r2 joined or not,
   * and asks it `name` until it answers `want` (A records or a CNAME); then stops both.
   */
  let dnsSA: { dir: string; serving: { certPem: string; keyPem: string } } | undefined;
  const askR1 = async (joined: boolean, name: string, want: { a: string[] } | { cname: string[] }) => {
    if (!dnsSA) {
      for (const o of tenantDnsObjects({ clusterDomain: 'cluster.local' }).slice(0, 3))
        await x.apply(o.resource, o.object, 'test');
      const tr = await x.request<{ status: { token: string } }>(
        'POST',
        `/api/v1/namespaces/${TENANT_DNS_NAMESPACE}/serviceaccounts/${TENANT_DNS_NAME}/token`,
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } } },
      );
      const sa = join(dir, 'dns-sa');
      mkdirSync(sa, { recursive: true });
      const viewCA = await createCA('dns-view-ca', 1);
      const serving = await issueCert(viewCA, {
        commonName: 'dns-view',
        ipAddresses: ['127.0.0.1'],
        usages: ['server'],
        validityDays: 1,
      });
      writeFileSync(join(sa, 'token'), tr.status.token);
      writeFileSync(join(sa, 'ca.crt'), viewCA.certPem);
      dnsSA = { dir: sa, serving };
    }
    const sa = dnsSA.dir;
    const target = {
      host: '127.0.0.1',
      port: cpX.ports.apiserver,
      caPem: readFileSync(join(cpX.dir, 'pki', PKI_FILES.ca.cert), 'utf8'),
    };
    const view = await DnsView.start({
      host: '127.0.0.1',
      port: 0,
      certPem: dnsSA.serving.certPem,
      keyPem: dnsSA.serving.keyPem,
      target,
      ...(joined && {
        joined: joinedNetworks([
          { name: 'r1', network: 'flat' },
          { name: 'r2', network: 'flat' },
        ]),
      }),
    });
    const [dnsPort] = await freePorts(1);
    const kubeconfig = perSuperKubeconfig(dnsKubeconfig({ host: '127.0.0.1', port: view.port }), 'r1')!;
    const kc = join(sa, `kubeconfig-${joined}`);
    writeFileSync(kc, kubeconfig.replaceAll('/var/run/secrets/kubernetes.io/serviceaccount', sa));
    const cf = join(sa, `Corefile-${joined}`);
    writeFileSync(
      cf,
      `cluster.local:${dnsPort} {\n  bind 127.0.0.1\n  kubernetes cluster.local {\n    kubeconfig ${kc} tenant\n    pods disabled\n  }\n}\n`,
    );
    const coredns = spawn(nodeBinaryPath('coredns'), ['-conf', cf], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    coredns.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise((r) => coredns.once('exit', r));
    try {
      const resolver = new Resolver({ timeout: 2000, tries: 1 });
      resolver.setServers([`127.0.0.1:${dnsPort}`]);
      return await eventually(async () => {
        // until CoreDNS has read the view (an empty answer first is not the answer)
        const got =
          'a' in want ? { a: (await resolver.resolve4(name)).sort() } : { cname: await resolver.resolveCname(name) };
        expect(got).toEqual(want);
        return got;
      }, 30_000).catch((e: Error) => {
        throw new Error(`${e.message}\ncoredns: ${log}`);
      });
    } finally {
      coredns.kill();
      await exited;
      await view.stop();
    }
  };

  const labelledPod = async (ns: string, name: string, app: string, cluster: string) => {
    await x.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, labels: { app } },
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
    });
    await schedule(x, keyX, ns, name, cluster);
    const ip = ((await running(x, ns, name)).status as { podIP?: string }).podIP;
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    return ip!;
  };

  // Tenant DNS on r1 for a Service whose namespace is placed on r2 alone (issue 39). Joined networks
  // (superClusters[].network) answer r2's ready Pod IP; apart, the CNAME that says the Service is not on r1.
  it("answers r1's DNS for a Service on r2 alone with r2's Pod IPs when the networks are joined, else the .invalid name", async () => {
    await setup(x, 'far');
    await place(x, keyX, 'far', '{"r2":1}');
    const podIP = await labelledPod('far', 'far-1', 'far', 'r2');
    await x.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'far' },
      spec: { selector: { app: 'far' }, ports: [{ port: 80 }] },
    });
    // r2's syncer records its copy's cluster IP on the tenant Service; r1 has none
    await eventually(async () => {
      const a = (await x.get(R.services, 'far', 'web')).metadata?.annotations ?? {};
      expect(a[superClusterIPOn('r2')!]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      expect(a[superClusterIPOn('r1')!]).toBeUndefined();
    }, 60_000);
    const name = 'web.far.svc.cluster.local';
    expect(await askR1(true, name, { a: [podIP] })).toEqual({ a: [podIP] });
    expect(await askR1(false, name, { cname: ['web.far.not-on-super-cluster-r1.invalid'] })).toEqual({
      cname: ['web.far.not-on-super-cluster-r1.invalid'],
    });
    // the Pod leaves r2 (later cases count the tenants' Pods there)
    await x.delete(R.pods, 'far', 'far-1');
    await eventually(async () => expect(await superHas(c2, keyX, 'far', R.pods, 'far-1')).toBe(false), 60_000);
  });

  // A Service of a namespace spread over r1 and r2 whose Pods run on r2 only: r1's copy has no endpoint. Each syncer
  // records its copy's ready addresses on the tenant Service; r1's DNS answers r2's Pod IP where the networks are
  // joined, r1's own copy (refused at once) where they are not, and r1's copy again once a Pod on r1 is ready.
  it("answers r1's DNS for a spread Service with its Pods on r2 alone with r2's Pod IPs when joined, else r1's copy", async () => {
    await setup(x, 'both');
    await place(x, keyX, 'both', '{"r1":1,"r2":1}');
    const far = await labelledPod('both', 'both-2', 'both', 'r2');
    await x.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'both' },
      spec: { selector: { app: 'both' }, ports: [{ port: 80 }] },
    });
    const recorded = (want: { r1: string; r2: string }) =>
      eventually(async () => {
        const a = (await x.get(R.services, 'both', 'web')).metadata?.annotations ?? {};
        expect(a[superClusterIPOn('r1')!]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        expect(a[superClusterIPOn('r2')!]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        expect({ r1: a[readyEndpointsOn('r1')!], r2: a[readyEndpointsOn('r2')!] }).toEqual(want);
        return a[superClusterIPOn('r1')!]!;
      }, 60_000);
    const r1IP = await recorded({ r1: '', r2: far });
    const name = 'web.both.svc.cluster.local';
    expect(await askR1(true, name, { a: [far] })).toEqual({ a: [far] });
    expect(await askR1(false, name, { a: [r1IP] })).toEqual({ a: [r1IP] });
    const near = await labelledPod('both', 'both-1', 'both', 'r1');
    await recorded({ r1: near, r2: far });
    expect(await askR1(true, name, { a: [r1IP] })).toEqual({ a: [r1IP] });
    // the Pods leave (later cases count the tenants' Pods)
    await Promise.all(['both-1', 'both-2'].map((p) => x.delete(R.pods, 'both', p)));
    await eventually(async () => {
      expect(await superHas(r1.client, keyX, 'both', R.pods, 'both-1')).toBe(false);
      expect(await superHas(c2, keyX, 'both', R.pods, 'both-2')).toBe(false);
    }, 60_000);
  });

  it('gives nodes of the same name on two super clusters a vNode each, kept by its own syncer', async () => {
    // A namespace of its own, spread over both: the case runs alone (-t) as well as after the others.
    await setup(x, 'twins');
    await place(x, keyX, 'twins', '{"r1":1,"r2":1}');
    // Placed by a zone label: the default TenantPolicy allows no nodeSelector on kubernetes.io/hostname.
    const twin = kwokNode('twin') as KubeObject;
    twin.metadata!.labels = { ...twin.metadata!.labels, 'topology.kubernetes.io/zone': 'twin' };
    for (const c of [r1.client, c2]) await c.create(R.nodes, twin);
    try {
      const onTwin = async (name: string, cluster: string) => {
        await x.create(R.pods, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name, namespace: 'twins' },
          spec: {
            nodeSelector: { 'topology.kubernetes.io/zone': 'twin' },
            containers: [{ name: 'c', image: 'nginx' }],
          },
        });
        await schedule(x, keyX, 'twins', name, cluster);
      };
      await onTwin('twin-1', 'r1');
      await onTwin('twin-2', 'r2');
      const [t1, t2] = await Promise.all([running(x, 'twins', 'twin-1'), running(x, 'twins', 'twin-2')]);
      expect([t1.spec?.nodeName, t2.spec?.nodeName]).toEqual(['r1.twin', 'r2.twin']);
      for (const [name, owner] of [
        ['r1.twin', 'r1'],
        ['r2.twin', 'r2'],
      ] as const)
        expect((await x.get(R.nodes, undefined, name)).metadata?.labels?.[UP_OWNER_LABEL]).toBe(owner);
      expect(await x.getOrNull(R.nodes, undefined, 'twin')).toBeNull();
    } finally {
      // The twin nodes would take Pods of the later cases: gone from both super clusters, their vNodes with them.
      for (const n of ['twin-1', 'twin-2']) await x.delete(R.pods, 'twins', n).catch(() => undefined);
      // Their super copies go first, while the twin nodes' kwok still confirms their deletion: on a node already
      // deleted a copy stays Terminating, and a later case counts the super clusters' Pods.
      await eventually(async () => {
        for (const c of [r1.client, c2])
          expect((await c.list(R.pods, { namespace: superNamespace(keyX, 'twins') })).items).toEqual([]);
      }, 60_000).catch(() => undefined);
      for (const c of [r1.client, c2]) await c.delete(R.nodes, undefined, 'twin').catch(() => undefined);
    }
  });

  it('gives a super cluster a namespace gains the objects it already had', async () => {
    await setup(x, 'grow');
    await place(x, keyX, 'grow', '{"r1":1}');
    await eventually(async () => expect(await superHas(r1.client, keyX, 'grow', R.configmaps, 'settings')).toBe(true));
    expect(await c2.getOrNull(R.namespaces, undefined, superNamespace(keyX, 'grow'))).toBeNull();
    await place(x, keyX, 'grow', '{"r1":1,"r2":1}');
    await eventually(async () => expect(await superHas(c2, keyX, 'grow', R.configmaps, 'settings')).toBe(true), 30_000);
  });

  it('keeps two tenants with same-named namespaces apart on both super clusters', async () => {
    await setup(y, 'team');
    await place(y, keyY, 'team', '{"r1":1,"r2":1}');
    await createPod(y, 'team', 'web-1');
    await schedule(y, keyY, 'team', 'web-1', 'r2');
    await running(y, 'team', 'web-1');
    expect(await superHas(c2, keyY, 'team', R.pods, 'web-1')).toBe(true);
    expect(superNamespace(keyY, 'team')).not.toBe(superNamespace(keyX, 'team'));
    const owners = (await c2.list(R.pods, { labelSelector: LABEL.managedBy })).items.map((p) => p.metadata?.namespace);
    expect(owners.sort()).toEqual([superNamespace(keyX, 'team'), superNamespace(keyY, 'team')].sort());
    expect((await y.list(R.pods, { namespace: 'team' })).items.map((p) => p.metadata?.name)).toEqual(['web-1']);
  });

  it('serves a tenant pinned by spec.superCluster only on that super cluster', async () => {
    await setup(z, 'team');
    // Even a placement that names r1 does not bring a tenant pinned to r2 there: r1's syncer does not serve it.
    await place(z, keyZ, 'team', '{"r1":1,"r2":1}');
    await createPod(z, 'team', 'here');
    await schedule(z, keyZ, 'team', 'here', 'r2');
    await createPod(z, 'team', 'there');
    await schedule(z, keyZ, 'team', 'there', 'r1');
    await running(z, 'team', 'here');
    expect(await superHas(c2, keyZ, 'team', R.pods, 'here')).toBe(true);
    expect(await r1.client.getOrNull(R.namespaces, undefined, superNamespace(keyZ, 'team'))).toBeNull();
    expect((await z.get<Pod>(R.pods, 'team', 'there')).status?.phase).toBe('Pending');
  });

  it('reports a VirtualCluster whose spec.superCluster names no super cluster', async () => {
    await r1.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'lost', namespace: 'default' },
      spec: { provisioner: { type: 'local' }, superCluster: 'r9' },
    });
    const vc = await eventually(async () => {
      const v = await r1.client.get<KubeObject & { status?: { phase?: string; reason?: string; message?: string } }>(
        R.virtualclusters,
        'default',
        'lost',
      );
      expect(v.status?.reason).toBe('UnknownSuperCluster');
      return v;
    }, 30_000);
    expect(vc.status?.phase).toBe('Pending');
    expect(vc.status?.message).toMatch(/"r9".*known: r1, r2/);
    expect(manager.isLeader()).toBe(true);
  });

  it('starts without the ClusterVersion CRD; a VirtualCluster naming a ClusterVersion waits for it', async () => {
    // The policy grants the version, so the wait is for the CRD alone, not for a grant.
    await r1.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'versioned' },
      spec: { grants: { subjects: [{ kind: 'Namespace', name: 'default' }], clusterVersions: ['v1-36'] } },
    });
    await r1.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'versioned', namespace: 'default' },
      spec: { provisioner: { type: 'local' }, policyName: 'versioned', clusterVersionName: 'v1-36' },
    });
    const vc = await eventually(async () => {
      const v = await r1.client.get<KubeObject & { status?: { phase?: string; reason?: string; message?: string } }>(
        R.virtualclusters,
        'default',
        'versioned',
      );
      expect(v.status?.reason).toBe('ClusterVersionsUnavailable');
      return v;
    }, 30_000);
    expect(vc.status?.phase).toBe('Pending');
    expect(vc.status?.message).toMatch(/spec.clusterVersionName "v1-36".*ClusterVersion CRD installed/);
    await r1.client.delete(R.virtualclusters, 'default', 'versioned');
    await r1.client.delete(R.tenantpolicies, undefined, 'versioned');
  });

  // The issue's demo, step by step, with nothing written by the test that a user would not write: a manager with the
  // namespace scheduler and one filtered syncer per super cluster serves tenant d (it replaces the first manager: one
  // manager per process), and each super cluster has its own vn-agent, which d's vNodes of that super cluster advertise.
  describe("the demo: scheduler and filtered syncers in one manager, logs through each super cluster's vn-agent", () => {
    let cp: LocalControlPlane;
    let d: KubeClient;
    const agents: Record<string, VnAgent> = {};
    const keyD = rootNamespace('team-d', 'd', 'uid-d');
    let file = '';
    const tenantWatches = async () => ({
      pods: await apiserverWatches(cp, 'pods'),
      namespaces: await apiserverWatches(cp, 'namespaces'),
    });

    /** kubectl runs the real kubectl against the tenant's own apiserver, as the tenant does. */
    const kubectl = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          binaryPath('kubectl'),
          ['--kubeconfig', cp.kubeconfigPath, ...args],
          { timeout: 60_000 },
          (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
        );
      });

    beforeAll(async () => {
      cp = await r1.sc.addControlPlane('tenant-d', { controllers: TENANT_CONTROLLERS });
      d = await cp.client();
      // One vn-agent per super cluster, each with that super cluster's kubelet client identity and view.
      const servingCA = await createCA('vn-agent-serving-ca', 1);
      const serving = await issueCert(servingCA, {
        commonName: 'vc-vn-agent',
        ipAddresses: ['127.0.0.1'],
        usages: ['server'],
        validityDays: 1,
      });
      const directory = new StaticTenantDirectory([
        {
          key: keyD,
          vcName: 'd',
          vcNamespace: 'team-d',
          caPem: cp.caPem,
          fingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
        },
      ]);
      const plugins = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
      for (const [name, cluster, client] of [
        ['r1', r1.sc.cluster, r1.client],
        ['r2', r2, c2],
      ] as const) {
        const kubelet = await issueCert(cluster.ca, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 1 });
        agents[name] = await startVnAgent({
          host: '127.0.0.1',
          port: 0,
          serving,
          directory,
          superView: new InformerSuperView({ client }),
          plugins,
          kubelet: { certPem: kubelet.certPem, keyPem: kubelet.keyPem, insecureSkipVerify: true },
        });
      }
      file = join(dir, 'demo.yaml');
      writeFileSync(
        file,
        stringify({
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'ManagerConfiguration',
          superClusters: [
            { name: 'r1', kubeconfig: r1.sc.kubeconfigPath },
            { name: 'r2', kubeconfig: r2.kubeconfigPath },
          ],
          scheduler: { enabled: true },
          syncer: { workers: 4, patrolIntervalSeconds: 0 },
          tenants: [
            {
              name: 'd',
              namespace: 'team-d',
              uid: 'uid-d',
              kubeconfig: cp.kubeconfigPath,
              pluginConfig: {
                nodes: {
                  vnAgent: {
                    host: '127.0.0.1',
                    port: agents.r1!.port,
                    superClusters: { r2: { port: agents.r2!.port } },
                  },
                },
              },
            },
          ],
        }),
      );
      await manager.stop();
      // The outer afterAll stops it.
      manager = await startManager(loadManagerConfig(file), file);
    }, 120_000);

    afterAll(async () => {
      for (const a of Object.values(agents)) await a.stop();
      d?.close();
    });

    it('slice 100m/100Mi and quota 200m/200Mi: placements {"r1":1,"r2":1}', async () => {
      await d.create(R.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'demo', annotations: { [SLICE]: '{"cpu":"100m","memory":"100Mi"}' } },
      });
      await d.create(R.resourcequotas, {
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'quota', namespace: 'demo' },
        spec: { hard: { cpu: '200m', memory: '200Mi' } },
      } as KubeObject);
      await eventually(async () => {
        const ns = await d.get(R.namespaces, undefined, 'demo');
        expect(ns.metadata?.annotations?.[PLACEMENTS]).toBe('{"r1":1,"r2":1}');
      }, 30_000);
    });

    it("watches the tenant's Pods and Namespaces once for both syncers and the scheduler", async () => {
      // Both syncers and the scheduler serve tenant d by now (its namespace got placements on r1 and r2).
      await eventually(async () => {
        expect(manager.scheduler?.tenantReady(keyD)).toBe(true);
        for (const s of manager.syncers) expect(s.tenantReady(keyD)).toBe(true);
      }, 60_000);
      /** settled reads the tenant's watch counts until two reads two seconds apart agree */
      const settled = async () => {
        let last = '';
        return eventually(
          async () => {
            const now = await tenantWatches();
            const same = JSON.stringify(now) === last;
            last = JSON.stringify(now);
            expect(same).toBe(true);
            return now;
          },
          60_000,
          2000,
        );
      };
      // The tenant's garbage collector opens a second watch of Pods (and Namespaces) once its first discovery has
      // run; counted before that, it would open while the manager stops and hide the manager's share. PodTemplates
      // are watched by the collector and by nothing else here: once it watches them, its set of watches is complete.
      await eventually(async () => expect(await apiserverWatches(cp, 'podtemplates')).toBeGreaterThan(0), 90_000);
      const serving = await settled();
      // The manager's share is what goes with it: the tenant's own controllers watch Pods and Namespaces too.
      await manager.stop();
      try {
        // The apiserver counts a watch until it notices the closed connection: wait for the count to fall.
        await eventually(async () => {
          const without = await tenantWatches();
          expect(
            { pods: serving.pods - without.pods, namespaces: serving.namespaces - without.namespaces },
            `serving ${JSON.stringify(serving)}, without the manager ${JSON.stringify(without)}`,
          ).toEqual({ pods: 1, namespaces: 1 });
        }, 60_000);
      } finally {
        // The same manager again, for the steps that follow, whatever this one found.
        manager = await startManager(loadManagerConfig(file), file);
      }
      await eventually(async () => {
        expect(manager.scheduler?.tenantReady(keyD)).toBe(true);
        for (const s of manager.syncers) expect(s.tenantReady(keyD)).toBe(true);
      }, 60_000);
    }, 270_000);

    it('a Deployment of one slice per Pod: r1, then scaled to 2 the second on r2, both Running on vNodes', async () => {
      const deployment = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'demo' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m', memory: '100Mi' } } }],
            },
          },
        },
      } as KubeObject;
      // The quota controller must have counted the quota before the ReplicaSet's Pods are admitted.
      await eventually(() => d.create(R.deployments, deployment), 30_000);
      const pods = () => d.list<Pod>(R.pods, { namespace: 'demo' }).then((l) => l.items);
      const placedOn = async () => (await pods()).map((p) => p.metadata?.annotations?.[SUPER_CLUSTER] ?? '-').sort();
      await eventually(async () => expect(await placedOn()).toEqual(['r1']), 30_000);
      await d.patch(R.deployments, 'demo', 'web', { spec: { replicas: 2 } }, 'merge');
      await eventually(async () => expect(await placedOn()).toEqual(['r1', 'r2']), 30_000);
      const running = await eventually(async () => {
        const ps = await pods();
        expect(ps.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
        return ps;
      }, 60_000);
      const sns = superNamespace(keyD, 'demo');
      for (const p of running) {
        const on = p.metadata!.annotations![SUPER_CLUSTER]!;
        const [here, there] = on === 'r1' ? [r1.client, c2] : [c2, r1.client];
        // In its own super cluster, under the same prefixed namespace on both, and nowhere else.
        expect(await here.getOrNull(R.pods, sns, p.metadata!.name!)).not.toBeNull();
        expect(await there.getOrNull(R.pods, sns, p.metadata!.name!)).toBeNull();
        expect(p.spec?.nodeName).toMatch(new RegExp(`^${on}\\.${on}-node-`));
        const vNode = await d.get<
          KubeObject & { status?: { daemonEndpoints?: { kubeletEndpoint?: { Port?: number } } } }
        >(R.nodes, undefined, p.spec!.nodeName!);
        expect(vNode.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(agents[on]!.port);
      }
      const out = await kubectl(['get', 'pods', '-n', 'demo', '-o', 'wide', '--no-headers']);
      expect(out.code).toBe(0);
      expect(
        out.stdout
          .trim()
          .split('\n')
          .map((l) => l.split(/\s+/)[2]),
      ).toEqual(['Running', 'Running']);
    });

    it("kubectl logs of each Pod reaches it through its super cluster's vn-agent", async () => {
      const pods = (await d.list<Pod>(R.pods, { namespace: 'demo' })).items;
      expect(pods).toHaveLength(2);
      for (const p of pods) {
        const r = await kubectl(['logs', '-n', 'demo', p.metadata!.name!, '--tail=1']);
        expect(r.stderr, p.metadata?.annotations?.[SUPER_CLUSTER]).toBe('');
        expect(r.code).toBe(0);
        expect(r.stdout.trim()).toBe('kwok fake container log line 3');
      }
    });

    it('a public StorageClass of one name on both super clusters has one writer; the other takes over when it goes', async () => {
      const sc = (provisioner: string) =>
        ({
          apiVersion: 'storage.k8s.io/v1',
          kind: 'StorageClass',
          metadata: { name: 'fast', labels: { [LABEL.public]: 'true' } },
          provisioner,
        }) as KubeObject;
      await r1.client.create(R.storageclasses, sc('csi.r1'));
      await c2.create(R.storageclasses, sc('csi.r2'));
      type SC = KubeObject & { provisioner?: string };
      const first = await eventually(async () => {
        const got = await d.get<SC>(R.storageclasses, undefined, 'fast');
        const owner = got.metadata?.labels?.[UP_OWNER_LABEL];
        expect(owner).toMatch(/^r[12]$/);
        expect(got.provisioner).toBe(`csi.${owner}`);
        return got;
      }, 30_000);
      // Two writers would flip it back and forth: it stays as its owner wrote it.
      await new Promise((r) => setTimeout(r, 3000));
      const later = await d.get<SC>(R.storageclasses, undefined, 'fast');
      expect(later.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
      const owner = first.metadata!.labels![UP_OWNER_LABEL]!;
      const other = owner === 'r1' ? 'r2' : 'r1';
      await (owner === 'r1' ? r1.client : c2).delete(R.storageclasses, undefined, 'fast');
      await eventually(async () => {
        const got = await d.get<SC>(R.storageclasses, undefined, 'fast');
        expect(got.metadata?.labels?.[UP_OWNER_LABEL]).toBe(other);
        expect(got.provisioner).toBe(`csi.${other}`);
      }, 30_000);
    });

    it("deletes the tenant's vNode of a deleted super node: its super cluster's syncer does", async () => {
      const p = (await d.list<Pod>(R.pods, { namespace: 'demo' })).items.find(
        (x) => x.metadata?.annotations?.[SUPER_CLUSTER] === 'r2',
      )!;
      const node = p.spec!.nodeName!;
      expect((await d.get(R.nodes, undefined, node)).metadata?.labels?.[UP_OWNER_LABEL]).toBe('r2');
      await c2.delete(R.nodes, undefined, node.slice('r2.'.length));
      await eventually(async () => expect(await d.getOrNull(R.nodes, undefined, node)).toBeNull(), 30_000);
    });
  });
});
