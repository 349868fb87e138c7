/**
 * The CA of a real local tenant is rotated with `vc rotate-ca` (issue 33, §4): a step out of order is refused with
 * the step to run; after `add` and `reissue` a kubeconfig issued before the rotation still works with kubectl, and the
 * kubeconfig Secret's new one works too; after `drop` the old one fails with a clear error and the new one works.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigSecretName, type VirtualCluster } from '../../core/api/virtualcluster.ts';
import { type KubeObject } from '../../core/kube/client.ts';
import { parseKubeconfig } from '../../core/kube/kubeconfig.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { pemBlocks } from '../../core/dev/local/renewal.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const crds = join(import.meta.dirname, '../../deploy/crds');
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const NS = 'default';

/** run runs a program and answers its exit code and output, failing or not. */
const run = (file: string, args: string[]) =>
  exec(file, args, { timeout: 240_000 }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: e.code ?? 1,
      out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
    }),
  );

describe('rotating the CA of a local tenant with vc rotate-ca', () => {
  let t: TestSuper;
  let stateDir: string;
  let local: LocalProvisioner;
  let controller: VirtualClusterController;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of ['virtualclusters.yaml', 'clusterversions.yaml', 'tenantpolicies.yaml'])
      for (const d of parseAllDocuments(readFileSync(join(crds, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    await eventually(() => t.client.list(R.clusterversions));
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'TenantPolicy',
          metadata: { name: 'rotation', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: { provisioners: { allowed: ['local'] } },
        },
        'test',
      ),
    );
    stateDir = mkdtempSync(join(tmpdir(), 'vc-carotation-'));
    local = new LocalProvisioner(stateDir, t.sc.etcd);
    controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { local },
      tenants: new MutableTenantRegistry(),
    });
    await controller.start();
  });

  afterAll(async () => {
    await controller?.stop();
    await local?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('adds, reissues and drops: old kubeconfigs work until the drop, then fail with a clear error', async () => {
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'rot', namespace: NS },
      spec: { provisioner: { type: 'local' } },
    });
    await eventually(async () => {
      const v = await t.client.get<VirtualCluster>(R.virtualclusters, NS, 'rot');
      expect(v.status?.phase, v.status?.message).toBe('Running');
    }, 120_000);
    const secretKubeconfig = async () => {
      const s = await t.client.get<KubeObject & { data?: Record<string, string> }>(
        R.secrets,
        NS,
        kubeconfigSecretName('rot'),
      );
      return Buffer.from(s.data!.kubeconfig!, 'base64').toString('utf8');
    };
    const cas = (text: string) => pemBlocks(parseKubeconfig(text, 'kubeconfig').caPem!);
    const files = mkdtempSync(join(tmpdir(), 'vc-carotation-kc-'));
    const kubectl = (text: string, name: string) => {
      const f = join(files, name);
      writeFileSync(f, text, { mode: 0o600 });
      return run(binaryPath('kubectl'), ['--kubeconfig', f, 'get', 'namespaces', '-o', 'name']);
    };
    const vc = (...args: string[]) =>
      run(process.execPath, [vcBin, 'rotate-ca', 'rot', ...args, '--kubeconfig', t.sc.kubeconfigPath]);
    // Each step restarts what it must by itself: no component of the tenant crashes on the way.
    const crashes: string[] = [];
    const unwatch = local.onComponentExit((_, component) => crashes.push(component));
    try {
      const before = await secretKubeconfig();
      const oldCa = new X509Certificate(cas(before)[0]!);
      expect(await kubectl(before, 'before')).toMatchObject({ code: 0, out: expect.stringContaining('kube-system') });

      const early = await vc('--step', 'drop');
      expect(early.code).not.toBe(0);
      expect(early.out).toContain('step drop follows step reissue');

      expect(await vc('--step', 'add')).toMatchObject({ code: 0, out: expect.stringContaining('NewCAAdded') });
      const added = await eventually(async () => {
        const kc = await secretKubeconfig();
        expect(cas(kc)).toHaveLength(2);
        return kc;
      });
      const newCa = new X509Certificate(cas(added)[1]!);
      expect(await kubectl(before, 'before')).toMatchObject({ code: 0 });
      expect(await kubectl(added, 'added')).toMatchObject({ code: 0 });

      expect(await vc('--step', 'reissue')).toMatchObject({ code: 0, out: expect.stringContaining('LeavesReissued') });
      const reissued = await eventually(async () => {
        const kc = await secretKubeconfig();
        expect(new X509Certificate(parseKubeconfig(kc, 'kc').certPem!).verify(newCa.publicKey)).toBe(true);
        return kc;
      });
      expect(await kubectl(before, 'before')).toMatchObject({ code: 0, out: expect.stringContaining('kube-system') });
      expect(await kubectl(reissued, 'reissued')).toMatchObject({ code: 0 });

      expect(await vc('--step', 'drop')).toMatchObject({ code: 0, out: expect.stringContaining('OldCADropped') });
      const dropped = await eventually(async () => {
        const kc = await secretKubeconfig();
        expect(cas(kc).map((p) => new X509Certificate(p).serialNumber)).toEqual([newCa.serialNumber]);
        return kc;
      });
      expect(cas(dropped)[0]).not.toContain(oldCa.raw.toString('base64').slice(0, 40));
      // The apiserver now serves a certificate of the new CA only: the old kubeconfig's trust fails, as kubectl says.
      await eventually(async () => {
        const r = await kubectl(before, 'before');
        expect(r.code).not.toBe(0);
        expect(r.out).toMatch(/certificate signed by unknown authority/);
      }, 60_000);
      expect(await kubectl(dropped, 'dropped')).toMatchObject({ code: 0, out: expect.stringContaining('kube-system') });
      // A repeated step changes nothing and says so again.
      expect(await vc('--step', 'drop')).toMatchObject({ code: 0 });
      const root = (await t.client.get<VirtualCluster>(R.virtualclusters, NS, 'rot')).status!.clusterNamespace!;
      const logTail = (c: string) =>
        readFileSync(join(stateDir, root, 'logs', `${c}.log`), 'utf8')
          .split('\n')
          .filter((l) => /^[EF]\d{4}/.test(l))
          .slice(-8)
          .join('\n');
      expect(crashes, crashes.map(logTail).join('\n')).toEqual([]);
    } finally {
      unwatch();
      rmSync(files, { recursive: true, force: true });
    }
  }, 600_000);
});
