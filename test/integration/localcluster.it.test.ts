import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { Informer } from '../../core/kube/informer.ts';
import { InformerFactory } from '../../core/kube/factory.ts';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { binaryPath, pinnedVersions } from '../../core/toolchain/toolchain.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { apiserverWatches, eventually, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

describe('local super cluster', () => {
  let t: TestSuper;
  beforeAll(async () => {
    t = await startTestSuper({ nodes: 2 });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('kubectl lists the kwok nodes as Ready and reports the pinned server version', async () => {
    const kubectl = binaryPath('kubectl');
    const nodes = await exec(kubectl, ['--kubeconfig', t.sc.kubeconfigPath, 'get', 'nodes', '--no-headers']);
    const lines = nodes.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l).toMatch(/^super-node-\d\s+Ready\s/);
    const version = await exec(kubectl, ['--kubeconfig', t.sc.kubeconfigPath, 'version', '-o', 'json']);
    const v = JSON.parse(version.stdout) as {
      serverVersion: { gitVersion: string; minor: string };
      clientVersion: { gitVersion: string };
    };
    expect(v.serverVersion.gitVersion).toBe(pinnedVersions().kubernetes);
    expect(v.clientVersion.gitVersion).toBe(pinnedVersions().kubernetes);
    expect(v.serverVersion.minor).toBe(pinnedVersions().kubernetes.split('.')[1]);
  });

  it('a control plane that never gets ready is stopped, not left running, and the error says why', async () => {
    // With node.k8s.io and most other groups off, this apiserver's admission plugins never sync: /readyz never passes.
    const dir = 'never-ready';
    const err = await t.sc
      .addControlPlane(dir, {
        controllerManager: false,
        readyTimeoutMs: 8_000,
        apiserverExtraArgs: {
          'runtime-config': [
            'api/all=false',
            'api/v1=true',
            ...['coordination.k8s.io', 'apiregistration.k8s.io', 'flowcontrol.apiserver.k8s.io'].map(
              (g) => `${g}/v1=true`,
            ),
            ...['admissionregistration.k8s.io', 'rbac.authorization.k8s.io', 'apiextensions.k8s.io'].map(
              (g) => `${g}/v1=true`,
            ),
            'networking.k8s.io/v1=true',
          ].join(','),
        },
      })
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(err?.message).toMatch(/timed out after 8000 ms waiting for never-ready kube-apiserver \/readyz/);
    const left = await exec('pgrep', ['-f', `clusters/${dir}/`]).then(
      (r) => r.stdout.trim(),
      () => '',
    );
    expect(left).toBe('');
  });

  it('accepts token authentication as well as client certificates', async () => {
    const byToken = await KubeClient.fromFile(`${t.sc.cluster.dir}/admin-token.kubeconfig`);
    try {
      const ns = await byToken.get(R.namespaces, undefined, 'default');
      expect(ns.metadata?.name).toBe('default');
    } finally {
      byToken.close();
    }
  });

  it("runs a Deployment's Pods to Running on kwok nodes", async () => {
    const c = t.client;
    await c.create(R.deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
    });
    const pods = await eventually(async () => {
      const list = await c.list<Pod>(R.pods, { namespace: 'default', labelSelector: 'app=web' });
      const running = list.items.filter((p) => p.status?.phase === 'Running');
      expect(running).toHaveLength(3);
      return running;
    }, 90_000);
    for (const p of pods) expect(p.spec?.nodeName).toMatch(/^super-node-\d$/);
  });

  it('shares one watch among the users of a shared informer, open from the first start to the last stop', async () => {
    const factory = new InformerFactory(t.client, 'test');
    const a = factory.informer({ resource: R.limitranges });
    const b = factory.informer({ resource: R.limitranges });
    const other = factory.informer({ resource: R.limitranges, namespace: 'kube-system' });
    const seen: Record<string, string[]> = { a: [], b: [] };
    a.addHandler({ onAdd: (o) => seen.a!.push(String(o.metadata?.name)) });
    b.addHandler({ onAdd: (o) => seen.b!.push(String(o.metadata?.name)) });
    const before = await apiserverWatches(t.sc.cluster, 'limitranges');
    a.start();
    b.start();
    await Promise.all([a.waitForSync(), b.waitForSync()]);
    try {
      await eventually(async () => expect(await apiserverWatches(t.sc.cluster, 'limitranges')).toBe(before + 1));
      expect(factory.watching()).toBe(1);
      const lr = (name: string) => ({
        apiVersion: 'v1',
        kind: 'LimitRange',
        metadata: { name, namespace: 'default' },
        spec: { limits: [{ type: 'Container', default: { cpu: '100m' } }] },
      });
      await t.client.create(R.limitranges, lr('first'));
      await eventually(() => expect(seen).toEqual({ a: ['first'], b: ['first'] }));
      // One user leaves: its handlers hear nothing more, the other keeps the watch.
      await a.stop();
      await t.client.create(R.limitranges, lr('second'));
      await eventually(() => expect(seen.b).toEqual(['first', 'second']));
      expect(seen.a).toEqual(['first']);
      expect(await apiserverWatches(t.sc.cluster, 'limitranges')).toBe(before + 1);
      // Another selection is another watch.
      other.start();
      await other.waitForSync();
      await eventually(async () => expect(await apiserverWatches(t.sc.cluster, 'limitranges')).toBe(before + 2));
    } finally {
      await Promise.all([a.stop(), b.stop(), other.stop()]);
    }
    expect(factory.watching()).toBe(0);
    await eventually(async () => expect(await apiserverWatches(t.sc.cluster, 'limitranges')).toBe(before));
  });

  describe('informer', () => {
    let writer: LocalControlPlane;
    let writerClient: KubeClient;
    beforeAll(async () => {
      // An apiserver replica on the same etcd prefix: it takes writes while the informer's apiserver is down.
      writer = await t.sc.addControlPlane('super-replica', { etcdPrefix: '/super', controllerManager: false });
      writerClient = await writer.client();
    });

    const value = (inf: Informer, key: string) => (inf.get(key) as { data?: { v?: string } } | undefined)?.data?.v;

    it('keeps delivering across an apiserver restart and misses no update made while it was down', async () => {
      const c = t.client;
      const inf = new Informer({
        client: c,
        resource: R.configmaps,
        namespace: 'default',
        name: 'restart',
        backoffMinMs: 100,
      });
      const seen: string[] = [];
      inf.addHandler({ onUpdate: (_o, n) => seen.push(String((n as { data?: { v?: string } }).data?.v)) });
      inf.start();
      try {
        await inf.waitForSync();
        await c.create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'restart', namespace: 'default' },
          data: { v: '0' },
        });
        await eventually(() => expect(value(inf, 'default/restart')).toBe('0'));
        // Caches keep no managedFields, which the apiserver does send.
        expect((await c.get(R.configmaps, 'default', 'restart')).metadata?.managedFields).toBeDefined();
        expect(inf.get('default/restart')?.metadata?.managedFields).toBeUndefined();

        await t.sc.cluster.stopApiserver();
        await writerClient.patch(R.configmaps, 'default', 'restart', { data: { v: 'while-down' } }, 'merge');
        await t.sc.cluster.startApiserver();
        await eventually(() => expect(value(inf, 'default/restart')).toBe('while-down'), 60_000);

        await c.patch(R.configmaps, 'default', 'restart', { data: { v: 'after' } }, 'merge');
        await eventually(() => expect(value(inf, 'default/restart')).toBe('after'));
        expect(seen).toEqual(expect.arrayContaining(['while-down', 'after']));
        expect(inf.stats.watchErrors).toBeGreaterThan(0);
      } finally {
        await inf.stop();
      }
    });

    it('reopens a watch that goes silent (a relay that stopped forwarding) instead of waiting out its timeout', async () => {
      // A TCP relay in front of the apiserver: TLS passes through it untouched; freezing it stops forwarding on the
      // connections it holds, as a stuck proxy or a half-open socket would, while new connections go through.
      const target = new URL(t.client.server);
      const held: Array<{ a: Socket; b: Socket }> = [];
      let frozen = false;
      const relay = createServer((a) => {
        const b = connect(Number(target.port), target.hostname);
        const pair = { a, b };
        if (!frozen) held.push(pair);
        a.on('data', (d) => !(frozen && held.includes(pair)) && b.write(d));
        b.on('data', (d) => !(frozen && held.includes(pair)) && a.write(d));
        for (const [x, y] of [
          [a, b],
          [b, a],
        ] as const) {
          x.on('error', () => y.destroy());
          x.on('close', () => y.destroy());
        }
      });
      await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
      const port = (relay.address() as AddressInfo).port;
      const kubeconfig = readFileSync(t.sc.cluster.kubeconfigPath, 'utf8').replace(
        `server: ${target.origin}`,
        `server: https://127.0.0.1:${port}`,
      );
      expect(kubeconfig).toContain(`127.0.0.1:${port}`);
      const viaRelay = await KubeClient.fromString(kubeconfig, 'the relay kubeconfig');
      const inf = new Informer({
        client: viaRelay,
        resource: R.configmaps,
        namespace: 'default',
        name: 'stall',
        backoffMinMs: 100,
        watchIdleMs: 5_000,
      });
      inf.start();
      try {
        await inf.waitForSync();
        // An object seen through the watch: the watch's connection is open (and held by the relay) before it freezes.
        await t.client.create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'stall-before', namespace: 'default' },
          data: { v: 'before' },
        });
        await eventually(() => expect(value(inf, 'default/stall-before')).toBe('before'));
        frozen = true;
        await t.client.create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'stall', namespace: 'default' },
          data: { v: 'after-freeze' },
        });
        // The watch it had is silent for good; only a new watch (a new connection) carries the ConfigMap.
        await eventually(() => expect(value(inf, 'default/stall')).toBe('after-freeze'), 60_000);
        expect(inf.stats.watchStalls).toBeGreaterThan(0);
      } finally {
        await inf.stop();
        for (const { a, b } of held) {
          a.destroy();
          b.destroy();
        }
        await new Promise((r) => relay.close(r));
      }
    });

    it('relists after a 410 Gone caused by etcd compaction, without crashing', async () => {
      const c = t.client;
      const inf = new Informer({
        client: c,
        resource: R.configmaps,
        namespace: 'default',
        name: 'gone',
        backoffMinMs: 100,
      });
      const deleted: string[] = [];
      inf.addHandler({ onDelete: (o) => deleted.push(String(o.metadata?.name)) });
      inf.start();
      try {
        for (const n of ['keep', 'drop']) {
          await c.create(R.configmaps, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: n, namespace: 'default' },
            data: { v: '0' },
          });
        }
        await eventually(() => expect(inf.get('default/drop')).toBeDefined());
        const listsBefore = inf.stats.lists;

        await t.sc.cluster.stopApiserver();
        for (let i = 1; i <= 5; i++)
          await writerClient.patch(R.configmaps, 'default', 'keep', { data: { v: String(i) } }, 'merge');
        await writerClient.delete(R.configmaps, 'default', 'drop');
        await t.sc.etcd.compact();
        await t.sc.cluster.startApiserver();

        await eventually(() => {
          expect(value(inf, 'default/keep')).toBe('5');
          expect(inf.get('default/drop')).toBeUndefined();
        }, 60_000);
        expect(inf.stats.relistsAfterGone).toBeGreaterThan(0);
        expect(inf.stats.lists).toBeGreaterThan(listsBefore);
        expect(inf.get('default/keep')?.metadata?.managedFields).toBeUndefined();
        expect(deleted).toContain('drop');
      } finally {
        await inf.stop();
      }
    });
  });
});
