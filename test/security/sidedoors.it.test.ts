/**
 * The tenant control plane is not a network proxy into the platform (issue 31 §2). A tenant admin tells its own
 * apiserver where to connect: admission webhooks by URL, `services/proxy` through Endpoints it writes, `nodes/proxy`
 * to a Node it creates, `pods/proxy` to the address it writes into a Pod's status. On the local provisioner those
 * connections start on the manager's host. Tenant A's control plane is confined (NetConfinement); every door it opens
 * towards the super apiserver, the super's controller manager and etcd, another tenant's apiserver, a port on the
 * host's own address and the cloud metadata address is refused. Tenant B, on a provisioner without confinement, opens
 * the same doors: the control that shows what the confinement takes away.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import type { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import {
  cgroup2Root,
  CONFINE_PREFIX,
  confinementNames,
  NetConfinement,
  sweepConfinements,
} from '../../core/dev/local/netconfine.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

const exec = promisify(execFile);

/** hostAddress is an address of this host other than loopback: where a host port is reached from outside. */
const hostAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const skip =
  process.getuid?.() !== 0
    ? 'needs root (cgroups and iptables)'
    : !cgroup2Root()
      ? 'no cgroup v2 hierarchy'
      : !hostAddress
        ? 'no non-loopback IPv4 address'
        : undefined;
if (skip) process.stdout.write(`sidedoors.it.test.ts skipped: ${skip}\n`);

const vcObject = (namespace: string, name: string, uid: string): VirtualCluster =>
  ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace, uid },
    spec: { provisioner: { type: 'local' } },
  }) as VirtualCluster;

