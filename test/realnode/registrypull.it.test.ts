import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { registryConfigDir } from '../../core/dev/local/noderegistry.ts';
import { containerdSocket, REAL_NODE_LABEL, REAL_NODE_TAINT, type RealNode } from '../../core/dev/local/realnode.ts';
import { fileEntry, writeOciArchive } from '../../core/toolchain/images.ts';
import { nodeBinaryPath, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { pushImage } from '../../core/toolchain/push.ts';
import { startRegistry, type LocalRegistry } from '../../core/toolchain/registry.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`registrypull.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    containerStatuses?: Array<{
      imageID?: string;
      state?: { waiting?: { reason?: string; message?: string } };
    }>;
  };
}
interface Ev extends KubeObject {
  reason?: string;
  message?: string;
  involvedObject?: { name?: string };
}

const USER = { username: 'tenant-a', password: 'pull-me-9f3' };
/** a line only the pushed image's file holds, so the log proves the container ran that image */
const MARKER = `hello from the local registry ${process.pid}`;

/** pullPod runs the pushed image on the real node, pulling it every time (never a copy already there). */
function pullPod(name: string, image: string, secret?: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      terminationGracePeriodSeconds: 1,
      ...(secret ? { imagePullSecrets: [{ name: secret }] } : {}),
      containers: [{ name: 'hello', image, imagePullPolicy: 'Always' }],
    },
  } as Pod;
}

describe.skipIf(!!skip)("a real node's containerd pulls from the local registry", () => {
  let t: TestSuper | undefined;
  let reg: LocalRegistry | undefined;
  let node: RealNode;
  let dir: string;
  let image: string;
  let digest: string;
  const kubectl = (...args: string[]) =>
    exec(binaryPath('kubectl'), ['--kubeconfig', t!.sc.kubeconfigPath, ...args], { timeout: 30_000 });
  const ctrImages = async (): Promise<string[]> => {
    const out = await exec(nodeBinaryPath('ctr'), [
      '-a',
      containerdSocket(node.opts.dir),
      '-n',
      'k8s.io',
      'images',
      'ls',
      '-q',
    ]);
    return out.stdout.split('\n').filter(Boolean);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-regpull-'));
    reg = await startRegistry({ users: [USER] });
    image = `${reg.host}/tenant-a/hello:1`;
    const archive = join(dir, 'hello.tar');
    writeOciArchive(archive, {
      ref: image,
      files: [
        fileEntry('bin/busybox', join(nodeToolchainDir(), 'bin', 'busybox')),
        { type: 'file', path: 'etc/hello.txt', data: Buffer.from(`${MARKER}\n`) },
      ],
      entrypoint: ['/bin/busybox', 'sh', '-c', '/bin/busybox cat /etc/hello.txt; exec /bin/busybox sleep 3600'],
      user: '65532:65532',
      createdBy: 'registrypull.it.test.ts',
    });
    const pushed = await pushImage(archive, image, {
      ca: reg.caPem,
      credentials: { ...USER, source: 'the test' },
    });
    digest = pushed.digest;
    t = await startTestSuper({ nodes: 1, realNodes: 1, registries: [{ host: reg.host, caPem: reg.caPem }] });
    node = t.sc.realNodes[0]!;
  }, 600_000);

  afterAll(async () => {
    await t?.stop();
    await reg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs a Pod whose image it pulled with the imagePullSecret, not one imported', async () => {
    const c = t!.client;
    expect(readdirSync(registryConfigDir(node.opts.dir))).toEqual([reg!.host]);
    const before = await ctrImages();
    expect(before.filter((i) => i.startsWith(reg!.host))).toEqual([]);
    await eventually(() => c.get(R.serviceaccounts, 'default', 'default'), 30_000);
    const auth = Buffer.from(`${USER.username}:${USER.password}`).toString('base64');
    await c.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'regcred', namespace: 'default' },
      type: 'kubernetes.io/dockerconfigjson',
      data: {
        '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { [reg!.host]: { auth } } })).toString('base64'),
      },
    });
    const started = Date.now();
    await c.create(R.pods, pullPod('hello', image, 'regcred'));
    const p = await eventually(async () => {
      const got = await c.get<Pod>(R.pods, 'default', 'hello');
      expect(got.status?.phase, JSON.stringify(got.status?.containerStatuses)).toBe('Running');
      return got;
    }, 120_000);
    const runningMs = Date.now() - started;
    expect(p.spec?.nodeName).toBe(node.name);
    expect(p.status?.containerStatuses?.[0]?.imageID).toBe(`${reg!.host}/tenant-a/hello@${digest}`);
    const logs = await eventually(async () => {
      const out = await kubectl('logs', 'hello');
      expect(out.stdout).toContain(MARKER);
      return out.stdout;
    }, 20_000);
    expect(logs.trim()).toBe(MARKER);
    const after = await ctrImages();
    expect(after).toContain(image);
    expect(after).toContain(`${reg!.host}/tenant-a/hello@${digest}`);
    const events = await c.list<Ev>(R.events, { namespace: 'default' });
    const pulled = events.items.find((e) => e.involvedObject?.name === 'hello' && e.reason === 'Pulled');
    expect(pulled?.message).toContain(image);
    process.stdout.write(
      `registry pull: Pod Running ${runningMs} ms after create; kubelet: ${pulled?.message ?? '(no Pulled event)'}\n`,
    );
  });

  it('refuses to pull for a Pod without the imagePullSecret (the registry wants basic auth)', async () => {
    const c = t!.client;
    await c.create(R.pods, pullPod('no-secret', image));
    const waiting = await eventually(async () => {
      const got = await c.get<Pod>(R.pods, 'default', 'no-secret');
      const w = got.status?.containerStatuses?.[0]?.state?.waiting;
      expect(['ErrImagePull', 'ImagePullBackOff']).toContain(w?.reason);
      return w;
    }, 60_000);
    expect(waiting?.message ?? '').toMatch(/401|unauthorized|authorization/i);
    const got = await c.get<Pod>(R.pods, 'default', 'no-secret');
    expect(got.status?.phase).toBe('Pending');
  });

  it('leaves the host without registry configuration once the node is gone', async () => {
    const hostsDir = registryConfigDir(node.opts.dir);
    expect(existsSync(join(hostsDir, reg!.host, 'hosts.toml'))).toBe(true);
    await t!.stop();
    t = undefined;
    if (!process.env.KEEP_STATE) expect(existsSync(hostsDir)).toBe(false);
    expect(existsSync(join('/etc/containerd/certs.d', reg!.host))).toBe(false);
  });
});
