import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../../core/lifecycle/types.ts';
import { startEmbedded, type Embedded } from '../../core/programs/embedded/embedded.ts';
import { PLACEMENTS } from '../../core/scheduler/annotations.ts';
import { eventually } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

// `vc up --super-clusters 2` as a user starts it (kwok nodes only), where a hand-started manager passed but the
// embedded default left a Deployment Pending: spread had put dev's default namespace on one super cluster and its
// kube-system, with the tenant DNS every ClusterFirst Pod waits for, on the other.
describe('vc up --super-clusters 2 (the embedded default with two super clusters)', () => {
  let dir: string;
  let e: Embedded;
  let dev: KubeClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-embedded-multisuper-'));
    e = await startEmbedded({ stateDir: join(dir, 'state'), nodes: 1, realNodes: 0, superClusters: 2 });
    const meta = await e.superCluster.cluster.client();
    const secret = await eventually(async () => {
      const vc = await meta.get<VirtualCluster>(R.virtualclusters, 'default', 'dev');
      expect(vc.status?.phase).toBe('Running');
      return meta.get<KubeObject & { data: Record<string, string> }>(R.secrets, 'default', kubeconfigSecretName('dev'));
    }, 120_000);
    dev = await KubeClient.fromString(Buffer.from(secret.data.kubeconfig!, 'base64').toString(), 'dev kubeconfig');
  });

  afterAll(async () => {
    dev?.close();
    await e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("places a tenant's whole namespaces on one super cluster, and a Deployment in default runs there", async () => {
    const placements = await eventually(async () => {
      const ns = (await dev.list(R.namespaces)).items;
      const byName = Object.fromEntries(ns.map((n) => [n.metadata!.name!, n.metadata?.annotations?.[PLACEMENTS]]));
      expect(byName['default']).toMatch(/^\{"r[12]":1\}$/);
      expect(byName['kube-system']).toBe(byName['default']);
      expect(byName['kube-public']).toBe(byName['default']);
      return byName['default']!;
    }, 60_000);
    await dev.create(R.deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'busybox' }] },
        },
      },
    });
    const home = Object.keys(JSON.parse(placements) as Record<string, number>)[0]!;
    await eventually(async () => {
      const pods = (await dev.list(R.pods, { namespace: 'default', labelSelector: 'app=web' })).items as Array<
        KubeObject & { status?: { phase?: string }; spec?: { nodeName?: string } }
      >;
      expect(pods.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
      for (const p of pods) expect(p.spec?.nodeName).toMatch(home === 'r1' ? /^super-node-/ : /^r2-node-/);
    }, 90_000);
  });

  it('vc superclusters lists the static r1 next to the registered r2, with capacity', async () => {
    const rows = await eventually(async () => {
      const out = JSON.parse(
        (
          await execP(
            process.execPath,
            [vcBin, 'superclusters', '--kubeconfig', e.superCluster.kubeconfigPath, '-o', 'json'],
            { timeout: 60_000 },
          )
        ).stdout,
      ) as Array<Record<string, string>>;
      expect(out.map((r) => r.name).sort()).toEqual(['r1', 'r2']);
      return out;
    }, 30_000);
    const r1 = rows.find((r) => r.name === 'r1')!;
    expect(r1).toMatchObject({ namespace: '(static)', state: 'ready', capacity: 'cpu=32,memory=256Gi,pods=110' });
    expect(Number(r1.namespaces)).toBeGreaterThan(0);
    expect(rows.find((r) => r.name === 'r2')).toMatchObject({ namespace: 'vc-system', state: 'ready' });
  });
});
