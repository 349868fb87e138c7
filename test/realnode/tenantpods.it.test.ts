/**
 * Tenant Pods on the real node (issue 13): a tenant Deployment runs as a real container under the embedded
 * TenantPolicy, and the tenant's kubectl logs, exec, attach, debug and port-forward reach it through its apiserver,
 * the vn-agent of the embedded default (its own kubelet identity, every certificate verified) and the real kubelet:
 * kubectl debug's ephemeral container is checked as a container and added to the super Pod (issue 36).
 * Hostile: one tenant cannot reach another tenant's container on the same node through the agent. Usage (issue 35):
 * each tenant reads /stats/summary and /metrics/resource of its vNode with its own Pods only, and `vc top` shows the
 * platform each tenant's usage.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { startOpsServer } from '../../core/metrics/ops.ts';
import { registry as metricsRegistry } from '../../core/metrics/registry.ts';
import { LABEL, superNamespace, vNodeName } from '../../core/names/names.ts';
import { fingerprintSha256, type CertKeyPair } from '../../core/pki/pki.ts';
import { embeddedPolicy, startNodesAgent } from '../../core/dev/embedded/embedded.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { checkPolicies } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { ETC_HOSTS, POD_POLICY_VIOLATION } from '../../plugins/pods/index.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, realNodeSkipReason, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { logsOverGet, logsOverWebSocket } from '../podlogs.ts';
import { Attempts } from '../security/attempts.ts';

const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`tenantpods.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec: { nodeName?: string };
  status?: { phase?: string };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const children = new Set<ChildProcess>();

const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

/** vcCli runs the vc CLI as a user would, to its end. */
async function vcCli(args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [vcBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.on('close', () => children.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** start runs the real kubectl against a tenant's apiserver, collecting its output. */
function start(cp: LocalControlPlane, args: string[]): { child: ChildProcess; out: () => string; err: () => string } {
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

/** kubectl runs kubectl to its end (killed after 30 s). */
async function kubectl(cp: LocalControlPlane, args: string[]): Promise<Run> {
  const k = start(cp, args);
  const timer = setTimeout(() => k.child.kill('SIGKILL'), 30_000);
  const [code] = (await once(k.child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout: k.out(), stderr: k.err() };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'close');
}

/** onRealNode is what a tenant writes to run a Pod on the real node: its label and a toleration of its taint. */
const onRealNode = (container: Record<string, unknown>) => ({
  nodeSelector: { [REAL_NODE_LABEL]: 'true' },
  tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
  terminationGracePeriodSeconds: 1,
  containers: [{ name: 'c', imagePullPolicy: 'Never', ...container }],
});

const pod = (name: string, container: Record<string, unknown>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: onRealNode(container),
});

/** PRINTED is what the `printer` Pod writes before it sleeps: several writes, so the log has several chunks. */
const PRINTED = 'first line\nsecond line\nthird line\n';

describe.skipIf(!!skip)('tenant Pods on the real node, reached through the vn-agent', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let agent: VnAgent;
  let registry: MutableTenantRegistry;
  let verifyAgent: Record<string, string>;
  let tenant: (cp: LocalControlPlane, ns: string, name: string, uid: string, extra?: Partial<Tenant>) => Tenant;
  let syncer: Syncer;
  let web = '';

  const pki = (cp: LocalControlPlane, name: string): CertKeyPair => ({
    certPem: readFileSync(join(cp.dir, `pki/${name}.crt`), 'utf8'),
    keyPem: readFileSync(join(cp.dir, `pki/${name}.key`), 'utf8'),
  });

  /** direct calls the agent as a tenant apiserver does, with that tenant's kubelet client certificate. */
  const direct = (path: string, cert: CertKeyPair): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port: agent.port, path, ca: t.sc.cluster.caPem, cert: cert.certPem, key: cert.keyPem },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.setTimeout(20_000, () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });

  const running = (c: KubeClient, name: string) =>
    eventually(
      async () => {
        const p = await c.get<Pod>(R.pods, 'default', name);
        expect(p.status?.phase).toBe('Running');
        return p;
      },
      60_000,
      250,
    );

  beforeAll(
    async () => {
      t = await startTestSuper({ nodes: 1, realNodes: 1 });
      // Tenant apiservers verify the vn-agent's serving certificate (of the super CA), as under `vc up`.
      verifyAgent = { 'kubelet-certificate-authority': join(t.sc.cluster.dir, 'pki/ca.crt') };
      [cpA, cpB] = await Promise.all(
        ['tenant-a', 'tenant-b'].map((n) =>
          t.sc.addControlPlane(n, { controllers: TENANT_CONTROLLERS, apiserverExtraArgs: verifyAgent }),
        ),
      );
      a = await cpA.client();
      const directory = new StaticTenantDirectory();
      agent = await startNodesAgent(t.sc, { port: 0, directory, handshakeTimeoutMs: 10_000 });
      const admitted = checkPolicies({ spec: { provisioner: { type: 'local' } } }, [embeddedPolicy()]);
      if (!('effective' in admitted)) throw new Error(`embedded policy refused: ${JSON.stringify(admitted)}`);
      tenant = (cp: LocalControlPlane, ns: string, name: string, uid: string, extra: Partial<Tenant> = {}): Tenant => {
        const x = tenantFor(cp, ns, name, uid, {
          // the agent listens on loopback, as under `vc up`: vNodes advertise it there, not the real node's IP
          pluginConfig: { nodes: { vnAgent: { host: '127.0.0.1', port: agent.port } } },
          // the platform's /etc/hosts image, as `vc up` names it (the manager's tenantDefaults.pods.etcHostsImage)
          pods: { ...admitted.effective.pods, etcHostsImage: NODE_IMAGES.busybox },
          ...extra,
        });
        directory.upsert({
          key: x.key,
          vcName: x.vcName,
          vcNamespace: x.vcNamespace,
          caPem: cp.caPem,
          fingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
          ...(x.nodes && { nodes: x.nodes }),
        });
        return x;
      };
      tenantA = tenant(cpA, 'team-a', 'a', '11111111-aaaa-4aaa-8aaa-0000000000a3');
      tenantB = tenant(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000b3');
      syncer = new Syncer({
        superClient: t.client,
        host: await PluginHost.load({ process: 'manager', builtins: builtinPlugins }),
        registry: (registry = new MutableTenantRegistry([tenantA, tenantB])),
        patrolIntervalMs: 0,
        workers: 8,
      });
      await syncer.start();
      const b = await cpB.client();
      await Promise.all([a, b].map((c) => eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000)));
      await a.create(R.deployments, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: onRealNode({ image: NODE_IMAGES.agnhost, args: ['netexec', '--http-port=8080'] }),
          },
        },
      });
      const script = `${PRINTED.split('\n')
        .filter(Boolean)
        .map((l) => `echo ${l}; sleep 0.2`)
        .join('; ')}; exec sleep 3600`;
      await a.create(R.pods, pod('printer', { image: NODE_IMAGES.busybox, command: ['sh', '-c', script] }));
      await b.create(
        R.pods,
        pod('ticker', {
          image: NODE_IMAGES.busybox,
          command: ['sh', '-c', 'echo secret of b; while true; do echo tick; sleep 1; done'],
        }),
      );
      await Promise.all([running(a, 'printer'), running(b, 'ticker')]).catch(async (e: unknown) => {
        // why the Pods did not run: the super events (scheduling, image, sandbox) say it
        const events = (await t.client.list<KubeObject & { reason?: string; message?: string }>(R.events)).items.map(
          (x) => `${x.metadata?.name} ${x.reason}: ${x.message}`,
        );
        process.stdout.write(`super events:\n${events.join('\n')}\n`);
        throw e;
      });
      // the harness waits up to 30 minutes for another set of real nodes on this host to stop (host lock)
    },
    30 * 60_000 + 240_000,
  );

  afterAll(async () => {
    attempts.report('tenant pods on the real node');
    for (const c of children) c.kill('SIGKILL');
    await syncer?.stop();
    await agent?.stop();
    await t?.stop();
  });

  it("runs a tenant Deployment's Pod as a real container on the real node; the tenant sees it Running", async () => {
    const name = await eventually(async () => {
      const pods = (await a.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=web' })).items;
      expect(pods).toHaveLength(1);
      return pods[0]!.metadata!.name!;
    }, 30_000);
    web = name;
    const p = await running(a, web);
    const real = t.sc.realNodes[0]!.name;
    expect(p.spec.nodeName).toBe(real);
    expect(await a.get(R.nodes, undefined, real)).toBeTruthy();
    const sp = await t.client.get<Pod>(R.pods, superNamespace(tenantA.key, 'default'), web);
    expect(sp.spec.nodeName).toBe(real);
  });

  it('kubectl logs returns what the container wrote; over WebSocket the same bytes as over a plain GET', async () => {
    await eventually(async () => expect((await kubectl(cpA, ['logs', 'printer'])).stdout).toBe(PRINTED), 20_000);
    const plain = await logsOverGet(cpA, 'default', 'printer', 'container=c');
    expect(plain).toMatchObject({ status: 200, body: Buffer.from(PRINTED) });
    const ws = await logsOverWebSocket(cpA, 'default', 'printer', 'container=c');
    expect(ws.status).toBe(101);
    expect(ws.body.toString()).toBe(PRINTED);
  });

  it("kubectl exec runs in the container: the Pod's hostname, its own PID 1, not the host's files", async () => {
    expect(await kubectl(cpA, ['exec', 'printer', '--', 'hostname'])).toMatchObject({ code: 0, stdout: 'printer\n' });
    const cmdline = await kubectl(cpA, ['exec', 'printer', '--', 'cat', '/proc/1/cmdline']);
    expect(cmdline.stdout.split('\0').filter(Boolean)).toEqual(['sleep', '3600']);
    expect(readFileSync('/proc/1/cmdline', 'utf8')).not.toBe(cmdline.stdout);
    // the host's checkout is not in the container's filesystem
    const seen = await kubectl(cpA, ['exec', 'printer', '--', 'ls', import.meta.dirname]);
    expect(seen.code).not.toBe(0);
    expect(seen.stderr).toMatch(/No such file or directory/);
  });

  it("under a TenantPolicy requiring the platform's gVisor class, a tenant's plain Pod runs in gVisor", async () => {
    // The platform's sandbox class (handler runsc, the real node's second runtime handler), public to tenants.
    await t.client.create(R.runtimeclasses, {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'gvisor', labels: { [LABEL.public]: 'true' } },
      handler: 'runsc',
    });
    const cpC = await t.sc.addControlPlane('tenant-c', {
      controllers: TENANT_CONTROLLERS,
      apiserverExtraArgs: verifyAgent,
    });
    const tenantC = tenant(cpC, 'team-c', 'c', '33333333-cccc-4ccc-8ccc-0000000000c3', {
      runtimeClasses: { handlers: ['runc'], required: 'gvisor' },
    });
    registry.upsert(tenantC);
    const c = await cpC.client();
    await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 60_000);
    // The tenant asks for nothing: no runtimeClassName. The platform's policy decides.
    await c.create(R.pods, pod('boxed', { image: NODE_IMAGES.busybox, command: ['sleep', '3600'] }));
    const p = await running(c, 'boxed');
    expect(p.spec.nodeName).toBe(t.sc.realNodes[0]!.name);
    const sp = await t.client.get<Pod & { spec: { runtimeClassName?: string } }>(
      R.pods,
      superNamespace(tenantC.key, 'default'),
      'boxed',
    );
    expect(sp.spec.runtimeClassName).toBe('gvisor');
    const host = readFileSync('/proc/version', 'utf8').trim();
    const inside = await kubectl(cpC, ['exec', 'boxed', '--', 'cat', '/proc/version']);
    expect(inside.code, inside.stderr).toBe(0);
    expect(inside.stdout.trim()).not.toBe(host);
    expect(inside.stdout).toMatch(/gvisor/i);
    expect((await kubectl(cpC, ['exec', 'boxed', '--', 'dmesg'])).stdout).toMatch(/gVisor/);
    expect(await kubectl(cpC, ['exec', 'boxed', '--', 'hostname'])).toMatchObject({ code: 0, stdout: 'boxed\n' });
    // Tenant A, under a policy without it, still runs on the host's kernel (runc): the check tells them apart.
    expect((await kubectl(cpA, ['exec', 'printer', '--', 'cat', '/proc/version'])).stdout.trim()).toBe(host);
  });

  it('kubectl attach streams the output of the running container', async () => {
    const at = start(cpB, ['attach', 'ticker', '-c', 'c']);
    try {
      await eventually(() => expect(at.out()).toMatch(/tick\n(.*\n)*tick\n/), 20_000, 100);
    } finally {
      await stop(at.child);
    }
  });

  it("kubectl debug adds an ephemeral container to the running Pod; attached, it sees the target container's process", async () => {
    // baseline profile: the default (general) adds SYS_PTRACE, beyond Pod Security level baseline (below)
    const loop = 'while true; do tr "\\0" " " < /proc/1/cmdline; echo; sleep 1; done';
    const dbg = start(cpA, [
      'debug',
      'printer',
      `--image=${NODE_IMAGES.busybox}`,
      '--image-pull-policy=Never',
      '--profile=baseline',
      '--container=dbg',
      '--target=c',
      '--attach',
      '--',
      'sh',
      '-c',
      loop,
    ]);
    try {
      // the target's PID 1, shared with it: `sleep 3600` (printer's shell exec'd it), not the debug shell
      await eventually(() => expect(dbg.out()).toMatch(/^sleep 3600 $/m), 60_000, 200);
    } finally {
      await stop(dbg.child);
    }
    const superNs = superNamespace(tenantA.key, 'default');
    type Debugged = KubeObject & {
      spec: { ephemeralContainers?: Array<{ name: string; targetContainerName?: string; env?: unknown[] }> };
      status?: { ephemeralContainerStatuses?: Array<{ name: string; state?: Record<string, unknown> }> };
    };
    const sp = await t.client.get<Debugged>(R.pods, superNs, 'printer');
    expect(sp.spec.ephemeralContainers?.map((c) => [c.name, c.targetContainerName])).toEqual([['dbg', 'c']]);
    const tp = await a.get<Debugged>(R.pods, 'default', 'printer');
    expect(tp.status?.ephemeralContainerStatuses?.find((c) => c.name === 'dbg')?.state?.running).toBeDefined();
  });

  it('kubectl debug with a profile beyond the Pod Security level: refused, terminated with the reason, nothing runs', async () => {
    const r = await kubectl(cpA, ['debug', 'printer', `--image=${NODE_IMAGES.busybox}`, '--container=ptrace']);
    expect(r.code, r.stderr).toBe(0);
    type Debugged = KubeObject & {
      status?: {
        ephemeralContainerStatuses?: Array<{
          name: string;
          state?: { terminated?: { reason?: string; message?: string } };
        }>;
      };
    };
    const shown = await eventually(async () => {
      const p = await a.get<Debugged>(R.pods, 'default', 'printer');
      const s = p.status?.ephemeralContainerStatuses?.find((c) => c.name === 'ptrace');
      expect(s?.state?.terminated?.reason).toBe(POD_POLICY_VIOLATION);
      return s!.state!.terminated!.message!;
    }, 30_000);
    expect(shown).toMatch(/spec\.ephemeralContainers\[1\]\.securityContext\.capabilities.*SYS_PTRACE/);
    const described = await kubectl(cpA, ['describe', 'pod', 'printer']);
    expect(described.stdout).toMatch(/Warning\s+PodPolicyViolation.*SYS_PTRACE/);
    const sp = await t.client.get<KubeObject & { spec: { ephemeralContainers?: Array<{ name: string }> } }>(
      R.pods,
      superNamespace(tenantA.key, 'default'),
      'printer',
    );
    expect(sp.spec.ephemeralContainers?.map((c) => c.name)).toEqual(['dbg']);
  });

  it('kubectl port-forward reaches the HTTP port of the Deployment Pod', async () => {
    const pf = start(cpA, ['port-forward', `pod/${web}`, ':8080']);
    try {
      const port = await eventually(() => Number(/127\.0\.0\.1:(\d+) -> 8080/.exec(pf.out())![1]), 20_000, 100);
      const res = await fetch(`http://127.0.0.1:${port}/hostname`);
      expect(await res.text()).toBe(web);
    } finally {
      await stop(pf.child);
    }
  });

  it('the downward API shows the container its tenant namespace, name, uid and labels, never the super ones', async () => {
    await attempts.attempt('read the super namespace through the downward API (env and volume)', async () => {
      const fieldRef = (fieldPath: string) => ({ fieldRef: { fieldPath } });
      const item = (path: string, fieldPath: string) => ({ path, ...fieldRef(fieldPath) });
      const p = pod('downward', {
        image: NODE_IMAGES.busybox,
        command: ['sleep', '3600'],
        env: [
          { name: 'NS', valueFrom: fieldRef('metadata.namespace') },
          { name: 'UID', valueFrom: fieldRef('metadata.uid') },
        ],
        volumeMounts: [{ name: 'info', mountPath: '/info' }],
      });
      p.metadata!.labels = { app: 'shown' };
      (p.spec as { volumes?: unknown[] }).volumes = [
        {
          name: 'info',
          downwardAPI: {
            items: [
              item('namespace', 'metadata.namespace'),
              item('name', 'metadata.name'),
              item('uid', 'metadata.uid'),
              item('app', "metadata.labels['app']"),
              item('labels', 'metadata.labels'),
            ],
          },
        },
      ];
      const created = await a.create(R.pods, p);
      await running(a, 'downward');
      const sh = async (cmd: string) => {
        const r = await kubectl(cpA, ['exec', 'downward', '--', 'sh', '-c', cmd]);
        expect(r.code, r.stderr).toBe(0);
        return r.stdout;
      };
      const uid = created.metadata!.uid!;
      expect(await sh('echo "$NS $UID"')).toBe(`default ${uid}\n`);
      const files = await sh('cat /info/namespace; echo; cat /info/name; echo; cat /info/uid; echo; cat /info/app');
      expect(files).toBe(`default\ndownward\n${uid}\nshown`);
      // all labels: the tenant Pod's, as the kubelet writes a map (key="value" lines), none of the syncer's
      expect(await sh('cat /info/labels')).toBe('app="shown"');
      // a relabel reaches the files of the running container, a changed key and the whole map alike, as upstream's
      // kubelet rewrites them (the Downward API "should update labels on modification" specs)
      await a.patch(R.pods, 'default', 'downward', { metadata: { labels: { app: 'moved', tier: 'front' } } }, 'merge');
      await eventually(
        async () => expect(await sh('cat /info/app; echo; cat /info/labels')).toBe('moved\napp="moved"\ntier="front"'),
        120_000,
      );
      const superNs = superNamespace(tenantA.key, 'default');
      const superPod = await t.client.get(R.pods, superNs, 'downward');
      expect(files).not.toContain(superNs);
      expect(files).not.toContain(superPod.metadata!.uid!);
      return `the container reads ${files.replace(/\n/g, ' ')}`;
    });
  });

  it('a Pod with hostname and subdomain finds its tenant name in /etc/hosts, at its own IP, as upstream writes it', async () => {
    const p = pod('hosts', { image: NODE_IMAGES.busybox, command: ['sleep', '3600'] });
    Object.assign(p.spec as object, { hostname: 'querier-1', subdomain: 'probe-service' });
    await a.create(R.pods, p);
    const ready = await eventually(
      async () => {
        const x = await a.get<Pod & { status?: { podIP?: string; initContainerStatuses?: unknown[] } }>(
          R.pods,
          'default',
          'hosts',
        );
        expect(x.status?.phase).toBe('Running');
        expect(x.status?.podIP).toBeTruthy();
        return x;
      },
      90_000,
      250,
    );
    // the tenant's Pod shows no init container of the syncer's
    expect(ready.status?.initContainerStatuses).toBeUndefined();
    const sh = async (cmd: string) => {
      const r = await kubectl(cpA, ['exec', 'hosts', '--', 'sh', '-c', cmd]);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    const hosts = await sh('cat /etc/hosts');
    const superNs = superNamespace(tenantA.key, 'default');
    const own = hosts.split('\n').filter((l) => l.startsWith(`${ready.status!.podIP!}\t`));
    expect(own, hosts).toEqual([
      `${ready.status!.podIP!}\tquerier-1.probe-service.default.svc.cluster.local\tquerier-1`,
    ]);
    expect(hosts).not.toContain(superNs);
    expect(hosts.split('\n')[0]).toBe('# Kubernetes-managed hosts file.');
    expect(await sh('hostname')).toBe('querier-1\n');
    // the super Pod's first init container wrote it, then ended
    const superPod = await t.client.get<Pod & { status?: { initContainerStatuses?: Array<Record<string, unknown>> } }>(
      R.pods,
      superNs,
      'hosts',
    );
    expect(superPod.status?.initContainerStatuses?.[0]).toMatchObject({
      name: ETC_HOSTS,
      state: { terminated: { exitCode: 0, reason: 'Completed' } },
    });
  });

  /**
   * usageOf reads a usage endpoint of the vn-agent as a tenant's apiserver (and the tenant's metrics-server with that
   * certificate) does. Not through `kubectl get --raw /api/v1/nodes/N/proxy/...`: the apiserver refuses to proxy to a
   * loopback address ("address not allowed"), and under `vc up` the vNodes advertise the agent on 127.0.0.1.
   */
  const usageOf = async (cp: LocalControlPlane, path: string): Promise<string> => {
    const r = await direct(path, pki(cp, 'kubelet-client'));
    expect(r.status, r.body).toBe(200);
    return r.body;
  };

  /**
   * runningPods lists a tenant's Pods Running on the real node as namespace/name, sorted (earlier tests add Pods: read
   * them now; simulated nodes report no usage).
   */
  const runningPods = async (c: KubeClient): Promise<string[]> =>
    (await c.list<Pod>(R.pods)).items
      .filter((p) => p.status?.phase === 'Running' && p.spec.nodeName === t.sc.realNodes[0]!.name)
      .map((p) => `${p.metadata!.namespace}/${p.metadata!.name}`)
      .sort();

  it("usage through the vn-agent: /stats/summary shows each tenant its own Pods under tenant names, not the other's", async () => {
    const uidOf = async (c: KubeClient, ns: string, name: string) =>
      (await c.get<Pod>(R.pods, ns, name)).metadata!.uid!;
    const b = await cpB.client();
    interface Summary {
      node: { nodeName: string; cpu?: { usageNanoCores?: number }; fs?: unknown; systemContainers?: unknown };
      pods: Array<{ podRef: { namespace: string; name: string; uid: string }; cpu?: { usageNanoCores?: number } }>;
    }
    const summaryOf = (cp: LocalControlPlane, c: KubeClient) =>
      eventually(
        async () => {
          const s = JSON.parse(await usageOf(cp, '/stats/summary')) as Summary;
          const shown = s.pods.map((p) => `${p.podRef.namespace}/${p.podRef.name}`).sort();
          expect(shown).toEqual(await runningPods(c));
          expect(s.pods.every((p) => p.cpu?.usageNanoCores !== undefined)).toBe(true);
          return s;
        },
        90_000,
        1000,
      );
    const sa = await summaryOf(cpA, a);
    expect(sa.pods.map((p) => p.podRef.name)).toContain('printer');
    for (const p of sa.pods) expect(p.podRef.uid).toBe(await uidOf(a, p.podRef.namespace, p.podRef.name));
    expect(sa.node.nodeName).toBe(t.sc.realNodes[0]!.name);
    expect(sa.node.fs).toBeUndefined();
    expect(sa.node.systemContainers).toBeUndefined();
    // the node's CPU is the tenant's share: the sum over its own Pods, never the machine's
    expect(sa.node.cpu?.usageNanoCores).toBe(sa.pods.reduce((x, p) => x + (p.cpu?.usageNanoCores ?? 0), 0));
    const sb = await summaryOf(cpB, b);
    expect(sb.pods.map((p) => p.podRef)).toContainEqual({
      namespace: 'default',
      name: 'ticker',
      uid: await uidOf(b, 'default', 'ticker'),
    });
    const text = JSON.stringify(sa);
    expect(text).not.toContain('ticker');
    expect(text).not.toContain(superNamespace(tenantA.key, 'default'));
    expect(text).not.toContain('kube-system');
  });

  it("usage through the vn-agent: /metrics/resource has only the asking tenant's series, node totals scaled to them", async () => {
    const podSeries = /^pod_cpu_usage_seconds_total\{namespace="([^"]*)",pod="([^"]*)"\} (\S+)/gm;
    const text = await eventually(
      async () => {
        const x = await usageOf(cpA, '/metrics/resource');
        expect([...x.matchAll(podSeries)].map((m) => `${m[1]}/${m[2]}`).sort()).toEqual(await runningPods(a));
        return x;
      },
      90_000,
      1000,
    );
    const pods = [...text.matchAll(podSeries)];
    expect(pods.map((m) => m[2])).toContain('printer');
    const node = /^node_cpu_usage_seconds_total (\S+)/m.exec(text);
    expect(Number(node?.[1])).toBeCloseTo(
      pods.reduce((x, m) => x + Number(m[3]), 0),
      9,
    );
    expect(text).toMatch(/^container_memory_working_set_bytes\{container="c",namespace="default",pod="printer"\} /m);
    expect(text).not.toMatch(/ticker|kube-system|container_fs|process_/);
    expect(text).not.toContain(superNamespace(tenantA.key, 'default'));
    // B reads its own, and other kubelet paths stay refused
    expect(await usageOf(cpB, '/metrics/resource')).toMatch(/pod="ticker"/);
    const certA = pki(cpA, 'kubelet-client');
    for (const path of ['/metrics/cadvisor', '/metrics', '/stats/', '/pods'])
      expect(await direct(path, certA)).toMatchObject({ status: 403 });
  });

  it('vc top shows each tenant its Pods, CPU and memory in use and requested, from the real kubelet', async () => {
    interface Row {
      tenant: string;
      pods: number;
      cpuNanoCores?: number;
      memoryWorkingSetBytes?: number;
    }
    const rows = await eventually(
      async () => {
        const r = await vcCli(['top', '--kubeconfig', t.sc.cluster.kubeconfigPath, '-o', 'json']);
        expect(r.code, r.stderr).toBe(0);
        const x = JSON.parse(r.stdout) as Row[];
        const mine = x.find((row) => row.tenant === tenantA.key);
        expect(mine?.memoryWorkingSetBytes).toBeGreaterThan(0);
        return x;
      },
      90_000,
      1000,
    );
    const rowA = rows.find((row) => row.tenant === tenantA.key)!;
    const rowB = rows.find((row) => row.tenant === tenantB.key)!;
    const live = async (c: KubeClient) =>
      (await c.list<Pod>(R.pods, { namespace: 'default' })).items.filter(
        (p) => !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
      ).length;
    expect(rowA.pods).toBe(await live(a));
    expect(rowB).toMatchObject({ pods: await live(await cpB.client()) });
    expect(rowB.cpuNanoCores).toBeDefined();
    const text = await vcCli(['top', '--kubeconfig', t.sc.cluster.kubeconfigPath]);
    expect(text.stdout).toMatch(/^TENANT\s+VIRTUALCLUSTER\s+PODS\s+CPU\(cores\)\s+MEMORY\(bytes\)/);
    expect(text.stdout).toContain(tenantA.key);

    // With the manager's /metrics (here this process's ops server: the registry of the syncer above), the API writes
    // the syncer made for each tenant; counters only grow, so at least what the registry held just before.
    const writesOf = async (tenant: string) => {
      let n = 0;
      for (const m of (await metricsRegistry.metrics()).matchAll(/^vc_syncer_writes_total\{([^}]*)\} (\S+)$/gm))
        if (m[1]!.includes(`tenant="${tenant}"`)) n += Number(m[2]);
      return n;
    };
    const ops = await startOpsServer({ port: 0 });
    try {
      const url = `http://127.0.0.1:${ops.port}/metrics`;
      const before = await writesOf(tenantA.key);
      expect(before).toBeGreaterThan(0);
      const w = await vcCli(['top', '--kubeconfig', t.sc.cluster.kubeconfigPath, '-o', 'json', '--metrics', url]);
      expect(w.code, w.stderr).toBe(0);
      const withWrites = JSON.parse(w.stdout) as Array<Row & { apiWrites?: number }>;
      expect(withWrites.find((row) => row.tenant === tenantA.key)?.apiWrites).toBeGreaterThanOrEqual(before);
      expect(withWrites.find((row) => row.tenant === tenantB.key)?.apiWrites).toBeGreaterThan(0);
      const table = await vcCli(['top', '--kubeconfig', t.sc.cluster.kubeconfigPath, '--metrics', url]);
      expect(table.stdout).toMatch(/^TENANT\s+VIRTUALCLUSTER\s+PODS\s.*\sAPI-WRITES$/m);
      // an address where no manager answers is a clear error naming it, and nothing is printed as if it were zero
      const down = await vcCli([
        'top',
        '--kubeconfig',
        t.sc.cluster.kubeconfigPath,
        '--metrics',
        'http://127.0.0.1:1/metrics',
      ]);
      expect(down.code).not.toBe(0);
      expect(down.stderr).toContain('--metrics http://127.0.0.1:1/metrics: fetch failed');
      expect(down.stdout).toBe('');
    } finally {
      await ops.close();
    }

    // The same usage as the vn-agent's metrics (the manager's /metrics under `vc up`, where the agent runs in it):
    // CPU and working set per tenant, from the kubelet it serves, for the tenants it serves only.
    const series = await eventually(
      async () => {
        const m = new Map<string, number>();
        for (const l of (await metricsRegistry.metrics()).split('\n')) {
          const x = /^(vc_vnagent_tenant_(?:cpu_usage_cores|memory_working_set_bytes))\{tenant="([^"]+)"\} (\S+)$/.exec(
            l,
          );
          if (x) m.set(`${x[1]}/${x[2]}`, Number(x[3]));
        }
        expect(m.get(`vc_vnagent_tenant_memory_working_set_bytes/${tenantA.key}`)).toBeGreaterThan(0);
        expect(m.get(`vc_vnagent_tenant_memory_working_set_bytes/${tenantB.key}`)).toBeGreaterThan(0);
        return m;
      },
      60_000,
      1000,
    );
    expect(series.get(`vc_vnagent_tenant_cpu_usage_cores/${tenantA.key}`)).toBeGreaterThanOrEqual(0);
    expect(series.get(`vc_vnagent_tenant_cpu_usage_cores/${tenantB.key}`)).toBeGreaterThanOrEqual(0);
    // every tenant the kubelet reported a Pod of (vc top's rows with usage; an earlier test adds tenant C), no other
    expect([...new Set([...series.keys()].map((k) => k.split('/')[1]))].sort()).toEqual(
      rows
        .filter((row) => row.memoryWorkingSetBytes !== undefined)
        .map((row) => row.tenant)
        .sort(),
    );
  });

  it("tenant A cannot read or exec into tenant B's Pod on the same node through the agent", async () => {
    const certA = pki(cpA, 'kubelet-client');
    const bNs = superNamespace(tenantB.key, 'default');
    const refused = async (path: string): Promise<string> => {
      const r = await direct(path, certA);
      expect(r.status).toBe(403);
      expect(r.body).not.toContain('secret of b');
      return r.body.trim();
    };
    await attempts.attempt("logs of B's Pod by B's super namespace", () => refused(`/containerLogs/${bNs}/ticker/c`));
    await attempts.attempt("logs of B's Pod by its tenant name", () => refused('/containerLogs/default/ticker/c'));
    await attempts.attempt("exec into B's Pod by B's super namespace", () =>
      refused(`/exec/${bNs}/ticker/c?command=cat&command=/etc/hostname&output=1`),
    );
    await attempts.attempt("attach to B's Pod", () => refused(`/attach/${bNs}/ticker/c?output=1`));
    await attempts.attempt("port-forward to B's Pod", () => refused(`/portForward/${bNs}/ticker`));
    await attempts.attempt("kubectl exec into a Pod named as B's from tenant A's apiserver", async () => {
      const r = await kubectl(cpA, ['exec', 'ticker', '--', 'hostname']);
      expect(r.code).not.toBe(0);
      expect(r.stdout).not.toContain('ticker');
      return r.stderr.trim();
    });
    // B's own apiserver gets B's log: the refusals are about who asks
    expect((await kubectl(cpB, ['logs', 'ticker', '--tail=-1'])).stdout).toMatch(/^secret of b\n/);
  });
  it("under a TenantPolicy withholding node totals (nodes.totals), a tenant sees no node usage and no node capacity, its own Pods' usage still", async () => {
    const base = embeddedPolicy();
    const withheld = { ...base, spec: { ...base.spec, nodes: { ...base.spec.nodes, totals: 'withheld' as const } } };
    const admitted = checkPolicies({ spec: { provisioner: { type: 'local' } } }, [withheld]);
    if (!('effective' in admitted)) throw new Error(`policy refused: ${JSON.stringify(admitted)}`);
    expect(admitted.effective.nodes.totals).toBe('withheld');
    // B's settings change as the manager hands them over: to its syncer session and to the agent's directory
    tenantB = tenant(cpB, 'team-b', 'b', '22222222-bbbb-4bbb-8bbb-0000000000b3', { nodes: admitted.effective.nodes });
    registry.upsert(tenantB);
    const b = await cpB.client();
    const name = vNodeName(t.sc.realNodes[0]!.name);
    interface VNode extends KubeObject {
      status?: { capacity?: Record<string, string>; allocatable?: Record<string, string>; conditions?: unknown[] };
    }
    const vNodeB = await eventually(
      async () => {
        const n = await b.get<VNode>(R.nodes, undefined, name);
        expect(n.status?.capacity).toBeUndefined();
        expect(n.status?.allocatable).toBeUndefined();
        return n;
      },
      60_000,
      500,
    );
    expect(vNodeB.status?.conditions?.length).toBeGreaterThan(0);
    interface Summary {
      node: Record<string, unknown>;
      pods: Array<{ podRef: { name: string }; cpu?: { usageNanoCores?: number } }>;
    }
    const summary = JSON.parse(await usageOf(cpB, '/stats/summary')) as Summary;
    expect(summary.node.nodeName).toBe(name);
    expect(summary.node.cpu).toBeUndefined();
    expect(summary.node.memory).toBeUndefined();
    expect(summary.node.swap).toBeUndefined();
    const ticker = summary.pods.find((p) => p.podRef.name === 'ticker');
    expect(ticker?.cpu?.usageNanoCores).toBeDefined();
    const text = await usageOf(cpB, '/metrics/resource');
    expect(text).toMatch(/^pod_cpu_usage_seconds_total\{namespace="default",pod="ticker"\} /m);
    expect(text).not.toMatch(/^node_/m);
    // A, under the embedded policy (scaled), still sees its node's totals and its vNode's capacity
    expect(await usageOf(cpA, '/metrics/resource')).toMatch(/^node_cpu_usage_seconds_total /m);
    expect((await a.get<VNode>(R.nodes, undefined, name)).status?.capacity?.cpu).toBeDefined();
  });
});
