/**
 * Hostile tests of the deploy/ boundary on the real local super cluster, with deploy/'s RBAC and admission policies
 * applied:
 *   - the manager's identities (the ServiceAccount of deploy/manager and the client certificate `vc up` gives its
 *     manager) tricked into writing outside tenant namespaces, or into taking over a namespace;
 *   - the vn-agent's ServiceAccount reaching for Secrets or writing anything;
 *   - S (a status writer, here also a namespace editor) forging the tenant CA and fingerprint a vn-agent trusts.
 * Each attempt must be refused with a clear reason, and the super cluster's own namespaces must be as they were.
 */
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCRDs, managerIdentity } from '../../core/dev/embedded/embedded.ts';
import { KubeClient, type KubeObject, type Resource } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { tenantCAConfigMapName, TENANT_CA_KEY } from '../../core/api/virtualcluster.ts';
import { IDENTITY, LABEL, rootNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { createCA, fingerprintSha256, issueCert, issueNodeCert, type CertKeyPair } from '../../core/pki/pki.ts';
import { startVnAgent, type VnAgent } from '../../core/vnagent/agent.ts';
import { VirtualClusterDirectory } from '../../core/vnagent/directory.ts';
import { tenantCACommonName } from '../../core/vnagent/auth.ts';
import { nodeSuperClient, parseNodeCredential } from '../../core/vnagent/nodecredential.ts';
import { InformerSuperView } from '../../core/vnagent/superview.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { canI, ensureNamespace, refusedBy, serviceAccountClient } from '../identities.ts';
import { GITSOURCES, type GitSource } from '../../gitops/applier/gitsource.ts';
import { recordName, recordObject } from '../../gitops/record.ts';
import { catalogObject } from '../../core/lifecycle/backups.ts';
import { Attempts } from './attempts.ts';

const NS = 'team-a';
const OUTSIDE = /vc-manager may write \w+ only in namespaces labelled tenancy\.x-k8s\.io\/cluster/;
const RBAC_DENIED = /is forbidden: User "system:serviceaccount:vc-vn-agent:vc-vn-agent" cannot/;

const byKind = new Map<string, Resource>(Object.values(R).map((r) => [r.kind, r]));
async function applyFile(c: KubeClient, file: string): Promise<void> {
  for (const d of parseAllDocuments(readFileSync(join(import.meta.dirname, '../../deploy', file), 'utf8'))) {
    const o = d.toJS() as KubeObject;
    await c.apply(byKind.get(o.kind!)!, o, 'test');
  }
}

/** get asks the agent for a kubelet path with a client certificate and returns the HTTP status and body. */
function viaAgent(port: number, cert: CertKeyPair): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: '/containerLogs/default/app/c',
        rejectUnauthorized: false,
        agent: false,
        cert: cert.certPem,
        key: cert.keyPem,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('security: deploy/ least privilege (manager scope, vn-agent reads, forged tenant CA)', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let byCert: KubeClient;
  let bySA: KubeClient;
  let agentClient: KubeClient;
  let hostile: KubeClient;
  let agent: VnAgent | undefined;
  let before: string;

  /** superState lists what the attempts must not change: the super's own namespaces and what is in them. */
  const superState = async (): Promise<string> => {
    const out: string[] = [];
    for (const ns of (await t.client.list(R.namespaces)).items)
      out.push(`ns ${ns.metadata?.name} ${JSON.stringify(ns.metadata?.labels ?? {})}`);
    for (const ns of ['default', 'kube-system', 'vc-system']) {
      for (const r of [R.secrets, R.pods, R.configmaps]) {
        for (const o of (await t.client.list(r, { namespace: ns })).items)
          out.push(`${r.resource} ${ns}/${o.metadata?.name} ${o.metadata?.resourceVersion}`);
      }
    }
    return out.sort().join('\n');
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    byCert = await KubeClient.fromString(await managerIdentity(t.sc, 'kube-system'));
    await applyFile(t.client, 'vn-agent/rbac.yaml');
    bySA = await serviceAccountClient(t.sc, 'vc-system', 'vc-manager');
    agentClient = await serviceAccountClient(t.sc, 'vc-vn-agent', 'vc-vn-agent');
    await ensureNamespace(t.client, 'plain');
    await ensureNamespace(t.client, 'tenant-root', {
      [LABEL.cluster]: 'tenant-root',
      [LABEL.managedBy]: IDENTITY.manager,
    });
    // S: writes VirtualCluster status anywhere, and edits ConfigMaps and Secrets in its own namespace.
    await ensureNamespace(t.client, NS);
    await t.client.apply(
      R.serviceaccounts,
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'hostile', namespace: NS } },
      'test',
    );
    await t.client.apply(
      R.clusterroles,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'status-writer' },
        rules: [
          { apiGroups: ['tenancy.x-k8s.io'], resources: ['virtualclusters/status'], verbs: ['get', 'update', 'patch'] },
        ],
      },
      'test',
    );
    const subjects = [{ kind: 'ServiceAccount', name: 'hostile', namespace: NS }];
    await t.client.apply(
      R.clusterrolebindings,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'status-writer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'status-writer' },
        subjects,
      },
      'test',
    );
    await t.client.apply(
      R.roles,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'hostile-edit', namespace: NS },
        rules: [
          {
            apiGroups: [''],
            resources: ['configmaps', 'secrets'],
            verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
          },
        ],
      },
      'test',
    );
    await t.client.apply(
      R.rolebindings,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'hostile-edit', namespace: NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'hostile-edit' },
        subjects,
      },
      'test',
    );
    hostile = await serviceAccountClient(t.sc, NS, 'hostile');
    // Pods are admitted only once their ServiceAccount exists: wait, so that the policy is what refuses them.
    await eventually(() => t.client.get(R.serviceaccounts, 'default', 'default'));
    await eventually(
      () =>
        refusedBy(
          () =>
            byCert.create(R.secrets, {
              apiVersion: 'v1',
              kind: 'Secret',
              metadata: { name: 'probe', namespace: 'default' },
            }),
          OUTSIDE,
        ),
      30_000,
    );
    // The super controller-manager publishes kube-root-ca.crt into every namespace a moment after it exists: wait
    // for it, so the attempts find it and the snapshot below does not change under the test by itself.
    await eventually(async () => {
      for (const ns of (await t.client.list(R.namespaces)).items) {
        await t.client.get(R.configmaps, ns.metadata!.name!, 'kube-root-ca.crt');
      }
    }, 60_000);
    before = await superState();
  });

  afterAll(async () => {
    console.log(attempts.summary());
    await agent?.stop();
    await t?.stop();
  });

  it('refuses the manager outside tenant namespaces, whichever identity it runs as', async () => {
    const secret = (ns: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'stolen', namespace: ns },
      stringData: { k: 'v' },
    });
    const pod = (ns: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'escape', namespace: ns },
      spec: { hostNetwork: true, containers: [{ name: 'c', image: 'busybox' }] },
    });
    for (const [who, c] of [
      ['certificate', byCert],
      ['ServiceAccount', bySA],
    ] as const) {
      await attempts.attempt(`manager (${who}) writes a Secret into kube-system`, () =>
        refusedBy(() => c.create(R.secrets, secret('kube-system')), OUTSIDE),
      );
      await attempts.attempt(`manager (${who}) runs a Pod in default`, () =>
        refusedBy(() => c.create(R.pods, pod('default')), OUTSIDE),
      );
      await attempts.attempt(`manager (${who}) overwrites a ConfigMap in kube-system`, () =>
        refusedBy(
          () => c.patch(R.configmaps, 'kube-system', 'kube-root-ca.crt', { data: { 'ca.crt': 'x' } }, 'merge'),
          OUTSIDE,
        ),
      );
      await attempts.attempt(`manager (${who}) deletes the vn-agent's ServiceAccount`, () =>
        refusedBy(() => c.delete(R.serviceaccounts, 'vc-vn-agent', 'vc-vn-agent'), OUTSIDE),
      );
      await attempts.attempt(`manager (${who}) claims kube-system as a tenant namespace`, () =>
        refusedBy(
          () =>
            c.patch(
              R.namespaces,
              undefined,
              'kube-system',
              { metadata: { labels: { [LABEL.cluster]: 'tenant-root' } } },
              'merge',
            ),
          /may not change namespace kube-system/,
        ),
      );
      await attempts.attempt(`manager (${who}) deletes an unlabelled namespace`, () =>
        refusedBy(() => c.delete(R.namespaces, undefined, 'plain'), /may not delete namespace plain/),
      );
      await attempts.attempt(`manager (${who}) strips the tenant label off a tenant namespace`, () =>
        refusedBy(
          () =>
            c.patch(
              R.namespaces,
              undefined,
              'tenant-root',
              { metadata: { labels: { [LABEL.cluster]: null } } },
              'merge',
            ),
          /may not remove or change the label/,
        ),
      );
      await attempts.attempt(`manager (${who}) creates an unlabelled namespace`, () =>
        refusedBy(
          () => c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-evil' } }),
          /may create only namespaces labelled/,
        ),
      );
      await attempts.attempt(
        `manager (${who}) writes a "kubeconfig" Secret in default that no VirtualCluster owns`,
        () =>
          refusedBy(
            () =>
              c.create(R.secrets, {
                apiVersion: 'v1',
                kind: 'Secret',
                metadata: {
                  name: 'x-kubeconfig',
                  namespace: 'default',
                  labels: { [LABEL.managedBy]: IDENTITY.manager },
                },
              }),
            OUTSIDE,
          ),
      );
    }
  });

  it('gives the vn-agent no Secret and no write', async () => {
    for (const [verb, namespace] of [
      ['get', 'vc-vn-agent'],
      ['list', undefined],
      ['watch', undefined],
      ['list', 'kube-system'],
    ] as const) {
      await attempts.attempt(
        `vn-agent may ${verb} secrets${namespace ? ` in ${namespace}` : ' cluster-wide'} (SelfSubjectAccessReview)`,
        async () => {
          const r = await canI(agentClient, { verb, resource: 'secrets', namespace });
          if (r.allowed) throw new Error(`the vn-agent may ${verb} secrets`);
          return `not allowed${r.reason ? `: ${r.reason}` : ''}`;
        },
      );
    }
    await attempts.attempt('vn-agent reads the kubelet client Secret', () =>
      refusedBy(() => agentClient.list(R.secrets, { namespace: 'vc-vn-agent' }), RBAC_DENIED),
    );
    await attempts.attempt('vn-agent reads the admin token of kube-system', () =>
      refusedBy(() => agentClient.list(R.secrets, { namespace: 'kube-system' }), RBAC_DENIED),
    );
    await attempts.attempt('vn-agent writes a tenant CA ConfigMap', () =>
      refusedBy(
        () =>
          agentClient.create(R.configmaps, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'a-tenant-ca', namespace: NS },
            data: { 'ca.crt': 'x' },
          }),
        RBAC_DENIED,
      ),
    );
    await attempts.attempt('vn-agent changes a Pod', () =>
      refusedBy(
        () => agentClient.create(R.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: NS } }),
        RBAC_DENIED,
      ),
    );
    // Super Pods and Nodes are read with each node's own credential, limited by the Node authorizer: the shared
    // ServiceAccount reads none of them.
    await attempts.attempt("vn-agent's ServiceAccount lists the super cluster's Pods", () =>
      refusedBy(() => agentClient.list(R.pods), RBAC_DENIED),
    );
    await attempts.attempt("vn-agent's ServiceAccount reads the super cluster's Nodes", () =>
      refusedBy(() => agentClient.list(R.nodes), RBAC_DENIED),
    );
    // What it does need, it has.
    expect((await canI(agentClient, { verb: 'watch', resource: 'configmaps' })).allowed).toBe(true);
    expect(
      (await canI(agentClient, { verb: 'list', resource: 'virtualclusters', group: 'tenancy.x-k8s.io' })).allowed,
    ).toBe(true);
  });

  it('refuses a certificate from a CA that a status writer forged, whatever status says', async () => {
    const vc = await t.client.create<KubeObject>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: 'a', namespace: NS },
      spec: { provisioner: { type: 'local' } },
    });
    const uid = vc.metadata!.uid!;
    // Named as the manager's PKI names a tenant's CA; the vn-agent accepts no other name for this tenant.
    const tenantCA = await createCA(tenantCACommonName(rootNamespace(NS, 'a', uid)), 1);
    const real = await issueCert(tenantCA, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 1,
    });
    // What the manager writes: the tenant CA beside the VirtualCluster, then status.
    await byCert.apply(
      R.configmaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: tenantCAConfigMapName('a'),
          namespace: NS,
          labels: { [LABEL.managedBy]: IDENTITY.manager },
          ownerReferences: [
            { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', name: 'a', uid, controller: true },
          ],
        },
        data: { [TENANT_CA_KEY]: tenantCA.certPem },
      },
      IDENTITY.manager,
    );
    const writeStatus = (c: KubeClient, status: Record<string, unknown>) =>
      c.patch(R.virtualclusters, NS, 'a', { status }, 'merge', { subresource: 'status' });
    await writeStatus(byCert, {
      phase: 'Running',
      clusterNamespace: rootNamespace(NS, 'a', uid),
      kubeletClientCertFingerprint: fingerprintSha256(real.certPem),
    });

    const servingCA = await createCA('vn-agent-serving', 1);
    const nodeName = t.sc.cluster.kwokNodeNames[0]!;
    const node = await issueNodeCert(t.sc.cluster.ca, nodeName, 1);
    agent = await startVnAgent({
      host: '127.0.0.1',
      port: 0,
      serving: await issueCert(servingCA, {
        commonName: 'vc-vn-agent',
        ipAddresses: ['127.0.0.1'],
        usages: ['server'],
        validityDays: 1,
      }),
      // The agent runs with its own ServiceAccount (deploy/vn-agent RBAC, no Secrets) and reads super Pods with its
      // node's credential.
      directory: new VirtualClusterDirectory({ meta: agentClient }),
      superView: new InformerSuperView({
        client: nodeSuperClient(agentClient, parseNodeCredential(node.certPem, node.keyPem, `of ${nodeName}`)),
        nodeName,
        nodeScoped: true,
        closeClient: true,
      }),
      plugins: await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins }),
      kubelet: { insecureSkipVerify: true },
    });
    const port = agent.port;
    // The real tenant gets past authentication (no such Pod: 403 from the route check, not 401).
    await eventually(async () => expect((await viaAgent(port, real)).status).toBe(403));

    // The forger gives its CA the tenant CA's very name: the name binds, but only the published CA is trusted.
    const forgedCA = await createCA(tenantCACommonName(rootNamespace(NS, 'a', uid)), 1);
    const forged = await issueCert(forgedCA, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 1,
    });
    const unauthenticated = async (): Promise<string> => {
      const r = await viaAgent(port, forged);
      if (r.status !== 401) throw new Error(`the forged certificate got ${r.status}: ${r.body}`);
      return r.body.trim();
    };

    await attempts.attempt(
      'S points status at a forged certificate (fingerprint) and a kubeconfig Secret of its own',
      async () => {
        await hostile.create(R.secrets, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'forged-kubeconfig', namespace: NS },
          stringData: { kubeconfig: 'apiVersion: v1\nkind: Config\n', 'ca.crt': forgedCA.certPem },
        });
        await writeStatus(hostile, {
          kubeletClientCertFingerprint: fingerprintSha256(forged.certPem),
          kubeconfigSecretName: 'forged-kubeconfig',
        });
        // Once the directory sees the new status, the real certificate no longer matches it; then try the forged one.
        await eventually(async () =>
          expect((await viaAgent(port, real)).body).toMatch(/is not its apiserver kubelet client certificate/),
        );
        return unauthenticated();
      },
    );
    await attempts.attempt('S plants its CA in the tenant CA ConfigMap', () =>
      refusedBy(
        () =>
          hostile.patch(
            R.configmaps,
            NS,
            tenantCAConfigMapName('a'),
            { data: { [TENANT_CA_KEY]: forgedCA.certPem } },
            'merge',
          ),
        /only vc-manager may write configmaps/,
      ),
    );
    await attempts.attempt("S replaces the tenant CA ConfigMap with its own, labelled as the manager's", async () => {
      await hostile.delete(R.configmaps, NS, tenantCAConfigMapName('a'));
      const reason = await refusedBy(
        () =>
          hostile.create(R.configmaps, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: tenantCAConfigMapName('a'),
              namespace: NS,
              labels: { [LABEL.managedBy]: IDENTITY.manager },
              ownerReferences: [
                { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', name: 'a', uid, controller: true },
              ],
            },
            data: { [TENANT_CA_KEY]: forgedCA.certPem },
          }),
        /only vc-manager may write configmaps/,
      );
      await unauthenticated();
      return reason;
    });
    await attempts.attempt('S replaces it unlabelled (the agent must not trust it)', async () => {
      await hostile.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: tenantCAConfigMapName('a'),
          namespace: NS,
          ownerReferences: [
            { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', name: 'a', uid, controller: true },
          ],
        },
        data: { [TENANT_CA_KEY]: forgedCA.certPem },
      });
      return unauthenticated();
    });
  });

  it('lets the manager keep a GitSource record beside it, and nobody else rewrite it', async () => {
    const gs = await t.client.create<GitSource>(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: NS },
      spec: { url: 'https://git.example.com/tenants.git', ref: { branch: 'main' } },
    });
    const applied = 'a'.repeat(40);
    const record = recordObject(gs, applied);
    await byCert.create(R.configmaps, record);
    await attempts.attempt('S rewrites the GitSource record to an older revision', () =>
      refusedBy(
        () =>
          hostile.patch(
            R.configmaps,
            NS,
            recordName('tenants'),
            { data: { lastAppliedRevision: 'b'.repeat(40) } },
            'merge',
          ),
        /only vc-manager may write configmaps/,
      ),
    );
    await attempts.attempt('manager (certificate) writes a GitSource record into kube-system', () =>
      refusedBy(
        () => byCert.create(R.configmaps, { ...record, metadata: { ...record.metadata, namespace: 'kube-system' } }),
        OUTSIDE,
      ),
    );
    const kept = await t.client.get<KubeObject & { data?: Record<string, string> }>(
      R.configmaps,
      NS,
      recordName('tenants'),
    );
    expect(kept.data?.lastAppliedRevision).toBe(applied);
  });

  it("lets the manager keep a tenant's backup catalog beside it, and nobody else plant or rewrite one", async () => {
    const entry = { name: 'snap-1', sha256: 'a'.repeat(64) };
    const catalog = catalogObject({ namespace: NS, name: 'dev' }, [entry] as never) as KubeObject & {
      data: Record<string, string>;
    };
    // The manager writes it as backups.ts does, by apply, then again with a change.
    await byCert.apply(R.configmaps, catalog, IDENTITY.manager);
    await byCert.apply(
      R.configmaps,
      { ...catalog, data: { ...catalog.data, extra: '1' } } as KubeObject,
      IDENTITY.manager,
    );
    await attempts.attempt('S rewrites the backup catalog to list a snapshot of its choosing', () =>
      refusedBy(
        () => hostile.patch(R.configmaps, NS, 'vc-backups-dev', { data: { 'snapshots.json': '[]' } }, 'merge'),
        /only vc-manager may write configmaps/,
      ),
    );
    await attempts.attempt('manager (certificate) writes a backup catalog into kube-system', () =>
      refusedBy(
        () => byCert.create(R.configmaps, { ...catalog, metadata: { ...catalog.metadata, namespace: 'kube-system' } }),
        OUTSIDE,
      ),
    );
    // A ConfigMap of that name the manager did not write is not the manager's to take over.
    await hostile.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'vc-backups-other', namespace: NS },
      data: { mine: 'yes' },
    });
    await attempts.attempt("manager (certificate) takes over a user's ConfigMap named like a catalog", () =>
      refusedBy(
        () =>
          byCert.apply(
            R.configmaps,
            { ...catalog, metadata: { ...catalog.metadata, name: 'vc-backups-other' } } as KubeObject,
            IDENTITY.manager,
          ),
        OUTSIDE,
      ),
    );
    const kept = await t.client.get<KubeObject & { data?: Record<string, string> }>(R.configmaps, NS, 'vc-backups-dev');
    expect(kept.data?.extra).toBe('1');
    expect(kept.metadata?.labels?.[LABEL.managedBy]).toBe(IDENTITY.manager);
  });

  it('left the super cluster as it was, and counts no success', async () => {
    expect(await superState()).toBe(before);
    const summary = attempts.summary();
    expect(summary).toMatch(/succeeded 0$/);
    expect(attempts.records.length).toBeGreaterThanOrEqual(30);
  });
});
