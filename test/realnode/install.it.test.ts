/**
 * The installation a platform team makes, on the local super cluster with a real node (Node authorizer,
 * NodeRestriction, Pod Security admission): the image built here and pushed to the local registry (basic auth, TLS
 * from the local CA), `vc install` pulling it through the real node's containerd, the manager's two replicas and the
 * vn-agent DaemonSet running as real containers on the real node with in-cluster credentials, a tenant pushing an
 * image of its own to the same registry and running it, `vc install` again with another image reference rolling both
 * out under the running tenant, and `vc uninstall --crds` leaving nothing behind; the apiserver's audit log shows no
 * request of the manager or the agent refused over the whole run. Every step runs the `vc` CLI as
 * docs/operations/install.md shows it.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { renderKubeconfig } from '../../core/pki/kubeconfig.ts';
import { R } from '../../core/kube/resources.ts';
import type { RealNode } from '../../core/dev/local/realnode.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { ANN, rootNamespace } from '../../core/names/names.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { CRD_KIND, listManaged, PRUNABLE_KINDS, ResourceMapper } from '../../core/programs/install/apply.ts';
import { MANAGED_SELECTOR } from '../../core/programs/install/render.ts';
import type { LocalRegistry } from '../../core/toolchain/registry.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason, type TestSuper } from '../harness.ts';
import { refusedBy, serviceAccountClient } from '../identities.ts';
import { CONTEXT, InstallFlow, TENANT_USER } from '../installflow.ts';
import { Attempts } from '../security/attempts.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`install.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec?: { nodeName?: string; containers?: Array<{ name?: string; image?: string }> };
  status?: {
    phase?: string;
    podIP?: string;
    containerStatuses?: Array<{
      ready?: boolean;
      image?: string;
      imageID?: string;
      restartCount?: number;
      state?: { waiting?: { reason?: string; message?: string } };
    }>;
  };
}

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

/** refusals sums vc_kube_client_requests_total with code 403 in a Prometheus text exposition. */
function refusals(metrics: string): number {
  let n = 0;
  for (const line of metrics.split('\n'))
    if (line.startsWith('vc_kube_client_requests_total{') && /code="403"/.test(line))
      n += Number(line.split(' ').pop());
  return n;
}

