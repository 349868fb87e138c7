import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { validate } from '../../schemas/validate.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject, type Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { applyCRDs, managerIdentity } from '../../core/dev/embedded/embedded.ts';
import { LABEL } from '../../core/names/names.ts';
import { toolchainDir } from '../../core/toolchain/toolchain.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { ensureNamespace, refusedBy, serviceAccountClient } from '../identities.ts';

const deployDir = join(import.meta.dirname, '../../deploy');
const PDB: Resource = {
  group: 'policy',
  version: 'v1',
  resource: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};
const byKind: Record<string, Resource> = Object.fromEntries(
  [...Object.values(R), GITSOURCES, PDB].map((r) => [r.kind, r]),
);

function documents(file: string, text: string): Array<{ file: string; object: KubeObject }> {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((object): object is KubeObject => !!object)
    .map((object) => ({ file, object }));
}

/** base is what `kubectl apply -k deploy/` applies: the kustomization rendered by the toolchain's kubectl. */
function base(): Array<{ file: string; object: KubeObject }> {
  const rendered = execFileSync(join(toolchainDir(), 'kubectl'), ['kustomize', deployDir], { encoding: 'utf8' });
  return documents('kustomize deploy/', rendered);
}

/**
 * installed is the base with both components (vn-agent, scheduler), rendered as `vc install --export` does, by the
 * toolchain's kubectl: an overlay listing deploy/ and the components, as a platform's own overlay would.
 */
