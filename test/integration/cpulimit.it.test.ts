/**
 * The CPU limit of a local tenant control plane (issue 31 §3, serving tenants fairly): the local provisioner runs a
 * tenant's etcd, kube-apiserver and kube-controller-manager in a cpu cgroup of their own whose quota and weight are
 * its TenantPolicy's quota.controlPlaneCPU. Read from the running system: the cgroup's files hold the limit, the
 * three processes are in it, a changed limit reaches them without a restart, removing the tenant removes the cgroup;
 * a policy asking for less than the least or more than the platform's maximum is refused by `vc validate` and by the
 * apiserver, naming the file, the object and the field. The platform's own process (the manager of `vc up`) runs in a
 * cgroup whose weight outweighs the tenants' control planes, leaves it on stop, and a killed one's is swept.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONTROL_PLANE_CPU, MAX_CONTROL_PLANE_CPU } from '../../core/api/tenantpolicy.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import {
  cgroupOf,
  cpuHierarchy,
  PLATFORM_CGROUP_PREFIX,
  PLATFORM_CPU_SHARES,
  sharesToWeight,
  sweepPlatformCgroups,
} from '../../core/dev/local/cpulimit.ts';
import { LocalEtcd } from '../../core/dev/local/etcd.ts';
import { confinementNames } from '../../core/dev/local/netconfine.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { runVc } from '../vccli.ts';

const UID = '55555555-cccc-4ccc-8ccc-0000000000c5';
const vc: VirtualCluster = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { namespace: 'team-c', name: 'cpu', uid: UID },
  spec: {},
};
const root = rootNamespace('team-c', 'cpu', UID);
const hierarchy = cpuHierarchy();

/** pidsIn are the processes in the cgroup directory `dir`. */
const pidsIn = (dir: string): number[] =>
  readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);

/** limitOf reads the quota and weight files of the cgroup directory `dir`. */
const limitOf = (dir: string): Record<string, string> => {
  const files = hierarchy!.version === 1 ? ['cpu.cfs_quota_us', 'cpu.shares'] : ['cpu.max', 'cpu.weight'];
  return Object.fromEntries(files.map((f) => [f, readFileSync(join(dir, f), 'utf8').trim()]));
};

/** expected is what limitOf reads for a limit on this host's hierarchy. */
const expected = (millicores: number, shares: number): Record<string, string> =>
  hierarchy!.version === 1
    ? { 'cpu.cfs_quota_us': String(millicores * 100), 'cpu.shares': String(shares) }
    : { 'cpu.max': `${millicores * 100} 100000`, 'cpu.weight': String(Math.floor(1 + ((shares - 2) * 9999) / 262142)) };

describe.skipIf(!hierarchy || process.getuid?.() !== 0)('the CPU limit of a local tenant control plane', () => {
  let t: TestSuper;
  let dir: string;
  let local: LocalProvisioner;
  const cgroupDir = hierarchy ? join(hierarchy.root, confinementNames(root).cgroup) : '';

  /** the pids of the tenant's etcd, apiserver and controller manager now */
  const tenantPids = (): number[] => {
    const cp = local.controlPlane(root)!;
    const etcd = cp.opts.etcd instanceof LocalEtcd ? cp.opts.etcd.process.pid : undefined;
    return [etcd, cp.apiserver.pid, cp.controllerManager?.pid].map((p) => {
      expect(p).toBeGreaterThan(0);
      return p!;
    });
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    dir = mkdtempSync(join(tmpdir(), 'vc-cpulimit-'));
    local = new LocalProvisioner(join(dir, 'tenants'), t.sc.etcd);
  }, 240_000);

  afterAll(async () => {
    await local?.stop();
    await t?.stop();
    if (dir && !process.env.KEEP_STATE) rmSync(dir, { recursive: true, force: true });
  });

  it("runs the tenant's etcd, apiserver and controller manager in a cgroup with its policy's limit", async () => {
    await local.ensure(vc, root, { controlPlaneCpu: { millicores: 1500, shares: 2048 } });
    expect(limitOf(cgroupDir)).toEqual(expected(1500, 2048));
    const pids = tenantPids();
    expect(pidsIn(cgroupDir)).toEqual(expect.arrayContaining(pids));
    // each process says so itself
    for (const pid of pids)
      expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).toContain(`/${confinementNames(root).cgroup}\n`);
    // and the tenant serves
    const client = await local.controlPlane(root)!.client();
    expect((await client.list(R.namespaces)).items.map((n) => n.metadata?.name)).toContain('default');
  });

  it('writes a changed limit to the running processes without restarting them', async () => {
    const before = tenantPids();
    const state = await local.ensure(vc, root, { controlPlaneCpu: { millicores: 500, shares: 256 } });
    expect(state).toMatchObject({ ready: true, rolled: false });
    expect(limitOf(cgroupDir)).toEqual(expected(500, 256));
    expect(tenantPids()).toEqual(before);
    // a policy without the field: the default
    await local.ensure(vc, root, {});
    expect(limitOf(cgroupDir)).toEqual(
      expected(DEFAULT_CONTROL_PLANE_CPU.millicores, DEFAULT_CONTROL_PLANE_CPU.shares),
    );
    expect(tenantPids()).toEqual(before);
  });

  it('removes the cgroup with the tenant', async () => {
    await local.remove(vc, root);
    await eventually(() => expect(existsSync(cgroupDir)).toBe(false), 10_000);
  });

  it.each([
    ['millicores', 50, 'must be >= 100', /greater than or equal to 100/],
    ['millicores', MAX_CONTROL_PLANE_CPU.millicores + 1, 'must be <= 16000', /less than or equal to 16000/],
    ['shares', 1, 'must be >= 2', /greater than or equal to 2/],
  ])(
    'refuses a TenantPolicy with controlPlaneCPU.%s %i in vc validate and at admission, naming the field',
    async (field, value, validateMessage, admissionMessage) => {
      const name = `cpu-${field}-${value}`;
      const policy = {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name },
        spec: { quota: { controlPlaneCPU: { [field]: value } } },
      };
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, JSON.stringify(policy));
      const repo = join(dir, 'repo');
      mkdirSync(repo, { recursive: true });
      const r = await runVc(t.sc.kubeconfigPath, dir, ['validate', '--policy', file, repo]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        `${file}: TenantPolicy ${name}: /spec/quota/controlPlaneCPU/${field} ${validateMessage}`,
      );
      // The CRD generated from the same schema: the apiserver refuses it by name and field.
      const crd = parseAllDocuments(
        readFileSync(join(import.meta.dirname, '../../deploy/crds/tenantpolicies.yaml'), 'utf8'),
      )[0]!.toJS() as KubeObject;
      await t.client.apply(R.crds, crd, 'test');
      let refusal = '';
      await eventually(async () => {
        refusal = await t.client.create(R.tenantpolicies, policy).then(
          () => 'admitted',
          (e: unknown) => String(e),
        );
        expect(refusal).toContain(`spec.quota.controlPlaneCPU.${field}`);
      }, 60_000);
      expect(refusal).toMatch(admissionMessage);
    },
  );
});

