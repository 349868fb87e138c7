/**
 * `vc install` and `vc uninstall` against a real local super cluster (kube-apiserver with the Node authorizer,
 * NodeRestriction and Pod Security admission; kube-controller-manager signing CSRs with the cluster CA; kwok nodes
 * that run the installed Pods as simulated ones). No real node and no image pull: what is tested is what the
 * install writes to the cluster and reads from it.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import { CRD_KIND, listManaged, PRUNABLE_KINDS, ResourceMapper } from '../../core/programs/install/apply.ts';
import { install, runPreflight, uninstall } from '../../core/programs/install/install.ts';
import {
  objectRef,
  packageVersion,
  parseObjects,
  renderInstall,
  type InstallSettings,
} from '../../core/programs/install/render.ts';
import { toolchainDir } from '../../core/toolchain/toolchain.ts';
import { ensureNamespace } from '../identities.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';

let t: TestSuper;
let dir: string;
let caFile: string;
const kubectl = () => join(toolchainDir(), 'kubectl');
const version = packageVersion();
const full: InstallSettings = {
  components: ['manager', 'vn-agent'],
  image: 'registry.example.com/virtualcluster-ts:9.9.9',
  version,
};
const ALL_KINDS = [...PRUNABLE_KINDS, CRD_KIND];

beforeAll(async () => {
  t = await startTestSuper({ nodes: 1 });
  dir = mkdtempSync(join(tmpdir(), 'vc-install-it-'));
  caFile = join(dir, 'kubelet-ca.crt');
  // The local super cluster's kubelets (kwok) serve nothing a probe could verify: the CA is given, as a platform whose
  // kubelets are not reachable from where it installs gives it.
  writeFileSync(caFile, t.sc.cluster.caPem);
});
afterAll(async () => {
  await t?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * versions maps every object the install owns to its generation where it has one (controllers write the status of
 * workloads and admission policies, which changes their resourceVersion but not their generation), else its
 * resourceVersion.
 */
async function versions(): Promise<Map<string, string>> {
  const live = await listManaged(t.client, new ResourceMapper(t.client), ALL_KINDS);
  return new Map(
    live.map((o) => [
      objectRef(o),
      o.metadata?.generation !== undefined ? `gen ${o.metadata.generation}` : `rv ${o.metadata?.resourceVersion}`,
    ]),
  );
}