let installedCache: Array<{ file: string; object: KubeObject }> | undefined;
function installed(): Array<{ file: string; object: KubeObject }> {
  if (!installedCache) {
    const dir = mkdtempSync(join(tmpdir(), 'vc-deploy-test-'));
    try {
      const rel = relative(dir, deployDir);
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        `resources: [${rel}]\ncomponents: [${rel}/vn-agent, ${rel}/scheduler]\n`,
      );
      const out = execFileSync(join(toolchainDir(), 'kubectl'), ['kustomize', dir], { encoding: 'utf8' });
      installedCache = documents('kustomize deploy/ + components', out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return installedCache;
}

/**
 * extras are the manifests under deploy/ that the kustomization leaves out (samples and other objects applied once
 * the CRDs exist), without the toolchain's build inputs.
 */
function extras(): Array<{ file: string; object: KubeObject }> {
  const kustomization = parse(readFileSync(join(deployDir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  const skip = new Set(kustomization.resources);
  const out: Array<{ file: string; object: KubeObject }> = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const rel = relative(deployDir, p);
      if (statSync(p).isDirectory()) {
        // toolchain/ holds build inputs and krew/ kubectl's plugin index manifest: neither is a cluster object.
        if (rel !== 'toolchain' && rel !== 'krew') walk(p);
      } else if (/\.ya?ml$/.test(name) && name !== 'kustomization.yaml' && !skip.has(rel) && !inComponent(rel)) {
        out.push(...documents(rel, readFileSync(p, 'utf8')));
      }
    }
  };
  walk(deployDir);
  return out;
}

/** inComponent says whether a file under deploy/ is a resource of one of its components (part of installed()). */
function inComponent(rel: string): boolean {
  const [dir, file] = rel.split('/');
  if (!dir || !file || !existsSync(join(deployDir, dir, 'kustomization.yaml'))) return false;
  const k = parse(readFileSync(join(deployDir, dir, 'kustomization.yaml'), 'utf8')) as {
    kind?: string;
    resources?: string[];
  };
  return k.kind === 'Component' && !!k.resources?.includes(file);
}

let t: TestSuper;
beforeAll(async () => {
  t = await startTestSuper({ nodes: 1 });
  await applyCRDs(t.sc);
  // Dry-run of namespaced objects needs their namespaces to exist.
  for (const ns of ['vc-system', 'vc-vn-agent', 'tenants'])
    await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(async () => {
  await t?.stop();
});

describe('deploy/ for a real cluster', () => {
  it('installs the CRDs, namespace, RBAC, admission and network policies, manager and vn-agent with one kustomization', () => {
    const kinds = installed().map((m) => m.object.kind);
    for (const k of [
      'Namespace',
      'CustomResourceDefinition',
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'DaemonSet',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'NetworkPolicy',
    ]) {
      expect(kinds, k).toContain(k);
    }
    expect(kinds.indexOf('Namespace')).toBeLessThan(kinds.indexOf('Deployment'));
    expect(kinds).toContain('PodDisruptionBudget');
    expect(readFileSync(join(deployDir, 'kustomization.yaml'), 'utf8')).not.toMatch(/^\s*-\s*toolchain/m);
    const sampleKinds = new Set(extras().map((m) => m.object.kind));
    for (const k of ['ClusterVersion', 'VirtualCluster', 'GitSource', 'TenantPolicy'])
      expect(sampleKinds, k).toContain(k);
  });

  it('keeps the vn-agent out of the base, in a privileged namespace of its own; vc-system is restricted', () => {
    const b = base().map((m) => m.object);
    expect(b.map((o) => o.kind)).not.toContain('DaemonSet');
    const ns = (list: KubeObject[], name: string) =>
      list.find((o) => o.kind === 'Namespace' && o.metadata?.name === name)?.metadata?.labels ?? {};
    expect(ns(b, 'vc-system')).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
    const all = installed().map((m) => m.object);
    expect(ns(all, 'vc-vn-agent')).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'privileged' });
    const ds = all.find((o) => o.kind === 'DaemonSet')!;
    expect(ds.metadata?.namespace).toBe('vc-vn-agent');
    // Everything the agent's namespace holds is the agent's.
    const inAgentNs = all.filter((o) => o.metadata?.namespace === 'vc-vn-agent').map((o) => o.kind);
    expect(inAgentNs.sort()).toEqual(['ConfigMap', 'DaemonSet', 'ServiceAccount']);
  });

  it('spreads the manager and keeps one replica through a drain', () => {
    const b = base().map((m) => m.object);
    const dep = b.find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: { replicas: number; template: { spec: { topologySpreadConstraints?: Array<{ topologyKey: string }> } } };
    };
    expect(dep.spec.replicas).toBe(2);
    expect(dep.spec.template.spec.topologySpreadConstraints?.[0]?.topologyKey).toBe('kubernetes.io/hostname');
    expect(b.find((o) => o.kind === 'PodDisruptionBudget')).toMatchObject({ spec: { maxUnavailable: 1 } });
  });

  it('ships a manager configuration that validates, defaults to native, runs tenant DNS; the scheduler adds only itself', () => {
    const managerYaml = (list: Array<{ object: KubeObject }>) =>
      parse(
        (
          list.find((m) => m.object.kind === 'ConfigMap' && m.object.metadata?.name === 'vc-manager')!.object as {
            data: Record<string, string>;
          }
        ).data['manager.yaml']!,
      ) as Record<string, unknown>;
    const plain = managerYaml(base());
    const withScheduler = managerYaml(installed());
    expect(validate('managerConfig', plain)).toEqual([]);
    expect(validate('managerConfig', withScheduler)).toEqual([]);
    expect(plain).toMatchObject({ virtualClusters: { defaultProvisioner: 'native', tenantDNS: { enabled: true } } });
    const { scheduler, superClusterRegistry, ...rest } = withScheduler;
    expect(scheduler).toEqual({ enabled: true });
    expect(superClusterRegistry).toEqual({ enabled: true });
    expect(rest).toEqual(plain);
  });

  it('is accepted by the real apiserver with server-side apply (dry run)', async () => {
    const rejected: string[] = [];
    for (const { file, object } of [...installed(), ...extras()]) {
      const r = byKind[object.kind ?? ''];
      if (!r) {
        rejected.push(`${file}: unknown kind ${object.kind}`);
        continue;
      }
      try {
        await t.client.apply(r, object, 'deploy-test', { dryRun: true });
      } catch (e) {
        rejected.push(
          `${file}: ${object.kind} ${object.metadata?.name}: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    }
    expect(rejected).toEqual([]);
  });
});

const OUTSIDE = /vc-manager may write \w+ only in namespaces labelled tenancy\.x-k8s\.io\/cluster/;
const secret = (namespace: string, name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace, ...extra },
  stringData: { k: 'v' },
});
const pod = (namespace: string, name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});

describe('deploy/policy: the manager writes only in tenant namespaces', () => {
  let byCert: KubeClient;
  let bySA: KubeClient;
  let vcUid: string;
  beforeAll(async () => {
    byCert = await KubeClient.fromString(await managerIdentity(t.sc, 'kube-system'));
    bySA = await serviceAccountClient(t.sc, 'vc-system', 'vc-manager');
    await ensureNamespace(t.client, 'tenant-root', { [LABEL.cluster]: 'tenant-root', [LABEL.managedBy]: 'vc-manager' });
    const vc = await t.client.create<KubeObject>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'a', namespace: 'tenants' },
      spec: { provisioner: { type: 'local' } },
    });
    vcUid = vc.metadata!.uid!;
    await eventually(() => t.client.get(R.serviceaccounts, 'tenant-root', 'default'));
    // The apiserver starts enforcing a new policy within a second or two, each policy on its own: wait for each one.
    await eventually(() => refusedBy(() => byCert.create(R.secrets, secret('default', 'probe')), OUTSIDE), 30_000);
    await eventually(
      () =>
        refusedBy(
          () => byCert.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'probe' } }),
          /may create only namespaces labelled/,
        ),
      30_000,
    );
    const owned = { labels: { [LABEL.managedBy]: 'vc-manager' } };
    await eventually(
      () => refusedBy(() => t.client.create(R.secrets, secret('default', 'probe-owned', owned)), /only vc-manager/),
      30_000,
    );
  });

  it("refuses both manager identities in default and kube-system with the policy's message", async () => {
    for (const [who, c] of [
      ['certificate', byCert],
      ['ServiceAccount', bySA],
    ] as const) {
      for (const ns of ['default', 'kube-system']) {
        await expect(
          refusedBy(() => c.create(R.secrets, secret(ns, `s-${who.toLowerCase()}`)), OUTSIDE),
          `${who} Secret ${ns}`,
        ).resolves.toMatch(new RegExp(`${ns} is not a tenant namespace`));
        await expect(
          refusedBy(() => c.create(R.pods, pod(ns, `p-${who.toLowerCase()}`)), OUTSIDE),
          `${who} Pod ${ns}`,
        ).resolves.toContain('pods');
      }
    }
    // The admin is not bound by it.
    await t.client.create(R.secrets, secret('default', 'by-admin'));
  });

  it('lets both identities create, update and delete in a labelled tenant namespace', async () => {
    for (const [who, c] of [
      ['cert', byCert],
      ['sa', bySA],
    ] as const) {
      await c.create(R.secrets, secret('tenant-root', `s-${who}`));
      await c.create(R.pods, pod('tenant-root', `p-${who}`));
      await c.apply(
        R.configmaps,
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `c-${who}`, namespace: 'tenant-root' },
          data: { a: 'b' },
        },
        'vc-manager',
      );
      await c.patch(R.secrets, 'tenant-root', `s-${who}`, { metadata: { labels: { x: 'y' } } }, 'merge');
      expect(await c.delete(R.secrets, 'tenant-root', `s-${who}`)).toBe(true);
    }
  });

  it('keeps the manager to labelled namespaces and their label', async () => {
    const ns = (name: string, labels?: Record<string, string>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels },
    });
    await byCert.create(R.namespaces, ns('tenant-made', { [LABEL.cluster]: 'tenant-root' }));
    await refusedBy(
      () => byCert.create(R.namespaces, ns('plain-made')),
      /may create only namespaces labelled tenancy\.x-k8s\.io\/cluster/,
    );
    await refusedBy(
      () =>
        byCert.patch(
          R.namespaces,
          undefined,
          'tenant-made',
          { metadata: { labels: { [LABEL.cluster]: null } } },
          'merge',
        ),
      /may not remove or change the label/,
    );
    await refusedBy(
      () =>
        bySA.patch(
          R.namespaces,
          undefined,
          'tenant-made',
          { metadata: { labels: { [LABEL.cluster]: 'other-tenant' } } },
          'merge',
        ),
      /may not remove or change the label/,
    );
    await ensureNamespace(t.client, 'plain');
    await refusedBy(
      () => byCert.patch(R.namespaces, undefined, 'plain', { metadata: { labels: { [LABEL.cluster]: 'x' } } }, 'merge'),
      /may not change namespace plain/,
    );
    await refusedBy(() => bySA.delete(R.namespaces, undefined, 'plain'), /may not delete namespace plain/);
    expect(await byCert.delete(R.namespaces, undefined, 'tenant-made')).toBe(true);
  });

  it('lets the manager write the kubeconfig Secret and tenant CA ConfigMap beside their VirtualCluster, nothing else there', async () => {
    const owner = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      name: 'a',
      uid: vcUid,
      controller: true,
    };
    const meta = { labels: { [LABEL.managedBy]: 'vc-manager' }, ownerReferences: [owner] };
    await byCert.apply(R.secrets, secret('tenants', 'a-kubeconfig', meta), 'vc-manager');
    await byCert.apply(
      R.configmaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'a-tenant-ca', namespace: 'tenants', ...meta },
        data: { 'ca.crt': 'x' },
      },
      'vc-manager',
    );
    await refusedBy(() => byCert.create(R.secrets, secret('tenants', 'b-kubeconfig', meta)), OUTSIDE);
    await refusedBy(() => byCert.create(R.secrets, secret('tenants', 'a-kubeconfig-2', meta)), OUTSIDE);
    await refusedBy(() => byCert.create(R.secrets, secret('kube-system', 'a-kubeconfig', meta)), OUTSIDE);
    // Taking over a Secret it did not write: the old object must already be its own.
    await t.client.create(R.secrets, secret('tenants', 'b-kubeconfig'));
    await refusedBy(
      () =>
        byCert.apply(
          R.secrets,
          secret('tenants', 'b-kubeconfig', { ...meta, ownerReferences: [{ ...owner, name: 'b' }] }),
          'vc-manager',
        ),
      OUTSIDE,
    );
    expect(await byCert.delete(R.secrets, 'tenants', 'a-kubeconfig')).toBe(true);
  });

  it("lets nobody but the manager write a ConfigMap or Secret labelled as the manager's", async () => {
    const labels = { [LABEL.managedBy]: 'vc-manager' };
    await refusedBy(
      () =>
        t.client.create(R.configmaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'a2-tenant-ca', namespace: 'tenants', labels },
          data: {},
        }),
      /only vc-manager may write configmaps labelled tenancy\.x-k8s\.io\/managed-by=vc-manager/,
    );
    await refusedBy(
      () => t.client.patch(R.configmaps, 'tenants', 'a-tenant-ca', { data: { 'ca.crt': 'forged' } }, 'merge'),
      /only vc-manager may write configmaps/,
    );
    await refusedBy(
      () => t.client.create(R.secrets, secret('default', 'x', { labels })),
      /only vc-manager may write secrets/,
    );
    expect(await t.client.delete(R.configmaps, 'tenants', 'a-tenant-ca')).toBe(true);
  });
});

interface Peer {
  namespaceLabels: Record<string, string>;
  podLabels: Record<string, string>;
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: unknown[];
}
interface NetworkPolicy extends KubeObject {
  spec: {
    podSelector: LabelSelector;
    policyTypes?: string[];
    ingress?: Array<{
      from?: Array<{ namespaceSelector?: LabelSelector; podSelector?: LabelSelector }>;
      ports?: Array<{ port?: number }>;
    }>;
  };
}

const selects = (sel: LabelSelector | undefined, labels: Record<string, string>): boolean => {
  if (sel?.matchExpressions?.length) throw new Error('matchExpressions: extend this evaluator');
  return Object.entries(sel?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
};

/**
 * admits evaluates NetworkPolicy ingress semantics for one connection into vc-system: allowed when no policy selects
 * the target Pod, otherwise when one rule of a selecting policy admits the peer and port.
 */
function admits(
  policies: NetworkPolicy[],
  targetPod: Record<string, string>,
  port: number,
  from: Peer,
  fromNamespace: string,
): boolean {
  const selecting = policies.filter(
    (p) => (p.spec.policyTypes ?? ['Ingress']).includes('Ingress') && selects(p.spec.podSelector, targetPod),
  );
  if (!selecting.length) return true;
  return selecting.some((p) =>
    (p.spec.ingress ?? []).some(
      (rule) =>
        (!rule.ports?.length || rule.ports.some((x) => x.port === port)) &&
        (!rule.from?.length ||
          rule.from.some((peer) =>
            peer.namespaceSelector
              ? selects(peer.namespaceSelector, from.namespaceLabels) &&
                (!peer.podSelector || selects(peer.podSelector, from.podLabels))
              : fromNamespace === 'vc-system' && selects(peer.podSelector, from.podLabels),
          )),
    ),
  );
}

describe('deploy/network: who reaches the manager', () => {
  const policies = installed()
    .filter((m) => m.object.kind === 'NetworkPolicy')
    .map((m) => m.object as NetworkPolicy);
  const manager = { 'app.kubernetes.io/name': 'vc-manager' };
  // A tenant Pod: its super namespace carries the tenant label; the syncer strips any tenancy.x-k8s.io label a
  // tenant sets, so it cannot carry the platform's labels.
  const tenant: Peer = {
    namespaceLabels: {
      [LABEL.cluster]: 'team-a-1a2b3c-dev',
      'kubernetes.io/metadata.name': 'team-a-1a2b3c-dev-default',
    },
    podLabels: { app: 'x' },
  };
  const prometheus: Peer = {
    namespaceLabels: { 'tenancy.x-k8s.io/monitoring': 'true' },
    podLabels: { app: 'prometheus' },
  };
  const ingress: Peer = {
    namespaceLabels: { 'tenancy.x-k8s.io/ingress': 'true' },
    podLabels: { app: 'ingress-nginx' },
  };
  const neighbour: Peer = {
    namespaceLabels: { 'kubernetes.io/metadata.name': 'vc-system' },
    podLabels: { app: 'other' },
  };

  it.each([
    ['a tenant Pod', 'team-a-1a2b3c-dev-default', 9292, false, tenant],
    ['a tenant Pod', 'team-a-1a2b3c-dev-default', 8080, false, tenant],
    ['Prometheus', 'monitoring', 8080, true, prometheus],
    ['Prometheus', 'monitoring', 9292, false, prometheus],
    ['the ingress controller', 'ingress', 9292, true, ingress],
    ['the ingress controller', 'ingress', 8080, false, ingress],
    ['another Pod', 'vc-system', 8080, false, neighbour],
  ] as const)('%s in namespace %s -> manager port %i: allowed %s', (_who, ns, port, allowed, peer) => {
    expect(admits(policies, manager, port, peer, ns)).toBe(allowed);
  });

  it('puts the vn-agent ops port on loopback (host network: no NetworkPolicy applies)', () => {
    const ds = installed().find((m) => m.object.kind === 'DaemonSet')!.object as KubeObject & {
      spec: {
        template: {
          spec: { hostNetwork?: boolean; containers: Array<{ livenessProbe: { httpGet: { host?: string } } }> };
        };
      };
    };
    const cm = installed().find((m) => m.object.kind === 'ConfigMap' && m.object.metadata?.name === 'vc-vn-agent')!
      .object as KubeObject & {
      data: Record<string, string>;
    };
    expect(ds.spec.template.spec.hostNetwork).toBe(true);
    expect(cm.data['vn-agent.yaml']).toMatch(/ops: \{ host: 127\.0\.0\.1, port: 10551 \}/);
    expect(ds.spec.template.spec.containers[0]!.livenessProbe.httpGet.host).toBe('127.0.0.1');
  });
});

// docs/operations/install.md and the README give these two commands as the kustomize way in; they run here as written,
// from the repository's root, with the toolchain's kubectl against this test's cluster (which already has the CRDs).
describe('kubectl apply -k deploy/, then kubectl apply -k deploy/samples, as the install page shows them', () => {
  const kubectl = (...args: string[]) =>
    execFileSync(join(toolchainDir(), 'kubectl'), ['--kubeconfig', t.sc.kubeconfigPath, ...args], {
      cwd: join(deployDir, '..'),
      encoding: 'utf8',
    });

  it('installs the base, then the samples on it: a ClusterVersion, the TenantPolicies and VirtualCluster team-a', async () => {
    const base = kubectl('apply', '-k', 'deploy/');
    expect(base).toMatch(/^deployment\.apps\/vc-manager (created|configured|unchanged)$/m);
    expect(base).toMatch(/^customresourcedefinition\.apiextensions\.k8s\.io\/virtualclusters\.tenancy\.x-k8s\.io /m);
    const samples = kubectl('apply', '-k', 'deploy/samples');
    expect(samples).toMatch(/^virtualcluster\.tenancy\.x-k8s\.io\/team-a created$/m);
    expect(samples).toMatch(/^tenantpolicy\.tenancy\.x-k8s\.io\/standard (created|configured|unchanged)$/m);
    const vc = await t.client.get(R.virtualclusters, 'tenants', 'team-a');
    expect((vc as KubeObject & { spec?: { provisioner?: { type?: string } } }).spec?.provisioner?.type).toBe('native');
  });
});
