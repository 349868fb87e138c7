import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { registry } from '../../core/metrics/registry.ts';
import { Applier } from '../../gitops/applier/applier.ts';
import { GITSOURCES, type GitSource, type GitSourceStatus } from '../../gitops/applier/gitsource.ts';
import { APPLY_WAVE_ANNOTATION, SOURCE_LABEL } from '../../gitops/applier/objects.ts';
import { objectHealth } from '../../gitops/health.ts';
import { scopeOf } from '../../gitops/applier/scope.ts';
import { IDENTITY } from '../../core/names/names.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { cvDoc, makeArtifact, vcDoc } from '../../gitops/applier/testing.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');
const source = { namespace: 'platform', name: 'tenants' };
const rev = (n: number) => n.toString(16).padStart(40, '0');
type VC = KubeObject & { spec: { weight?: number } };

// team/a..e with weight 2 (a field the source sets, so a hand edit of it is drift), and one ClusterVersion.
const docs = (names: string[], weights: Record<string, number> = {}) => ({
  'tenants/team.yaml': names.map((n) => vcDoc('team', n, { weight: weights[n] ?? 2, clusterVersionName: 'v1-36' })),
  'versions.yaml': [cvDoc('v1-36')],
});

describe('GitOps applier on a real apiserver', () => {
  let t: TestSuper;
  let applier: Applier;
  let status: GitSourceStatus | undefined;
  const getVC = (name: string) => t.client.getOrNull<VC>(R.virtualclusters, 'team', name);
  const liveNames = async () =>
    (await t.client.list(R.virtualclusters, { namespace: 'team' })).items.map((o) => o.metadata!.name).sort();
  const cond = (type: string) => status!.conditions!.find((c) => c.type === type)!;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    for (const f of readdirSync(crdDir).filter((n) => n.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => t.client.list(R.virtualclusters));
    await eventually(() => t.client.list(GITSOURCES));
    for (const ns of ['team', 'platform'])
      await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // The platform grants the ClusterVersion the definitions name (the default policy's spec.grants).
    await eventually(() =>
      t.client.create(R.tenantpolicies, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'TenantPolicy',
        metadata: { name: 'std', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
        spec: { grants: { clusterVersions: ['v1-36'] } },
      }),
    );
    // The platform lets this source write into team and write ClusterVersions (manager configuration gitops.policy).
    applier = new Applier({
      client: t.client,
      source,
      scope: scopeOf(source, { sources: { 'platform/tenants': { targetNamespaces: ['team'], clusterScoped: true } } }),
    });
  });

  afterAll(async () => {
    await t?.stop();
  });

  it('creates the VirtualClusters and the ClusterVersion, labelled and owned by vc-gitops', async () => {
    const out = await applier.reconcile(makeArtifact(docs(['a', 'b', 'c', 'd', 'e']), { revision: rev(1) }), status, {
      generation: 1,
    });
    status = out.status;
    expect(out.result.stop).toBeUndefined();
    expect(cond('Ready')).toMatchObject({ status: 'True', reason: 'Succeeded', observedGeneration: 1 });
    expect(status.lastAppliedRevision).toBe(rev(1));
    expect(await liveNames()).toEqual(['a', 'b', 'c', 'd', 'e']);
    const a = (await getVC('a'))!;
    expect(a.metadata!.labels![SOURCE_LABEL]).toBe('platform.tenants');
    expect((a.metadata!.managedFields as Array<{ manager: string }>).map((m) => m.manager)).toContain(IDENTITY.gitops);
    expect(status.inventory).toHaveLength(6);
    expect(status.inventory!.find((e) => e.name === 'a')!.uid).toBe(a.metadata!.uid);
    expect(await t.client.getOrNull(R.clusterversions, undefined, 'v1-36')).not.toBeNull();
    expect(await registry.getSingleMetricAsString('vc_gitops_applied_objects_total')).toContain(
      'source="platform/tenants"} 6',
    );
  });

  it('writes a status the generated GitSource CRD accepts', async () => {
    const gs = await t.client.create<GitSource>(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'platform' },
      spec: { url: 'https://git.example.com/platform/tenants.git', ref: { branch: 'main' } },
    });
    expect(gs.spec).toMatchObject({
      path: '.',
      interval: '1m',
      prune: true,
      safety: { maxDeletes: 3, maxDeletePercent: 25 },
    });
    const written = await t.client.update<GitSource>(GITSOURCES, { ...gs, status: status! }, { subresource: 'status' });
    expect(written.status!.inventory).toEqual(status!.inventory);
    await expect(
      t.client.create(GITSOURCES, {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'GitSource',
        metadata: { name: 'two-refs', namespace: 'platform' },
        spec: { url: 'https://x.example/t.git', ref: { branch: 'a', tag: 'b' } },
      }),
    ).rejects.toThrow(/spec.ref/);
  });

  it('changes a VirtualCluster when its definition changes', async () => {
    status = (
      await applier.reconcile(makeArtifact(docs(['a', 'b', 'c', 'd', 'e'], { a: 5 }), { revision: rev(2) }), status)
    ).status;
    expect(cond('Ready').status).toBe('True');
    expect((await getVC('a'))!.spec.weight).toBe(5);
  });

  it('prunes a VirtualCluster removed from the repository', async () => {
    const uid = (await getVC('e'))!.metadata!.uid;
    const out = await applier.reconcile(
      makeArtifact(docs(['a', 'b', 'c', 'd'], { a: 5 }), { revision: rev(3) }),
      status,
    );
    status = out.status;
    expect(out.result.pruned.map((e) => [e.name, e.uid])).toEqual([['e', uid]]);
    expect(await liveNames()).toEqual(['a', 'b', 'c', 'd']);
    expect(status.inventory!.map((e) => e.name)).toEqual(['v1-36', 'a', 'b', 'c', 'd']);
    expect(status.lastAppliedRevision).toBe(rev(3));
  });

  it('leaves existing objects untouched when a definition fails validation, applying the valid ones', async () => {
    const bad = docs(['a', 'b', 'c'], { a: 5000, b: 3 });
    const out = await applier.reconcile(makeArtifact(bad, { revision: rev(4) }), status);
    status = out.status;
    expect(cond('Ready')).toMatchObject({ status: 'False', reason: 'ValidationFailed' });
    expect(cond('Stalled')).toMatchObject({ status: 'True', reason: 'ValidationFailed' });
    expect(cond('Ready').message).toContain(
      'tenants/team.yaml (document 1): VirtualCluster team/a: /spec/weight must be <= 1000',
    );
    expect((await getVC('a'))!.spec.weight).toBe(5);
    expect((await getVC('b'))!.spec.weight).toBe(3);
    expect(await liveNames()).toEqual(['a', 'b', 'c', 'd']);
    expect(status.inventory!.map((e) => e.name)).toContain('d');
    expect(status).toMatchObject({ lastAppliedRevision: rev(3), lastAttemptedRevision: rev(4) });
  });

  it('stops a delete-all before deleting anything', async () => {
    const out = await applier.reconcile(
      makeArtifact({ 'versions.yaml': [cvDoc('v1-36')] }, { revision: rev(5) }),
      status,
    );
    status = out.status;
    expect(out.result.pruned).toEqual([]);
    expect(cond('Stalled')).toMatchObject({ status: 'True', reason: 'DeletionLimitExceeded' });
    expect(cond('Ready').message).toContain('would delete 4 of 4 VirtualClusters');
    expect(await liveNames()).toEqual(['a', 'b', 'c', 'd']);
    expect(status.inventory!.map((e) => e.name)).toEqual(['v1-36', 'a', 'b', 'c', 'd']);
    expect(await registry.getSingleMetricAsString('vc_gitops_reconcile_failures_total')).toContain(
      'reason="DeletionLimitExceeded"} 1',
    );
  });

  it('reports a hand edit and a hand deletion as drift, and the next reconcile undoes both', async () => {
    const artifact = makeArtifact(docs(['a', 'b', 'c', 'd'], { a: 5 }), { revision: rev(6) });
    status = (await applier.reconcile(artifact, status)).status;
    expect(cond('Ready').status).toBe('True');
    expect(await applier.detectDrift(artifact, status.inventory)).toEqual({
      missing: [],
      changed: [],
      extra: [],
      errors: [],
    });

    await t.client.patch(R.virtualclusters, 'team', 'b', { spec: { weight: 42 } }, 'merge', {
      fieldManager: 'kubectl-patch',
    });
    const oldC = (await getVC('c'))!.metadata!.uid;
    await t.client.delete(R.virtualclusters, 'team', 'c');
    await eventually(async () => expect(await getVC('c')).toBeNull());

    const drift = await applier.detectDrift(artifact, status.inventory);
    expect(drift.missing.map((m) => m.name)).toEqual(['c']);
    expect(drift.changed.map((c) => [c.object.name, c.fields])).toEqual([['b', ['/spec/weight']]]);

    const out = await applier.reconcile(artifact, status);
    status = out.status;
    expect(cond('Ready').status).toBe('True');
    expect((await getVC('b'))!.spec.weight).toBe(2);
    const newC = (await getVC('c'))!.metadata!.uid;
    expect(newC).toBeDefined();
    expect(newC).not.toBe(oldC);
    expect(status.inventory!.find((e) => e.name === 'c')!.uid).toBe(newC);
    expect(await applier.detectDrift(artifact, status.inventory)).toEqual({
      missing: [],
      changed: [],
      extra: [],
      errors: [],
    });
  });

  it('deletes beyond the limits only for the revision the confirmation names', async () => {
    const artifact = makeArtifact(docs(['a', 'b'], { a: 5 }), { revision: rev(7) });
    const refused = await applier.reconcile(artifact, status, { confirmation: rev(6) });
    expect(refused.result.stop?.reason).toBe('DeletionLimitExceeded');
    expect(await liveNames()).toEqual(['a', 'b', 'c', 'd']);

    const out = await applier.reconcile(artifact, refused.status, { confirmation: rev(7) });
    status = out.status;
    expect(out.result.pruned.map((e) => e.name)).toEqual(['c', 'd']);
    expect(await liveNames()).toEqual(['a', 'b']);
    expect(status).toMatchObject({ lastAppliedRevision: rev(7), lastHandledConfirmation: rev(7) });
  });

  it('drops an entry whose object was replaced by hand instead of deleting the new object', async () => {
    await t.client.delete(R.virtualclusters, 'team', 'b');
    await eventually(async () => expect(await getVC('b')).toBeNull());
    await t.client.create(R.virtualclusters, vcDoc('team', 'b') as KubeObject);
    const out = await applier.reconcile(makeArtifact(docs(['a'], { a: 5 }), { revision: rev(8) }), status, {
      safety: { maxDeletePercent: 100 },
    });
    status = out.status;
    expect(out.result.stop).toBeUndefined();
    expect(out.result.gone.map((e) => e.name)).toEqual(['b']);
    expect(await getVC('b')).not.toBeNull();
    expect(status.inventory!.map((e) => e.name)).toEqual(['v1-36', 'a']);
  });
  it('re-checks the owner when the object changed between the check and the write, and never writes over another', async () => {
    const artifact = makeArtifact(docs(['a'], { a: 6 }), { revision: rev(9) });
    const intruder = (labels: Record<string, string>) =>
      t.client.apply(
        R.virtualclusters,
        {
          apiVersion: 'tenancy.x-k8s.io/v1alpha1',
          kind: 'VirtualCluster',
          metadata: { name: 'a', namespace: 'team', labels },
        },
        'intruder',
        { force: true },
      );

    // Changed in between but still this source's: the write goes through at the new version.
    let plan = applier.plan(artifact, status!.inventory ?? [], { owners: await applier.owners(artifact) });
    await intruder({ note: 'touched' });
    let result = await applier.apply(plan);
    expect(result.applyFailures).toEqual([]);
    expect((await getVC('a'))!.spec.weight).toBe(6);

    // Taken over by another source between the check and the write: nothing is written over it.
    const later = makeArtifact(docs(['a'], { a: 7 }), { revision: rev(10) });
    plan = applier.plan(later, status!.inventory ?? [], { owners: await applier.owners(later) });
    await intruder({ [SOURCE_LABEL]: 'platform.other' });
    result = await applier.apply(plan);
    expect(result.applyFailures.map((f) => f.message)).toEqual([
      expect.stringContaining('belongs to GitSource platform.other'),
    ]);
    const a = (await getVC('a'))!;
    expect(a.metadata!.labels![SOURCE_LABEL]).toBe('platform.other');
    expect(a.spec.weight).toBe(6);
  });

  it('applies a later wave only once the earlier wave is healthy, and stops on a failed one without pruning', async () => {
    const waves = { namespace: 'platform', name: 'waves' };
    const wavy = new Applier({
      client: t.client,
      source: waves,
      scope: scopeOf(waves, { sources: { 'platform/waves': { targetNamespaces: ['team'] } } }),
      health: objectHealth,
    });
    const wave = (doc: Record<string, unknown>, n: string) => {
      const meta = doc.metadata as Record<string, unknown>;
      return { ...doc, metadata: { ...meta, annotations: { [APPLY_WAVE_ANNOTATION]: n } } };
    };
    const artifact = makeArtifact(
      { 'tenants/base.yaml': [vcDoc('team', 'w-base')], 'tenants/app.yaml': [wave(vcDoc('team', 'w-app'), '1')] },
      { revision: rev(20) },
    );
    // No VirtualCluster controller runs here: w-base has no status, so wave 1 waits.
    let out = await wavy.reconcile(artifact, undefined, { generation: 1 });
    expect(out.result.stop).toMatchObject({ reason: 'WaveNotHealthy', stalled: false });
    expect(out.result.stop!.message).toContain(
      'wave 0 is not healthy, so wave 1 and later are not applied and nothing is pruned:\ntenants/base.yaml: VirtualCluster team/w-base: Progressing',
    );
    expect(out.status.conditions!.find((c) => c.type === 'Reconciling')).toMatchObject({ status: 'True' });
    expect(await getVC('w-app')).toBeNull();
    expect(out.status.inventory!.map((e) => e.name)).toEqual(['w-base']);
    expect(out.status.lastAppliedRevision).toBeUndefined();

    // The manager's answer, as it would write it: Running for the current generation. Then wave 1 goes.
    const running = async (phase: string) => {
      const base = (await getVC('w-base'))!;
      const status = { phase, observedGeneration: base.metadata!.generation };
      await t.client.update(R.virtualclusters, { ...base, status }, { subresource: 'status' });
    };
    await running('Running');
    out = await wavy.reconcile(artifact, out.status, { generation: 1 });
    expect(out.result.stop).toBeUndefined();
    expect(await getVC('w-app')).not.toBeNull();
    expect(out.status.lastAppliedRevision).toBe(rev(20));

    // The base fails: a revision without the app stops before pruning it, stalled until a new revision.
    await running('Error');
    const without = makeArtifact(
      { 'tenants/base.yaml': [vcDoc('team', 'w-base')], 'tenants/x.yaml': [wave(vcDoc('team', 'w-x'), '2')] },
      { revision: rev(21) },
    );
    out = await wavy.reconcile(without, out.status, { generation: 1 });
    expect(out.result.stop).toMatchObject({ reason: 'WaveNotHealthy', stalled: true });
    expect(out.result.stop!.message).toContain('VirtualCluster team/w-base: Failed (phase Error)');
    expect(await getVC('w-app')).not.toBeNull();
    expect(await getVC('w-x')).toBeNull();
    for (const n of ['w-base', 'w-app']) await t.client.delete(R.virtualclusters, 'team', n);
  });
});