describe.skipIf(!hierarchy || process.getuid?.() !== 0)("the platform process's cpu weight", () => {
  const script = join(import.meta.dirname, '../platformproc.ts');
  const started: Array<ChildProcessByStdio<Writable, Readable, null>> = [];
  const start = async (): Promise<{ p: ChildProcessByStdio<Writable, Readable, null>; dir: string; child: number }> => {
    const p = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    started.push(p);
    const [line] = (await once(createInterface({ input: p.stdout }), 'line')) as [string];
    const out = JSON.parse(line) as { dir: string; child: number; unavailable?: string };
    expect(out.unavailable).toBeUndefined();
    return { p, ...out };
  };
  const weightFile = () => (hierarchy!.version === 1 ? 'cpu.shares' : 'cpu.weight');
  const platformWeight = () =>
    String(hierarchy!.version === 1 ? PLATFORM_CPU_SHARES : sharesToWeight(PLATFORM_CPU_SHARES));
  const mine = () => cgroupOf(process.pid, hierarchy!.version);

  afterAll(() => {
    for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    sweepPlatformCgroups();
  });

  it('runs in a cgroup that outweighs 16 tenants at the most a policy grants, hands a child back and leaves it', async () => {
    const { p, dir, child } = await start();
    expect(dir).toBe(join(hierarchy!.root, `${PLATFORM_CGROUP_PREFIX}${p.pid}`));
    expect(cgroupOf(p.pid!, hierarchy!.version)).toBe(`/${PLATFORM_CGROUP_PREFIX}${p.pid}`);
    expect(readFileSync(join(dir, weightFile()), 'utf8').trim()).toBe(platformWeight());
    const tenantWeight =
      hierarchy!.version === 1 ? MAX_CONTROL_PLANE_CPU.shares : sharesToWeight(MAX_CONTROL_PLANE_CPU.shares);
    expect(Number(platformWeight())).toBeGreaterThanOrEqual(16 * tenantWeight);
    expect(pidsIn(dir)).toEqual([p.pid]);
    // the child it started and handed back is where the platform process came from, as this test's own process is
    expect(cgroupOf(child, hierarchy!.version)).toBe(mine());
    p.stdin.write('leave\n');
    const [code] = (await once(p, 'exit')) as [number];
    expect(code).toBe(0);
    expect(existsSync(dir)).toBe(false);
  });

  it('leaves an empty cgroup when killed outright, which the sweep of vc down removes (its platform part here)', async () => {
    const { p, dir, child } = await start();
    process.kill(child, 'SIGKILL');
    p.kill('SIGKILL');
    await once(p, 'exit');
    expect(existsSync(dir)).toBe(true);
    await eventually(
      () => expect(sweepPlatformCgroups()).toContain(`cpu cgroup ${PLATFORM_CGROUP_PREFIX}${p.pid}`),
      10_000,
    );
    expect(existsSync(dir)).toBe(false);
  });
});
