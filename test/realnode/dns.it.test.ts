/**
 * Tenant DNS on a real node (issue 13): each tenant's own CoreDNS, a tenant Pod synced to the super cluster and run
 * by the real kubelet, answers from the tenant's Services, which it reads from the tenant apiserver through the
 * local provisioner's forwarder on the node's bridge. A tenant Pod resolves `web.default.svc.cluster.local` to its
 * own tenant's Service and fetches it over HTTP; another tenant's Pod asking the same name, or the first tenant's
 * super-side name, gets nothing, and its DNS credential reaches nothing beyond its own tenant's Services. Its Pods
 * reach its own apiserver through `kubernetes.default.svc`, as in any cluster.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishApiserverEndpoint } from '../../core/kube/apiendpoint.ts';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { TENANT_DNS_NAME, TENANT_DNS_NAMESPACE, ensureTenantDns } from '../../core/lifecycle/tenantdns.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { InformerFactory } from '../../core/kube/factory.ts';
import { ANN, rootNamespace, superNamespace } from '../../core/names/names.ts';
import { SuperPodAddresses } from '../../core/provisioners/podaddresses.ts';
import { LABEL, MANAGER } from '../../plugins/sdk/src/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, tenantFrom, type Tenant } from '../../core/tenancy/tenant.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';
import { Attempts } from '../security/attempts.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`dns.it.test.ts skipped: ${skip}\n`);

const pod = (name: string, labels: Record<string, string>, container: Record<string, unknown>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [{ name, imagePullPolicy: 'IfNotPresent', ...container }],
  },
});

/** status answers an HTTPS GET with a bearer token, trusting the given CA, with its status code. */
function status(url: string, token: string, ca?: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = https.get(
      url,
      { headers: { authorization: `Bearer ${token}` }, timeout: 5000, ca, rejectUnauthorized: !!ca },
      (r) => {
        r.resume();
        r.on('end', () => res(r.statusCode ?? 0));
      },
    );
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

describe.skipIf(!!skip)("tenant DNS on a real node: each tenant's CoreDNS answers from its own Services", () => {
  const attempts = new Attempts();
  let t: TestSuper | undefined;
  let dir: string;
  let local: LocalProvisioner | undefined;
  let syncer: Syncer | undefined;
  let podAddresses: SuperPodAddresses | undefined;
  const tenants: Record<'a' | 'b', { tenant: Tenant; client: KubeClient; vc: VirtualCluster; root: string }> =
    {} as never;
  const kubectl = async (...args: string[]) =>
    (await exec(binaryPath('kubectl'), ['--kubeconfig', t!.sc.kubeconfigPath, ...args], { timeout: 30_000 })).stdout;
  /** inPod runs a command in the super copy of a tenant's `client` Pod; a failing command rejects */
  const inPod = (who: 'a' | 'b', ...cmd: string[]) =>
    kubectl('exec', '-n', superNamespace(tenants[who].root, 'default'), 'client', '--', 'busybox', ...cmd);
  // busybox's `wget -T` crashes on this host; its `timeout` applet bounds wget and nslookup
  const lookup = (who: 'a' | 'b', name: string) => inPod(who, 'timeout', '5', 'nslookup', name);
  const fetch = (who: 'a' | 'b', url: string) => inPod(who, 'timeout', '5', 'wget', '-q', '-O-', url);
  const fails = async (p: Promise<unknown>): Promise<string> => {
    const r = await p.then(
      (out) => ({ ok: true as const, out: String(out) }),
      (e: { stdout?: string; stderr?: string; message?: string }) => ({
        ok: false as const,
        out: `${e.stdout ?? ''}${e.stderr ?? e.message ?? ''}`,
      }),
    );
    if (r.ok) throw new Error(`expected a failure, got: ${r.out}`);
    return r.out.trim().split('\n').slice(-2).join(' ');
  };

  beforeAll(
    async () => {
      t = await startTestSuper({ nodes: 1, realNodes: 1 });
      const node = t.sc.realNodes[0]!;
      dir = mkdtempSync(join(tmpdir(), 'vc-dns-'));
      // confined: the tenant apiservers reach their own Pods on the node, nothing else of the Pod network or the host;
      // they learn their Pods' addresses from the super cluster's Pods, as the manager's local provisioner does
      local = new LocalProvisioner(join(dir, 'tenants'), t.sc.etcd, {
        podAddress: node.nodeIP,
        confine: { podCidrs: [node.cfg.podCidr], endpoints: [] },
      });
      podAddresses = new SuperPodAddresses([
        new InformerFactory(t.client, 'super').informer({
          resource: R.pods,
          labelSelector: `${LABEL.managedBy}=${MANAGER}`,
        }),
      ]);
      local.followPodAddresses(podAddresses);
      podAddresses.start();
      const forced = {
        nodeSelector: { [REAL_NODE_LABEL]: 'true' },
        tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists' as const, effect: REAL_NODE_TAINT.effect }],
      };
      await Promise.all(
        (['a', 'b'] as const).map(async (n, i) => {
          const vc = {
            apiVersion: 'tenancy.x-k8s.io/v1alpha1',
            kind: 'VirtualCluster',
            metadata: { name: n, namespace: `team-${n}`, uid: `${i + 1}${i + 1}111111-dddd-4ddd-8ddd-00000000000${i}` },
            spec: { provisioner: { type: 'local' } },
          } as VirtualCluster;
          const root = rootNamespace(vc.metadata!.namespace!, n, vc.metadata!.uid!);
          const state = await local!.ensure(vc, root);
          if (!state.ready) throw new Error(`tenant ${n}: ${state.waitingFor}`);
          expect(state.result.apiserverEndpoint?.host).toBe(node.nodeIP);
          const tenant = tenantFrom({
            key: root,
            vcName: n,
            vcNamespace: vc.metadata!.namespace!,
            vcUid: vc.metadata!.uid!,
            kubeconfig: state.result.kubeconfig,
            apiserverEndpoint: state.result.apiserverEndpoint,
            dnsApiEndpoint: state.result.dnsApiEndpoint,
            settings: {
              pods: { forced, preloadedImages: Object.values(NODE_IMAGES) },
              pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
            },
          });
          tenants[n] = { tenant, client: await local!.controlPlane(root)!.client(), vc, root };
        }),
      );
      const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
      syncer = new Syncer({
        superClient: t.client,
        host,
        registry: new MutableTenantRegistry([tenants.a.tenant, tenants.b.tenant]),
        patrolIntervalMs: 0,
        workers: 4,
      });
      await syncer.start();
      for (const n of ['a', 'b'] as const) {
        const state = await local.ensure(tenants[n].vc, tenants[n].root);
        if (!state.ready) throw new Error(`tenant ${n}: ${state.waitingFor}`);
        await ensureTenantDns(tenants[n].client, {
          clusterDomain: 'cluster.local',
          apiserver: state.result.dnsApiEndpoint,
        });
      }
      const a = tenants.a.client;
      await eventually(() => a.get(R.serviceaccounts, 'default', 'default'), 30_000);
      await eventually(() => tenants.b.client.get(R.serviceaccounts, 'default', 'default'), 30_000);
      await a.create(R.pods, pod('web', { app: 'web' }, { image: NODE_IMAGES.agnhost, args: ['netexec'] }));
      await a.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'default' },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
      });
      for (const n of ['a', 'b'] as const) {
        await tenants[n].client.create(
          R.pods,
          pod('client', {}, { image: NODE_IMAGES.busybox, command: ['sleep', '3600'] }),
        );
      }
      // Running in the tenant: the syncer copies the real kubelet's status back
      for (const [n, name] of [
        ['a', 'web'],
        ['a', 'client'],
        ['b', 'client'],
      ] as const) {
        await eventually(async () => {
          const p = await tenants[n].client.get<KubeObject & { status?: { phase?: string } }>(R.pods, 'default', name);
          expect(p.status?.phase).toBe('Running');
        }, 90_000).catch(async (e: unknown) => {
          const sup = await kubectl('get', 'pods', '-A', '-o', 'wide').catch(String);
          const ev = await kubectl('get', 'events', '-A').catch(String);
          const tp = JSON.stringify((await tenants[n].client.get(R.pods, 'default', name)).status);
          process.stdout.write(`DEBUG ${n}/${name}: ${tp}\n${sup}\n${ev}\n`);
          throw e;
        });
      }
      // the harness waits up to 30 minutes for another set of real nodes on this host to stop (host lock)
    },
    30 * 60_000 + 240_000,
  );

  afterAll(async () => {
    attempts.report('tenant DNS');
    await syncer?.stop();
    await local?.stop();
    await podAddresses?.stop();
    await t?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs each tenant's CoreDNS on the real node and points the tenant's Pods at it", async () => {
    for (const n of ['a', 'b'] as const) {
      const superDns = await t!.client.get<KubeObject & { spec: { clusterIP: string } }>(
        R.services,
        superNamespace(tenants[n].root, 'kube-system'),
        'kube-dns',
      );
      const client = await t!.client.get<KubeObject & { spec: { dnsConfig?: { nameservers?: string[] } } }>(
        R.pods,
        superNamespace(tenants[n].root, 'default'),
        'client',
      );
      expect(client.spec.dnsConfig?.nameservers).toEqual([superDns.spec.clusterIP]);
      const dns = (
        await t!.client.list<KubeObject & { spec: { nodeName?: string } }>(R.pods, {
          namespace: superNamespace(tenants[n].root, TENANT_DNS_NAMESPACE),
        })
      ).items.filter((p) => p.metadata?.name?.startsWith(`${TENANT_DNS_NAME}-`));
      expect(dns.map((p) => p.spec.nodeName)).toEqual([t!.sc.realNodes[0]!.name]);
    }
  });

  it('a tenant Pod resolves web.default.svc.cluster.local to its own Service and fetches it over HTTP', async () => {
    const svc = await tenants.a.client.get<KubeObject & { spec: { clusterIP: string } }>(R.services, 'default', 'web');
    // the tenant's own cluster IP is what the name gives (as kubectl shows it); the node translates it to the copy's
    const superSvc = await eventually(() =>
      t!.client.get<KubeObject & { spec: { clusterIP: string } }>(
        R.services,
        superNamespace(tenants.a.root, 'default'),
        'web',
      ),
    );
    // Ask only once the syncer has made the copy (it records the copy's address on the tenant Service) and both
    // CoreDNS Pods are ready: an earlier question gets an answer CoreDNS may cache as negative for its TTL.
    await eventually(async () => {
      const s = await tenants.a.client.get(R.services, 'default', 'web');
      expect(s.metadata?.annotations?.[ANN.superClusterIP]).toBe(superSvc.spec.clusterIP);
    }, 60_000);
    const corednsReady = async (n: 'a' | 'b') => {
      const pods = await t!.client.list<
        KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }
      >(R.pods, { namespace: superNamespace(tenants[n].root, TENANT_DNS_NAMESPACE) });
      const dns = pods.items.filter((p) => p.metadata?.name?.startsWith(`${TENANT_DNS_NAME}-`));
      expect(dns.length).toBeGreaterThan(0);
      for (const p of dns) expect(p.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    };
    await eventually(() => corednsReady('a'), 90_000);
    const answer = await eventually(() => lookup('a', 'web.default.svc.cluster.local'), 90_000, 1000).catch(
      async (e: unknown) => {
        const ns = superNamespace(tenants.a.root, TENANT_DNS_NAMESPACE);
        const names = (await kubectl('get', 'pods', '-n', ns, '-o', 'name').catch(() => ''))
          .split('\n')
          .filter((n) => n.startsWith(`pod/${TENANT_DNS_NAME}-`));
        let logs = '';
        for (const n of names) logs += await kubectl('logs', '-n', ns, n, '--tail', '40').catch(String);
        process.stdout.write(`DEBUG tenant a CoreDNS logs:\n${logs}\n`);
        throw e;
      },
    );
    expect(svc.spec.clusterIP).toBeTruthy();
    expect(answer).toContain(svc.spec.clusterIP);
    expect(answer).not.toContain(superSvc.spec.clusterIP);
    const body = await eventually(() => fetch('a', 'http://web.default.svc.cluster.local/hostname'), 30_000, 1000);
    expect(body).toBe('web');
    // the search path of the tenant namespace: the short name works as in any cluster
    expect(await eventually(() => fetch('a', 'http://web/hostname'), 10_000, 1000)).toBe('web');
  });

  it("a tenant Pod reaches its Service at the cluster IP its own apiserver gave it; another tenant's, at the same address, its own", async () => {
    const a = tenants.a.client;
    const b = tenants.b.client;
    const tenantIP = (await a.get<KubeObject & { spec: { clusterIP: string } }>(R.services, 'default', 'web')).spec
      .clusterIP;
    const superIP = (
      await t!.client.get<KubeObject & { spec: { clusterIP: string } }>(
        R.services,
        superNamespace(tenants.a.root, 'default'),
        'web',
      )
    ).spec.clusterIP;
    expect(tenantIP).not.toBe(superIP);
    const body = await eventually(() => fetch('a', `http://${tenantIP}/hostname`), 60_000, 1000);
    expect(body).toBe('web');
    // the node's table holds the translation for tenant a's Pods, by the syncer's record on the copy
    const node = t!.sc.realNodes[0]!;
    expect(node.clusterIPs?.pid).toBeTruthy();

    // tenant b's range is the same: b takes a's address for a Service of its own, in front of a Pod of its own
    await b.create(R.pods, pod('bweb', { app: 'bweb' }, { image: NODE_IMAGES.agnhost, args: ['netexec'] }));
    await b.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'bweb', namespace: 'default' },
      spec: { selector: { app: 'bweb' }, clusterIP: tenantIP, ports: [{ port: 80, targetPort: 8080 }] },
    });
    await attempts.attempt("tenant b connects to tenant a's Service at a's cluster IP", async () => {
      const got = await eventually(
        async () => {
          const out = await fetch('b', `http://${tenantIP}/hostname`);
          expect(out).toBe('bweb');
          return out;
        },
        90_000,
        1000,
      );
      return `b's packets to ${tenantIP} reach b's own Service (${got}), never a's`;
    });
    // and a still reaches its own at that address
    expect(await fetch('a', `http://${tenantIP}/hostname`)).toBe('web');
  });

  it('a Service without a selector whose EndpointSlice the tenant wrote leads to the Pod it names', async () => {
    const a = tenants.a.client;
    const webIP = (await a.get<KubeObject & { status?: { podIP?: string } }>(R.pods, 'default', 'web')).status!.podIP!;
    await a.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'manual', namespace: 'default' },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
    await a.create(R.endpointslices, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'manual-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'manual' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [webIP] }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
    const body = await eventually(() => fetch('a', 'http://manual.default.svc.cluster.local/hostname'), 90_000, 1000);
    expect(body).toBe('web');
  });

  it('a tenant Pod reaches its own apiserver at kubernetes.default.svc, whose endpoints name it', async () => {
    // what the VirtualCluster controller writes in every tenant (its apiserver runs with --endpoint-reconciler-type=none)
    const endpoint = tenants.a.tenant.apiserverEndpoint!;
    await publishApiserverEndpoint(tenants.a.client, endpoint.host, endpoint.port);
    const sns = superNamespace(tenants.a.root, 'default');
    // the syncer copies it (the one address outside the tenant it allows, on that port only); kube-proxy routes to it
    await eventually(async () => {
      const e = await t!.client.get<KubeObject & { subsets?: Array<{ addresses?: Array<{ ip: string }> }> }>(
        R.endpoints,
        sns,
        'kubernetes',
      );
      expect(e.subsets?.flatMap((x) => (x.addresses ?? []).map((a) => a.ip))).toEqual([endpoint.host]);
    }, 60_000);
    const connect = (target: string) =>
      kubectl('exec', '-n', sns, 'web', '--', '/agnhost', 'connect', target, '--timeout=5s');
    await eventually(() => connect('kubernetes.default.svc.cluster.local:443'), 60_000, 1000);
  });

  it("a tenant Pod verifies its token through its issuer's OIDC discovery, keys included", async () => {
    // upstream's conformance spec "ServiceAccountIssuerDiscovery should support OIDC discovery of service account
    // issuer" runs this: the discovery document at the token's issuer, then the key set that document names, both
    // fetched in the cluster with the Pod's own token and CA (the default ClusterRoleBinding lets ServiceAccounts read them)
    const endpoint = tenants.a.tenant.apiserverEndpoint!;
    await publishApiserverEndpoint(tenants.a.client, endpoint.host, endpoint.port);
    const issuer = 'https://kubernetes.default.svc.cluster.local';
    const a = tenants.a.client;
    const validator = pod(
      'oidc',
      {},
      {
        image: NODE_IMAGES.agnhost,
        args: [
          'test-service-account-issuer-discovery',
          '--token-path=/var/run/secrets/kubernetes.io/serviceaccount/token',
          `--audience=${issuer}`,
        ],
      },
    );
    await a.create(R.pods, { ...validator, spec: { ...(validator.spec as object), restartPolicy: 'Never' } });
    const sns = superNamespace(tenants.a.root, 'default');
    const phase = async () =>
      (await a.get<KubeObject & { status?: { phase?: string } }>(R.pods, 'default', 'oidc')).status?.phase;
    await eventually(async () => expect(['Succeeded', 'Failed']).toContain(await phase()), 120_000, 1000);
    const logs = await kubectl('logs', '-n', sns, 'oidc').catch(String);
    expect(await phase(), logs).toBe('Succeeded');
    expect(logs).toContain('OK: Validated signature on JWT');
    // the document names keys under the issuer, not the apiserver's loopback address
    const doc = await a.request<{ jwks_uri?: string }>('GET', '/.well-known/openid-configuration');
    expect(doc.jwks_uri).toBe(`${issuer}/openid/v1/jwks`);
  });

  it("another tenant's Pod asking the same name reaches nothing of the first tenant's", async () => {
    await attempts.attempt('tenant b resolves web.default.svc.cluster.local', async () => {
      // b's own DNS works (it answers b's kube-dns), so the refusal below is about the name, not a dead server
      await eventually(() => lookup('b', 'kube-dns.kube-system.svc.cluster.local'), 60_000, 1000);
      const out = await fails(lookup('b', 'web.default.svc.cluster.local'));
      await fails(fetch('b', 'http://web.default.svc.cluster.local/hostname'));
      return `b's DNS has no such name: ${out}`;
    });
    await attempts.attempt("tenant b resolves a's super-side Service name", async () => {
      const name = `web.${superNamespace(tenants.a.root, 'default')}.svc.cluster.local`;
      return `b's DNS knows only b's Services: ${await fails(lookup('b', name))}`;
    });
    await attempts.attempt('tenant b resolves a name outside the cluster domain through its DNS', async () => {
      return `no upstream, the tenant DNS refuses it: ${await fails(lookup('b', 'kubernetes.default.svc.super.local'))}`;
    });
  });

  it("a resolver of the super cluster that knows other tenants' names is out of a tenant Pod's reach", async () => {
    // A DNS server in a platform namespace of the super (as the super's own CoreDNS or a node-local cache would be),
    // answering a's super-side name: only the isolation policy stands between b's Pods and it.
    const ns = 'vc-test-resolver';
    const aName = `web.${superNamespace(tenants.a.root, 'default')}.svc.cluster.local`;
    const aSvc = await t!.client.get<KubeObject & { spec: { clusterIP: string } }>(
      R.services,
      superNamespace(tenants.a.root, 'default'),
      'web',
    );
    const forced = {
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
    };
    await t!.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await t!.client.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'resolver', namespace: ns },
      data: { Corefile: `.:53 {\n  hosts {\n    ${aSvc.spec.clusterIP} ${aName}\n  }\n}\n` },
    });
    await t!.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'resolver', namespace: ns, labels: { app: 'resolver' } },
      spec: {
        ...forced,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'coredns',
            image: NODE_IMAGES.coredns,
            imagePullPolicy: 'IfNotPresent',
            args: ['-conf', '/cfg/Corefile'],
            volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }],
          },
        ],
        volumes: [{ name: 'cfg', configMap: { name: 'resolver' } }],
      },
    });
    await t!.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probe', namespace: ns },
      spec: {
        ...forced,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'probe', image: NODE_IMAGES.busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
        ],
      },
    });
    await t!.client.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'resolver', namespace: ns },
      spec: { selector: { app: 'resolver' }, ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] },
    });
    const resolverIP = await eventually(async () => {
      const p = await t!.client.get<KubeObject & { status?: { phase?: string; podIP?: string } }>(
        R.pods,
        ns,
        'resolver',
      );
      expect(p.status?.phase).toBe('Running');
      return p.status!.podIP!;
    }, 90_000);
    const svc = await t!.client.get<KubeObject & { spec: { clusterIP: string } }>(R.services, ns, 'resolver');
    // the control: a platform Pod beside it gets the answer, by the Pod's address and by the Service's
    for (const server of [resolverIP, svc.spec.clusterIP]) {
      const out = await eventually(
        () => kubectl('exec', '-n', ns, 'probe', '--', 'timeout', '5', 'nslookup', aName, server),
        60_000,
        1000,
      );
      expect(out).toContain(aSvc.spec.clusterIP);
    }
    for (const [how, server] of [
      ["by the resolver Pod's address", resolverIP],
      ["by the resolver Service's cluster IP", svc.spec.clusterIP],
    ] as const) {
      await attempts.attempt(`tenant b asks a super resolver ${how} for tenant a's super-side name`, async () => {
        const out = await fails(inPod('b', 'timeout', '5', 'nslookup', aName, server));
        expect(out).not.toContain(aSvc.spec.clusterIP);
        return `no DNS egress but to b's own DNS: ${out}`;
      });
    }
  });

  it("a tenant Pod cannot take another Pod's addresses on the bridge", async () => {
    const web = await t!.client.get<KubeObject & { status?: { podIP?: string } }>(
      R.pods,
      superNamespace(tenants.a.root, 'default'),
      'web',
    );
    const victim = web.status!.podIP!;
    const gateway = t!.sc.realNodes[0]!.nodeIP;
    await attempts.attempt("tenant b adds tenant a's Pod IP to its interface", async () => {
      const out = await fails(inPod('b', 'ip', 'addr', 'add', `${victim}/32`, 'dev', 'eth0'));
      expect(out).toMatch(/not permitted/i);
      return `no NET_ADMIN: ${out}`;
    });
    await attempts.attempt('tenant b changes its MAC address', async () => {
      const out = await fails(inPod('b', 'ip', 'link', 'set', 'eth0', 'address', '02:00:00:00:00:01'));
      expect(out).toMatch(/not permitted/i);
      return `no NET_ADMIN: ${out}`;
    });
    await attempts.attempt("tenant b sends ARP claiming tenant a's Pod IP", async () => {
      const out = await fails(inPod('b', 'arping', '-c', '1', '-w', '1', '-s', victim, '-I', 'eth0', gateway));
      expect(out).toMatch(/not permitted/i);
      return `NET_RAW dropped, no packet socket: ${out}`;
    });
  });

  it("a confined tenant apiserver proxies to its own Pod, and calls nothing of the node's", async () => {
    const kubeconfig = local!.controlPlane(tenants.a.root)!.kubeconfigPath;
    const raw = (path: string) =>
      exec(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, 'get', '--raw', path], { timeout: 30_000 }).then(
        (r) => r.stdout,
      );
    // its own Pod, through the Service: the apiserver on the host reaches the Pod network
    expect(await eventually(() => raw('/api/v1/namespaces/default/services/web:80/proxy/hostname'), 30_000)).toBe(
      'web',
    );
    const node = t!.sc.realNodes[0]!;
    const bForwarder = tenants.b.tenant.apiserverEndpoint!;
    for (const [name, what, scheme, port] of [
      ['door-b', "tenant b's apiserver through its forwarder on the node", 'https', bForwarder.port],
      ['door-kubelet', "the node's kubelet", 'https', node.cfg.kubeletPort],
    ] as const) {
      await attempts.attempt(`tenant a's webhook calls ${what}`, async () => {
        await tenants.a.client.request(
          'POST',
          '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
          {
            body: {
              apiVersion: 'admissionregistration.k8s.io/v1',
              kind: 'ValidatingWebhookConfiguration',
              metadata: { name },
              webhooks: [
                {
                  name: `${name}.door.example.com`,
                  clientConfig: { url: `${scheme}://${node.nodeIP}:${port}/validate` },
                  rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
                  objectSelector: { matchLabels: { door: name } },
                  failurePolicy: 'Fail',
                  sideEffects: 'None',
                  admissionReviewVersions: ['v1'],
                  timeoutSeconds: 3,
                },
              ],
            },
          },
        );
        const out = await eventually(async () => {
          const e = await tenants.a.client
            .create(R.configmaps, {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { generateName: `${name}-`, namespace: 'default', labels: { door: name } },
            })
            .then(
              () => '',
              (err: Error) => err.message,
            );
          expect(e).toContain('connection refused');
          return e;
        }, 30_000);
        return `the confinement refuses the host's address: ${out.slice(out.indexOf('dial tcp'))}`;
      });
    }
  });

  it("a confined tenant apiserver reaches its own Pods, and no other tenant's Pod nor the platform's", async () => {
    const forced = {
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
    };
    // a platform Pod beside the tenants' (as a platform exporter or cache would be), answering HTTP on 8080
    const ns = 'vc-test-platform';
    await t!.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await t!.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'platform', namespace: ns },
      spec: {
        ...forced,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'platform', image: NODE_IMAGES.agnhost, imagePullPolicy: 'IfNotPresent', args: ['netexec'] },
        ],
      },
    });
    const podIP = (namespace: string, name: string) =>
      eventually(async () => {
        const p = await t!.client.get<KubeObject & { status?: { phase?: string; podIP?: string } }>(
          R.pods,
          namespace,
          name,
        );
        expect(p.status?.phase).toBe('Running');
        return p.status!.podIP!;
      }, 90_000);
    const webIP = await podIP(superNamespace(tenants.a.root, 'default'), 'web');
    const platformIP = await podIP(ns, 'platform');
    // the control: both answer HTTP from this host, which routes to the node's Pod network
    const hostname = async (ip: string) => {
      const r = await globalThis.fetch(`http://${ip}:8080/hostname`, { signal: AbortSignal.timeout(5000) });
      return (await r.text()).trim();
    };
    expect(await eventually(() => hostname(webIP), 30_000)).toBe('web');
    expect(await eventually(() => hostname(platformIP), 30_000)).toBe('platform');
    const raw = (who: 'a' | 'b', path: string) =>
      exec(
        binaryPath('kubectl'),
        ['--kubeconfig', local!.controlPlane(tenants[who].root)!.kubeconfigPath, 'get', '--raw', path],
        { timeout: 30_000 },
      ).then((r) => r.stdout.trim());
    // the control: tenant a's own apiserver reaches its own Pod by pods/proxy (the address the super gave it)
    expect(await eventually(() => raw('a', '/api/v1/namespaces/default/pods/web:8080/proxy/hostname'), 30_000)).toBe(
      'web',
    );
    const b = tenants.b.client;
    /** refusedHere: the apiserver's error names the connection the confinement refused */
    const refusedHere = (out: string, ip: string): string => {
      expect(out).toContain(`${ip}:8080`);
      expect(out).toMatch(/connection refused/);
      return out.slice(out.indexOf('dial tcp')).split('\n')[0]!;
    };
    /** webhookError registers a webhook of b's on ConfigMaps and answers the error of a ConfigMap it must admit */
    const webhookError = async (name: string, clientConfig: Record<string, unknown>): Promise<string> => {
      await b.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
        body: {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name },
          webhooks: [
            {
              name: `${name}.door.example.com`,
              clientConfig,
              rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
              objectSelector: { matchLabels: { door: name } },
              failurePolicy: 'Fail',
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
              timeoutSeconds: 3,
            },
          ],
        },
      });
      return eventually(async () => {
        const e = await b
          .create(R.configmaps, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { generateName: `${name}-`, namespace: 'default', labels: { door: name } },
          })
          .then(
            () => '',
            (err: Error) => err.message,
          );
        expect(e).toContain(name);
        return e;
      }, 30_000);
    };
    for (const [what, ip, tag] of [
      ["tenant a's Pod", webIP, 'a'],
      ['a platform Pod', platformIP, 'p'],
    ] as const) {
      // A Pod of b's own whose status b writes (hostNetwork: the syncer refuses it, so no kubelet status replaces b's)
      const door = `door-${tag}`;
      await b.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: door, namespace: 'default' },
        spec: { hostNetwork: true, containers: [{ name: 'c', image: NODE_IMAGES.busybox }] },
      });
      await b.request('PATCH', `/api/v1/namespaces/default/pods/${door}/status`, {
        body: { status: { podIP: ip, podIPs: [{ ip }] } },
        contentType: 'application/merge-patch+json',
      });
      await attempts.attempt(`tenant b's pods/proxy to ${what} (a Pod status b wrote)`, async () => {
        const out = await fails(raw('b', `/api/v1/namespaces/default/pods/${door}:8080/proxy/hostname`));
        return refusedHere(out, ip);
      });
      const svc = `door-${tag}`;
      await b.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: svc, namespace: 'default' },
        spec: { ports: [{ name: 'http', port: 8080, targetPort: 8080 }] },
      });
      await b.create(R.endpoints, {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: svc, namespace: 'default' },
        subsets: [
          {
            addresses: [{ ip, targetRef: { kind: 'Pod', name: door, namespace: 'default' } }],
            ports: [{ name: 'http', port: 8080 }],
          },
        ],
      });
      await b.request('POST', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
        body: {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: `${svc}-door`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } },
          addressType: 'IPv4',
          endpoints: [
            {
              addresses: [ip],
              conditions: { ready: true },
              targetRef: { kind: 'Pod', name: door, namespace: 'default' },
            },
          ],
          ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        },
      });
      await attempts.attempt(`tenant b's services/proxy to ${what} (Endpoints b wrote)`, async () => {
        const out = await fails(raw('b', `/api/v1/namespaces/default/services/${svc}:8080/proxy/hostname`));
        return refusedHere(out, ip);
      });
      await b.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: `${svc}-ext`, namespace: 'default' },
        spec: { type: 'ExternalName', externalName: ip, ports: [{ name: 'http', port: 8080 }] },
      });
      await attempts.attempt(`tenant b's webhook URL naming ${what}`, async () =>
        refusedHere(await webhookError(`door-hook-${tag}`, { url: `https://${ip}:8080/validate` }), ip),
      );
      await attempts.attempt(`tenant b's webhook by an ExternalName Service naming ${what}`, async () => {
        const out = await webhookError(`door-ext-${tag}`, {
          service: { namespace: 'default', name: `${svc}-ext`, port: 8080 },
        });
        // routed to endpoints (--enable-aggregator-routing), an ExternalName Service is no backend; routed by cluster
        // IP it would name the address, which the confinement refuses
        expect(out).toMatch(/unsupported service type "ExternalName"|connection refused/);
        return out.slice(out.indexOf('failed calling webhook'));
      });
      await attempts.attempt(`tenant b's APIService backed by a Service whose endpoint is ${what}`, async () => {
        const group = `door-${tag}.example.com`;
        await b.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
          body: {
            apiVersion: 'apiregistration.k8s.io/v1',
            kind: 'APIService',
            metadata: { name: `v1.${group}` },
            spec: {
              group,
              version: 'v1',
              service: { namespace: 'default', name: svc, port: 8080 },
              insecureSkipTLSVerify: true,
              groupPriorityMinimum: 1000,
              versionPriority: 15,
            },
          },
        });
        const message = await eventually(async () => {
          const api = await b.request<{ status?: { conditions?: Array<{ type: string; message?: string }> } }>(
            'GET',
            `/apis/apiregistration.k8s.io/v1/apiservices/v1.${group}`,
          );
          const m = api.status?.conditions?.find((c) => c.type === 'Available')?.message ?? '';
          expect(m).toContain('connection refused');
          return m;
        }, 60_000);
        await fails(raw('b', `/apis/${group}/v1`));
        return refusedHere(message, ip);
      });
    }
  });

  it("a tenant's DNS credential reads its own Services and nothing else", async () => {
    const b = tenants.b.client;
    const tr = await b.request<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/${TENANT_DNS_NAMESPACE}/serviceaccounts/${TENANT_DNS_NAME}/token`,
      { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } } },
    );
    const token = tr.status.token;
    const node = t!.sc.realNodes[0]!;
    const bEndpoint = tenants.b.tenant.apiserverEndpoint!;
    const aEndpoint = tenants.a.tenant.apiserverEndpoint!;
    const bCA = local!.controlPlane(tenants.b.root)!.caPem;
    expect(await status(`https://${bEndpoint.host}:${bEndpoint.port}/api/v1/services`, token, bCA)).toBe(200);
    await attempts.attempt("b's DNS credential reads Secrets of its own tenant", async () => {
      const code = await status(`https://${bEndpoint.host}:${bEndpoint.port}/api/v1/secrets`, token, bCA);
      expect(code).toBe(403);
      return `HTTP ${code}: the ClusterRole lists only Services, EndpointSlices and Namespaces`;
    });
    await attempts.attempt("b's DNS credential against a's apiserver through a's forwarder", async () => {
      expect(aEndpoint.host).toBe(node.nodeIP);
      const code = await status(`https://${aEndpoint.host}:${aEndpoint.port}/api/v1/services`, token);
      expect(code).toBe(401);
      return `HTTP ${code}: a's apiserver does not know b's token`;
    });
    await attempts.attempt("b's DNS credential against the super apiserver", async () => {
      const code = await status(`${t!.sc.cluster.server}/api/v1/services`, token);
      expect(code).toBe(401);
      return `HTTP ${code}: the super apiserver does not know tenant tokens`;
    });
    expect(attempts.summary()).toBe('attempts 24, refused 24, succeeded 0');
  });
});
