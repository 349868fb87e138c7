import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { rootNamespace } from '../../core/names/names.ts';
import type { Embedded } from '../../core/dev/embedded/embedded.ts';
import { defaultClusterVersion } from '../../core/provisioners/native/provisioner.ts';
import { probeReadyz } from '../../core/provisioners/native/readyz.ts';
import { MEMBERS_CHANGE_REFUSED } from '../../core/provisioners/native/version.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { eventually } from '../harness.ts';

const exec = promisify(execFile);

interface Pod extends KubeObject {
  status?: { phase?: string; podIP?: string; containerStatuses?: Array<{ ready?: boolean }> };
}

/** metric reads one unlabelled sample of an etcd member's /metrics (plain HTTP on its metrics port). */
function metric(podIP: string, name: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = http.get(`http://${podIP}:2381/metrics`, { timeout: 5000 }, (r) => {
      let body = '';
      r.on('data', (c: Buffer) => (body += c.toString()));
      r.on('end', () => {
        const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(body);
        if (m) res(Number(m[1]));
        else rej(new Error(`${podIP}: no ${name} in /metrics`));
      });
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

interface PodReport extends KubeObject {
  status?: {
    phase?: string;
    containerStatuses?: Array<{
      name: string;
      ready?: boolean;
      restartCount?: number;
      state?: Record<string, { reason?: string; exitCode?: number }>;
      lastState?: Record<string, { reason?: string; exitCode?: number }>;
    }>;
  };
}

interface EventReport extends KubeObject {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  involvedObject?: { name?: string };
}

/**
 * controlPlaneReport says what a native tenant's control plane was doing when a wait on it ran out: each Pod of its
 * root namespace with each container's state, restarts and last termination, then the namespace's latest Warning
 * events (a startup probe that failed, an OOM kill, an image that did not pull), so a failure on a busy host says why.
 */
export async function controlPlaneReport(c: KubeClient, namespace: string, name: string): Promise<string> {
  try {
    const vc = await c.get<VirtualCluster>(R.virtualclusters, namespace, name);
    const root = rootNamespace(namespace, name, vc.metadata!.uid!);
    const state = (s?: Record<string, { reason?: string; exitCode?: number }>) =>
      Object.entries(s ?? {})
        .map(
          ([k, v]) => `${k}${v.reason ? ` ${v.reason}` : ''}${v.exitCode !== undefined ? ` exit ${v.exitCode}` : ''}`,
        )
        .join(',') || '-';
    const pods = (await c.list<PodReport>(R.pods, { namespace: root })).items.map(
      (p) =>
        `  ${p.metadata!.name} ${p.status?.phase ?? '?'}: ` +
        (p.status?.containerStatuses ?? [])
          .map(
            (s) =>
              `${s.name} ready=${s.ready} restarts=${s.restartCount ?? 0} now ${state(s.state)} last ${state(s.lastState)}`,
          )
          .join('; '),
    );
    const events = (await c.list<EventReport>(R.events, { namespace: root })).items
      .filter((ev) => ev.type === 'Warning')
      .slice(-12)
      .map((ev) => `  ${ev.involvedObject?.name} ${ev.reason} x${ev.count ?? 1}: ${ev.message?.slice(0, 200)}`);
    return `Pods of ${root}:\n${pods.join('\n') || '  none'}\nWarning events:\n${events.join('\n') || '  none'}`;
  } catch (e) {
    return `(no report of ${namespace}/${name}'s control plane: ${String(e)})`;
  }
}

/** reported rethrows a failed wait on a native tenant with controlPlaneReport appended to its message. */
export function reported(c: KubeClient, namespace: string, name: string): (e: unknown) => Promise<never> {
  return async (e) => {
    const err = e instanceof Error ? e : new Error(String(e));
    err.message += `\n${await controlPlaneReport(c, namespace, name)}`;
    throw err;
  };
}

/** SharedNode is what the file that runs nativeHaSuite started: the embedded default with one real node. */
export interface SharedNode {
  e: Embedded;
  c: KubeClient;
  /** a directory of the file's own, removed by it */
  dir: string;
}

/**
 * nativeHaSuite checks a native tenant of three members on the real node of `shared()` (spec.controlPlane.replicas 3
 * under a policy allowing it): three etcd members form one cluster, three apiservers serve behind the `apiserver`
 * Service. One etcd member and one apiserver are deleted while the node is cordoned (so neither comes back until it is
 * uncordoned): the tenant keeps answering and taking writes through its Service, and both return afterwards with the
 * cluster whole. The real node is one host, so the anti-affinity can only be preferred here; the unit tests
 * (core/provisioners/native/ha.test.ts) hold its shape. It runs inside test/realnode/native.it.test.ts, whose real
 * node it shares (its start is the costly part), and leaves its tenant running.
 */
export function nativeHaSuite(shared: () => SharedNode): void {
  describe('a native tenant of three members on the real node', () => {
    let dir: string;
    let e: Embedded;
    let c: KubeClient;
    let root: string;
    let kubeconfig: string;
    let kubeconfigText: string;
    const kubectl = async (...args: string[]) =>
      (await exec(binaryPath('kubectl'), ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 })).stdout;
    const pods = async (component: string): Promise<Pod[]> =>
      (await c.list<Pod>(R.pods, { namespace: root, labelSelector: `tenancy.x-k8s.io/component=${component}` })).items;
    const ready = (p: Pod) => p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready === true;
    const node = () => e.superCluster.realNodes[0]!.name;
    const cordon = (unschedulable: boolean) =>
      c.patch(R.nodes, undefined, node(), { spec: { unschedulable } }, 'merge');

    beforeAll(async () => {
      ({ e, c, dir } = shared());
      await c.create(R.tenantpolicies, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'ha' },
        spec: {
          grants: { subjects: [{ kind: 'Namespace', name: 'default' }], clusterVersions: ['ha'] },
          controlPlane: { maxReplicas: 3 },
        },
      });
      // The pinned versions (the real node's images), with small CPU requests: eight control-plane Pods at the default
      // requests would not fit the real node's two cores beside the sample tenants.
      const pinned = defaultClusterVersion();
      const small = { requests: { cpu: '10m' } };
      await c.create(R.clusterversions, {
        ...pinned,
        metadata: { name: 'ha' },
        spec: {
          ...pinned.spec,
          etcd: { ...pinned.spec.etcd, resources: small },
          apiServer: { resources: small },
          controllerManager: { resources: small },
        },
      });
    });

    afterAll(async () => {
      // whatever happened, the node takes Pods again for the tests after these
      if (e) await cordon(false).catch(() => {});
    });

    it('refuses five members where the policy allows three, naming the field', async () => {
      await c.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: 'five', namespace: 'default' },
        spec: {
          provisioner: { type: 'native' },
          policyName: 'ha',
          clusterVersionName: 'ha',
          controlPlane: { replicas: 5 },
        },
      });
      const vc = await eventually(async () => {
        const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'five');
        expect(v.status?.message).toContain('spec.controlPlane.replicas');
        return v;
      }, 60_000);
      expect(vc.status?.message).toContain(
        '5 members are more than the 3 policy "ha" allows (controlPlane.maxReplicas)',
      );
      expect(vc.status?.phase).not.toBe('Running');
      const r = rootNamespace('default', 'five', vc.metadata!.uid!);
      expect((await c.list(R.statefulsets, { namespace: r })).items).toEqual([]);
      await c.delete(R.virtualclusters, 'default', 'five');
    });

    // Its own waits (Running within 300 s, the members ready within 180 s more) bound it, not the default timeout.
    it('comes up Running with three etcd members in one cluster, three apiservers and two controller managers', async () => {
      await c.create(R.virtualclusters, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name: 'ha', namespace: 'default' },
        spec: {
          provisioner: { type: 'native' },
          policyName: 'ha',
          clusterVersionName: 'ha',
          controlPlane: { replicas: 3 },
        },
      });
      const vc = await eventually(
        async () => {
          const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'ha');
          expect(v.status?.phase, v.status?.message).toBe('Running');
          return v;
        },
        300_000,
        1000,
      ).catch(reported(c, 'default', 'ha'));
      root = rootNamespace('default', 'ha', vc.metadata!.uid!);
      const etcd = await eventually(
        async () => {
          const members = await pods('etcd');
          expect(members.map((p) => `${p.metadata!.name}=${ready(p)}`).sort()).toEqual([
            'etcd-0=true',
            'etcd-1=true',
            'etcd-2=true',
          ]);
          const apiservers = await pods('apiserver');
          expect(apiservers.filter(ready)).toHaveLength(3);
          expect(await pods('controller-manager')).toHaveLength(2);
          return members;
        },
        180_000,
        1000,
      );
      // one cluster: every member has a leader and exactly one of them is it (three clusters of one would be three)
      let leaders = 0;
      for (const p of etcd) {
        expect(await metric(p.status!.podIP!, 'etcd_server_has_leader'), p.metadata!.name).toBe(1);
        leaders += await metric(p.status!.podIP!, 'etcd_server_is_leader');
      }
      expect(leaders).toBe(1);

      const secret = await c.get<KubeObject & { data: Record<string, string> }>(R.secrets, 'default', 'ha-kubeconfig');
      kubeconfigText = Buffer.from(secret.data.kubeconfig!, 'base64').toString('utf8');
      kubeconfig = join(dir, 'ha.kubeconfig');
      writeFileSync(kubeconfig, kubeconfigText, { mode: 0o600 });
      await kubectl('create', 'configmap', 'before', '--from-literal=k=v');
    }, 540_000);

    // Its own waits bound it (the two back within 300 s of the uncordon: a replacement apiserver starts in a container
    // on a host the whole test run keeps busy), not the default timeout.
    it('keeps serving reads and writes with one etcd member and one apiserver gone, and takes them back', async (ctx) => {
      if (!kubeconfig) ctx.skip();
      // Cordoned, the node takes no replacement: the two stay gone until it is uncordoned.
      await cordon(true);
      // a failure below leaves the node taking Pods again, so the cases after this one see the tenant whole
      ctx.onTestFailed(async () => {
        await cordon(false);
      });
      const leader = await (async () => {
        for (const p of await pods('etcd'))
          if ((await metric(p.status!.podIP!, 'etcd_server_is_leader')) === 1) return p;
        throw new Error('no etcd leader');
      })();
      // the leader is the member whose loss matters most: the others must elect a new one
      const lostMember = leader.metadata!.name!;
      const lostApiserver = 'apiserver-0';
      let probes = 0;
      let failures = 0;
      let polling = true;
      ctx.onTestFailed(() => {
        polling = false;
      });
      const poller = (async () => {
        while (polling) {
          probes++;
          if ((await probeReadyz(kubeconfigText, 2000)) !== true) failures++;
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      for (const name of [lostMember, lostApiserver]) await c.delete(R.pods, root, name, { gracePeriodSeconds: 0 });
      await eventually(async () => {
        const names = [...(await pods('etcd')), ...(await pods('apiserver'))]
          .filter((p) => !p.metadata!.deletionTimestamp)
          .map((p) => `${p.metadata!.name}=${p.status?.phase}`);
        // the replacements exist but stay Pending on the cordoned node
        expect(names).toContain(`${lostMember}=Pending`);
        expect(names).toContain(`${lostApiserver}=Pending`);
      }, 60_000);
      // With two of three members and two of three apiservers the tenant reads and writes.
      let written = false;
      const during = await eventually(
        async () => {
          try {
            // A create whose answer was lost (the connection went through the apiserver being deleted) may have been
            // written all the same: its retry finding it is the write done; its value is checked below.
            if (!written)
              await kubectl('create', 'configmap', 'during', '--from-literal=k=v').catch((e: Error) => {
                if (!/configmaps "during" already exists/.test(e.message)) throw e;
              });
            written = true;
            return (await kubectl('get', 'configmaps', '-o', 'name')).split('\n');
          } catch (err) {
            // what the Service had behind it when the tenant did not answer
            const seen = [...(await pods('etcd')), ...(await pods('apiserver'))].map(
              (p) => `${p.metadata!.name}=${p.status?.phase}/${ready(p) ? 'ready' : 'not ready'}`,
            );
            throw new Error(`${(err as Error).message.trim()} (pods: ${seen.join(', ')})`);
          }
        },
        60_000,
        1000,
      );
      expect(during).toEqual(expect.arrayContaining(['configmap/before', 'configmap/during']));
      const survivors = (await pods('etcd')).filter(ready);
      expect(survivors.map((p) => p.metadata!.name).sort()).toEqual(
        ['etcd-0', 'etcd-1', 'etcd-2'].filter((n) => n !== lostMember),
      );
      for (const p of survivors) expect(await metric(p.status!.podIP!, 'etcd_server_has_leader')).toBe(1);
      const probesWhileLost = probes;
      const failuresWhileLost = failures;

      await cordon(false);
      await eventually(
        async () => {
          expect((await pods('etcd')).filter(ready)).toHaveLength(3);
          expect((await pods('apiserver')).filter(ready)).toHaveLength(3);
        },
        300_000,
        1000,
      ).catch(reported(c, 'default', 'ha'));
      polling = false;
      await poller;
      // the returned member rejoined the same cluster (its data stayed on the host): still one leader among three
      let leaders = 0;
      for (const p of await pods('etcd')) {
        expect(await metric(p.status!.podIP!, 'etcd_server_has_leader'), p.metadata!.name).toBe(1);
        leaders += await metric(p.status!.podIP!, 'etcd_server_is_leader');
      }
      expect(leaders).toBe(1);
      expect((await kubectl('get', 'configmap', 'during', '-o', 'jsonpath={.data.k}')).trim()).toBe('v');
      process.stdout.write(
        `native HA: lost ${lostMember} (the leader) and ${lostApiserver}; /readyz through the Service failed ` +
          `${failuresWhileLost} of ${probesWhileLost} probes until the writes were checked, ${failures} of ${probes} in all\n`,
      );
    }, 600_000);

    it('refuses a change of the member count of the running tenant and leaves it as it was', async (ctx) => {
      if (!kubeconfig) ctx.skip();
      const before = (await pods('etcd')).map((p) => p.metadata!.uid).sort();
      await c.patch(R.virtualclusters, 'default', 'ha', { spec: { controlPlane: { replicas: 1 } } }, 'merge');
      const vc = await eventually(async () => {
        const v = await c.get<VirtualCluster>(R.virtualclusters, 'default', 'ha');
        expect(v.status?.reason).toBe(MEMBERS_CHANGE_REFUSED);
        return v;
      }, 60_000);
      expect(vc.status?.message).toContain("spec.controlPlane.replicas: the tenant's etcd runs 3 member(s)");
      expect(
        (await c.get<KubeObject & { spec: { replicas: number } }>(R.statefulsets, root, 'etcd')).spec.replicas,
      ).toBe(3);
      expect((await pods('etcd')).map((p) => p.metadata!.uid).sort()).toEqual(before);
      expect((await kubectl('get', 'configmap', 'before', '-o', 'name')).trim()).toBe('configmap/before');
    });
  });
}
