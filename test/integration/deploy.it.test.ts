import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { applyCRDs } from '../../core/programs/embedded/embedded.ts';
import { toolchainDir } from '../../core/toolchain/toolchain.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';

const deployDir = join(import.meta.dirname, '../../deploy');
const byKind: Record<string, Resource> = Object.fromEntries(
  [...Object.values(R), GITSOURCES, { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies', kind: 'NetworkPolicy', namespaced: true }].map((r) => [r.kind, r]),
);

function documents(file: string, text: string): Array<{ file: string; object: KubeObject }> {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((object): object is KubeObject => !!object)
    .map((object) => ({ file, object }));
}

/** installed is what `kubectl apply -k deploy/` applies: the kustomization rendered by the toolchain's kubectl. */
function installed(): Array<{ file: string; object: KubeObject }> {
  const rendered = execFileSync(join(toolchainDir(), 'kubectl'), ['kustomize', deployDir], { encoding: 'utf8' });
  return documents('kustomize deploy/', rendered);
}

/**
 * extras are the manifests under deploy/ that the kustomization leaves out (samples and other objects applied once
 * the CRDs exist), without the toolchain's build inputs.
 */
function extras(): Array<{ file: string; object: KubeObject }> {
  const kustomization = parse(readFileSync(join(deployDir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  const skip = new Set(['kustomization.yaml', ...kustomization.resources]);
  const out: Array<{ file: string; object: KubeObject }> = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const rel = relative(deployDir, p);
      if (statSync(p).isDirectory()) {
        if (rel !== 'toolchain') walk(p);
      } else if (/\.ya?ml$/.test(name) && !skip.has(rel)) {
        out.push(...documents(rel, readFileSync(p, 'utf8')));
      }
    }
  };
  walk(deployDir);
  return out;
}

describe('deploy/ for a real cluster', () => {
  let t: TestSuper;
  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    // Dry-run of namespaced objects needs their namespaces to exist.
    for (const ns of ['vc-system', 'tenants']) await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('installs the CRDs, namespace, RBAC, manager Deployment and vn-agent DaemonSet with one kustomization', () => {
    const kinds = installed().map((m) => m.object.kind);
    for (const k of ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'Deployment', 'DaemonSet']) {
      expect(kinds, k).toContain(k);
    }
    expect(kinds.indexOf('Namespace')).toBeLessThan(kinds.indexOf('Deployment'));
    expect(readFileSync(join(deployDir, 'kustomization.yaml'), 'utf8')).not.toMatch(/^\s*-\s*toolchain/m);
    const sampleKinds = new Set(extras().map((m) => m.object.kind));
    for (const k of ['ClusterVersion', 'VirtualCluster', 'GitSource']) expect(sampleKinds, k).toContain(k);
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
        rejected.push(`${file}: ${object.kind} ${object.metadata?.name}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    expect(rejected).toEqual([]);
  });
});
