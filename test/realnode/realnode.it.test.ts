import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { createCA, issueCert } from '../../core/pki/pki.ts';
import { hostSnapshot, snapshotDiff, type HostSnapshot } from '../../core/dev/local/testing.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT, type RealNode } from '../../core/dev/local/realnode.ts';
import { NODE_EVICTION } from '../../core/dev/local/nodeconfig.ts';
import { NODE_IMAGES, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`realnode.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string };
}

/** onRealNode places a Pod on the real node: its label and a toleration of its taint, images never pulled. */
function pod(name: string, labels: Record<string, string>, container: Record<string, unknown>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: {
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name, imagePullPolicy: 'Never', ...container }],
    },
  } as Pod;
}

function get(url: string, o: https.RequestOptions = {}): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.get(url, { timeout: 5000, ...o }, (r) => {
      let body = '';
      r.on('data', (c: Buffer) => (body += c.toString()));
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

describe.skipIf(!!skip)('a real node on the local super cluster', () => {
  let t: TestSuper | undefined;
  let node: RealNode;
  let before: HostSnapshot;
  const binDir = join(nodeToolchainDir(), 'bin');
  const kubectl = (...args: string[]) =>
    exec(binaryPath('kubectl'), ['--kubeconfig', t!.sc.kubeconfigPath, ...args], { timeout: 30_000 });

  beforeAll(async () => {
    before = await hostSnapshot(binDir);
    t = await startTestSuper({ nodes: 1, realNodes: 1 });
    node = t.sc.realNodes[0]!;
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('runs agnhost netexec as a real container that answers its Pod name over HTTP', async () => {
    const c = t!.client;
    // the controller-manager creates the default ServiceAccount a moment after the namespace
    await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 30_000);
    const started = Date.now();
    await c.create(
      R.pods,
      pod('web', { app: 'web' }, { image: NODE_IMAGES.agnhost, args: ['netexec', '--http-port=8080'] }),
    );
    await c.create(R.pods, pod('client', {}, { image: NODE_IMAGES.busybox, command: ['sleep', '3600'] }));
    const web = await eventually(async () => {
      const p = await c.get<Pod>(R.pods, 'default', 'web');
      expect(p.status?.phase).toBe('Running');
      return p;
    }, 60_000);
    const firstPodMs = Date.now() - started;
    expect(web.spec?.nodeName).toBe(node.name);
    const res = await eventually(() => get(`http://${web.status!.podIP}:8080/hostname`), 20_000);
    expect(res.body).toBe('web');
    const rss = node.rssBytes();
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;
    process.stdout.write(
      `real node: Ready ${node.timings.readyMs} ms after containerd started; first Pod Running ${firstPodMs} ms ` +
        `after create; RSS kubelet ${mb(rss.kubelet)}, containerd ${mb(rss.containerd)}, kube-proxy ` +
        `${mb(rss['kube-proxy'])}, shims ${mb(rss.shims)} (${node.shimPids().length})\n`,
    );
  });

  it('kubectl exec through the super apiserver runs in the container, not on the host', async () => {
    await eventually(async () => {
      const p = await t!.client.get<Pod>(R.pods, 'default', 'client');
      expect(p.status?.phase).toBe('Running');
    }, 60_000);
    const out = await kubectl('exec', 'client', '--', 'hostname');
    expect(out.stdout.trim()).toBe('client');
    expect(readFileSync('/etc/hostname', 'utf8').trim()).not.toBe('client');
    const files = await kubectl('exec', 'client', '--', 'ls', '/');
    expect(files.stdout).not.toMatch(/\bwork\b/);
  });

  it('a ClusterIP Service reaches the Pod through kube-proxy from another Pod', async () => {
    const c = t!.client;
    const svc = await c.create<KubeObject & { spec?: { clusterIP?: string } }>(R.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    const ip = svc.spec!.clusterIP!;
    const out = await eventually(
      // busybox's own `wget -T` crashes on this host; its `timeout` applet (no symlink in the image) bounds it
      () => kubectl('exec', 'client', '--', 'busybox', 'timeout', '5', 'wget', '-q', '-O-', `http://${ip}/hostname`),
      30_000,
      500,
    );
    expect(out.stdout).toBe('web');
  });

  it('the kubelet refuses anonymous requests and client certificates of another CA', async () => {
    const url = `${node.kubeletURL}/pods`;
    const ca = node.opts.cluster.caPem;
    const anonymous = await get(url, { ca });
    expect(anonymous.status).toBe(401);
    const otherCA = await createCA('not-the-super-ca', 1);
    const stranger = await issueCert(otherCA, {
      commonName: 'admin',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 1,
    });
    const byStranger = await get(url, { ca, cert: stranger.certPem, key: stranger.keyPem }).catch((e: Error) => e);
    if (!(byStranger instanceof Error)) expect(byStranger.status).toBe(401);
    // the same identity from the super CA gets through: the refusals above are about who signed, not what is asked
    const admin = await issueCert(node.opts.cluster.ca, {
      commonName: 'admin',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 1,
    });
    const byAdmin = await get(url, { ca, cert: admin.certPem, key: admin.keyPem });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toContain('"web"');
  });

  it('the kubelet runs with disk eviction on, so a tenant cannot fill the node for everyone', async () => {
    const admin = await issueCert(node.opts.cluster.ca, {
      commonName: 'admin',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 1,
    });
    const r = await get(`${node.kubeletURL}/configz`, {
      ca: node.opts.cluster.caPem,
      cert: admin.certPem,
      key: admin.keyPem,
    });
    expect(r.status).toBe(200);
    const cfg = JSON.parse(r.body) as { kubeletconfig: { evictionHard?: Record<string, string> } };
    expect(cfg.kubeletconfig.evictionHard).toMatchObject(NODE_EVICTION);
  });

  it('stopping leaves the host as it was: no processes, mounts, netns, links, chains, cgroups or files', async () => {
    await t!.stop();
    t = undefined;
    process.stdout.write(`real node stop removed:\n  ${node.lastSweep.join('\n  ')}\n`);
    const after = await hostSnapshot(binDir);
    expect(snapshotDiff(before, after)).toEqual({});
  });
});
