import { X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../git/server.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, rootNamespace } from '../../core/names/names.ts';
import { MANAGER_KUBECONFIG_KEY } from '../../core/lifecycle/kubeconfigsecret.ts';
import { registry as metrics } from '../../core/metrics/registry.ts';
import { KUBELET_SERVING, NODE_CLIENTS } from '../../core/dev/local/nodecerts.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import {
  containerdSocket,
  criSandboxes,
  REAL_NODE_LABEL,
  REAL_NODE_TAINT,
  type RealNode,
} from '../../core/dev/local/realnode.ts';
import { startEmbedded, type Embedded } from '../../core/dev/embedded/embedded.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { NODE_PORT_RANGE } from '../../core/dev/local/ports.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { eventually, realNodeSkipReason, startTestSuper } from '../harness.ts';
import { APISERVER_EGRESS_POLICY } from '../../core/provisioners/native/egress.ts';
import { PATHS } from '../../core/provisioners/native/layout.ts';
import { fingerprintSha256 } from '../../core/pki/pki.ts';
import { cidrContains, parseCidr } from '@virtualcluster-ts/plugin-sdk/network';
import { Attempts } from '../security/attempts.ts';
import { nativeHaSuite, reported } from './nativeha.ts';

const exec = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`native.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; containerStatuses?: Array<{ containerID?: string; ready?: boolean }> };
}

/** EgressPolicy is the part of a NetworkPolicy the apiserver-egress case reads. */
interface EgressPolicy extends KubeObject {
  spec?: { egress?: Array<{ to?: Array<{ ipBlock?: { cidr: string } }> }> };
}

const CONTROL_PLANE = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = http.get(url, { timeout: 5000 }, (r) => {
      let body = '';
      r.on('data', (c: Buffer) => (body += c.toString()));
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

const serverOf = (kubeconfig: string): string =>
  (parse(kubeconfig) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0]!.cluster.server;

/** statusOf reads one field of /proc/<pid>/status, or undefined when the process is gone. */
function statusOf(pid: number, field: string): string | undefined {
  try {
    return new RegExp(`^${field}:\\s+(.*)$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/** containerRss is the resident memory of each control-plane binary started by one of the given shims. */
function containerRss(shims: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of readdirSync('/proc')) {
    const pid = Number(e);
    if (!pid || !shims.includes(Number(statusOf(pid, 'PPid')))) continue;
    const name = statusOf(pid, 'Name') ?? '';
    const match = CONTROL_PLANE.find((c) => c.startsWith(name));
    if (match) out[match] = (out[match] ?? 0) + Number(statusOf(pid, 'VmRSS')?.split(/\s+/)[0] ?? 0) * 1024;
  }
  return out;
}

/** containerPids are the process ids of one control-plane binary started by one of the given shims. */
function containerPids(shims: number[], binary: (typeof CONTROL_PLANE)[number]): number[] {
  return readdirSync('/proc')
    .map(Number)
    .filter((pid) => pid && shims.includes(Number(statusOf(pid, 'PPid'))))
    .filter((pid) => binary.startsWith(statusOf(pid, 'Name') ?? '-'));
}

/**
 * CERT_LIFETIME_MINUTES and CERT_RENEW_FRACTION: the real node's client certificates here are valid from a minute
 * before they are issued (core/pki/ca.ts) to six and a half minutes after, and renewed two minutes into that window,
 * a minute after issue (once the kubelet and kube-proxy run with the first ones), leaving five and a half minutes:
 * the five client-go may take to drop connections made with a replaced certificate (core/dev/local/nodecerts.ts) and
 * half a minute to spare. Client-go looks every five minutes from the component's start, which comes after the issue,
 * so it drops them before the first certificates' end by more than that. The last test waits for that end.
 */
const CERT_LIFETIME_MINUTES = 6.5;
const CERT_RENEW_FRACTION = 2 / (CERT_LIFETIME_MINUTES + 1);
const CERT_CLIENTS = ['kubelet', 'kube-proxy'] as const;

/** CERT_FILES are the real node's certificates checked here: its two clients', then the kubelet's serving one. */
const CERT_FILES: ReadonlyArray<{ name: string; file: string }> = [
  ...CERT_CLIENTS.map((n) => NODE_CLIENTS.find((x) => x.name === n)!),
  KUBELET_SERVING,
];

/** certificateOf reads the certificate of a PEM file (the serving one holds its key beside it). */
const certificateOf = (file: string): X509Certificate =>
  new X509Certificate(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/.exec(readFileSync(file, 'utf8'))![0]);

/**
 * apiserverFile is a file as the tenant's kube-apiserver (process `pid`) reads it: through its own mount namespace,
 * the file the kubelet projects from a Secret.
 */
const apiserverFile = (pid: number, file: string): string => readFileSync(`/proc/${pid}/root${file}`, 'utf8');

/**
 * presentedExpiries are the expiries (Unix seconds) of the client certificates tenant apiservers last authenticated
 * with at this process's vn-agent (vc_vnagent_tenant_client_certificate_expiry_timestamp_seconds).
 */
async function presentedExpiries(): Promise<number[]> {
  const m = metrics.getSingleMetric('vc_vnagent_tenant_client_certificate_expiry_timestamp_seconds');
  return m ? (await m.get()).values.map((v) => v.value) : [];
}

/** tenantExpiry is the expiry the manager reports of one of the native tenant's certificates (Unix seconds). */
async function tenantExpiry(certificate: string): Promise<number | undefined> {
  const m = metrics.getSingleMetric('vc_tenant_certificate_expiry_timestamp_seconds');
  const values = m ? (await m.get()).values : [];
  return values.find((x) => x.labels.vc_name === 'native' && x.labels.certificate === certificate)?.value;
}

/** servedBy is the certificate the TLS server at `server` presents to a new connection (read, not verified). */
const servedBy = (server: string) =>
  new Promise<X509Certificate>((resolve, reject) => {
    const u = new URL(server);
    const s = tls.connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', reject);
  });

/** RENEWED_FILES are the apiserver's files whose renewal by hand native.it asks for, with the reported names. */
const RENEWED_FILES = [
  { cert: 'kubelet-client', name: 'kube-apiserver kubelet client', file: PATHS.kubeletClientCert },
  { cert: 'apiserver', name: 'kube-apiserver serving', file: PATHS.apiserverCert },
  { cert: 'front-proxy-client', name: 'front-proxy client', file: PATHS.frontProxyClientCert },
] as const;

/** issuedCertificates reads a real node's certificates (CERT_FILES) under stateDir once all are written. */
function issuedCertificates(stateDir: string): Record<string, X509Certificate> | undefined {
  const nodes = join(stateDir, 'nodes');
  for (const name of existsSync(nodes) ? readdirSync(nodes) : []) {
    const files = CERT_FILES.map((c) => join(nodes, name, c.file));
    if (files.every((f) => existsSync(f)))
      return Object.fromEntries(CERT_FILES.map((c, i) => [c.name, certificateOf(files[i]!)]));
  }
  return undefined;
}

