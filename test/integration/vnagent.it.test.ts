import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { LABEL, rootNamespace, stampOwnership, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { generateControlPlanePKI } from '../../core/pki/controlplane.ts';
import { createCA, fingerprintSha256, issueCert, issueNodeCert, type CertKeyPair } from '../../core/pki/pki.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { startVnAgent, type VnAgent } from '../../core/vnagent/agent.ts';
import { VirtualClusterDirectory } from '../../core/vnagent/directory.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { vnAgentMetrics } from '../../core/vnagent/metrics.ts';
import { InformerSuperView } from '../../core/vnagent/superview.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, type TestSuper, tenantFor } from '../harness.ts';
import { logsOverGet, logsOverWebSocket } from '../podlogs.ts';
import { Attempts } from '../security/attempts.ts';

/** STREAMS_PER_TENANT is the agent's stream limit per tenant here: small, so a test can reach it with kubectl. */
const STREAMS_PER_TENANT = 4;

interface Pod extends KubeObject {
  spec: { nodeName?: string; containers: Array<{ name: string; image: string }> };
  status?: { phase?: string };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  ms: number;
}

const children = new Set<ChildProcess>();

/** kubectl runs the real kubectl against a tenant's own apiserver and waits for it (killed after timeoutMs). */
function kubectl(cp: LocalControlPlane, args: string[], timeoutMs = 60_000): Promise<Run> {
  const started = Date.now();
  const child = spawn(binaryPath('kubectl'), ['--kubeconfig', cp.kubeconfigPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stdout, stderr, timedOut, ms: Date.now() - started });
    });
  });
}