describe.skipIf(!!skip)('a tenant control plane is no proxy into the platform', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let dir: string;
  let confined: LocalProvisioner;
  let open: LocalProvisioner;
  let a: KubeClient;
  let b: KubeClient;
  let aKubeconfig: string;
  let bKubeconfig: string;
  let bApiserverPort: number;
  let rootA: string;
  /** a port on the host's own address standing for every host port (a node's, the manager's) */
  let hostPort: number;
  const hostHits: string[] = [];
  let server: http.Server;

  /** raw GETs a path with a tenant's admin kubeconfig; a failing request rejects with kubectl's output */
  const raw = async (kubeconfig: string, path: string) =>
    (await exec(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, 'get', '--raw', path], { timeout: 30_000 })).stdout;
  const rawFails = async (kubeconfig: string, path: string): Promise<string> => {
    const out = await raw(kubeconfig, path).then(
      (o) => ({ ok: true as const, o }),
      (e: { stderr?: string; message?: string }) => ({ ok: false as const, o: e.stderr ?? e.message ?? '' }),
    );
    if (out.ok) throw new Error(`the apiserver proxied it: ${out.o}`);
    return out.o.trim();
  };

  /**
   * serviceTo makes a selectorless Service `name` whose endpoint is ip:port. The apiserver proxies only to an endpoint
   * that is a Pod's address, so the tenant first writes that address into the status of a Pod of its own (`name-pod`,
   * which never runs: no syncer here) and names the Pod in the endpoint.
   */
  const serviceTo = async (c: KubeClient, name: string, ip: string, port: number) => {
    const pod = `${name}-pod`;
    await c.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod, namespace: 'default' },
      spec: { automountServiceAccountToken: false, containers: [{ name: 'c', image: 'example.invalid/none' }] },
    });
    await c.request('PATCH', `/api/v1/namespaces/default/pods/${pod}/status`, {
      body: { status: { podIP: ip, podIPs: [{ ip }] } },
      contentType: 'application/merge-patch+json',
    });
    const targetRef = { kind: 'Pod', name: pod, namespace: 'default' };
    await c.create(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: 'default' },
      spec: { ports: [{ name: 'http', port, targetPort: port }] },
    });
    await c.create(R.endpoints, {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name, namespace: 'default' },
      subsets: [{ addresses: [{ ip, targetRef }], ports: [{ name: 'http', port }] }],
    });
    await c.request('POST', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
      body: {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${name}-door`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [ip], conditions: { ready: true }, targetRef }],
        ports: [{ name: 'http', port, protocol: 'TCP' }],
      },
    });
  };

  /**
   * webhookTo registers a validating webhook at `url` that fails closed on ConfigMaps labelled `door=<name>`, creates
   * one, and returns the apiserver's refusal (which names the connection error)
   */
  const webhookTo = async (c: KubeClient, name: string, url: string): Promise<string> => {
    await c.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: `door-${name}` },
        webhooks: [
          {
            name: `${name}.door.example.com`,
            clientConfig: { url },
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
    // the webhook takes effect once the apiserver's informer has it: until then the create succeeds
    return eventually(async () => {
      const r = await c
        .create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { generateName: `${name}-`, namespace: 'default', labels: { door: name } },
        })
        .then(
          () => undefined,
          (e: Error) => e.message,
        );
      expect(r).toContain('failed calling webhook');
      return r!;
    }, 30_000);
  };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hostHits.push(`${req.method} ${req.url}`);
      res.end('host secret');
    });
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    hostPort = (server.address() as AddressInfo).port;
    t = await startTestSuper({ nodes: 1 });
    dir = mkdtempSync(join(tmpdir(), 'vc-sidedoors-'));
    // kwok's Pod CIDR: the super's Pod network, where a confined tenant reaches its own Pods only (none here)
    confined = new LocalProvisioner(join(dir, 'confined'), t.sc.etcd, {
      confine: { podCidrs: ['10.244.0.0/16'], endpoints: [] },
    });
    open = new LocalProvisioner(join(dir, 'open'), t.sc.etcd);
    const vcA = vcObject('team-a', 'a', 'aaaaaaaa-5d00-4d00-8d00-000000000001');
    const vcB = vcObject('team-b', 'b', 'bbbbbbbb-5d00-4d00-8d00-000000000002');
    rootA = rootNamespace('team-a', 'a', vcA.metadata!.uid!);
    const rootB = rootNamespace('team-b', 'b', vcB.metadata!.uid!);
    await Promise.all([confined.ensure(vcA, rootA), open.ensure(vcB, rootB)]);
    const cpA = confined.controlPlane(rootA)!;
    const cpB = open.controlPlane(rootB)!;
    a = await cpA.client();
    b = await cpB.client();
    aKubeconfig = cpA.kubeconfigPath;
    bKubeconfig = cpB.kubeconfigPath;
    bApiserverPort = cpB.ports.apiserver;
    await eventually(() => a.get(R.serviceaccounts, 'default', 'default'), 60_000);
    await eventually(() => b.get(R.serviceaccounts, 'default', 'default'), 60_000);
  }, 240_000);

  afterAll(async () => {
    attempts.report('side doors');
    await confined?.stop();
    await open?.stop();
    await t?.stop();
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the confined control plane still works: its controller manager reaches its apiserver, clients get answers', async () => {
    // the service account controller (in the controller manager) makes `default` in a new namespace
    await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'works' } });
    await eventually(() => a.get(R.serviceaccounts, 'works', 'default'), 60_000);
  });

  it('the control: an unconfined tenant reaches the host port and the super apiserver', async () => {
    await serviceTo(b, 'host', hostAddress!, hostPort);
    const body = await eventually(
      () => raw(bKubeconfig, `/api/v1/namespaces/default/services/http:host:${hostPort}/proxy/open`),
      30_000,
    );
    expect(body).toBe('host secret');
    expect(hostHits).toContain('GET /open');
    const superPort = new URL(t.sc.cluster.server).port;
    const out = await webhookTo(b, 'super', `https://127.0.0.1:${superPort}/validate`);
    // TLS was spoken: the connection got through
    expect(out).toMatch(/x509|certificate/);
  });

  it('webhooks of the confined tenant reach nothing of the platform', async () => {
    const superPort = new URL(t.sc.cluster.server).port;
    const etcdPort = new URL(t.sc.etcd.endpoint).port;
    const targets: Array<[string, string, string]> = [
      ['super-apiserver', 'the super apiserver', `https://127.0.0.1:${superPort}/validate`],
      [
        'super-kcm',
        "the super's controller manager",
        `https://127.0.0.1:${t.sc.cluster.ports.controllerManager}/validate`,
      ],
      ['super-etcd', "the super's etcd", `https://127.0.0.1:${etcdPort}/validate`],
      ['tenant-b', "tenant b's apiserver", `https://127.0.0.1:${bApiserverPort}/validate`],
      ['host', "a port on the host's own address", `https://${hostAddress!}:${hostPort}/validate`],
      ['metadata', 'the cloud metadata address', 'https://169.254.169.254/validate'],
    ];
    for (const [name, what, url] of targets) {
      await attempts.attempt(`tenant admin's webhook calls ${what}`, async () => {
        const out = await webhookTo(a, name, url);
        expect(out).toContain('connection refused');
        expect(out).not.toMatch(/x509|certificate|tls|HTTP response/i);
        return `refused by the confinement: ${out.slice(out.indexOf('dial tcp'))}`;
      });
    }
  });

  it('a confinement some program deleted comes back', async () => {
    const { table } = confinementNames(rootA);
    await exec('nft', ['delete', 'table', 'inet', table]);
    const rules = await eventually(async () => {
      const out = (await exec('nft', ['list', 'table', 'inet', table])).stdout;
      expect(out).toContain('jump confined');
      return out;
    }, 30_000);
    expect(rules).toContain('fib daddr type local reject');
  });

  it('a sweep (vc down) removes the confinement of a control plane that is gone and keeps a running one', async () => {
    const gone = new NetConfinement(
      `gone-${process.pid}`,
      { loopbackPorts: [], podCidrs: [], endpoints: [] },
      cgroup2Root()!,
    );
    await gone.apply();
    // what an earlier version confined with: an iptables chain jumped to from OUTPUT by the cgroup's path
    const cgroup = gone.table;
    const legacy = `VC-CP-${cgroup.slice(CONFINE_PREFIX.length)}`;
    await exec('iptables', ['-w', '-N', legacy]);
    await exec('iptables', ['-w', '-A', 'OUTPUT', '-m', 'cgroup', '--path', cgroup, '-j', legacy]);
    const removed = await sweepConfinements();
    expect(removed).toContain(`nftables table inet ${gone.table}`);
    expect(removed).toContain(`iptables chain ${legacy}`);
    expect(await gone.intact()).toBe(false);
    expect(existsSync(gone.cgroupDir)).toBe(false);
    const { table } = confinementNames(rootA);
    expect(removed).not.toContain(`nftables table inet ${table}`);
    await exec('nft', ['list', 'table', 'inet', table]);
  });

  it("iptables rules that accept the control plane's packets (kube-router's, a restored snapshot) open no door", async () => {
    await serviceTo(a, 'accepted', hostAddress!, hostPort);
    const { cgroup } = confinementNames(rootA);
    const accept = ['OUTPUT', '-m', 'cgroup', '--path', cgroup, '-j', 'ACCEPT'];
    await exec('iptables', ['-w', '-I', ...accept]);
    try {
      await attempts.attempt(
        "services/proxy to the host's port while the filter table accepts every packet",
        async () => {
          const out = await eventually(async () => {
            const o = await rawFails(
              aKubeconfig,
              `/api/v1/namespaces/default/services/http:accepted:${hostPort}/proxy/`,
            );
            expect(o).toContain('connection refused');
            return o;
          }, 30_000);
          return out.split('\n').at(-1)!;
        },
      );
    } finally {
      await exec('iptables', ['-w', '-D', ...accept]);
    }
  });

  it("the proxy paths of the confined tenant do not reach the host's port", async () => {
    const before = hostHits.length;
    await serviceTo(a, 'host', hostAddress!, hostPort);
    await attempts.attempt("services/proxy through an endpoint at the host's address", async () => {
      const out = await eventually(async () => {
        const o = await rawFails(aKubeconfig, `/api/v1/namespaces/default/services/http:host:${hostPort}/proxy/`);
        expect(o).toContain('connection refused');
        return o;
      }, 30_000);
      return out.split('\n').at(-1)!;
    });
    await attempts.attempt("pods/proxy to a Pod whose status the tenant set to the host's address", async () => {
      const out = await rawFails(aKubeconfig, `/api/v1/namespaces/default/pods/http:host-pod:${hostPort}/proxy/`);
      expect(out).toContain('connection refused');
      return out.split('\n').at(-1)!;
    });
    await attempts.attempt("nodes/proxy to a Node whose address is the host's", async () => {
      await a.create(R.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'door' } });
      await a.request('PATCH', '/api/v1/nodes/door/status', {
        body: {
          status: {
            addresses: [{ type: 'InternalIP', address: hostAddress! }],
            daemonEndpoints: { kubeletEndpoint: { Port: hostPort } },
          },
        },
        contentType: 'application/merge-patch+json',
      });
      const out = await rawFails(aKubeconfig, `/api/v1/nodes/http:door:${hostPort}/proxy/`);
      expect(out).toContain('connection refused');
      return out.split('\n').at(-1)!;
    });
    expect(hostHits.length).toBe(before);
    expect(attempts.summary()).toBe('attempts 10, refused 10, succeeded 0');
  });
});