/**
 * LOCK_WAIT_MS is how long the start waits for other real nodes of this host to stop; its hook allows that and the
 * start's own ten minutes, so a start that waited is not cut off halfway (which would leave its node behind).
 */
const LOCK_WAIT_MS = 30 * 60_000;

/**
 * `provisioner: native` in a tenant file of the embedded default, on the real node of the local super cluster:
 * etcd, kube-apiserver and kube-controller-manager run as real containers, the tenant kubeconfig works from this
 * host (the apiserver Service's ClusterIP through kube-proxy), a tenant Deployment runs a real container that
 * kubectl logs and exec reach through the vn-agent, and removing the file removes everything, in the super cluster
 * and on the host. Then a native tenant with `spec.apiServer.expose.type: NodePort` (no load balancer provider here):
 * its kubeconfig Secret names the real node's address at the node port, which kubectl on this host reaches through
 * kube-proxy with the tenant's own CA. Then a tenant of three members (test/realnode/nativeha.ts).
 *
 * The same real node's client certificates (kubelet's and kube-proxy's) and the kubelet's serving certificate live
 * CERT_LIFETIME_MINUTES and are renewed while it runs (issue 33, §4), so everything above runs across a renewal; the
 * last test checks that each got a new certificate (the kubelet presenting the renewed serving one to a verifying
 * client) while the processes kept their process ids, and that after the first certificates have expired the node
 * still serves: the kubelet renews its Lease and runs a Pod created then, kube-proxy programs a Service created then,
 * and the Node carries a CertificatesValid condition. The expiry cannot come sooner (client-go's five minutes), so
 * these checks share this file's real node rather than wait minutes on one of their own.
 */