/** background starts a long-running kubectl (logs -f, attach, port-forward) and collects its output. */
function background(
  cp: LocalControlPlane,
  args: string[],
): { child: ChildProcess; out: () => string; err: () => string } {
  const child = spawn(binaryPath('kubectl'), ['--kubeconfig', cp.kubeconfigPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('close', () => children.delete(child));
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return { child, out: () => out, err: () => err };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'close');
}

/** portForwardRefusal runs `kubectl port-forward` and returns what kubectl says once it gives up (it may listen first). */
async function portForwardRefusal(cp: LocalControlPlane, pod: string): Promise<{ code: number | null; err: string }> {
  const pf = background(cp, ['port-forward', `pod/${pod}`, ':8080']);
  try {
    const outcome = await eventually(
      () => {
        if (pf.child.exitCode !== null) return 'exited' as const;
        expect(pf.out()).toMatch(/127\.0\.0\.1:\d+ ->/);
        return 'listening' as const;
      },
      30_000,
      100,
    );
    if (outcome === 'listening') {
      // kubectl opened a local port without a tunnel yet: the first connection carries the refusal.
      const s = net.connect(Number(/127\.0\.0\.1:(\d+) ->/.exec(pf.out())![1]), '127.0.0.1');
      s.on('error', () => undefined);
      s.write('x');
      await Promise.race([once(s, 'close'), once(pf.child, 'close')]);
      s.destroy();
      await eventually(() => expect(pf.err()).not.toBe(''), 20_000, 100);
    }
    return { code: pf.child.exitCode, err: pf.err() };
  } finally {
    await stop(pf.child);
  }
}

/** simulated is the reason kubectl shows for a kubelet stream to a Pod on a kwok node. */
const simulated = (verb: string, pod: string) =>
  new RegExp(`${verb} is not available: pod default/${pod} runs on simulated node \\S+ \\(no container runtime\\)`);

interface Reply {
  status: number;
  body: string;
}

describe('vn-agent: tenant kubectl logs through real apiservers to kwok; exec/attach/port-forward refused there', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let syncer: Syncer;
  let agent: VnAgent;
  let directory: StaticTenantDirectory;
  let registry: MutableTenantRegistry;
  const dropServers: net.Server[] = [];

  const pki = (cp: LocalControlPlane, name: string): CertKeyPair => ({
    certPem: readFileSync(join(cp.dir, `pki/${name}.crt`), 'utf8'),
    keyPem: readFileSync(join(cp.dir, `pki/${name}.key`), 'utf8'),
  });
  const tenantOf = (cp: LocalControlPlane, vcNamespace: string, vcName: string, uid: string, port: number): Tenant =>
    tenantFor(cp, vcNamespace, vcName, uid, { pluginConfig: { nodes: { vnAgent: { port } } } });
  const directoryEntry = (cp: LocalControlPlane, tenant: Tenant) => ({
    key: tenant.key,
    vcName: tenant.vcName,
    vcNamespace: tenant.vcNamespace,
    caPem: cp.caPem,
    fingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
  });

  /** direct calls the agent the way a tenant apiserver does, with the given client certificate. */
  function direct(path: string, cert: CertKeyPair | undefined): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: agent.port,
          path,
          rejectUnauthorized: false,
          agent: false,
          ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.setTimeout(20_000, () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });
  }

  const pod = (name: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  });

  async function runningPods(c: KubeClient, names: string[]): Promise<void> {
    // The service account controller creates `default` a moment after the control plane starts.
    await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000);
    for (const n of names) await c.create(R.pods, pod(n));
    await eventually(async () => {
      for (const n of names) {
        const p = await c.get<Pod>(R.pods, 'default', n);
        expect(p.status?.phase).toBe('Running');
        expect(p.spec.nodeName).toBeTruthy();
      }
    }, 90_000);
  }

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 2 });
    [cpA, cpB] = await Promise.all([
      t.sc.addControlPlane('tenant-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    a = await cpA.client();
    b = await cpB.client();

    // The agent's own identity towards kubelets: a client certificate from the super cluster's CA.
    const superCA = { certPem: t.sc.cluster.caPem, keyPem: readFileSync(join(t.sc.cluster.dir, 'pki/ca.key'), 'utf8') };
    const agentClient = await issueCert(superCA, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 1 });
    const servingCA = await createCA('vn-agent-serving-ca', 1);
    const serving = await issueCert(servingCA, {
      commonName: 'vc-vn-agent',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 1,
    });
    directory = new StaticTenantDirectory();
    const plugins = await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins });
    expect(plugins.failures).toEqual([]);
    agent = await startVnAgent({
      host: '127.0.0.1',
      port: 0,
      serving,
      directory,
      superView: new InformerSuperView({ client: t.client }),
      plugins,
      kubelet: { certPem: agentClient.certPem, keyPem: agentClient.keyPem, insecureSkipVerify: true },
      ops: { port: 0 },
      handshakeTimeoutMs: 10_000,
      limits: { perTenant: STREAMS_PER_TENANT },
    });

    tenantA = tenantOf(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-00000000000a', agent.port);
    tenantB = tenantOf(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-00000000000b', agent.port);
    directory.upsert(directoryEntry(cpA, tenantA));
    directory.upsert(directoryEntry(cpB, tenantB));
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: (registry = new MutableTenantRegistry([tenantA, tenantB])),
      patrolIntervalMs: 0,
      workers: 8,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
    await Promise.all([runningPods(a, ['app-a', 'app-a2']), runningPods(b, ['app-b'])]);
  });

  afterAll(async () => {
    attempts.report('vn-agent streams');
    for (const c of children) c.kill('SIGKILL');
    for (const s of dropServers) s.close();
    await syncer?.stop();
    await agent?.stop();
    await t?.stop();
  });

  it('binds tenant Pods to vNodes whose kubelet endpoint is the vn-agent', async () => {
    const p = await a.get<Pod>(R.pods, 'default', 'app-a');
    const vn = await a.get<
      KubeObject & {
        status: {
          addresses: Array<{ type: string; address: string }>;
          daemonEndpoints: { kubeletEndpoint: { Port: number } };
        };
      }
    >(R.nodes, undefined, p.spec.nodeName!);
    expect(vn.status.daemonEndpoints.kubeletEndpoint.Port).toBe(agent.port);
    expect(vn.status.addresses).toContainEqual({ type: 'InternalIP', address: '127.0.0.1' });
  });

  it('kubectl logs returns the container log kwok serves', async () => {
    const r = await kubectl(cpA, ['logs', 'app-a', '-c', 'c']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('kwok fake container log line 1');
    expect(r.stdout).toContain('kwok fake container log line 3');
    const tail = await kubectl(cpB, ['logs', 'app-b', '--tail=1']);
    expect(tail.stdout.trim()).toBe('kwok fake container log line 3');
  });

  it('kubectl logs -f streams: the first lines arrive while the stream stays open, and new lines follow', async () => {
    const f = background(cpA, ['logs', '-f', 'app-a']);
    try {
      await eventually(() => expect(f.out()).toContain('kwok fake container log line 3'), 30_000, 100);
      expect(f.child.exitCode).toBeNull();
      const logFile = join(t.sc.cluster.dir, 'kwok/container.log');
      appendFileSync(logFile, `${new Date().toISOString()} stdout F followed line\n`);
      await eventually(() => expect(f.out()).toContain('followed line'), 30_000, 100);
      expect(f.child.exitCode).toBeNull();
    } finally {
      await stop(f.child);
    }
    await eventually(async () =>
      expect(await metricsRegistry.getSingleMetricAsString('vc_vnagent_active_streams')).not.toMatch(
        /kind="containerLogs"} [1-9]/,
      ),
    );
  });

  it('kubectl exec to a Pod on a simulated node is refused with the reason, and runs nothing on the host', async () => {
    const marker = join(t.stateDir, 'exec-ran-on-host');
    const r = await kubectl(cpA, ['exec', 'app-a', '--', 'sh', '-c', `echo hello; touch ${marker}`]);
    expect(r.timedOut).toBe(false);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(simulated('exec', 'app-a'));
    expect(existsSync(marker)).toBe(false);
  });

  it('kubectl attach to a Pod on a simulated node is refused with the reason', async () => {
    const r = await kubectl(cpA, ['attach', 'app-a', '-c', 'c'], 30_000);
    expect(r.timedOut).toBe(false);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(simulated('attach', 'app-a'));
  });

  it('kubectl port-forward to a Pod on a simulated node is refused with the reason', async () => {
    const r = await portForwardRefusal(cpA, 'app-a');
    expect(r.err).toMatch(simulated('port-forward', 'app-a'));
  });

  it('serves several concurrent streams from both tenants', async () => {
    const started = Date.now();
    const follows = [background(cpA, ['logs', '-f', 'app-a2']), background(cpB, ['logs', '-f', 'app-b'])];
    await eventually(
      () => {
        for (const f of follows) expect(f.out()).toContain('kwok fake container log line 1');
      },
      30_000,
      100,
    );
    const streams = await metricsRegistry.getSingleMetricAsString('vc_vnagent_active_streams');
    for (const k of [tenantA.key, tenantB.key])
      expect(streams).toMatch(new RegExp(`tenant="${k}",kind="containerLogs"} [1-9]`));
    const results = await Promise.all([
      kubectl(cpA, ['logs', 'app-a']),
      kubectl(cpA, ['logs', 'app-a2']),
      kubectl(cpB, ['logs', 'app-b']),
    ]);
    for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    for (const r of results) expect(r.stdout).toContain('kwok fake container log line 1');
    const refusals = await Promise.all([
      kubectl(cpA, ['exec', 'app-a2', '--', 'echo', 'hi']),
      kubectl(cpB, ['exec', 'app-b', '--', 'echo', 'hi']),
    ]);
    expect(refusals.map((r) => r.stderr)).toEqual([
      expect.stringMatching(simulated('exec', 'app-a2')),
      expect.stringMatching(simulated('exec', 'app-b')),
    ]);
    for (const f of follows) expect(f.child.exitCode).toBeNull();
    await Promise.all(follows.map((f) => stop(f.child)));
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it("refuses a tenant's streams over its limit with 429 and the reason, while the other tenant's logs flow", async () => {
    // Tenant A holds every stream its limit allows, with `kubectl logs -f` as a flooding tenant would.
    const follows = Array.from({ length: STREAMS_PER_TENANT }, () => background(cpA, ['logs', '-f', 'app-a']));
    try {
      await eventually(
        () => {
          for (const f of follows) expect(f.out()).toContain('kwok fake container log line 1');
        },
        60_000,
        100,
      );
      await attempts.attempt('more log streams than the tenant may hold on a vn-agent', async () => {
        const over = await kubectl(cpA, ['logs', 'app-a']);
        expect(over.code).not.toBe(0);
        expect(over.stderr).toContain('TooManyRequests');
        // The tenant apiserver turns the agent's 429 into its generic TooManyRequests Status; the agent's own answer,
        // asked as the apiserver asks it, carries the reason.
        const answer = await direct('/containerLogs/default/app-a/c', pki(cpA, 'kubelet-client'));
        expect(answer).toEqual({
          status: 429,
          body:
            `too many streams: tenant ${tenantA.key} has ${STREAMS_PER_TENANT} requests and streams open on this ` +
            `vn-agent, its limit (streamsPerTenant ${STREAMS_PER_TENANT}); close some (kubectl logs -f, exec, ` +
            'port-forward) or retry later\n',
        });
        return answer.body.trim();
      });
      const other = await kubectl(cpB, ['logs', 'app-b']);
      expect({ code: other.code, stderr: other.stderr }).toEqual({ code: 0, stderr: '' });
      expect(other.stdout).toContain('kwok fake container log line 1');
      expect(await metricsRegistry.getSingleMetricAsString('vc_vnagent_requests_total')).toMatch(
        new RegExp(`tenant="${tenantA.key}",kind="containerLogs",result="throttled"} [1-9]`),
      );
    } finally {
      await Promise.all(follows.map((f) => stop(f.child)));
    }
    // The limit counts what is open: once A's streams end, A is served again.
    await eventually(async () => {
      const again = await kubectl(cpA, ['logs', 'app-a']);
      expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    });
  });

  it("refuses tenant A's apiserver certificate asking for tenant B's pod (403), however the path is crafted", async () => {
    const certA = pki(cpA, 'kubelet-client');
    expect(await direct('/containerLogs/default/app-b/c', certA)).toEqual({
      status: 403,
      body: 'pod default/app-b not found for this tenant\n',
    });
    const bNs = superNamespace(tenantB.key, 'default');
    expect((await direct(`/containerLogs/${bNs}/app-b/c`, certA)).status).toBe(403);
    expect((await direct(`/exec/${bNs}/app-b/c?command=ls&output=1`, certA)).status).toBe(403);
    // B's own certificate gets B's pod.
    const own = await direct('/containerLogs/default/app-b/c', pki(cpB, 'kubelet-client'));
    expect(own.status).toBe(200);
    expect(own.body).toContain('kwok fake container log line 1');
  });

  it("refuses a super Pod in the tenant's namespace that the syncer did not write for this tenant", async () => {
    const ns = superNamespace(tenantA.key, 'default');
    const planted: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'planted', namespace: ns },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    };
    stampOwnership(planted, tenantB, { metadata: { namespace: 'default', name: 'planted', uid: 'x' } });
    await t.client.create(R.pods, planted);
    await t.client.create(R.pods, { ...planted, metadata: { name: 'unowned', namespace: ns } });
    const certA = pki(cpA, 'kubelet-client');
    expect(await direct('/containerLogs/default/planted/c', certA)).toMatchObject({ status: 403 });
    expect(await direct('/containerLogs/default/unowned/c', certA)).toMatchObject({ status: 403 });
  });

  it('a tenant apiserver that verifies kubelets refuses a vn-agent serving certificate of another CA', async () => {
    // Tenant C's apiserver trusts only the super cluster's CA for kubelets; this agent serves a certificate of its
    // own serving CA, as a stolen or forged agent would: the apiserver must not send the request on.
    const cpC = await t.sc.addControlPlane('tenant-c', {
      controllers: TENANT_CONTROLLERS,
      apiserverExtraArgs: { 'kubelet-certificate-authority': join(t.sc.cluster.dir, 'pki/ca.crt') },
    });
    const tenantC = tenantOf(cpC, 'team-c', 'c', '33333333-cccc-4ccc-8ccc-00000000000c', agent.port);
    try {
      directory.upsert(directoryEntry(cpC, tenantC));
      registry.upsert(tenantC);
      await runningPods(await cpC.client(), ['app-c']);
      const r = await kubectl(cpC, ['logs', 'app-c']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/x509: certificate signed by unknown authority/);
      expect(r.stdout).toBe('');
      // Refused in the TLS handshake: the agent never handled a request of tenant C.
      const ofC = (await vnAgentMetrics.requests.get()).values.filter((v) => v.labels.tenant === tenantC.key);
      expect(ofC.reduce((n, v) => n + v.value, 0)).toBe(0);
      // The same Pod's logs through an apiserver that does not verify (tenant A's flags) work: it is the certificate.
      const ok = await kubectl(cpA, ['logs', 'app-a']);
      expect(ok.code, ok.stderr).toBe(0);
    } finally {
      registry.remove(tenantC.key);
      directory.remove(tenantC.key);
    }
  });

  it('refuses a self-signed certificate (401), a tenant admin certificate (403), and no certificate (401)', async () => {
    const self = await createCA('kube-apiserver-kubelet-client', 1);
    expect(await direct('/containerLogs/default/app-a/c', self)).toMatchObject({
      status: 401,
      body: expect.stringMatching(/self-signed/),
    });
    expect(await direct('/containerLogs/default/app-a/c', pki(cpA, 'admin'))).toMatchObject({ status: 403 });
    expect(await direct('/containerLogs/default/app-a/c', undefined)).toMatchObject({ status: 401 });
    expect(await direct('/pods', pki(cpA, 'kubelet-client'))).toMatchObject({ status: 403 });
  });

  it('refuses a tenant removed from the directory, through its own apiserver too, and serves it again once back', async () => {
    directory.remove(tenantB.key);
    expect(await direct('/containerLogs/default/app-b/c', pki(cpB, 'kubelet-client'))).toMatchObject({ status: 401 });
    const logs = await kubectl(cpB, ['logs', 'app-b'], 30_000);
    expect(logs.timedOut).toBe(false);
    expect(logs.code).not.toBe(0);
    expect(logs.stdout).toBe('');
    // The tenant apiserver relays the agent's 401 as is; kubectl words it as a credentials problem.
    expect(logs.stderr).toMatch(/provide credentials/);
    const ex = await kubectl(cpB, ['exec', 'app-b', '--', 'echo', 'hello'], 30_000);
    expect(ex.timedOut).toBe(false);
    expect(ex.code).not.toBe(0);
    expect(ex.stdout).not.toContain('hello');
    directory.upsert(directoryEntry(cpB, tenantB));
    expect((await kubectl(cpB, ['logs', 'app-b'])).stdout).toContain('kwok fake container log line 1');
  });

  it('gives kubectl a clean error, not a hang, when the kubelet drops the connection', async () => {
    const dropper = net.createServer((s) => s.destroy());
    dropServers.push(dropper);
    dropper.listen(0, '127.0.0.1');
    await once(dropper, 'listening');
    const dropPort = (dropper.address() as net.AddressInfo).port;
    const p = await a.get<Pod>(R.pods, 'default', 'app-a');
    const node = p.spec.nodeName!;
    const before = await t.client.get<
      KubeObject & { status: { daemonEndpoints: { kubeletEndpoint: { Port: number } } } }
    >(R.nodes, undefined, node);
    const kwokPort = before.status.daemonEndpoints.kubeletEndpoint.Port;
    const setPort = (Port: number) =>
      t.client.patch(
        R.nodes,
        undefined,
        node,
        { status: { daemonEndpoints: { kubeletEndpoint: { Port } } } },
        'merge',
        { subresource: 'status' },
      );
    // The node stops looking simulated for a moment, so exec and port-forward are relayed, to a kubelet that drops them.
    const setSimulated = (on: boolean) =>
      t.client.patch(
        R.nodes,
        undefined,
        node,
        {
          metadata: { annotations: { 'kwok.x-k8s.io/node': on ? 'fake' : null }, labels: { type: on ? 'kwok' : null } },
        },
        'merge',
      );
    await setSimulated(false);
    await setPort(dropPort);
    try {
      const certA = pki(cpA, 'kubelet-client');
      await eventually(
        async () =>
          expect(await direct('/containerLogs/default/app-a/c', certA)).toMatchObject({
            status: 502,
            body: expect.stringMatching(/closed the connection/),
          }),
        30_000,
      );
      const logs = await kubectl(cpA, ['logs', 'app-a'], 30_000);
      expect(logs.timedOut).toBe(false);
      expect(logs.code).not.toBe(0);
      const ex = await kubectl(cpA, ['exec', 'app-a', '--', 'echo', 'hello'], 30_000);
      expect(ex.timedOut).toBe(false);
      expect(ex.code).not.toBe(0);
      expect(ex.stdout).toBe('');
      expect(logs.stderr).toContain('closed the connection');
      expect(ex.stderr).toContain('closed the connection');
      // kubectl port-forward opens its tunnel first: it exits with the reason instead of listening.
      const pf = background(cpA, ['port-forward', 'pod/app-a', ':8080']);
      try {
        const outcome = await eventually(
          () => {
            if (pf.child.exitCode !== null) return 'exited' as const;
            expect(pf.out()).toMatch(/127\.0\.0\.1:\d+ ->/);
            return 'listening' as const;
          },
          30_000,
          100,
        );
        if (outcome === 'exited') {
          expect(pf.child.exitCode).not.toBe(0);
          expect(pf.err()).toContain('closed the connection');
        } else {
          const s = net.connect(Number(/127\.0\.0\.1:(\d+) ->/.exec(pf.out())![1]), '127.0.0.1');
          s.on('error', () => undefined);
          s.write('x');
          // The forwarded connection is closed (or kubectl gives up) instead of hanging.
          await Promise.race([once(s, 'close'), once(pf.child, 'close')]);
          s.destroy();
        }
      } finally {
        await stop(pf.child);
      }
    } finally {
      await setSimulated(true);
      await setPort(kwokPort);
    }
    await eventually(
      async () => expect((await kubectl(cpA, ['logs', 'app-a'])).stdout).toContain('kwok fake container log line 1'),
      30_000,
    );
  });

  it('follows VirtualCluster objects of the meta cluster: Running tenants in, failed and deleted ones out', async () => {
    for (const d of parseAllDocuments(
      readFileSync(join(import.meta.dirname, '../../deploy/crds/virtualclusters.yaml'), 'utf8'),
    )) {
      await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.virtualclusters, { namespace: 'default' }));
    await t.client.apply(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }, 'test');
    const vc = await t.client.create<KubeObject>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'a', namespace: 'team-a' },
      spec: { provisioner: { type: 'local' } },
    });
    // The directory keys the tenant by the VirtualCluster's metadata (namespace, name, uid) and accepts only a CA named
    // after that key, as the manager's PKI names it: the control plane behind this VirtualCluster is started under it.
    const keyFromMetadata = rootNamespace('team-a', 'a', vc.metadata!.uid!);
    // The agent reads only this tenant's certificates (its CA in the ConfigMap, its kubelet client certificate's
    // fingerprint in status, its admin certificate as a caller): a PKI of that name, with no apiserver running on it.
    const pkiC = await generateControlPlanePKI({
      clusterName: keyFromMetadata,
      serviceIP: '10.96.0.1',
      apiserverDnsNames: [],
      apiserverIPs: [],
      validityDays: 1,
    });
    await t.client.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'a-tenant-ca',
        namespace: 'team-a',
        labels: { [LABEL.managedBy]: 'vc-manager' },
        ownerReferences: [
          {
            apiVersion: 'tenancy.x-k8s.io/v1alpha1',
            kind: 'VirtualCluster',
            name: 'a',
            uid: vc.metadata?.uid,
            controller: true,
          },
        ],
      },
      data: { 'ca.crt': pkiC.ca.certPem },
    });
    // Whatever its status says, the tenant's super Pod is where the syncer would have put it for the key from metadata,
    // on the node of the first tenant's app-a.
    const superNs = superNamespace(keyFromMetadata, 'default');
    const nodeName = (await t.client.get<Pod>(R.pods, superNamespace(tenantA.key, 'default'), 'app-a')).spec.nodeName;
    await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: superNs } });
    const planted: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app-a', namespace: superNs },
      spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] },
    };
    stampOwnership(
      planted,
      { key: keyFromMetadata, vcName: 'a', vcNamespace: 'team-a' },
      { metadata: { namespace: 'default', name: 'app-a', uid: 'x' } },
    );
    await t.client.create(R.pods, planted);
    const setStatus = (phase: string) =>
      t.client.patch(
        R.virtualclusters,
        'team-a',
        'a',
        {
          status: {
            phase,
            clusterNamespace: tenantA.key,
            kubeconfigSecretName: 'a-kubeconfig',
            kubeletClientCertFingerprint: pkiC.kubeletClientFingerprint,
          },
        },
        'merge',
        { subresource: 'status' },
      );
    await setStatus('Provisioning');
    const servingCA = await createCA('vn-agent-serving-ca-2', 1);
    const serving = await issueCert(servingCA, {
      commonName: 'vc-vn-agent',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 1,
    });
    const agent2 = await startVnAgent({
      host: '127.0.0.1',
      port: 0,
      serving,
      directory: new VirtualClusterDirectory({ meta: t.client }),
      superView: new InformerSuperView({ client: t.client }),
      plugins: await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins }),
      kubelet: { insecureSkipVerify: true },
    });
    const via2 = (cert: CertKeyPair): Promise<Reply> =>
      new Promise((resolve, reject) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: agent2.port,
            path: '/containerLogs/default/app-a/c',
            rejectUnauthorized: false,
            agent: false,
            cert: cert.certPem,
            key: cert.keyPem,
          },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      const certA = pkiC.kubeletClient;
      expect(await via2(certA)).toMatchObject({ status: 401 });
      await setStatus('Running');
      await eventually(async () =>
        expect(await via2(certA)).toMatchObject({
          status: 200,
          body: expect.stringContaining('kwok fake container log line 1'),
        }),
      );
      expect(await via2(pki(cpB, 'kubelet-client'))).toMatchObject({ status: 401 });
      expect(await via2(pki(cpA, 'kubelet-client'))).toMatchObject({ status: 401 });
      expect(await via2(pkiC.admin)).toMatchObject({ status: 403 });
      await setStatus('Error');
      await eventually(async () => expect(await via2(certA)).toMatchObject({ status: 401 }));
      await setStatus('Running');
      await eventually(async () => expect((await via2(certA)).status).toBe(200));
      await t.client.delete(R.virtualclusters, 'team-a', 'a', { uid: vc.metadata?.uid });
      await eventually(async () => expect(await via2(certA)).toMatchObject({ status: 401 }));
    } finally {
      await agent2.stop();
    }
  });

  it('ships manifests the apiserver accepts (server-side dry run)', async () => {
    const kinds: Record<string, (typeof R)[keyof typeof R]> = {
      ServiceAccount: R.serviceaccounts,
      ClusterRole: R.clusterroles,
      ClusterRoleBinding: R.clusterrolebindings,
      ConfigMap: R.configmaps,
      DaemonSet: R.daemonsets,
    };
    const seen: string[] = [];
    for (const f of ['rbac.yaml', 'daemonset.yaml']) {
      for (const d of parseAllDocuments(readFileSync(join(import.meta.dirname, '../../deploy/vn-agent', f), 'utf8'))) {
        const o = d.toJS() as KubeObject;
        seen.push(o.kind!);
        // The component's own namespace is created for real: the dry runs of the objects in it need it to exist.
        if (o.kind === 'Namespace') {
          await t.client.apply(R.namespaces, o, 'test');
          continue;
        }
        const r = kinds[o.kind!];
        expect(r, `${f}: ${o.kind}`).toBeDefined();
        await t.client.create(r!, o, { dryRun: true });
      }
    }
    expect(seen.sort()).toEqual([
      'ClusterRole',
      'ClusterRole',
      'ClusterRoleBinding',
      'ClusterRoleBinding',
      'ConfigMap',
      'DaemonSet',
      'Namespace',
      'ServiceAccount',
    ]);
  });

  it('runs as `vc vn-agent --config` against the meta and super clusters', async () => {
    const dir = join(t.stateDir, 'vn-agent-cli');
    const cfg = join(t.stateDir, 'vn-agent.yaml');
    // The node's credential as the kubelet keeps it: certificate and key in one file.
    const [node0, node1] = t.sc.cluster.kwokNodeNames as [string, string];
    const nodeCred = join(t.stateDir, 'kubelet-client-current.pem');
    const n0 = await issueNodeCert(t.sc.cluster.ca, node0, 1);
    writeFileSync(nodeCred, `${n0.certPem}${n0.keyPem}`, { mode: 0o600 });
    const config = (nodeName: string) =>
      [
        'apiVersion: tenancy.x-k8s.io/v1alpha1',
        'kind: VnAgentConfiguration',
        'host: 127.0.0.1',
        'port: 0',
        `stateDir: ${dir}`,
        `metaKubeconfig: ${t.sc.kubeconfigPath}`,
        `superKubeconfig: ${t.sc.kubeconfigPath}`,
        `nodeName: ${nodeName}`,
        `nodeClientCert: ${nodeCred}`,
        'kubeletInsecureSkipVerify: true',
        'ops: { port: 0 }',
      ].join('\n');
    // Another node's credential is refused at start, naming the file and both nodes.
    writeFileSync(cfg, config(node1));
    const wrong = spawn(
      process.execPath,
      [join(import.meta.dirname, '../../core/programs/cli/vc.mjs'), 'vn-agent', '--config', cfg],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.add(wrong);
    let wrongErr = '';
    wrong.stderr.on('data', (c: Buffer) => (wrongErr += c.toString()));
    const [wrongCode] = (await once(wrong, 'close')) as [number | null];
    expect(wrongCode).not.toBe(0);
    expect(wrongErr).toContain(
      `node credential ${nodeCred}: the certificate is node ${node0}'s, but this agent runs on node ${node1}`,
    );
    writeFileSync(cfg, config(node0));
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, '../../core/programs/cli/vc.mjs'), 'vn-agent', '--config', cfg],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.add(child);
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-4000)));
    const [port, opsPort] = await eventually(
      () => {
        const m = /listening on port (\d+); metrics and probes on port (\d+)/.exec(err);
        if (!m) throw new Error(`not started: ${err}\n${out}`);
        return [Number(m[1]), Number(m[2])];
      },
      60_000,
      100,
    );
    expect((await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status).toBe(200);
    const anon = await new Promise<number>((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port, path: '/containerLogs/default/app-a/c', rejectUnauthorized: false }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        })
        .on('error', reject);
    });
    expect(anon).toBe(401);
    expect(readFileSync(join(dir, 'serving.crt'), 'utf8')).toContain('BEGIN CERTIFICATE');
    child.kill('SIGTERM');
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(0);
  });

  it('serves probes and metrics on the ops port', async () => {
    const base = `http://127.0.0.1:${agent.opsPort}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const m = await (await fetch(`${base}/metrics`)).text();
    expect(m).toMatch(
      new RegExp(`vc_vnagent_requests_total\\{tenant="${tenantA.key}",kind="containerLogs",result="ok"\\} \\d+`),
    );
    expect(m).toMatch(
      new RegExp(`vc_vnagent_requests_total\\{tenant="${tenantA.key}",kind="exec",result="forbidden"\\} \\d+`),
    );
    expect(m).toMatch(
      new RegExp(`vc_vnagent_requests_total\\{tenant="${tenantA.key}",kind="portForward",result="forbidden"\\} \\d+`),
    );
    expect(m).toMatch(/vc_vnagent_requests_total\{tenant="",kind="containerLogs",result="unauthenticated"\} \d+/);
    expect(m).toMatch(
      new RegExp(
        `vc_vnagent_relayed_bytes_total\\{tenant="${tenantB.key}",kind="containerLogs",direction="to_client"\\} \\d+`,
      ),
    );
  });

  it('logs over WebSocket return the same bytes as a plain GET, through the tenant apiserver and the agent', async () => {
    // A line written after the first ones: kwok then sends the log in several chunks, and before the agent delimited
    // its answers by closing the connection, the apiserver dropped them all over WebSocket (proxy.ts closeDelimited).
    appendFileSync(join(t.sc.cluster.dir, 'kwok/container.log'), `${new Date().toISOString()} stdout F late line\n`);
    for (let i = 0; i < 3; i++) {
      const plain = await logsOverGet(cpA, 'default', 'app-a', 'container=c');
      expect(plain.status).toBe(200);
      expect(plain.body.toString()).toMatch(/kwok fake container log line 3\n(.*\n)*late line\n$/);
      const ws = await logsOverWebSocket(cpA, 'default', 'app-a', 'container=c');
      expect(ws.status).toBe(101);
      expect(ws.body.toString()).toBe(plain.body.toString());
    }
  });
});
