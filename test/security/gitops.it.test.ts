/**
 * Hostile authors against GitOps: V (a writer to a tenant repository, the owner of a GitSource) tries to write outside
 * the GitSource's scope, take over objects that are not its own, roll back, slip an unsigned commit into a signed
 * range, feed an oversized file and point a GitSource at the manager's own loopback or at the cloud metadata address.
 * Each attempt goes through the real system (local super cluster, manager, git over HTTP) and must be refused with a
 * reason the user sees on the GitSource, leaving every other object as it was.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { ApiError } from '../../core/kube/errors.ts';
import { R } from '../../core/kube/resources.ts';
import { loadManagerConfig } from '../../core/programs/manager/config.ts';
import { startManager, type Manager } from '../../core/programs/manager/manager.ts';
import { GITSOURCES, type GitSource } from '../../gitops/applier/gitsource.ts';
import { SOURCE_LABEL } from '../../gitops/applier/objects.ts';
import { classifyAddress } from '../../gitops/source/address.ts';
import { git as runGit, startGitServer, type GitServer } from '../git/server.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { Attempts } from './attempts.ts';

const NS = 'team-a';
const MAX_FILE_BYTES = 64 * 1024;
const MAX_OBJECT_BYTES = 1024 * 1024;

const vcYaml = (namespace: string, name: string, spec: Record<string, unknown> = {}) =>
  stringify({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace },
    spec: { provisioner: { type: 'local' }, ...spec },
  });

/**
 * reachableAddress is an address of this machine that git sources may reach without an allowance: the platform's
 * configuration below allows no private address at all, so the test git server (on 127.0.0.1) is reached through a
 * TCP relay on it.
 */
function reachableAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal && !classifyAddress(a.address)) return a.address;
  }
  throw new Error(
    'this test needs a non-loopback IPv4 address on this machine to reach the git server without allowing loopback',
  );
}

async function relay(host: string, targetPort: number): Promise<{ server: Server; port: number }> {
  const server = createServer((c) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    c.pipe(upstream).pipe(c);
    const close = () => {
      c.destroy();
      upstream.destroy();
    };
    c.on('error', close);
    upstream.on('error', close);
  });
  await new Promise<void>((ok) => server.listen(0, host, ok));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('relay has no port');
  return { server, port: addr.port };
}