describe.skipIf(!!skip)('a native tenant on the real node, from the embedded default', () => {
  const attempts = new Attempts();
  let dir: string;
  let e: Embedded | undefined;
  let c: KubeClient;
  let work: string;
  let root: string;
  let kubeconfig: string;
  /** the tenant name of the web Deployment's Pod, once it runs */
  let webPod: string | undefined;
  const superPodUids: string[] = [];
  const kubectl = async (...args: string[]) =>
    (await exec(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 })).stdout;

  /** the real node, its first client certificates and its components' process ids, as started */
  let node: RealNode;
  const cert = (n: (typeof CERT_CLIENTS)[number]) =>
    new X509Certificate(readFileSync(node.certificates.path(n), 'utf8'));
  let firstCerts: Record<string, X509Certificate>;
  let pids: { kubelet?: number; kubeProxy?: number };
  /**
   * served is the serving certificate the kubelet presents to a new connection, verified as the vn-agent and
   * metrics-server verify it: against the super cluster's CA, for the node's address, in date.
   */
  const served = () =>
    new Promise<X509Certificate>((resolve, reject) => {
      const u = new URL(node.kubeletURL);
      const s = tls.connect({ host: u.hostname, port: Number(u.port), ca: e!.superCluster.cluster.caPem }, () => {
        const raw = s.getPeerCertificate().raw;
        s.end();
        resolve(new X509Certificate(raw));
      });
      s.on('error', reject);
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-native-'));
    // the first certificates are read as soon as they are written: the rest of the start may outlast their renewal
    let issued: Record<string, X509Certificate> | undefined;
    const watch = setInterval(() => (issued ??= issuedCertificates(join(dir, 'state'))), 250);
    try {
      e = await startEmbedded({
        stateDir: join(dir, 'state'),
        nodes: 1,
        realNodes: 1,
        realNodeLockWaitMs: LOCK_WAIT_MS,
        realNodeCertificates: { validityDays: CERT_LIFETIME_MINUTES / 1440, renewFraction: CERT_RENEW_FRACTION },
      });
    } finally {
      clearInterval(watch);
    }
    node = e.superCluster.realNodes[0]!;
    if (!issued) throw new Error(`no client certificates of the real node under ${join(dir, 'state', 'nodes')}`);
    firstCerts = issued;
    pids = { kubelet: node.kubelet.pid, kubeProxy: node.kubeProxy.pid };
    c = await e.superCluster.cluster.client();
    // The platform puts this tenant's Pods on the real node; the sample tenants are not needed here.
    await c.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'real-node' },
      spec: {
        grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
        pods: {
          forced: {
            nodeSelector: { [REAL_NODE_LABEL]: 'true' },
            tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
          },
        },
      },
    });
    work = join(dir, 'tenants');
    await git(dir, ['clone', '-q', e.gitURL, work]);
  }, LOCK_WAIT_MS + 600_000);

  /**
   * rawRefused asks the tenant apiserver for `path` and returns kubectl's error: refused (REJECT) or dropped (the
   * apiserver's dial times out after 30 s), either way no answer. An answer fails the attempt.
   */
  const rawRefused = async (path: string): Promise<string> => {
    const out = await exec(
      binaryPath('kubectl'),
      ['--kubeconfig', kubeconfig, '--request-timeout=75s', 'get', '--raw', path],
      { timeout: 90_000 },
    ).then(
      (r) => ({ ok: true, o: r.stdout }),
      (err: { stderr?: string; message?: string }) => ({ ok: false, o: err.stderr ?? err.message ?? '' }),
    );
    expect(out.ok, out.o).toBe(false);
    return out.o;
  };

  /** writeTemp writes an object as JSON into the test's directory and returns the file's path (for kubectl -f). */
  const writeTemp = (name: string, o: unknown): string => {
    const f = join(dir, name);
    writeFileSync(f, JSON.stringify(o));
    return f;
  };

  /**
   * webhookRefused registers, as the tenant admin, a validating webhook at `url` for ConfigMaps labelled door=webhook,
   * creates one, and returns the apiserver's refusal: with failurePolicy Fail the create fails whatever became of the
   * call, and the message says what did. The webhook is removed again.
   */
  const webhookRefused = async (url: string): Promise<string> => {
    const tenant = await KubeClient.fromFile(kubeconfig);
    const path = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
    try {
      await tenant.request('POST', path, {
        body: {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name: 'door' },
          webhooks: [
            {
              name: 'door.example.com',
              clientConfig: { url },
              rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
              objectSelector: { matchLabels: { door: 'webhook' } },
              failurePolicy: 'Fail',
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
              timeoutSeconds: 10,
            },
          ],
        },
      });
      // the apiserver takes up a new webhook configuration from its informer: until then the create succeeds
      return await eventually(async () => {
        const name = `door-${Date.now()}`;
        const made = await tenant
          .create(R.configmaps, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name, namespace: 'default', labels: { door: 'webhook' } },
          } as KubeObject)
          .then(
            () => undefined,
            (err: Error) => err.message,
          );
        if (made === undefined) await tenant.delete(R.configmaps, 'default', name);
        expect(made, 'the webhook was not called').toMatch(/failed calling webhook/);
        return made!;
      }, 60_000);
    } finally {
      await tenant.request('DELETE', `${path}/door`).catch(() => undefined);
      tenant.close();
    }
  };

  /**
   * selectorlessService makes the tenant Service `name` without a selector, its one endpoint `ip`:8080 written by hand
   * as the address of the Pod `door`.
   */
  const selectorlessService = async (name: string, ip: string): Promise<void> => {
    const tenant = await KubeClient.fromFile(kubeconfig);
    const port = { name: 'http', port: 8080, protocol: 'TCP' };
    try {
      await tenant.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: 'default' },
        spec: { ports: [{ ...port, targetPort: 8080 }] },
      } as KubeObject);
      await tenant.create(R.endpoints, {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name, namespace: 'default' },
        // the apiserver proxies only to an address that is a Pod's: the door Pod, whose status the tenant wrote
        subsets: [
          { addresses: [{ ip, targetRef: { kind: 'Pod', name: 'door', namespace: 'default' } }], ports: [port] },
        ],
      } as KubeObject);
      await tenant.request('POST', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
        body: {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: `${name}-hand`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
          addressType: 'IPv4',
          endpoints: [
            {
              addresses: [ip],
              conditions: { ready: true },
              targetRef: { kind: 'Pod', name: 'door', namespace: 'default' },
            },
          ],
          ports: [port],
        },
      });
    } finally {
      tenant.close();
    }
  };

  afterAll(async () => {
    if (attempts.records.length) attempts.report('native tenant');
    await e?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a real-node certificate lifetime the components could not take a renewal up in, before starting anything', async () => {
    await expect(
      startTestSuper({ realNodes: 1, realNodeCertificates: { validityDays: 4 / 1440, renewFraction: 0.5 } }),
    ).rejects.toThrow(/realNodeCertificates: a certificate renewed with 150 s of life left may expire/);
  });

  // Its own waits bound it (Running within 300 s: three containers' starts on a busy host), not the default timeout.
  it('comes up Running from `provisioner: native` with etcd, apiserver and controller manager as real containers', async () => {
    writeFileSync(
      join(work, 'tenants/native.yaml'),
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: native\n  namespace: default\n' +
        'spec:\n  provisioner:\n    type: native\n  policyName: real-node\n',
    );
    await git(work, ['add', '.']);
    await git(work, ['commit', '-qm', 'a native tenant']);
    const pushed = Date.now();
    await git(work, ['push', '-q', 'origin', 'main']);
    const vc = await eventually(async () => {
      const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'native');
      expect(v.status?.phase, v.status?.message).toBe('Running');
      return v;
    }, 300_000).catch(reported(c, 'default', 'native'));
    const runningMs = Date.now() - pushed;
    root = rootNamespace('default', 'native', vc.metadata!.uid!);

    const node = e!.superCluster.realNodes[0]!;
    // the apiserver answers; the controller manager may still be starting (it waits for the apiserver, and a container
    // that exited meanwhile is restarted after kubelet's back-off): as long as the VirtualCluster's own wait
    const pods = await eventually(
      async () => {
        const items = (await c.list<Pod>(R.pods, { namespace: root })).items;
        expect(items.map((p) => p.metadata!.name).sort()).toEqual(['apiserver-0', 'controller-manager-0', 'etcd-0']);
        for (const p of items) {
          expect(p.spec?.nodeName, p.metadata!.name).toBe(node.name);
          expect(p.status?.phase, p.metadata!.name).toBe('Running');
          expect(p.status?.containerStatuses?.[0]?.ready, p.metadata!.name).toBe(true);
          expect(p.status?.containerStatuses?.[0]?.containerID, p.metadata!.name).toMatch(
            /^containerd:\/\/[0-9a-f]{64}$/,
          );
        }
        return items;
      },
      120_000,
      500,
    );
    superPodUids.push(...pods.map((p) => p.metadata!.uid!));
    const rss = await eventually(() => {
      const r = containerRss(node.shimPids());
      expect(Object.keys(r).sort()).toEqual([...CONTROL_PLANE].sort());
      return r;
    }, 20_000);
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;
    process.stdout.write(
      `native tenant: Running ${runningMs} ms after the push; RSS ${CONTROL_PLANE.map((k) => `${k} ${mb(rss[k]!)}`).join(', ')}\n`,
    );
    expect(existsSync(join(dir, 'state/native', root))).toBe(true);
  }, 480_000);

  it('gives a kubeconfig that works from this host, at the apiserver Service ClusterIP', async () => {
    const secret = await c.get<KubeObject & { data: Record<string, string> }>(
      R.secrets,
      'default',
      'native-kubeconfig',
    );
    const text = Buffer.from(secret.data.kubeconfig!, 'base64').toString('utf8');
    const svc = await c.get<KubeObject & { spec: { clusterIP: string } }>(R.services, root, 'apiserver');
    expect(text).toContain(`server: https://${svc.spec.clusterIP}:6443`);
    kubeconfig = join(dir, 'native.kubeconfig');
    writeFileSync(kubeconfig, text, { mode: 0o600 });
    const names = (await kubectl('get', 'namespaces', '-o', 'name')).split('\n');
    expect(names).toEqual(expect.arrayContaining(['namespace/default', 'namespace/kube-system']));
  });

  it('runs a tenant Deployment as a real container on the real node', async () => {
    // The pods plugin pulls every tenant image Always (a node's cache must not serve one tenant's private image to
    // another) unless the platform lists it as preloaded on every node: nothing can be pulled on this host, so the
    // embedded default with a real node lists the node toolchain's images. Without them this test must fail, not skip.
    const cfg = parse(readFileSync(e!.configPath, 'utf8')) as {
      tenantDefaults?: { pods?: { preloadedImages?: string[] } };
    };
    expect(cfg.tenantDefaults?.pods?.preloadedImages).toContain(NODE_IMAGES.agnhost);
    await kubectl('create', 'deployment', 'web', `--image=${NODE_IMAGES.agnhost}`, '--', '/agnhost', 'netexec');
    const tenantPod = await eventually(
      async () => {
        const out = await kubectl(
          'get',
          'pods',
          '-l',
          'app=web',
          '-o',
          'jsonpath={.items[0].metadata.name} {.items[0].status.phase}',
        );
        expect(out.split(' ')[1]).toBe('Running');
        return out.split(' ')[0]!;
      },
      90_000,
      500,
    );
    const superPods = (await c.list<Pod>(R.pods, { labelSelector: 'app=web' })).items.filter(
      (p) => p.metadata!.namespace !== root && p.metadata!.namespace!.includes('default-native'),
    );
    expect(superPods).toHaveLength(1);
    const sp = superPods[0]!;
    expect(sp.spec?.nodeName).toBe(e!.superCluster.realNodes[0]!.name);
    expect(sp.status?.containerStatuses?.[0]?.containerID).toMatch(/^containerd:\/\//);
    superPodUids.push(sp.metadata!.uid!);
    // agnhost netexec answers on the Pod IP from this host: a process in a container, not a simulated status
    const res = await eventually(() => get(`http://${sp.status!.podIP}:8080/hostname`), 20_000, 500);
    expect(res.status).toBe(200);
    expect(res.body).toBe(tenantPod);
    webPod = tenantPod;
  });

  it('serves kubectl logs and exec of that Pod through the vn-agent: the container, named as the Pod', async (ctx) => {
    if (!webPod) ctx.skip();
    // the tenant apiserver, a Pod itself, reaches the vn-agent through the forwarder on the real node's bridge
    expect(await kubectl('logs', webPod!)).toMatch(/Started HTTP server on port 8080/);
    expect((await kubectl('exec', webPod!, '--', 'hostname')).trim()).toBe(webPod);
    // the container's root is the image's: the toolchain's state directory on this host is not there
    const ls = await kubectl('exec', webPod!, '--', 'sh', '-c', `test -e ${dir} && echo host || echo container`);
    expect(ls.trim()).toBe('container');
  });

  it("the vn-agent answers the tenant's nodes/proxy only with its own Pods, and no other kubelet path", async (ctx) => {
    if (!webPod) ctx.skip();
    const vnode = (await kubectl('get', 'pod', webPod!, '-o', 'jsonpath={.spec.nodeName}')).trim();
    expect(vnode).not.toBe('');
    // The apiserver proxies nodes/proxy to the vNode's kubelet endpoint, the vn-agent, with the kubelet client
    // certificate the agent knows as this tenant's: every kubelet path besides the pod calls and the usage is refused.
    for (const path of ['configz', 'runningpods/', 'pods', 'debug/pprof/', 'metrics/cadvisor', 'metrics', 'logs/']) {
      await attempts.attempt(`the native tenant's nodes/proxy to the vn-agent's /${path}`, async () => {
        const out = await rawRefused(`/api/v1/nodes/${vnode}/proxy/${path}`);
        expect(out).toMatch(/is not served by the vn-agent/);
        return /path \S+ is not served by the vn-agent/.exec(out)![0];
      });
    }
    // a pod call for the super Pods beside the tenant's own on that node: its control plane (the platform's Pods)
    await attempts.attempt("the native tenant's nodes/proxy to the logs of its own apiserver Pod", async () => {
      const out = await rawRefused(`/api/v1/nodes/${vnode}/proxy/containerLogs/${root}/apiserver-0/apiserver`);
      expect(out).toMatch(/not found for this tenant/);
      return /pod \S+ not found for this tenant/.exec(out)![0];
    });
    await attempts.attempt("the native tenant's nodes/proxy to the node's usage: only its own Pods", async () => {
      const summary = JSON.parse(await kubectl('get', '--raw', `/api/v1/nodes/${vnode}/proxy/stats/summary`)) as {
        pods?: Array<{ podRef: { namespace: string; name: string } }>;
      };
      const tenantPods = new Set(
        (
          await kubectl(
            'get',
            'pods',
            '-A',
            '-o',
            'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}',
          )
        )
          .split(' ')
          .filter(Boolean),
      );
      const seen = (summary.pods ?? []).map((p) => `${p.podRef.namespace}/${p.podRef.name}`);
      expect(seen).toContain(`default/${webPod}`);
      for (const p of seen) expect(tenantPods, `${p} is not the tenant's`).toContain(p);
      return `stats/summary names ${seen.length} Pods, all the tenant's own (not apiserver-0, etcd-0 beside them)`;
    });
  });

  /** the apiserver as it was when the renewal of its certificates was asked for (the next test) */
  let renewal:
    | { uid: string; restarts: number; pid: number; pems: Record<string, string>; fingerprint: string; asked: number }
    | undefined;
  const apiserverPod = () =>
    c.get<Pod & { status?: { containerStatuses?: Array<{ restartCount?: number }> } }>(R.pods, root, 'apiserver-0');

  it('asks for a renewal of the apiserver certificates with vc certs renew, taken up while the tests below run', async (ctx) => {
    if (!webPod) ctx.skip();
    const pod = await apiserverPod();
    const [pid, ...others] = containerPids(node.shimPids(), 'kube-apiserver');
    expect(others).toEqual([]);
    const pems = Object.fromEntries(RENEWED_FILES.map((f) => [f.cert, apiserverFile(pid!, f.file)]));
    const vc = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'native');
    // the apiserver reads the kubelet client certificate the status names, and the vn-agent has seen it (logs above)
    const kubeletClient = new X509Certificate(pems['kubelet-client']!);
    expect(fingerprintSha256(pems['kubelet-client']!)).toBe(vc.status?.kubeletClientCertFingerprint);
    expect(await presentedExpiries()).toContain(Date.parse(kubeletClient.validTo) / 1000);
    expect(await tenantExpiry('kube-apiserver kubelet client')).toBe(Date.parse(kubeletClient.validTo) / 1000);
    expect((await servedBy(serverOf(readFileSync(kubeconfig, 'utf8')))).raw).toEqual(
      new X509Certificate(pems.apiserver!).raw,
    );
    const kc = e!.superCluster.cluster.kubeconfigPath;
    const out = await exec(process.execPath, [
      vcBin,
      'certs',
      'renew',
      'native',
      ...RENEWED_FILES.flatMap((f) => ['--cert', f.cert]),
      '--kubeconfig',
      kc,
    ]);
    expect(out.stdout).toMatch(/renew-certificates=kubelet-client,apiserver,front-proxy-client@\S+Z; the manager/);
    renewal = {
      uid: pod.metadata!.uid!,
      restarts: pod.status?.containerStatuses?.[0]?.restartCount ?? 0,
      pid: pid!,
      pems,
      fingerprint: fingerprintSha256(pems['kubelet-client']!),
      asked: Date.now(),
    };
  });

  it('the native apiserver proxies to its own Pod and not to a platform Pod beside it (apiserver-egress)', async (ctx) => {
    if (!webPod) ctx.skip();
    // its own Pod, by pods/proxy: the apiserver Pod reaches its tenant's namespaces
    expect(
      (await kubectl('get', '--raw', `/api/v1/namespaces/default/pods/${webPod}:8080/proxy/hostname`)).trim(),
    ).toBe(webPod);
    // a platform Pod on the same node, answering HTTP: this host reaches it (the control)
    const ns = 'vc-test-platform';
    await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await c.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'platform', namespace: ns },
      spec: {
        nodeSelector: { [REAL_NODE_LABEL]: 'true' },
        tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'platform', image: NODE_IMAGES.agnhost, imagePullPolicy: 'IfNotPresent', args: ['netexec'] },
        ],
      },
    });
    const ip = await eventually(async () => {
      const p = await c.get<Pod>(R.pods, ns, 'platform');
      expect(p.status?.phase).toBe('Running');
      return p.status!.podIP!;
    }, 90_000);
    expect((await eventually(() => get(`http://${ip}:8080/hostname`), 20_000, 500)).body).toBe('platform');
    // the tenant writes that address into the status of a Pod of its own the syncer never runs (hostNetwork is refused)
    await kubectl('run', 'door', `--image=${NODE_IMAGES.busybox}`, '--overrides={"spec":{"hostNetwork":true}}');
    await kubectl(
      'patch',
      'pod',
      'door',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { podIP: ip, podIPs: [{ ip }] } }),
    );
    await attempts.attempt("the native tenant's pods/proxy to a platform Pod (a Pod status it wrote)", async () => {
      const out = await rawRefused('/api/v1/namespaces/default/pods/door:8080/proxy/hostname');
      const dial = new RegExp(`dial tcp ${ip.replaceAll('.', '\\.')}:8080: (connect: connection refused|i/o timeout)`);
      expect(out).toMatch(dial);
      return `apiserver-egress: ${dial.exec(out)![0]}`;
    });
    // services/proxy: a Service without a selector whose Endpoints the tenant wrote with that address
    await selectorlessService('door-svc', ip);
    await attempts.attempt("the native tenant's services/proxy to a platform Pod (Endpoints it wrote)", async () => {
      // the apiserver finds the endpoints through its own cache of them: until it has them it answers "no endpoints"
      const out = await eventually(async () => {
        const o = await rawRefused('/api/v1/namespaces/default/services/door-svc:http/proxy/hostname');
        expect(o).not.toContain('no endpoints available');
        return o;
      }, 30_000);
      const dial = new RegExp(`dial tcp ${ip.replaceAll('.', '\\.')}:8080: (connect: connection refused|i/o timeout)`);
      expect(out).toMatch(dial);
      return `apiserver-egress: ${dial.exec(out)![0]}`;
    });
    // nodes/proxy: a Node the tenant makes, whose only address is the platform Pod's and whose kubelet port is 8080
    await kubectl(
      'create',
      '-f',
      writeTemp('door-node.json', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'door-node' } }),
    );
    await kubectl(
      'patch',
      'node',
      'door-node',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          addresses: [{ type: 'InternalIP', address: ip }],
          daemonEndpoints: { kubeletEndpoint: { Port: 8080 } },
        },
      }),
    );
    await attempts.attempt("the native tenant's nodes/proxy to a platform Pod (a Node it made)", async () => {
      const out = await rawRefused('/api/v1/nodes/http:door-node:8080/proxy/hostname');
      const dial = new RegExp(`dial tcp ${ip.replaceAll('.', '\\.')}:8080: (connect: connection refused|i/o timeout)`);
      expect(out).toMatch(dial);
      return `apiserver-egress: ${dial.exec(out)![0]}`;
    });
    await kubectl('delete', 'node', 'door-node', '--wait=false');
    // admission webhooks by URL: the platform Pod, the super apiserver's own Service address, and the address and port
    // the super apiserver listens on behind it (the Service's endpoint, which the policy sees once kube-proxy has
    // translated the Service address: here the node's bridge address, local to the node)
    const superApi = (await c.get<KubeObject & { spec: { clusterIP: string } }>(R.services, 'default', 'kubernetes'))
      .spec.clusterIP;
    const superEp = (
      await c.get<
        KubeObject & { subsets: Array<{ addresses: Array<{ ip: string }>; ports: Array<{ port: number }> }> }
      >(R.endpoints, 'default', 'kubernetes')
    ).subsets[0]!;
    const [epIP, epPort] = [superEp.addresses[0]!.ip, superEp.ports[0]!.port];
    // kube-router lets a Pod reach a local address at a NodePort-range port before its egress policy (ports.ts)
    expect(epPort < NODE_PORT_RANGE[0] || epPort > NODE_PORT_RANGE[1], `super apiserver port ${epPort}`).toBe(true);
    for (const [what, url] of [
      ['a platform Pod', `https://${ip}:8080/validate`],
      ["the super apiserver's Service", `https://${superApi}:443/validate`],
      ["the super apiserver's endpoint", `https://${epIP}:${epPort}/validate`],
    ] as const) {
      await attempts.attempt(`the native tenant's admission webhook calls ${what}`, async () => {
        const out = await webhookRefused(url);
        // reached, the call would fail on TLS (an HTTP answer, an unknown authority): never dialled, it times out
        expect(out).not.toMatch(/x509|HTTP response|tls:|certificate/);
        expect(out).toMatch(/dial tcp [^:]+:\d+: (connect: connection refused|i\/o timeout)|context deadline exceeded/);
        return `apiserver-egress: ${/failed calling webhook.*$/m.exec(out)?.[0] ?? out}`;
      });
    }
    // the platform Pod goes: the removal test below finds no container left on the node
    await c.delete(R.namespaces, undefined, ns);
    await eventually(
      async () =>
        expect(
          await c.get(R.pods, ns, 'platform').then(
            () => 'there',
            () => 'gone',
          ),
        ).toBe('gone'),
      60_000,
    );
  });

  it('a Node that joins is left out of the apiserver egress at once, and its address is open again once it leaves', async () => {
    // a public address (TEST-NET-3), open to the apiserver as long as no Node of the platform has it
    const address = parseCidr('203.0.113.77/32');
    const joiner = 'vc-test-joiner';
    const open = async () => {
      const np = await c.get<EgressPolicy>(R.networkpolicies, root, APISERVER_EGRESS_POLICY);
      return (np.spec?.egress ?? []).some((rule) =>
        (rule.to ?? []).some((peer) => peer.ipBlock && cidrContains(parseCidr(peer.ipBlock.cidr), address)),
      );
    };
    expect(await open()).toBe(true);
    // a Running tenant has nothing of its own to reconcile for: only the Node watch renders its policy again
    await c.create(R.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: joiner },
      status: { addresses: [{ type: 'InternalIP', address: '203.0.113.77' }] },
    });
    try {
      await eventually(async () => expect(await open()).toBe(false), 60_000, 500);
    } finally {
      await c.delete(R.nodes, undefined, joiner);
    }
    await eventually(async () => expect(await open()).toBe(true), 60_000, 500);
  });

  it("a tenant Pod resolves its tenant's Service by DNS name to the tenant's cluster IP and fetches it", async (ctx) => {
    if (!webPod) ctx.skip();
    await kubectl('expose', 'deployment', 'web', '--port=80', '--target-port=8080');
    // The DNS answers the tenant's own cluster IP, which the node translates to the super copy's: wait for the copy
    // (the syncer records its address on the tenant Service) before asking.
    const superIP = await eventually(async () => {
      const ip = await kubectl(
        'get',
        'service',
        'web',
        '-o',
        `jsonpath={.metadata.annotations.${ANN.superClusterIP.replace(/\./g, '\\.')}}`,
      );
      expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      return ip;
    }, 30_000);
    const tenantIP = await kubectl('get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}');
    expect(tenantIP).not.toBe(superIP);
    // the Pod reports what it resolved and fetched in its termination message, which the syncer copies up
    const script =
      'for i in $(seq 45); do if body=$(timeout 5 wget -q -O- http://web.default.svc.cluster.local/hostname); then ' +
      '{ timeout 5 nslookup web.default.svc.cluster.local; echo "body=$body"; } > /dev/termination-log; exit 0; fi; ' +
      'sleep 1; done; exit 1';
    await kubectl(
      'run',
      'client',
      `--image=${NODE_IMAGES.busybox}`,
      '--image-pull-policy=IfNotPresent',
      '--restart=Never',
      '--command',
      '--',
      'sh',
      '-c',
      script,
    );
    const message = await eventually(
      async () => {
        const out = await kubectl(
          'get',
          'pod',
          'client',
          '-o',
          'jsonpath={.status.phase}|{.status.containerStatuses[0].state.terminated.message}',
        );
        const [phase, msg] = [out.slice(0, out.indexOf('|')), out.slice(out.indexOf('|') + 1)];
        if (phase === 'Failed') throw new Error(`the client Pod failed: ${msg}`);
        expect(phase).toBe('Succeeded');
        return msg;
      },
      120_000,
      1000,
    );
    expect(message).toContain(`Address: ${tenantIP}`);
    expect(message).not.toContain(superIP);
    expect(message).toContain(`body=${webPod}`);
  });

  it("a killed controller manager is restarted by the kubelet, counted in the tenant's status, and Running again", async () => {
    const node = e!.superCluster.realNodes[0]!;
    const getVC = () => c.get<VirtualCluster>(R.virtualclusters, 'default', 'native');
    const kcmOf = (v: VirtualCluster) => v.status?.components?.find((x) => x.name === 'kube-controller-manager');
    const before = kcmOf(await getVC())?.restarts ?? 0;
    // the tenant's is the only controller manager in a container on this node (the super cluster's runs on the host)
    const [pid, ...others] = containerPids(node.shimPids(), 'kube-controller-manager');
    expect(others).toEqual([]);
    process.kill(pid!, 'SIGKILL');
    await eventually(
      async () => {
        const v = await getVC();
        expect(v.status?.phase, v.status?.message).toBe('Running');
        expect(kcmOf(v)).toMatchObject({ healthy: true });
        expect(kcmOf(v)?.restarts).toBeGreaterThan(before);
      },
      180_000,
      1000,
    );
    // The count is the kubelet's: a new process in the same Pod, whose container restart count grew.
    const pod = await c.get<KubeObject & { status?: { containerStatuses?: Array<{ restartCount?: number }> } }>(
      R.pods,
      root,
      'controller-manager-0',
    );
    expect(pod.status?.containerStatuses?.[0]?.restartCount).toBeGreaterThan(before);
    expect(containerPids(node.shimPids(), 'kube-controller-manager')).not.toContain(pid);
    const events = await c.list<KubeObject & { reason?: string; message?: string }>(R.events, {
      namespace: 'default',
      fieldSelector: 'involvedObject.kind=VirtualCluster,involvedObject.name=native',
    });
    expect(
      events.items.some(
        (ev) =>
          ev.reason === 'ComponentRestarted' &&
          ev.message?.startsWith('kube-controller-manager died and was restarted'),
      ),
      JSON.stringify(events.items.map((ev) => [ev.reason, ev.message])),
    ).toBe(true);
  });

  it('the running apiserver takes its renewed certificates up without a restart; logs and exec work', async (ctx) => {
    if (!renewal || !webPod) ctx.skip();
    const was = renewal!;
    // the kubelet client in two steps: the status names the renewed one, and the replaced one beside it while in date
    const vc = await eventually(
      async () => {
        const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'native');
        expect(v.status?.kubeletClientCertFingerprint).not.toBe(was.fingerprint);
        expect(v.status?.rotatingKubeletClientCertFingerprints).toContain(was.fingerprint);
        return v;
      },
      120_000,
      1000,
    );
    // each file the apiserver reads is a renewed one once the kubelet has rewritten the projected Secrets; a renewal
    // that rolled the apiserver instead (a new process) fails here at once
    const now = await eventually(
      () => {
        if (!containerPids(node.shimPids(), 'kube-apiserver').includes(was.pid)) return undefined;
        const pems = Object.fromEntries(RENEWED_FILES.map((f) => [f.cert, apiserverFile(was.pid, f.file)]));
        for (const f of RENEWED_FILES) expect(pems[f.cert], f.cert).not.toBe(was.pems[f.cert]);
        expect(fingerprintSha256(pems['kubelet-client']!)).toBe(vc.status?.kubeletClientCertFingerprint);
        return Object.fromEntries(RENEWED_FILES.map((f) => [f.cert, new X509Certificate(pems[f.cert]!)]));
      },
      180_000,
      2000,
    );
    if (!now) expect.fail(`the apiserver process ${was.pid} is gone: the renewal restarted the apiserver`);
    for (const f of RENEWED_FILES) {
      const before = new X509Certificate(was.pems[f.cert]!);
      expect(now[f.cert]!.serialNumber, f.cert).not.toBe(before.serialNumber);
      expect([now[f.cert]!.subject, now[f.cert]!.issuer, now[f.cert]!.subjectAltName], f.cert).toEqual([
        before.subject,
        before.issuer,
        before.subjectAltName,
      ]);
    }
    // the apiserver serves the renewed serving certificate to new connections (it reloads the file)
    const server = serverOf(readFileSync(kubeconfig, 'utf8'));
    await eventually(async () => expect((await servedBy(server)).raw).toEqual(now.apiserver!.raw), 60_000, 1000);
    // logs and exec through the vn-agent; the apiserver closes its kubelet connections when it takes the file up,
    // which can fail the one call in flight (docs/operations/certificates.md): that one is tried again
    await eventually(async () => expect(await kubectl('logs', webPod!)).toMatch(/Started HTTP server/), 20_000, 1000);
    await eventually(
      async () => expect((await kubectl('exec', webPod!, '--', 'hostname')).trim()).toBe(webPod),
      20_000,
      1000,
    );
    // the vn-agent authenticated the apiserver with the renewed kubelet client certificate: taken up, not only written
    const kubeletClientExpiry = Date.parse(now['kubelet-client']!.validTo) / 1000;
    expect(await presentedExpiries()).toContain(kubeletClientExpiry);
    // by the same process in the same Pod: no restart
    const pod = await apiserverPod();
    expect(pod.metadata?.uid).toBe(was.uid);
    expect(pod.status?.containerStatuses?.[0]?.restartCount ?? 0).toBe(was.restarts);
    expect(containerPids(node.shimPids(), 'kube-apiserver')).toEqual([was.pid]);
    // the expiries the manager reports moved to the renewed certificates', and CertificatesValid holds
    for (const f of RENEWED_FILES)
      await eventually(
        async () => expect(await tenantExpiry(f.name), f.name).toBe(Date.parse(now[f.cert]!.validTo) / 1000),
        30_000,
        1000,
      );
    const valid = (await c.get<VirtualCluster>(R.virtualclusters, 'default', 'native')).status?.conditions?.find(
      (x) => x.type === 'CertificatesValid',
    );
    expect(valid?.status, valid?.message).toBe('True');
    process.stdout.write(
      `native tenant: renewed apiserver certificates taken up and checked ${Date.now() - was.asked} ms after vc certs renew\n`,
    );
  }, 420_000);

  it("a changed spec.pkiExpireDays replaces the tenant's CAs: the old kubeconfig is refused, the new one and logs work", async (ctx) => {
    const caOf = (kc: string) =>
      Buffer.from(/certificate-authority-data: (\S+)/.exec(readFileSync(kc, 'utf8'))![1]!, 'base64').toString();
    const oldCa = caOf(kubeconfig);
    const before = (await c.get<VirtualCluster>(R.virtualclusters, 'default', 'native')).status!;
    const text = readFileSync(join(work, 'tenants/native.yaml'), 'utf8');
    writeFileSync(join(work, 'tenants/native.yaml'), text.replace('spec:\n', 'spec:\n  pkiExpireDays: 366\n'));
    await git(work, ['commit', '-qam', 'replace the native tenant CA']);
    await git(work, ['push', '-q', 'origin', 'main']);
    // the kubeconfig Secret carries the new CA once the apiserver answers with it; the tenant is Running again
    const fresh = join(dir, 'native-new.kubeconfig');
    await eventually(
      async () => {
        const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'native');
        expect(v.status?.phase, v.status?.message).toBe('Running');
        expect(v.status?.kubeletClientCertFingerprint).not.toBe(before.kubeletClientCertFingerprint);
        const secret = await c.get<KubeObject & { data: Record<string, string> }>(
          R.secrets,
          'default',
          'native-kubeconfig',
        );
        writeFileSync(fresh, Buffer.from(secret.data.kubeconfig!, 'base64'), { mode: 0o600 });
        expect(caOf(fresh)).not.toBe(oldCa);
      },
      300_000,
      2000,
    );
    const old = kubeconfig;
    kubeconfig = fresh;
    expect((await kubectl('get', 'namespaces', '-o', 'name')).split('\n')).toContain('namespace/default');
    // a kubeconfig from before no longer trusts the apiserver
    const refused = await exec(binaryPath('kubectl'), ['--kubeconfig', old, 'get', 'namespaces'], {
      timeout: 30_000,
    }).then(
      () => '',
      (err: { stderr?: string }) => err.stderr ?? '',
    );
    expect(refused).toMatch(/certificate signed by unknown authority/);
    // the vn-agent accepts the apiserver's new kubelet client certificate, which the status now names
    if (!webPod) ctx.skip();
    await eventually(async () => expect(await kubectl('logs', webPod!)).toMatch(/Started HTTP server/), 60_000, 2000);
  });

  it('removing the tenant file removes Pods, Services, Secrets, namespaces and etcd data, in the super and on the host', async () => {
    const node = e!.superCluster.realNodes[0]!;
    await git(work, ['rm', '-q', 'tenants/native.yaml']);
    await git(work, ['commit', '-qm', 'remove the native tenant']);
    await git(work, ['push', '-q', 'origin', 'main']);
    // one of three tenants is more than GitOps deletes unasked (25 %): confirm this revision's deletion
    const revision = (await git(work, ['rev-parse', 'HEAD'])).trim();
    await c.patch(
      GITSOURCES,
      'default',
      'tenants',
      { metadata: { annotations: { [ANN.confirmDeletion]: revision } } },
      'merge',
    );
    await eventually(
      async () => expect(await c.getOrNull(R.virtualclusters, 'default', 'native')).toBeNull(),
      120_000,
      500,
    );
    expect(await c.getOrNull(R.namespaces, undefined, root)).toBeNull();
    expect((await c.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${root}` })).items).toEqual([]);
    for (const r of [R.pods, R.services, R.secrets, R.statefulsets])
      expect((await c.list(r, { labelSelector: `${LABEL.cluster}=${root}` })).items, r.resource).toEqual([]);
    expect((await c.list(R.pods, { labelSelector: 'app=web' })).items).toEqual([]);
    expect(await c.getOrNull(R.secrets, 'default', 'native-kubeconfig')).toBeNull();
    // on the host: etcd's data directory, the Pods' kubelet directories and their sandboxes are gone
    expect(existsSync(join(dir, 'state/native', root))).toBe(false);
    await eventually(async () => {
      for (const uid of superPodUids) expect(existsSync(join(node.opts.dir, 'kubelet/pods', uid)), uid).toBe(false);
      // the sample tenants' Pods (their DNS servers) run on the real node too: only this tenant's must be gone
      const left = (await criSandboxes(containerdSocket(node.opts.dir))).filter(
        (x) => superPodUids.includes(x.uid) || x.namespace === root || x.namespace.startsWith(`${root}-`),
      );
      expect(left).toEqual([]);
    }, 60_000);
    expect(Object.keys(containerRss(node.shimPids()))).toEqual([]);
  });

  describe('reached through a NodePort on the real node', () => {
    beforeAll(async () => {
      await c.create(R.tenantpolicies, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'exposed' },
        spec: {
          grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
          controlPlane: { expose: { allowedTypes: ['NodePort'] } },
          pods: {
            forced: {
              nodeSelector: { [REAL_NODE_LABEL]: 'true' },
              tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
            },
          },
        },
      });
    });

    it('writes a kubeconfig for <node address>:<nodePort> that kubectl uses from this host', async () => {
      const created = await c.create<VirtualCluster>(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: 'edge', namespace: 'default' },
        spec: { provisioner: { type: 'native' }, policyName: 'exposed', apiServer: { expose: { type: 'NodePort' } } },
      });
      const started = Date.now();
      const vc = await eventually(
        async () => {
          const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'edge');
          expect(v.status?.phase, v.status?.message).toBe('Running');
          return v;
        },
        240_000,
        500,
      );
      const edgeRoot = rootNamespace('default', 'edge', created.metadata!.uid!);
      const svc = await c.get<KubeObject & { spec: { type: string; ports: Array<{ nodePort?: number }> } }>(
        R.services,
        edgeRoot,
        'apiserver',
      );
      expect(svc.spec.type).toBe('NodePort');
      const nodePort = svc.spec.ports[0]!.nodePort!;
      expect(nodePort).toBeGreaterThanOrEqual(30000);
      const server = `https://${node.nodeIP}:${nodePort}`;
      expect(vc.status?.conditions?.find((x) => x.type === 'Exposed')).toMatchObject({
        status: 'True',
        reason: 'NodePort',
        message: `reached from outside the super cluster at ${server}`,
      });

      const secret = await c.get<KubeObject & { data: Record<string, string> }>(
        R.secrets,
        'default',
        'edge-kubeconfig',
      );
      const people = Buffer.from(secret.data.kubeconfig!, 'base64').toString('utf8');
      const manager = Buffer.from(secret.data[MANAGER_KUBECONFIG_KEY]!, 'base64').toString('utf8');
      expect(serverOf(people)).toBe(server);
      expect(serverOf(manager)).not.toBe(server);

      const file = join(dir, 'edge.kubeconfig');
      writeFileSync(file, people, { mode: 0o600 });
      const out = await eventually(
        async () =>
          (
            await exec(binaryPath('kubectl'), ['--kubeconfig', file, 'get', 'namespaces', '-o', 'name'], {
              timeout: 30_000,
            })
          ).stdout,
        60_000,
        1000,
      );
      expect(out.split('\n')).toEqual(expect.arrayContaining(['namespace/default', 'namespace/kube-system']));
      process.stdout.write(
        `NodePort tenant: Running ${Date.now() - started} ms after create; kubectl through ${server}\n`,
      );

      await c.delete(R.virtualclusters, 'default', 'edge');
      await eventually(
        async () => expect(await c.getOrNull(R.virtualclusters, 'default', 'edge')).toBeNull(),
        120_000,
        500,
      );
      expect(await c.getOrNull(R.namespaces, undefined, edgeRoot)).toBeNull();
    });
  });

  nativeHaSuite(() => ({ e: e!, c, dir }));

  describe("renewing the real node's certificates", () => {
    it(
      'renews the client and kubelet serving certificates while kubelet and kube-proxy keep running, and the node serves past the first expiry',
      async () => {
        expect(pids.kubelet).toBeDefined();
        // each was renewed about a minute after issue, with the same subject
        for (const n of CERT_CLIENTS)
          await eventually(
            () => {
              const now = cert(n);
              expect(now.serialNumber, n).not.toBe(firstCerts[n]!.serialNumber);
              expect(now.subject).toBe(firstCerts[n]!.subject);
            },
            4 * 60_000,
            1000,
          );
        // the kubelet's serving certificate too: the kubelet reloads its file and presents the renewed one
        const firstServing = firstCerts[KUBELET_SERVING.name]!;
        await eventually(
          async () => {
            const now = await served();
            expect(now.serialNumber, 'kubelet serving').not.toBe(firstServing.serialNumber);
            expect([now.subject, now.subjectAltName]).toEqual([firstServing.subject, firstServing.subjectAltName]);
          },
          4 * 60_000,
          1000,
        );
        const text = await metrics.getSingleMetricAsString('vc_real_node_certificate_expiry_timestamp_seconds');
        for (const n of CERT_CLIENTS) {
          const line = text.split('\n').find((l) => l.includes(`node="${node.name}"`) && l.includes(`"${n}"`));
          expect(Number(line?.split(' ').pop()), n).toBe(Date.parse(cert(n).validTo) / 1000);
        }
        // the Node shows the condition as tenants do, beside the kubelet's own
        await eventually(
          async () => {
            const n = await c.get<KubeObject & { status?: { conditions?: Array<Record<string, string>> } }>(
              R.nodes,
              undefined,
              node.name,
            );
            expect(n.status?.conditions?.map((x) => x.type)).toContain('Ready');
            expect(n.status?.conditions?.find((x) => x.type === 'CertificatesValid')).toMatchObject({
              status: 'True',
              reason: 'CertificatesCurrent',
              message: expect.stringMatching(/^earliest expiry: /),
            });
          },
          90_000,
          1000,
        );
        // past the first certificates' end
        const expiry = Math.max(...CERT_FILES.map((f) => Date.parse(firstCerts[f.name]!.validTo)));
        await new Promise((r) => setTimeout(r, Math.max(0, expiry - Date.now() + 15_000)));
        expect({ kubelet: node.kubelet.pid, kubeProxy: node.kubeProxy.pid }).toEqual(pids);
        // a verifying client still reaches the kubelet (served() verifies the chain, the address and the dates)
        expect(Date.parse((await served()).validTo)).toBeGreaterThan(Date.now());
        // the kubelet: its Lease renewed after the expiry, and a Pod created now runs
        await eventually(
          async () => {
            const lease = await c.get<KubeObject & { spec?: { renewTime?: string } }>(
              R.leases,
              'kube-node-lease',
              node.name,
            );
            expect(Date.parse(lease.spec!.renewTime!)).toBeGreaterThan(expiry);
          },
          60_000,
          1000,
        );
        await c.create(R.pods, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'after', namespace: 'default', labels: { app: 'after' } },
          spec: {
            nodeSelector: { [REAL_NODE_LABEL]: 'true' },
            tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
            terminationGracePeriodSeconds: 1,
            containers: [
              { name: 'c', image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] },
            ],
          },
        });
        await eventually(
          async () => expect((await c.get<Pod>(R.pods, 'default', 'after')).status?.phase).toBe('Running'),
          90_000,
          1000,
        );
        // kube-proxy: a Service created now gets its rules
        const svc = await c.create<KubeObject & { spec?: { clusterIP?: string } }>(R.services, {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'after', namespace: 'default' },
          spec: { selector: { app: 'after' }, ports: [{ port: 80, targetPort: 8080 }] },
        });
        await eventually(
          async () =>
            expect((await exec('iptables-save', ['-t', 'nat'])).stdout).toContain(`${svc.spec!.clusterIP}/32`),
          60_000,
          1000,
        );
        expect({ kubelet: node.kubelet.pid, kubeProxy: node.kubeProxy.pid }).toEqual(pids);
      },
      15 * 60_000,
    );
  });
});
