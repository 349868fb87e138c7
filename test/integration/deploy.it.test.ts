import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject, Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { applyCRDs } from '../../core/programs/embedded/embedded.ts';
import { GITSOURCES } from '../../gitops/applier/gitsource.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';

const deployDir = join(import.meta.dirname, '../../deploy');
const byKind: Record<string, Resource> = Object.fromEntries(
  [...Object.values(R), GITSOURCES, { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies', kind: 'NetworkPolicy', namespaced: true }].map((r) => [r.kind, r]),
);

function manifests(): Array<{ file: string; object: KubeObject }> {
  const out: Array<{ file: string; object: KubeObject }> = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) {
        if (name !== 'toolchain') walk(p);
      } else if (/\.ya?ml$/.test(name)) {
        for (const doc of parseAllDocuments(readFileSync(p, 'utf8'))) {
          const object = doc.toJS() as KubeObject | null;
          if (object) out.push({ file: relative(deployDir, p), object });
        }
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

  it('has the CRDs, RBAC, manager Deployment, vn-agent DaemonSet and samples', () => {
    const kinds = new Set(manifests().map((m) => m.object.kind));
    for (const k of ['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'Deployment', 'DaemonSet', 'ClusterVersion', 'VirtualCluster', 'GitSource']) {
      expect(kinds, k).toContain(k);
    }
  });

  it('is accepted by the real apiserver with server-side apply (dry run)', async () => {
    const rejected: string[] = [];
    for (const { file, object } of manifests()) {
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