describe.skipIf(!!skip)('vc install on the local super cluster with a real node', () => {
  let f: InstallFlow | undefined;
  let t: TestSuper | undefined;
  let reg: LocalRegistry | undefined;
  let node: RealNode;
  let dir: string;
  let digest: string;
  let installed = false;
  /** the tenant's root namespace in the super cluster and its kubeconfig file, once Running */
  let root: string | undefined;
  let tenantKubeconfig: string | undefined;
  /** the tenant Pod of the web Deployment, once it runs, and its super copy's IP */
  let webPod: string | undefined;
  let webIP: string | undefined;
  const attempts = new Attempts();
  const vc = (...args: string[]) => f!.vc(...args);
  const kubectl = (...args: string[]) => f!.kubectl(...args);
  const tenantKubectl = async (...args: string[]) =>
    (await exec(binaryPath('kubectl'), ['--kubeconfig', tenantKubeconfig!, ...args], { timeout: 30_000 })).stdout;
  const podsOf = async (namespace: string, app: string) =>
    (await t!.client.list<Pod>(R.pods, { namespace, labelSelector: `app.kubernetes.io/name=${app}` })).items;

  /** the 403s each manager Pod and the vn-agent counted (vc_kube_client_requests_total), by process */
  const refused: Record<string, number> = {};
  const refusalsNow = async () => {
    const counts: Record<string, number> = {};
    for (const p of await podsOf('vc-system', 'vc-manager')) {
      if (p.metadata!.deletionTimestamp || !p.status?.podIP) continue;
      const m = await eventually(async () => {
        const r = await get(`http://${p.status!.podIP}:8080/metrics`);
        expect(r.body).toContain('vc_kube_client_requests_total{');
        return r;
      }, 60_000);
      counts[p.metadata!.name!] = refusals(m.body);
    }
    // the agent's ops port is on the node's loopback, this host's
    const a = await get('http://127.0.0.1:10551/metrics');
    expect(a.body).toContain('vc_kube_client_requests_total{');
    counts['vn-agent'] = refusals(a.body);
    return counts;
  };

  beforeAll(async () => {
    f = await InstallFlow.start();
    t = f.t;
    reg = f.reg;
    node = f.node;
    dir = f.dir;
  }, 600_000);

  afterAll(async () => {
    if (attempts.records.length) attempts.report('in-cluster installation');
    await f?.stop(installed);
  });

  it('vc image build, then vc image push to the local registry with the docker config credentials', async () => {
    // Meanwhile: the platform kubeconfig's current context is another cluster, so without --context the CLI reaches
    // nothing and says so (it must not read an unreachable cluster as one with nothing installed).
    const elsewhere = vc('uninstall', '--kubeconfig', f!.platformKubeconfig).then(
      () => 'exit 0',
      (e: { stderr?: string }) => e.stderr ?? String(e),
    );
    const { built, pushed } = await f!.buildAndPush();
    expect(await elsewhere).toMatch(/cannot reach 127\.0\.0\.1:1 \(ECONNREFUSED\)/);
    expect(built).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pushed).toBe(built);
    digest = pushed;
  }, 300_000);

  it('vc install: preflight, apply, the manager and vn-agent pulled from the registry and Ready on the real node', async () => {
    const out = await f!.vc(...f!.installArgs());
    installed = true;
    process.stdout.write(out);
    expect(out).toMatch(/^created: Secret vc-system\/vc-image-pull$/m);
    expect(out).toMatch(/^Deployment vc-system\/vc-manager: .* on .*Running/m);
    const managers = await podsOf('vc-system', 'vc-manager');
    expect(managers).toHaveLength(2);
    const agents = await podsOf('vc-vn-agent', 'vc-vn-agent');
    expect(agents).toHaveLength(1);
    for (const p of [...managers, ...agents]) {
      expect(p.spec?.nodeName, p.metadata!.name).toBe(node.name);
      expect(p.status?.phase, p.metadata!.name).toBe('Running');
      // every container: the vn-agent's two (the agent and the node's cluster IP translation) too
      expect(
        p.status?.containerStatuses?.map((c) => c.ready),
        p.metadata!.name,
      ).toEqual(p.spec?.containers?.map(() => true));
      // pulled by digest from the registry, not a copy imported on the node
      expect(p.status?.containerStatuses?.[0]?.imageID, p.metadata!.name).toBe(
        `${reg!.host}/platform/virtualcluster-ts@${digest}`,
      );
    }
  }, 600_000);

  it('one manager replica leads (the Lease names it), the other waits', async (ctx) => {
    if (!installed) ctx.skip();
    const managers = await podsOf('vc-system', 'vc-manager');
    const lease = await eventually(async () => {
      const l = await t!.client.get<KubeObject & { spec?: { holderIdentity?: string } }>(
        R.leases,
        'vc-system',
        'vc-manager',
      );
      expect(l.spec?.holderIdentity).toBeTruthy();
      return l;
    }, 60_000);
    const leader = managers.filter((p) => lease.spec!.holderIdentity!.includes(p.metadata!.name!));
    expect(leader, lease.spec!.holderIdentity).toHaveLength(1);
  });

  it('a GitSource on the local git server gives a native VirtualCluster Running, its control plane as Pods on the real node', async (ctx) => {
    if (!installed) ctx.skip();
    const c = t!.client;
    await f!.prepareTenants(['team-a']);
    const started = Date.now();
    const v = await eventually(
      async () => {
        const got = await c.get<VirtualCluster>(R.virtualclusters, 'tenants', 'team-a');
        expect(got.status?.phase, got.status?.message).toBe('Running');
        return got;
      },
      300_000,
      1000,
    );
    process.stdout.write(`native tenant from git: Running ${Date.now() - started} ms after the GitSource\n`);
    root = rootNamespace('tenants', 'team-a', v.metadata!.uid!);
    const pods = (await c.list<Pod>(R.pods, { namespace: root })).items;
    expect(pods.map((p) => p.metadata!.name).sort()).toEqual(['apiserver-0', 'controller-manager-0', 'etcd-0']);
    for (const p of pods) expect(p.spec?.nodeName, p.metadata!.name).toBe(node.name);
  }, 600_000);

  it("vc kubeconfig gives the tenant's kubeconfig at the NodePort, which kubectl uses from this host", async (ctx) => {
    if (!root) ctx.skip();
    const text = await vc('kubeconfig', 'team-a', '-n', 'tenants');
    expect(text).toMatch(new RegExp(`server: https://${node.nodeIP.replace(/\./g, '\\.')}:3\\d{4}`));
    tenantKubeconfig = join(dir, 'team-a.kubeconfig');
    writeFileSync(tenantKubeconfig, text, { mode: 0o600 });
    const names = await eventually(() => tenantKubectl('get', 'namespaces', '-o', 'name'), 60_000, 1000);
    expect(names.split('\n')).toEqual(expect.arrayContaining(['namespace/default', 'namespace/kube-system']));
  });

  it('a tenant Deployment runs on the real node; kubectl logs and exec reach it through the in-cluster vn-agent', async (ctx) => {
    if (!tenantKubeconfig) ctx.skip();
    await tenantKubectl('create', 'deployment', 'web', `--image=${NODE_IMAGES.agnhost}`, '--', '/agnhost', 'netexec');
    const name = await eventually(
      async () => {
        const out = await tenantKubectl(
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
      180_000,
      1000,
    );
    const copy = (await t!.client.list<Pod>(R.pods, { labelSelector: 'app=web' })).items;
    expect(copy).toHaveLength(1);
    expect(copy[0]!.spec?.nodeName).toBe(node.name);
    webIP = copy[0]!.status!.podIP!;
    expect((await eventually(() => get(`http://${webIP}:8080/hostname`), 30_000, 500)).body).toBe(name);
    expect(await eventually(() => tenantKubectl('logs', name), 30_000, 1000)).toMatch(
      /Started HTTP server on port 8080/,
    );
    expect((await tenantKubectl('exec', name, '--', 'hostname')).trim()).toBe(name);
    webPod = name;
  }, 300_000);

  it("a tenant Pod reaches the tenant's Service at the cluster IP the tenant apiserver gave it, through the DaemonSet's translation", async (ctx) => {
    if (!tenantKubeconfig || !webPod) ctx.skip();
    await tenantKubectl('expose', 'deployment', 'web', '--port=80', '--target-port=8080');
    const tenantIP = (await tenantKubectl('get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    const copy = await eventually(async () => {
      const found = (await t!.client.list<KubeObject & { spec?: { clusterIP?: string } }>(R.services)).items.find(
        (x) => x.metadata?.name === 'web' && x.metadata?.annotations?.[ANN.tenantClusterIP] === tenantIP,
      );
      expect(found?.spec?.clusterIP).toBeTruthy();
      return found!;
    }, 60_000);
    expect(copy.spec!.clusterIP).not.toBe(tenantIP);
    await tenantKubectl('run', 'client', `--image=${NODE_IMAGES.agnhost}`, '--command', '--', '/agnhost', 'pause');
    await eventually(
      async () => expect(await tenantKubectl('get', 'pod', 'client', '-o', 'jsonpath={.status.phase}')).toBe('Running'),
      180_000,
      1000,
    );
    // no process of the test's node translates: the table is the installed DaemonSet's
    expect(node.clusterIPs).toBeUndefined();
    await eventually(
      () => tenantKubectl('exec', 'client', '--', '/agnhost', 'connect', `${tenantIP}:80`, '--timeout=5s'),
      60_000,
      1000,
    ).catch(async (e: unknown) => {
      const agent = (await podsOf('vc-vn-agent', 'vc-vn-agent'))[0]?.metadata?.name ?? '';
      const logs = await kubectl('logs', '-n', 'vc-vn-agent', agent, '-c', 'cluster-ips', '--tail=30').catch(String);
      const table = await exec('nft', ['list', 'table', 'ip', 'vc-cluster-ips']).then((r) => r.stdout, String);
      process.stdout.write(`DEBUG cluster-ips (super copy ${copy.spec!.clusterIP}):\n${logs}\n${table}\n`);
      throw e;
    });
  }, 300_000);

  it('a tenant pushes an image of its own to the registry and runs it with its pull Secret; without it, the node pulls nothing', async (ctx) => {
    if (!tenantKubeconfig) ctx.skip();
    const marker = `team-a's own image ${process.pid}`;
    const { ref, digest: own } = await f!.pushTenantImage(marker);
    expect(own).toMatch(/^sha256:[0-9a-f]{64}$/);
    await tenantKubectl(
      'create',
      'secret',
      'docker-registry',
      'regcred',
      '--docker-server',
      reg!.host,
      '--docker-username',
      TENANT_USER.username,
      '--docker-password',
      TENANT_USER.password,
    );
    const pod = (name: string, pullSecret?: string) => {
      const file = join(dir, `${name}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name },
          spec: {
            terminationGracePeriodSeconds: 1,
            ...(pullSecret && { imagePullSecrets: [{ name: pullSecret }] }),
            containers: [{ name: 'hello', image: ref }],
          },
        }),
      );
      return tenantKubectl('create', '-f', file);
    };
    await pod('own', 'regcred');
    const superPod = async (name: string) => {
      const l = (await t!.client.list<Pod>(R.pods, { fieldSelector: `metadata.name=${name}` })).items;
      expect(l).toHaveLength(1);
      return l[0]!;
    };
    const running = await eventually(
      async () => {
        const p = await superPod('own');
        expect(p.status?.phase, JSON.stringify(p.status?.containerStatuses)).toBe('Running');
        return p;
      },
      120_000,
      1000,
    );
    expect(running.spec?.nodeName).toBe(node.name);
    expect(running.status?.containerStatuses?.[0]?.imageID).toBe(`${reg!.host}/team-a/hello@${own}`);
    expect((await eventually(() => tenantKubectl('logs', 'own'), 30_000, 1000)).trim()).toBe(marker);
    // The node holds the image now; a Pod without the credentials still gets nothing from its cache (pulled Always).
    await pod('nocred');
    const refusedPull = await eventually(
      async () => {
        const w = (await superPod('nocred')).status?.containerStatuses?.[0]?.state?.waiting;
        expect(w?.reason).toMatch(/^(ErrImagePull|ImagePullBackOff)$/);
        return w!;
      },
      120_000,
      1000,
    );
    process.stdout.write(`a tenant Pod without the pull Secret: ${refusedPull.reason}: ${refusedPull.message}\n`);
    await tenantKubectl('delete', 'pod', 'own', 'nocred', '--wait=false');
  }, 300_000);

  it('no request of the manager or the vn-agent was refused by RBAC; a write the admission policies forbid is', async (ctx) => {
    if (!installed) ctx.skip();
    Object.assign(refused, await refusalsNow());
    process.stdout.write(`RBAC refusals (403) by process: ${JSON.stringify(refused)}\n`);
    expect(Object.keys(refused)).toHaveLength(3);
    expect(Object.values(refused)).toEqual([0, 0, 0]);
    const asManager = await serviceAccountClient(t!.sc, 'vc-system', 'vc-manager');
    await refusedBy(
      () =>
        asManager.create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'planted', namespace: 'kube-system' },
        }),
      /vc-manager-tenant-namespaces/,
    );
  });

  it("hostile, in-cluster: a tenant Pod reaches no manager port, nor the vn-agent's ops port; its token opens nothing", async (ctx) => {
    if (!webPod) ctx.skip();
    const managers = await podsOf('vc-system', 'vc-manager');
    const targets = [
      ...managers.flatMap((p) => [8080, 9292].map((port) => `${p.status!.podIP}:${port}`)),
      `${node.nodeIP}:10551`,
    ];
    for (const target of targets)
      await attempts.attempt(`a tenant Pod connects to ${target}`, async () => {
        const r = await tenantKubectl('exec', webPod!, '--', '/agnhost', 'connect', target, '--timeout', '3s').then(
          () => undefined,
          (e: { stderr?: string }) => e.stderr ?? '',
        );
        if (r === undefined) throw new Error(`${target} accepted a connection from a tenant Pod`);
        expect(r).toMatch(/TIMEOUT|REFUSED/);
        return r.split('\n')[0]!;
      });
    await attempts.attempt('the token in a tenant Pod reads Secrets of vc-system in the super cluster', async () => {
      const token = (
        await tenantKubectl('exec', webPod!, '--', 'cat', '/var/run/secrets/kubernetes.io/serviceaccount/token')
      ).trim();
      expect(token.split('.')).toHaveLength(3);
      const asTenant = await KubeClient.fromString(
        renderKubeconfig({
          clusterName: 'super',
          server: t!.sc.cluster.server,
          caPem: t!.sc.cluster.caPem,
          user: 'tenant-pod',
          token,
        }),
      );
      try {
        await asTenant.list(R.secrets, { namespace: 'vc-system' });
      } catch (e) {
        if (e instanceof ApiError && (e.code === 401 || e.code === 403)) return `${e.code}: ${e.message}`;
        throw e;
      }
      throw new Error("a tenant Pod's token listed the Secrets of vc-system");
    });
  }, 120_000);

  it('the leading manager Pod deleted: another replica leads, the deleted one never again, no write repeated, the tenant keeps serving', async (ctx) => {
    if (!webPod || !root) ctx.skip();
    const c = t!.client;
    const lease = () => c.get<KubeObject & { spec?: { holderIdentity?: string } }>(R.leases, 'vc-system', 'vc-manager');
    // a settled tenant first: its controller manager may still be getting Ready (the tenant Degraded until it is)
    await eventually(
      async () => {
        const v = await c.get<VirtualCluster>(R.virtualclusters, 'tenants', 'team-a');
        expect(v.status?.phase).toBe('Running');
        expect(v.status?.components?.every((x) => x.healthy)).toBe(true);
      },
      120_000,
      1000,
    );
    const managers = await podsOf('vc-system', 'vc-manager');
    const current = await lease();
    const holder = current.spec!.holderIdentity!;
    const leader = managers.find((p) => holder.includes(p.metadata!.name!))!;
    // what the manager wrote for the tenant, by resourceVersion: a new leader that reconciles must find it all as is
    const written = async () => {
      const out: Record<string, string> = {};
      for (const r of [R.statefulsets, R.services, R.secrets, R.configmaps])
        for (const o of (await c.list(r, { namespace: root })).items)
          out[`${o.kind ?? r.resource} ${o.metadata!.name}`] = o.metadata!.resourceVersion!;
      const vcObj = await c.get(R.virtualclusters, 'tenants', 'team-a');
      out['VirtualCluster team-a'] = vcObj.metadata!.resourceVersion!;
      return out;
    };
    const before = await written();
    // every holder the Lease names from here on, in order, from a watch (a poll could miss a short term)
    const holders: string[] = [holder];
    const watching = new AbortController();
    const watched = c
      .watch<KubeObject & { spec?: { holderIdentity?: string } }>(
        R.leases,
        {
          namespace: 'vc-system',
          fieldSelector: 'metadata.name=vc-manager',
          resourceVersion: current.metadata!.resourceVersion,
        },
        (e) => {
          const h = e.object.spec?.holderIdentity ?? '';
          if (h !== holders.at(-1)) holders.push(h);
        },
        watching.signal,
      )
      .catch((e: unknown) => holders.push(`watch failed: ${String(e)}`));
    // The leader's refusals so far: its metrics go with its Pod.
    refused[leader.metadata!.name!] = refusals((await get(`http://${leader.status!.podIP}:8080/metrics`)).body);
    await c.delete(R.pods, 'vc-system', leader.metadata!.name!);
    // The standby usually takes over; the replica the Deployment starts in place of the deleted Pod may win the race
    // for a released Lease as well. Either is another replica; the deleted one must not come back.
    const next = await eventually(
      async () => {
        const h = (await lease()).spec?.holderIdentity ?? '';
        expect(h).not.toBe('');
        expect(h).not.toBe(holder);
        const pod = (await podsOf('vc-system', 'vc-manager')).find((p) => h.includes(p.metadata!.name!));
        expect(pod?.status?.podIP, h).toBeTruthy();
        return pod!;
      },
      120_000,
      1000,
    );
    // the new leader has run its controllers over the tenant (its reconcile metric counts it) before comparing
    await eventually(
      async () => {
        const m = await get(`http://${next.status!.podIP}:8080/metrics`);
        expect(m.body).toMatch(/^vc_controller_reconcile_total\{[^}]*controller="virtualcluster"[^}]*\} [1-9]/m);
      },
      120_000,
      2000,
    );
    expect(await written()).toEqual(before);
    expect((await get(`http://${webIP}:8080/hostname`)).body).toBe(webPod);
    expect((await tenantKubectl('exec', webPod!, '--', 'hostname')).trim()).toBe(webPod);
    // The deleted Pod is gone by now (its grace period is 30 s); it never held the Lease again after it let go.
    await eventually(
      async () => expect(await t!.client.getOrNull(R.pods, 'vc-system', leader.metadata!.name!)).toBeNull(),
      120_000,
      1000,
    );
    watching.abort();
    await watched;
    process.stdout.write(`Lease holders from the deletion on: ${JSON.stringify(holders)}\n`);
    expect(holders.slice(1).filter((h) => h === holder)).toEqual([]);
    expect(holders.filter((h) => h.startsWith('watch failed'))).toEqual([]);
    // no refusal in the rest of the run either: the replicas now, and the agent
    Object.assign(refused, await refusalsNow());
    process.stdout.write(`RBAC refusals (403) by process over the run: ${JSON.stringify(refused)}\n`);
    expect(Object.values(refused).every((n) => n === 0)).toBe(true);
  }, 300_000);

  it('vc install again with another image reference: the manager and vn-agent roll out in place under the running tenant', async (ctx) => {
    if (!webPod || !root) ctx.skip();
    // The same image by tag rather than digest: new Pod templates for both workloads, as a new version's image gives.
    const tagged = `${reg!.host}/platform/virtualcluster-ts:e2e`;
    const names = (pods: Pod[]) => pods.map((p) => p.metadata!.name!);
    const oldPods = [
      ...names(await podsOf('vc-system', 'vc-manager')),
      ...names(await podsOf('vc-vn-agent', 'vc-vn-agent')),
    ];
    const uids = async () =>
      Object.fromEntries(
        (await t!.client.list<Pod>(R.pods, { namespace: root })).items.map((p) => [p.metadata!.name, p.metadata!.uid]),
      );
    const controlPlane = await uids();
    const out = await vc(...f!.installArgs(tagged));
    expect(out).toMatch(/^configured: apps\/Deployment vc-system\/vc-manager$/m);
    expect(out).toMatch(/^configured: apps\/DaemonSet vc-vn-agent\/vc-vn-agent$/m);
    expect(out).not.toMatch(/^(created|pruned): /m);
    expect(out).toMatch(/^rolled out: Deployment vc-system\/vc-manager \(2\/2 replicas available\)$/m);
    // the rollout is over: the old Pods gone, new ones on the tagged image (the same digest) Ready on the real node
    const upgraded = await eventually(
      async () => {
        const now = [...(await podsOf('vc-system', 'vc-manager')), ...(await podsOf('vc-vn-agent', 'vc-vn-agent'))];
        expect(now).toHaveLength(3);
        expect(names(now).filter((n) => oldPods.includes(n))).toEqual([]);
        return now;
      },
      120_000,
      1000,
    );
    for (const p of upgraded) {
      expect(p.spec?.containers?.[0]?.image, p.metadata!.name).toBe(tagged);
      expect(p.status?.containerStatuses?.[0]?.ready, p.metadata!.name).toBe(true);
      expect(p.status?.containerStatuses?.[0]?.imageID, p.metadata!.name).toBe(
        `${reg!.host}/platform/virtualcluster-ts@${digest}`,
      );
    }
    // the tenant never noticed: its control plane's Pods are the same, it is Running, its Pod serves, and exec goes
    // through the new vn-agent
    expect(await uids()).toEqual(controlPlane);
    await eventually(
      async () => {
        const v = await t!.client.get<VirtualCluster>(R.virtualclusters, 'tenants', 'team-a');
        expect(v.status?.phase).toBe('Running');
        const h =
          (
            await t!.client.get<KubeObject & { spec?: { holderIdentity?: string } }>(
              R.leases,
              'vc-system',
              'vc-manager',
            )
          ).spec?.holderIdentity ?? '';
        expect(
          upgraded.some((p) => h.includes(p.metadata!.name!)),
          h,
        ).toBe(true);
      },
      120_000,
      1000,
    );
    expect((await get(`http://${webIP}:8080/hostname`)).body).toBe(webPod);
    expect((await eventually(() => tenantKubectl('exec', webPod!, '--', 'hostname'), 60_000, 1000)).trim()).toBe(
      webPod,
    );
  }, 600_000);

  it('vc uninstall --crds leaves no object, Pod, CRD or policy of the install behind', async (ctx) => {
    if (!installed) ctx.skip();
    // vc uninstall deletes the GitSource first (else it would apply the tenant again while it is deleted), then the
    // tenants, then the installation
    const out = await vc(
      'uninstall',
      '--kubeconfig',
      f!.platformKubeconfig,
      '--context',
      CONTEXT,
      '--crds',
      '--delete-tenants',
      '--timeout',
      '300',
    );
    installed = false;
    // how long each of its waits took, in the run's log: a slow uninstall names its wait
    console.log(
      `vc uninstall: ${out
        .split('\n')
        .filter((l) => /^(waited|still waiting) /.test(l))
        .join('; ')}`,
    );
    expect(out).toMatch(/^deleting GitSource tenants\/tenants \(it would apply its tenants again\)$/m);
    expect(out).toMatch(/^deleted: apps\/Deployment vc-system\/vc-manager$/m);
    const mapper = new ResourceMapper(t!.client);
    expect(await listManaged(t!.client, mapper, [...PRUNABLE_KINDS, CRD_KIND])).toEqual([]);
    for (const ns of ['vc-system', 'vc-vn-agent']) {
      expect(await t!.client.getOrNull(R.namespaces, undefined, ns)).toBeNull();
      expect((await t!.client.list(R.pods, { namespace: ns })).items).toEqual([]);
    }
    expect(
      (
        await kubectl(
          'get',
          'validatingadmissionpolicies,clusterroles,clusterrolebindings',
          '-l',
          MANAGED_SELECTOR,
          '-o',
          'name',
        )
      ).trim(),
    ).toBe('');
    expect((await kubectl('get', 'crd', '-o', 'name')).trim()).not.toMatch(/tenancy\.x-k8s\.io/);
    // Over the whole run, the uninstall included (the manager tearing down the tenant, its Pods stopping while their
    // RBAC was still there), the apiserver refused no request of the manager or the agent.
    const audit = f!.auditTally();
    process.stdout.write(
      `audit log: requests answered by component ${JSON.stringify(audit.answered)}, refused (403): ${audit.refused.length}\n`,
    );
    expect(audit.answered.manager).toBeGreaterThan(0);
    expect(audit.answered['vn-agent']).toBeGreaterThan(0);
    expect(audit.refused).toEqual([]);
  });
});