describe('vc install', () => {
  const lines: string[] = [];
  const out = (l: string) => lines.push(l);

  it('preflight: one line per requirement, each met by the local super cluster, or says what is missing', async () => {
    const printed: string[] = [];
    const { lines: checks } = await runPreflight(t.client, {
      settings: full,
      kubeletCAFile: caFile,
      out: (l) => printed.push(l),
    });
    expect(checks.map((c) => [c.ok, c.text.replace(/ \(.*$/, '')])).toEqual([
      [true, expect.stringMatching(/^server version v1\.\d+\.\d+/)],
      [true, 'CustomResourceDefinitions'],
      [true, 'ValidatingAdmissionPolicy'],
      [true, 'Pod Security admission: on'],
      [true, 'Node authorizer: on'],
      [true, 'NodeRestriction admission: on'],
      [true, expect.stringMatching(/^kubelet client certificate for the vn-agent: a CertificateSigningRequest/)],
      [true, expect.stringMatching(/^kubelet CA for the vn-agent: .*kubelet-ca\.crt/)],
    ]);
    expect(printed.every((l) => l.startsWith('ok '))).toBe(true);

    // Without a kubelet CA nor kubelets reachable here the preflight refuses and says what to do.
    const refused: string[] = [];
    const unreachable = await runPreflight(t.client, { settings: full, out: (l) => refused.push(l) }).catch(
      (e: Error) => e,
    );
    if (unreachable instanceof Error) {
      expect(unreachable.message).toBe('preflight: 1 requirement not met (see above)');
      expect(refused.join('\n')).toMatch(
        /FAIL kubelet CA for the vn-agent: not found: .*\n\s+fix: pass --kubelet-ca FILE/,
      );
    } else {
      // A kubelet on this host answered with a certificate of the cluster CA: then that is the CA.
      expect(refused.join('\n')).toMatch(/ok {3}kubelet CA for the vn-agent: the cluster CA/);
    }
    // Asking for the scheduler where no Cluster CRD exists fails on that alone.
    const sched: string[] = [];
    await expect(
      runPreflight(t.client, {
        settings: { ...full, components: ['manager', 'scheduler'] },
        out: (l) => sched.push(l),
      }),
    ).rejects.toThrow(/1 requirement not met/);
    expect(sched.filter((l) => l.startsWith('FAIL'))).toEqual([
      'FAIL Cluster API Clusters (cluster.x-k8s.io) not served',
    ]);
  });

  it('vc install --export prints the render, without reading a cluster', async () => {
    const { stdout } = await promisify(execFile)(
      'npx',
      [
        'tsx',
        'core/programs/cli/main.ts',
        'install',
        '--export',
        '--components',
        'manager,vn-agent',
        '--image',
        full.image!,
      ],
      {
        cwd: join(import.meta.dirname, '../..'),
        // No cluster: an unreachable kubeconfig; the toolchain's kubectl first on PATH.
        env: { ...process.env, KUBECONFIG: join(dir, 'missing'), PATH: `${toolchainDir()}:${process.env.PATH}` },
        maxBuffer: 64 << 20,
      },
    );
    expect(stdout).toBe((await renderInstall(full, { kubectl: kubectl() })).yaml);
    expect(stdout).toMatch(/^ {4}app\.kubernetes\.io\/managed-by: vc-install$/m);
  }, 60_000);

  it('vc install --export prints registry credentials only when told to, and can name a Secret instead', async () => {
    const password = 'export-me-not-7f';
    mkdirSync(join(dir, 'docker'), { recursive: true });
    const auth = Buffer.from(`platform:${password}`).toString('base64');
    writeFileSync(join(dir, 'docker/config.json'), JSON.stringify({ auths: { 'registry.example.com': { auth } } }));
    const exportWith = (...flags: string[]) =>
      promisify(execFile)(
        'npx',
        ['tsx', 'core/programs/cli/main.ts', 'install', '--export', '--components', 'manager,vn-agent'].concat([
          '--image',
          full.image!,
          ...flags,
        ]),
        {
          cwd: join(import.meta.dirname, '../..'),
          env: {
            ...process.env,
            DOCKER_CONFIG: join(dir, 'docker'),
            KUBECONFIG: join(dir, 'missing'),
            PATH: `${toolchainDir()}:${process.env.PATH}`,
          },
          maxBuffer: 64 << 20,
        },
      );
    const secrets = (yaml: string) =>
      parseObjects(yaml)
        .filter((o) => o.kind === 'Secret')
        .map(objectRef);
    const pullNames = (yaml: string) =>
      parseObjects(yaml)
        .filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet')
        .map((o) =>
          (
            o as { spec: { template: { spec: { imagePullSecrets?: Array<{ name: string }> } } } }
          ).spec.template.spec.imagePullSecrets
            ?.map((x) => x.name)
            .join(','),
        );
    // Refused, and nothing printed: the password would end up in whatever the YAML is committed to.
    const refused = await exportWith('--pull-credentials').then(
      () => undefined,
      (e: { stdout: string; stderr: string }) => e,
    );
    expect(refused, 'the export with credentials was not refused').toBeDefined();
    expect(refused!.stdout).toBe('');
    expect(refused!.stderr).toMatch(/would print the registry password into the YAML/);
    // Acknowledged: the Secret is there, with the password.
    const printed = (await exportWith('--pull-credentials', '--export-credentials')).stdout;
    expect(secrets(printed)).toEqual(
      expect.arrayContaining(['Secret vc-system/vc-image-pull', 'Secret vc-vn-agent/vc-image-pull']),
    );
    const pull = parseObjects(printed).find((o) => o.kind === 'Secret' && o.metadata?.name === 'vc-image-pull') as
      (KubeObject & { data: Record<string, string> }) | undefined;
    expect(Buffer.from(pull!.data['.dockerconfigjson']!, 'base64').toString()).toContain(password);
    // A Secret the platform creates: named by the Pods, no credentials read or printed.
    const named = (await exportWith('--pull-secret', 'regcred')).stdout;
    expect(secrets(named).filter((r) => r.includes('regcred') || r.includes('vc-image-pull'))).toEqual([]);
    expect(pullNames(named)).toEqual(['regcred', 'regcred']); // the manager's Deployment, the vn-agent's DaemonSet
    const decoded = parseObjects(named)
      .filter((o) => o.kind === 'Secret')
      .flatMap((o) => Object.values((o as { data?: Record<string, string> }).data ?? {}))
      .map((v) => Buffer.from(v, 'base64').toString());
    expect(decoded.filter((v) => v.includes(password))).toEqual([]);
  }, 120_000);

  it('applies every rendered object labelled, issues the vn-agent certificate, rolls out, and --export equals it', async () => {
    const exported = await renderInstall(full, { kubectl: kubectl() });
    const r = await install(t.client, {
      settings: full,
      kubeletCAFile: caFile,
      timeoutMs: 150_000,
      out,
      render: { kubectl: kubectl() },
    });
    expect(r.rendered.objects).toEqual(parseObjects(exported.yaml));
    expect(r.applied.map((a) => a.ref).sort()).toEqual(exported.objects.map(objectRef).sort());
    expect(r.applied.every((a) => a.action === 'created' || a.ref.startsWith('Namespace '))).toBe(true);

    // Each exported object is what the cluster holds: applying it again as vc-install changes nothing.
    const mapper = new ResourceMapper(t.client);
    for (const o of exported.objects) {
      const res = await mapper.resourceFor(o.apiVersion!, o.kind!);
      const live = await t.client.get(res, res.namespaced ? o.metadata!.namespace : undefined, o.metadata!.name!);
      expect(live.metadata?.labels, objectRef(o)).toMatchObject({
        'app.kubernetes.io/managed-by': 'vc-install',
        'app.kubernetes.io/part-of': 'virtualcluster-ts',
        'app.kubernetes.io/version': version,
      });
      const again = await t.client.apply(res, o, 'vc-install', { dryRun: true });
      expect(again.metadata?.resourceVersion, objectRef(o)).toBe(live.metadata?.resourceVersion);
    }
    const dep = await t.client.get<
      KubeObject & { spec: { template: { spec: { containers: Array<{ image: string }> } } } }
    >(R.deployments, 'vc-system', 'vc-manager');
    expect(dep.spec.template.spec.containers[0]!.image).toBe(full.image);

    // The kubelet client certificate: issued by the cluster CA for CN vc-vn-agent, with its key; no CSR left behind.
    const secret = await t.client.get<KubeObject & { type: string; data: Record<string, string> }>(
      R.secrets,
      'vc-vn-agent',
      'vc-vn-agent-kubelet-client',
    );
    expect(secret.type).toBe('kubernetes.io/tls');
    const cert = new X509Certificate(Buffer.from(secret.data['tls.crt']!, 'base64'));
    const ca = new X509Certificate(t.sc.cluster.caPem);
    expect(cert.subject).toBe('CN=vc-vn-agent');
    expect(cert.checkIssued(ca) && cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(Buffer.from(secret.data['tls.key']!, 'base64')))).toBe(true);
    expect(secret.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('vc-install');
    const csrs = await t.client.request<{ items: KubeObject[] }>(
      'GET',
      '/apis/certificates.k8s.io/v1/certificatesigningrequests',
    );
    expect(csrs.items.filter((x) => x.metadata?.name?.startsWith('vc-vn-agent-'))).toEqual([]);
    const caCm = await t.client.get<KubeObject & { data: Record<string, string> }>(
      R.configmaps,
      'vc-vn-agent',
      'vc-vn-agent-kubelet-ca',
    );
    expect(caCm.data['ca.crt']).toBe(t.sc.cluster.caPem);

    // Pod Security admitted the Pods (restricted vc-system, privileged vc-vn-agent): both rolled out.
    expect(lines).toContain('rolled out: Deployment vc-system/vc-manager (2/2 replicas available)');
    expect(lines.find((l) => l.startsWith('rolled out: DaemonSet vc-vn-agent/vc-vn-agent'))).toBeDefined();
    expect(lines.find((l) => l.startsWith('Deployment vc-system/vc-manager: vc-manager-'))).toMatch(
      / on \S+ \(Running\)/,
    );
    expect(lines).toContain('  kubectl apply -k deploy/samples');
  }, 240_000);

  it('changes nothing when run again', async () => {
    const before = await versions();
    const r = await install(t.client, {
      settings: full,
      kubeletCAFile: caFile,
      timeoutMs: 60_000,
      out: () => {},
      render: { kubectl: kubectl() },
    });
    expect(r.pruned).toEqual([]);
    expect(r.prerequisites[0]).toMatch(/^kept the kubelet client certificate/);
    expect(await versions()).toEqual(before);
  }, 120_000);

  it('prunes what the new render no longer has (the vn-agent dropped), and keeps the rest as it was', async () => {
    const before = await versions();
    const r = await install(t.client, {
      settings: { ...full, components: ['manager'] },
      timeoutMs: 60_000,
      out: () => {},
      render: { kubectl: kubectl() },
    });
    expect(r.pruned.sort()).toEqual(
      [
        'apps/DaemonSet vc-vn-agent/vc-vn-agent',
        'ConfigMap vc-vn-agent/vc-vn-agent',
        'ConfigMap vc-vn-agent/vc-vn-agent-kubelet-ca',
        'Secret vc-vn-agent/vc-vn-agent-kubelet-client',
        'ServiceAccount vc-vn-agent/vc-vn-agent',
        'rbac.authorization.k8s.io/ClusterRole vc-vn-agent',
        'rbac.authorization.k8s.io/ClusterRole vc-vn-agent-kubelet',
        'rbac.authorization.k8s.io/ClusterRoleBinding vc-vn-agent',
        'rbac.authorization.k8s.io/ClusterRoleBinding vc-vn-agent-kubelet',
        'Namespace vc-vn-agent',
      ].sort(),
    );
    expect(await t.client.getOrNull(R.clusterroles, undefined, 'vc-vn-agent')).toBeNull();
    // The namespace may still be terminating; everything else the render keeps is as it was.
    const ns = await t.client.getOrNull(R.namespaces, undefined, 'vc-vn-agent');
    expect(ns === null || !!ns.metadata?.deletionTimestamp).toBe(true);
    const after = await versions();
    for (const [ref, v] of after) if (!r.pruned.includes(ref)) expect(v, ref).toBe(before.get(ref));
    expect([...after.keys()].filter((k) => !r.pruned.includes(k)).sort()).toEqual(
      [...before.keys()].filter((k) => !r.pruned.includes(k)).sort(),
    );
    expect(await t.client.get(R.deployments, 'vc-system', 'vc-manager')).toBeDefined();
  }, 120_000);
});

describe('vc uninstall', () => {
  it('refuses while a VirtualCluster exists, then with --delete-tenants --crds leaves no object of its own', async () => {
    await ensureNamespace(t.client, 'tenants');
    await t.client.create(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'team-a', namespace: 'tenants' },
      spec: { provisioner: { type: 'native' } },
    });
    // A GitSource that defines it: deleted first, or it would apply the tenant again.
    await t.client.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'tenants' },
      spec: { url: 'https://git.example/tenants.git', ref: { branch: 'main' } },
    });
    const before = await versions();
    await expect(uninstall(t.client, { out: () => {} })).rejects.toThrow(
      /^1 VirtualCluster still exist \(tenants\/team-a\): delete them first, or pass --delete-tenants/,
    );
    expect(await versions()).toEqual(before);

    const printed: string[] = [];
    // the uninstall's own deadline (300 s): the namespace and CRD deletions it waits for are kube-controller-manager's
    // and the apiserver's, which take minutes on a host busy with other test files
    const deleted = await uninstall(t.client, {
      crds: true,
      deleteTenants: true,
      out: (l) => printed.push(l),
    });
    // how long each of its waits took (lines "waited N s for ..."), in the run's log: a slow uninstall names its wait
    console.log(`vc uninstall: ${printed.filter((l) => /^(waited|still waiting) /.test(l)).join('; ')}`);
    expect(printed.slice(0, 3)).toEqual([
      'deleting GitSource tenants/tenants (it would apply its tenants again)',
      expect.stringMatching(/^waited \d+ s for the GitSources to be deleted$/),
      'deleting VirtualCluster tenants/team-a',
    ]);
    expect(deleted).toContain('Namespace vc-system');
    expect(deleted).toContain('apiextensions.k8s.io/CustomResourceDefinition virtualclusters.tenancy.x-k8s.io');
    expect(await listManaged(t.client, new ResourceMapper(t.client), ALL_KINDS)).toEqual([]);
    expect(await t.client.getOrNull(R.namespaces, undefined, 'vc-system')).toBeNull();
    expect(await t.client.getOrNull(R.crds, undefined, 'virtualclusters.tenancy.x-k8s.io')).toBeNull();
    // Nothing that is not its own: the tenants namespace and the cluster's own objects stay.
    expect(await t.client.getOrNull(R.namespaces, undefined, 'tenants')).not.toBeNull();
    expect(await t.client.getOrNull(R.clusterroles, undefined, 'cluster-admin')).not.toBeNull();
  }, 420_000);
});