describe('security: a hostile author against GitOps scope, history and fetching', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let gitServer: GitServer;
  /** a second git server, reached by nobody but the loopback attempt: its request counts show whether it was reached */
  let loopServer: GitServer;
  let relayServer: Server;
  let base: string;
  let dir: string;
  let manager: Manager;
  let signingKey: openpgp.PrivateKey;
  let s1: string;
  let s2: string;

  const url = (repo: string) => `${base}/${repo}.git`;
  const source = (name: string) => t.client.get<GitSource>(GITSOURCES, NS, name);
  const condition = (gs: GitSource, type: string) => gs.status?.conditions?.find((c) => c.type === type);
  const sign = async (payload: string): Promise<string> =>
    openpgp.sign({
      message: await openpgp.createMessage({ binary: Buffer.from(payload) }),
      signingKeys: signingKey,
      detached: true,
    });
  const poke = async (name: string) => {
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    const sig = createHmac('sha256', 's3cret').update(body).digest('hex');
    const res = await fetch(manager.gitops!.webhookURL(NS, name)!, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-signature': `sha256=${sig}` },
    });
    expect(res.status).toBeLessThan(300);
  };
  const gitSource = (name: string, spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'GitSource',
    metadata: { name, namespace: NS },
    spec: {
      ref: { branch: 'main' },
      path: 'tenants',
      interval: '1h',
      webhook: { kind: 'generic', secretRef: { name: 'hook' } },
      ...spec,
    },
  });

  /**
   * snapshot is everything a GitSource could have changed: tenant definitions in every namespace, and namespaces.
   * A freshly installed CRD may answer 429 for a moment, so the read is retried.
   */
  const snapshot = (): Promise<Record<string, string>> =>
    eventually(async () => {
      const out: Record<string, string> = {};
      for (const r of [R.virtualclusters, R.clusterversions, R.namespaces]) {
        for (const o of (await t.client.list(r)).items) {
          const m = o.metadata!;
          out[`${r.kind}/${m.namespace ?? ''}/${m.name}`] =
            `${m.uid} ${m.resourceVersion} ${JSON.stringify(m.labels ?? {})}`;
        }
      }
      return out;
    }, 30_000);

  /** refusedWith waits until the GitSource is Stalled with the reason and a message holding every fragment. */
  const refusedWith = async (name: string, reason: string, ...fragments: string[]): Promise<string> => {
    const gs = await eventually(async () => {
      const g = await source(name);
      expect(condition(g, 'Stalled')).toMatchObject({ status: 'True', reason });
      expect(condition(g, 'Ready')).toMatchObject({ status: 'False', reason });
      for (const f of fragments) expect(condition(g, 'Stalled')!.message).toContain(f);
      return g;
    }, 60_000);
    return `${reason}: ${condition(gs, 'Stalled')!.message!.split('\n').slice(0, 2).join(' ')}`;
  };
  // No VirtualCluster controller runs here, so the tenants a source applies never run: applied in full is Ready
  // True (nothing to wait for) or Unknown, Progressing (waiting for its tenants), never Stalled.
  const ready = async (name: string, revision?: string) =>
    eventually(async () => {
      const g = await source(name);
      expect(['True Succeeded', 'Unknown Progressing']).toContain(
        `${condition(g, 'Ready')?.status} ${condition(g, 'Ready')?.reason}`,
      );
      expect(condition(g, 'Stalled')?.status).toBe('False');
      if (revision) expect(g.status?.lastAppliedRevision).toBe(revision);
    }, 60_000);
  const warningEvent = async (name: string, reason: string) =>
    eventually(async () => {
      const events = (
        await t.client.list<KubeObject & { reason?: string; type?: string; involvedObject?: { name?: string } }>(
          R.events,
          { namespace: NS },
        )
      ).items;
      expect(events.some((e) => e.involvedObject?.name === name && e.reason === reason && e.type === 'Warning')).toBe(
        true,
      );
    }, 30_000);
  /** attackAndUndo pushes files to the tenant repository, expects the refusal, checks nothing changed, then reverts. */
  const attackAndUndo = async (
    files: Record<string, string>,
    reason: string,
    ...fragments: string[]
  ): Promise<string> => {
    const before = await snapshot();
    await gitServer.commitFiles('tenants', files, 'hostile change');
    await poke('tenants');
    const why = await refusedWith('tenants', reason, ...fragments);
    expect(await snapshot()).toEqual(before);
    const undo = await gitServer.commitFiles(
      'tenants',
      Object.fromEntries(Object.keys(files).map((f) => [f, null])),
      'revert',
    );
    await poke('tenants');
    await ready('tenants', undo);
    return why;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 0 });
    await applyCRDs(t.sc);
    for (const ns of [NS, 'team-b'])
      await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    dir = mkdtempSync(join(tmpdir(), 'vc-security-'));
    gitServer = await startGitServer();
    const host = reachableAddress();
    const r = await relay(host, gitServer.port);
    relayServer = r.server;
    base = `http://${host}:${r.port}`;
    const key = await openpgp.generateKey({
      userIDs: [{ name: 'platform signer', email: 'signer@example.com' }],
      format: 'armored',
    });
    signingKey = await openpgp.readPrivateKey({ armoredKey: key.privateKey });

    for (const repo of ['tenants', 'other', 'signed']) await gitServer.initRepo(repo);
    loopServer = await startGitServer();
    await loopServer.initRepo('secret');
    await gitServer.commitFiles('tenants', { 'tenants/ok.yaml': vcYaml(NS, 'ok') }, 'a tenant');
    await gitServer.commitFiles(
      'other',
      { 'tenants/theirs.yaml': vcYaml(NS, 'theirs', { weight: 2 }) },
      'another source’s tenant',
    );
    s1 = await gitServer.commitFiles('signed', { 'tenants/signed-one.yaml': vcYaml(NS, 'signed-one') }, 'signed 1', {
      sign: { format: 'custom', sign },
    });
    await loopServer.commitFiles('secret', { 'tenants/leaked.yaml': vcYaml(NS, 'leaked') }, 'served on loopback only');

    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hook', namespace: NS },
      stringData: { token: 's3cret' },
    });
    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'signers', namespace: NS },
      stringData: { key: key.publicKey },
    });
    for (const [ns, name] of [
      [NS, 'handmade'],
      ['team-b', 'victim'],
    ] as const) {
      const vc = {
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name, namespace: ns },
        spec: { provisioner: { type: 'local' }, weight: 3 },
      };
      await t.client.create(R.virtualclusters, vc);
    }
    // Deletion limits as loose as V may set them: only ownership stands between a forged inventory and a delete.
    await t.client.create(
      GITSOURCES,
      gitSource('tenants', { url: url('tenants'), safety: { maxDeletes: 10, maxDeletePercent: 100 } }),
    );
    await t.client.create(GITSOURCES, gitSource('other', { url: url('other') }));
    await t.client.create(
      GITSOURCES,
      gitSource('signed', { url: url('signed'), verify: { mode: 'head', secretRef: { name: 'signers' } } }),
    );

    const file = join(dir, 'manager.yaml');
    // The platform's configuration: no private address allowed, a small file cap, no policy entry for team-a.
    writeFileSync(
      file,
      stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ManagerConfiguration',
        superClusters: [{ name: 'default', kubeconfig: t.sc.kubeconfigPath }],
        gitops: {
          enabled: true,
          cacheDir: join(dir, 'git-cache'),
          limits: { maxFileBytes: MAX_FILE_BYTES, maxObjectBytes: MAX_OBJECT_BYTES },
        },
        syncer: { patrolIntervalSeconds: 0 },
      }),
    );
    manager = await startManager(loadManagerConfig(file), file);
    for (const name of ['tenants', 'other', 'signed']) await ready(name);
    s2 = await gitServer.commitFiles('signed', { 'tenants/signed-two.yaml': vcYaml(NS, 'signed-two') }, 'signed 2', {
      sign: { format: 'custom', sign },
    });
    await poke('signed');
    await ready('signed', s2);
    const labels = (await t.client.get<KubeObject>(R.virtualclusters, NS, 'theirs')).metadata?.labels;
    expect(labels?.[SOURCE_LABEL]).toBe(`${NS}.other`);
  });

  afterAll(async () => {
    console.log(attempts.summary());
    await manager?.stop();
    await new Promise((ok) => relayServer?.close(ok));
    await gitServer?.close();
    await loopServer?.close();
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a document naming another namespace, and prunes nothing because of it', async () => {
    await attempts.attempt('a VirtualCluster in another namespace', async () => {
      const why = await attackAndUndo(
        { 'tenants/evil.yaml': vcYaml('team-b', 'evil') },
        'OutOfScope',
        'tenants/evil.yaml',
        'VirtualCluster team-b/evil',
        '/metadata/namespace',
      );
      await warningEvent('tenants', 'OutOfScope');
      expect(await t.client.getOrNull(R.virtualclusters, 'team-b', 'evil')).toBeNull();
      return why;
    });
  });

  it('refuses a ClusterVersion from a source the platform has not marked', async () => {
    await attempts.attempt('a ClusterVersion from an unmarked source', async () => {
      const cv = stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'ClusterVersion',
        metadata: { name: 'evil' },
        spec: { kubernetesVersion: 'v1.36.3' },
      });
      const why = await attackAndUndo(
        { 'tenants/version.yaml': cv },
        'OutOfScope',
        'tenants/version.yaml',
        'ClusterVersion evil',
        'cluster-scoped',
      );
      expect(await t.client.getOrNull(R.clusterversions, undefined, 'evil')).toBeNull();
      return why;
    });
  });

  it('refuses to take over a hand-made VirtualCluster and one owned by another GitSource', async () => {
    await attempts.attempt('adopting a hand-made VirtualCluster', async () => {
      const why = await attackAndUndo(
        { 'tenants/handmade.yaml': vcYaml(NS, 'handmade', { weight: 9 }) },
        'NotOwned',
        'VirtualCluster team-a/handmade exists and was not made by a GitSource',
      );
      const vc = await t.client.get<KubeObject & { spec: { weight?: number } }>(R.virtualclusters, NS, 'handmade');
      expect(vc.spec.weight).toBe(3);
      expect(vc.metadata?.labels?.[SOURCE_LABEL]).toBeUndefined();
      return why;
    });
    await attempts.attempt('adopting a VirtualCluster of another GitSource', async () => {
      const why = await attackAndUndo(
        { 'tenants/theirs.yaml': vcYaml(NS, 'theirs', { weight: 9 }) },
        'NotOwned',
        'VirtualCluster team-a/theirs exists and belongs to GitSource team-a.other',
      );
      const vc = await t.client.get<KubeObject & { spec: { weight?: number } }>(R.virtualclusters, NS, 'theirs');
      expect(vc.spec.weight).toBe(2);
      expect(vc.metadata?.labels?.[SOURCE_LABEL]).toBe(`${NS}.other`);
      return why;
    });
  });

  it('refuses a force-push back to an older signed commit, and an unsigned commit inside a signed range', async () => {
    const bare = join(gitServer.root, 'signed.git');
    await attempts.attempt('a force-push to an older signed commit', async () => {
      const before = await snapshot();
      await runGit(bare, ['update-ref', 'refs/heads/main', s1]);
      await poke('signed');
      const why = await refusedWith(
        'signed',
        'NotDescendant',
        `revision ${s1} does not descend from last applied ${s2}`,
        'tenancy.x-k8s.io/allow-revision',
      );
      expect(await snapshot()).toEqual(before);
      expect(await t.client.getOrNull(R.virtualclusters, NS, 'signed-two')).not.toBeNull();
      expect((await source('signed')).status?.lastAppliedRevision).toBe(s2);
      return why;
    });
    await runGit(bare, ['update-ref', 'refs/heads/main', s2]);
    await poke('signed');
    await ready('signed', s2);
    await attempts.attempt('an unsigned commit between two signed ones', async () => {
      const before = await snapshot();
      const unsigned = await gitServer.commitFiles(
        'signed',
        { 'tenants/signed-three.yaml': vcYaml(NS, 'signed-three') },
        'unsigned',
      );
      const tip = await gitServer.commitFiles(
        'signed',
        { 'tenants/signed-four.yaml': vcYaml(NS, 'signed-four') },
        'signed 3',
        { sign: { format: 'custom', sign } },
      );
      await poke('signed');
      const why = await refusedWith(
        'signed',
        'VerificationFailed',
        `commit ${unsigned} (between the last applied ${s2} and ${tip})`,
        'not signed',
      );
      expect(await snapshot()).toEqual(before);
      return why;
    });
  });

  it('refuses an oversized file', async () => {
    await attempts.attempt('an oversized file', async () => {
      const big = `${vcYaml(NS, 'big')}# ${'x'.repeat(MAX_FILE_BYTES)}\n`;
      const why = await attackAndUndo(
        { 'tenants/big.yaml': big },
        'ParseFailed',
        'tenants/big.yaml',
        `file is larger than ${MAX_FILE_BYTES} bytes (gitops.limits.maxFileBytes)`,
      );
      expect(await t.client.getOrNull(R.virtualclusters, NS, 'big')).toBeNull();
      return why;
    });
  });

  it('refuses a revision whose git objects unpack past maxObjectBytes, wherever they lie in the repository', async () => {
    const bare = join(gitServer.root, 'tenants.git');
    const applied = (await runGit(bare, ['rev-parse', 'refs/heads/main'])).trim();
    await attempts.attempt('a file of zeros outside the path, small on the wire and 4 MiB unpacked', async () => {
      const before = await snapshot();
      // zlib packs it into a few KiB: only its unpacked size is over a limit, and the manager never holds it
      await gitServer.commitFiles('tenants', { 'assets/zeros.bin': '\0'.repeat(4 * 1024 * 1024) }, 'zeros');
      await poke('tenants');
      const why = await refusedWith(
        'tenants',
        'LimitExceeded',
        `a blob of ${4 * 1024 * 1024} bytes unpacked, more than ${MAX_OBJECT_BYTES} (gitops.limits.maxObjectBytes)`,
      );
      expect(await snapshot()).toEqual(before);
      return why;
    });
    // The commit is in the history every later revision is checked through: the owner takes it out of the branch.
    await runGit(bare, ['update-ref', 'refs/heads/main', applied]);
    await poke('tenants');
    await ready('tenants', applied);
  });

  it('refuses git URLs to loopback and to the cloud metadata address', async () => {
    await attempts.attempt('a git URL to 127.0.0.1 without the allowance', async () => {
      const before = await snapshot();
      await t.client.create(GITSOURCES, gitSource('loopback', { url: loopServer.url('secret') }));
      const why = await refusedWith(
        'loopback',
        'AddressRefused',
        'address 127.0.0.1 is a loopback address',
        'gitops.allowPrivateAddresses',
      );
      expect(loopServer.stats.infoRefs).toBe(0);
      expect(await t.client.getOrNull(R.virtualclusters, NS, 'leaked')).toBeNull();
      expect(await snapshot()).toEqual(before);
      return why;
    });
    await attempts.attempt('a git URL to 169.254.169.254', async () => {
      const before = await snapshot();
      // It also asks to be polled every second: below the platform's floor (10s by default).
      await t.client.create(
        GITSOURCES,
        gitSource('metadata', { url: 'http://169.254.169.254/latest/tenants.git', interval: '1s' }),
      );
      const why = await refusedWith('metadata', 'AddressRefused', 'address 169.254.169.254 is a metadata address');
      await warningEvent('metadata', 'IntervalRaised');
      expect(await snapshot()).toEqual(before);
      return why;
    });
  });

  it('refuses credentials written into the git URL: they come only from a granted Secret', async () => {
    await attempts.attempt('a git URL carrying user:password@', async () => {
      const before = await snapshot();
      const err = await t.client
        .create(GITSOURCES, gitSource('inurl', { url: url('tenants').replace('://', '://flux:s3cret-pw@') }))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(422);
      expect((err as ApiError).message).toContain('spec.url');
      expect(await t.client.getOrNull(GITSOURCES, NS, 'inurl')).toBeNull();
      expect(await snapshot()).toEqual(before);
      return `422 ${(err as ApiError).reason}: ${(err as ApiError).message.slice(0, 160)}`;
    });
  });

  it('refuses a git URL whose host parsers read differently: the checked address is the connected one', async () => {
    // WHATWG reads the host 127.0.0.1.a.evil.example (resolvable to a public address); the git client's parser 127.0.0.1
    await attempts.attempt('a git URL hiding 127.0.0.1 behind a percent-escaped dot', async () => {
      const before = await snapshot();
      const hidden = url('tenants').replace(/\/\/[^/]+/, '//127.0.0.1%2ea.evil.example');
      const err = await t.client.create(GITSOURCES, gitSource('escaped', { url: hidden })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(422);
      expect((err as ApiError).message).toContain('spec.url');
      expect(await t.client.getOrNull(GITSOURCES, NS, 'escaped')).toBeNull();
      expect(await snapshot()).toEqual(before);
      return `422 ${(err as ApiError).reason}: ${(err as ApiError).message.slice(0, 160)}`;
    });
  });

  it('as S, refuses to prune objects a forged status inventory names', async () => {
    await attempts.attempt(
      'a forged inventory entry in the GitSource status, naming objects to be pruned',
      async () => {
        const before = await snapshot();
        const entry = async (ns: string, name: string) => {
          const o = await t.client.get<KubeObject>(R.virtualclusters, ns, name);
          return {
            apiVersion: 'tenancy.x-k8s.io/v1alpha1',
            kind: 'VirtualCluster',
            namespace: ns,
            name,
            uid: o.metadata!.uid!,
          };
        };
        const forged = [await entry(NS, 'handmade'), await entry('team-b', 'victim'), await entry(NS, 'theirs')];
        const own = (await source('tenants')).status?.inventory ?? [];
        await t.client.patch(GITSOURCES, NS, 'tenants', { status: { inventory: [...own, ...forged] } }, 'merge', {
          subresource: 'status',
        });
        await warningEvent('tenants', 'PruneRefused');
        await eventually(
          async () =>
            expect((await source('tenants')).status?.inventory?.map((e) => e.name)).toEqual(own.map((e) => e.name)),
          30_000,
        );
        expect(await snapshot()).toEqual(before);
        return 'PruneRefused: the entries were forgotten, the objects kept';
      },
    );
  });

  it('as S, refuses a rollback prepared by rewriting status.lastAppliedRevision to an older commit', async () => {
    const bare = join(gitServer.root, 'tenants.git');
    const applied = (await source('tenants')).status!.lastAppliedRevision!;
    const record = await t.client.get<KubeObject & { data?: Record<string, string> }>(
      R.configmaps,
      NS,
      'tenants-gitops-record',
    );
    expect(record.data?.lastAppliedRevision).toBe(applied);
    const older = (await runGit(bare, ['rev-parse', `${applied}~2`])).trim();
    await attempts.attempt(
      'status.lastAppliedRevision rewritten to an older commit, then a force-push to it',
      async () => {
        const before = await snapshot();
        await t.client.patch(GITSOURCES, NS, 'tenants', { status: { lastAppliedRevision: older } }, 'merge', {
          subresource: 'status',
        });
        await runGit(bare, ['update-ref', 'refs/heads/main', older]);
        await poke('tenants');
        const why = await refusedWith(
          'tenants',
          'NotDescendant',
          `revision ${older} does not descend from last applied ${applied}`,
          'tenancy.x-k8s.io/allow-revision',
        );
        expect(await snapshot()).toEqual(before);
        expect((await source('tenants')).status?.lastAppliedRevision).toBe(applied);
        const after = await t.client.get<KubeObject & { data?: Record<string, string> }>(
          R.configmaps,
          NS,
          'tenants-gitops-record',
        );
        expect(after.metadata?.resourceVersion).toBe(record.metadata?.resourceVersion);
        return why;
      },
    );
    await runGit(bare, ['update-ref', 'refs/heads/main', applied]);
    await poke('tenants');
    await ready('tenants', applied);
  });

  it('as S, a forged status.lastHandledConfirmation confirms nothing and is not kept; the record is the bookkeeping', async () => {
    type RecordMap = KubeObject & { data?: Record<string, string> };
    const bare = join(gitServer.root, 'other.git');
    const emptied = await gitServer.commitFiles(
      'other',
      { 'tenants/theirs.yaml': null, 'tenants/README.md': 'no tenants here\n' },
      'drop the only tenant',
    );
    expect((await runGit(bare, ['rev-parse', 'refs/heads/main'])).trim()).toBe(emptied);
    await attempts.attempt(
      'status.lastHandledConfirmation set to a revision that deletes every tenant of a GitSource',
      async () => {
        const before = await snapshot();
        await t.client.patch(GITSOURCES, NS, 'other', { status: { lastHandledConfirmation: emptied } }, 'merge', {
          subresource: 'status',
        });
        await poke('other');
        const why = await refusedWith('other', 'EmptyPath', `tenancy.x-k8s.io/confirm-deletion=${emptied}`);
        expect(await snapshot()).toEqual(before);
        await eventually(
          async () => expect((await source('other')).status?.lastHandledConfirmation).toBeUndefined(),
          30_000,
        );
        const record = await t.client.get<RecordMap>(R.configmaps, NS, 'other-gitops-record');
        expect(record.data?.lastHandledConfirmation).toBeUndefined();
        return why;
      },
    );
    // The platform confirms exactly that revision: the deletion happens once, and the record keeps the confirmation.
    await t.client.patch(
      GITSOURCES,
      NS,
      'other',
      { metadata: { annotations: { 'tenancy.x-k8s.io/confirm-deletion': emptied } } },
      'merge',
    );
    await ready('other', emptied);
    await eventually(async () => expect(await t.client.getOrNull(R.virtualclusters, NS, 'theirs')).toBeNull(), 60_000);
    await eventually(async () => {
      const record = await t.client.get<RecordMap>(R.configmaps, NS, 'other-gitops-record');
      expect(record.data).toMatchObject({ lastAppliedRevision: emptied, lastHandledConfirmation: emptied });
      expect((await source('other')).status?.lastHandledConfirmation).toBe(emptied);
    }, 30_000);
  });

  it('counts every attempt as refused', () => {
    expect(attempts.records.map((r) => r.outcome)).toEqual(Array(15).fill('refused'));
    expect(attempts.summary()).toBe('attempts 15, refused 15, succeeded 0');
  });
});
