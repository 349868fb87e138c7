/**
 * Hostile tenants, authors and status writers against credentials and identity: V hands the import provisioner a
 * kubeconfig that would run a command or read the manager's files, and plants a Secret where the manager writes its
 * kubeconfig; S rewrites a VirtualCluster's status to point it at another tenant; T creates namespaces whose super
 * name is already someone else's. Each attempt runs against the real local system (super cluster, tenant control
 * planes, VirtualCluster controller, syncer and vn-agent) and must be refused with a reason, leaving every other
 * tenant's objects, namespaces and control plane as they were.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { ANN, IDENTITY, LABEL, MANAGER, provenanceOf, rootNamespace, superNamespace } from '../../core/names/names.ts';
import { createCA, fingerprintSha256, issueCert, issueNodeCert, type CertKeyPair } from '../../core/pki/pki.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import type { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { DEFAULT_POLICY_ANNOTATION } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { startVnAgent, type VnAgent } from '../../core/vnagent/agent.ts';
import { VirtualClusterDirectory } from '../../core/vnagent/directory.ts';
import { nodeSuperClient, parseNodeCredential } from '../../core/vnagent/nodecredential.ts';
import { InformerSuperView } from '../../core/vnagent/superview.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { startLocalSystem, type LocalSystem } from '../localsystem.ts';
import { Attempts } from './attempts.ts';

const API = 'tenancy.x-k8s.io/v1alpha1';
const b64 = (s: string) => Buffer.from(s).toString('base64');
/** IMPORTED are the hostile kubeconfigs V imports; the platform grants their Secrets, so the kubeconfig check is what refuses them. */
const IMPORTED = ['exec', 'auth-provider', 'token-file', 'cert-file', 'ca-file', 'plain-http', 'skip-tls', 'proxy'];

interface Pod extends KubeObject {
  spec: { nodeName?: string; containers: Array<{ name: string; image: string }> };
  status?: { phase?: string };
}
interface Event extends KubeObject {
  reason?: string;
  message?: string;
  type?: string;
  involvedObject?: { kind?: string; name?: string; namespace?: string };
}

describe('security: identity and credentials against hostile authors, tenants and status writers', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let sys: LocalSystem;
  let local: LocalProvisioner;
  let syncer: Syncer;
  let agent: VnAgent;
  const tenants = new MutableTenantRegistry();
  let alpha: VirtualCluster;
  let beta: VirtualCluster;
  let rootA: string;
  let rootB: string;
  let a: KubeClient;
  let b: KubeClient;
  let nodeA: string;

  const vc = (namespace: string, name: string, spec: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: API,
    kind: 'VirtualCluster',
    metadata: { name, namespace },
    spec: { provisioner: { type: 'local' }, ...spec },
  });
  const getVC = (ns: string, name: string) => t.client.get<VirtualCluster>(R.virtualclusters, ns, name);
  const startController = () => sys.startController();
  const stopController = () => sys.stopController();
  const running = (ns: string, name: string) => sys.running(ns, name);
  const tenantClient = async (v: VirtualCluster) => {
    const s = await t.client.get<{ data: { kubeconfig: string } }>(
      R.secrets,
      v.metadata!.namespace,
      `${v.metadata!.name}-kubeconfig`,
    );
    return KubeClient.fromString(Buffer.from(s.data.kubeconfig, 'base64').toString(), 'test');
  };
  const kubeletCert = (root: string): CertKeyPair => {
    const dir = local.controlPlane(root)!.dir;
    return {
      certPem: readFileSync(join(dir, 'pki/kubelet-client.crt'), 'utf8'),
      keyPem: readFileSync(join(dir, 'pki/kubelet-client.key'), 'utf8'),
    };
  };
  /** direct calls the vn-agent as a tenant apiserver does, with the given client certificate. */
  const direct = (path: string, cert: CertKeyPair): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: agent.port,
          path,
          rejectUnauthorized: false,
          agent: false,
          cert: cert.certPem,
          key: cert.keyPem,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.setTimeout(20_000, () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });
  /** superPods lists the super Pods of a super namespace as `name cluster`. */
  const superPods = async (ns: string) =>
    (await t.client.list<Pod>(R.pods, { namespace: ns })).items
      .map((p) => `${p.metadata!.name} ${provenanceOf(p)?.cluster}`)
      .sort();
  /** snapshot is what a hostile attempt must leave alone: namespaces, Pods and Secrets of the super cluster. */
  const snapshot = async (filter: (o: KubeObject) => boolean = () => true) => {
    const out: Record<string, string> = {};
    for (const r of [R.namespaces, R.pods, R.secrets]) {
      for (const o of (await t.client.list(r)).items.filter(filter))
        out[`${r.kind}/${o.metadata!.namespace ?? ''}/${o.metadata!.name}`] =
          `${o.metadata!.uid} ${o.metadata!.resourceVersion}`;
    }
    return out;
  };
  const runPod = async (c: KubeClient, ns: string, name: string) => {
    await eventually(() => c.get(R.serviceaccounts, ns, 'default'), 60_000);
    await c.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    });
    await eventually(async () => expect((await c.get<Pod>(R.pods, ns, name)).status?.phase).toBe('Running'), 90_000);
  };
  const tenantEvent = (c: KubeClient, ns: string | undefined, name: string, reason: string) =>
    eventually(async () => {
      const events = (await c.list<Event>(R.events, ns ? { namespace: ns } : {})).items;
      const e = events.find((x) => x.involvedObject?.name === name && x.reason === reason && x.type === 'Warning');
      expect(e, `${reason} event on ${name}`).toBeDefined();
      return e!.message!;
    }, 60_000);
  const condition = (v: VirtualCluster) => v.status?.conditions?.find((c) => c.type === 'Ready');
  /** nodeCredential is a node's own client certificate (system:node:<node>), signed by the super CA as a kubelet's. */
  const nodeCredential = async (node: string) => {
    const c = await issueNodeCert(t.sc.cluster.ca, node, 1);
    return parseNodeCredential(c.certPem, c.keyPem, `of ${node}`, node);
  };
  /** refusedBy expects the apiserver to refuse a request with 403, and returns its reason. */
  const refusedBy = async (what: Promise<unknown>): Promise<string> => {
    const e = await what.then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e, 'the request was allowed').toBeInstanceOf(ApiError);
    expect((e as ApiError).code, (e as ApiError).message).toBe(403);
    return (e as ApiError).message.split('\n')[0]!;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    nodeA = t.sc.cluster.kwokNodeNames[0]!;
    sys = await startLocalSystem(t, { name: 'security-identity', tenants });
    local = sys.local;
    // The platform allows these tenants the import provisioner: what V controls is the kubeconfig Secret it names.
    await eventually(() =>
      t.client.apply(
        R.tenantpolicies,
        {
          apiVersion: API,
          kind: 'TenantPolicy',
          metadata: { name: 'identity', annotations: { [DEFAULT_POLICY_ANNOTATION]: 'true' } },
          spec: {
            provisioners: { allowed: ['local', 'import'] },
            grants: { importSecrets: IMPORTED.map((n) => ({ namespace: 'team-v', name: `src-${n}` })) },
          },
        },
        'test',
      ),
    );
    for (const ns of ['team-a', 'team-b', 'team-v'])
      await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    syncer = new Syncer({
      superClient: t.client,
      host: await PluginHost.load({ process: 'manager', builtins: builtinPlugins }),
      registry: tenants,
      patrolIntervalMs: 0,
    });
    await syncer.start();
    const servingCA = await createCA('vn-agent-serving-ca', 1);
    const serving = await issueCert(servingCA, {
      commonName: 'vc-vn-agent',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 1,
    });
    agent = await startVnAgent({
      host: '127.0.0.1',
      port: 0,
      serving,
      directory: new VirtualClusterDirectory({ meta: t.client }),
      // The agent of node A reads super Pods with node A's own credential, as a DaemonSet's agent does with its
      // kubelet's: the apiserver's Node authorizer shows it only node A's Pods and Node.
      superView: new InformerSuperView({
        client: nodeSuperClient(t.client, await nodeCredential(nodeA)),
        nodeName: nodeA,
        nodeScoped: true,
        closeClient: true,
      }),
      plugins: await PluginHost.load({ process: 'vn-agent', builtins: builtinPlugins }),
      kubelet: { insecureSkipVerify: true },
    });
    await t.client.create(R.virtualclusters, vc('team-a', 'alpha'));
    await t.client.create(R.virtualclusters, vc('team-b', 'beta'));
    [alpha, beta] = await Promise.all([running('team-a', 'alpha'), running('team-b', 'beta')]);
    rootA = rootNamespace('team-a', 'alpha', alpha.metadata!.uid!);
    rootB = rootNamespace('team-b', 'beta', beta.metadata!.uid!);
    [a, b] = await Promise.all([tenantClient(alpha), tenantClient(beta)]);
    await eventually(() => expect(syncer.tenantReady(rootA) && syncer.tenantReady(rootB)).toBe(true), 60_000);
    await Promise.all([runPod(a, 'default', 'app-a'), runPod(b, 'default', 'app-b')]);
  }, 400_000);

  afterAll(async () => {
    console.log(`security identity: ${attempts.summary()}`);
    for (const r of attempts.records) console.log(`  ${r.outcome}: ${r.name} -- ${r.detail.split('\n')[0]}`);
    a?.close();
    b?.close();
    await agent?.stop();
    await syncer?.stop();
    await sys?.stop();
    await t?.stop();
  });

  // ---- V: kubeconfigs the import provisioner must not act on ----

  it('V: an imported kubeconfig that would run a command, read files or talk without TLS is refused, naming the field', async () => {
    const marker = join(tmpdir(), `pwned-${randomBytes(6).toString('hex')}`);
    const ca = b64(t.sc.cluster.caPem);
    const server = t.client.server.origin;
    const kubeconfig = (cluster: Record<string, unknown>, user: Record<string, unknown>) =>
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': ca, ...cluster } }],
        users: [{ name: 'u', user }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      });
    const hostile: Array<[string, string, string]> = [
      [
        'exec',
        kubeconfig(
          {},
          {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: 'touch',
              args: [marker],
              interactiveMode: 'Never',
            },
          },
        ),
        'users[0].user.exec',
      ],
      [
        'auth-provider',
        kubeconfig({}, { 'auth-provider': { name: 'oidc', config: { 'idp-issuer-url': 'https://127.0.0.1:1' } } }),
        'users[0].user.auth-provider',
      ],
      ['token-file', kubeconfig({}, { tokenFile: join(t.sc.cluster.dir, 'admin-token') }), 'users[0].user.tokenFile'],
      [
        'cert-file',
        kubeconfig(
          {},
          {
            'client-certificate': join(t.sc.cluster.dir, 'pki/ca.crt'),
            'client-key': join(t.sc.cluster.dir, 'pki/ca.key'),
          },
        ),
        'users[0].user.client-certificate',
      ],
      [
        'ca-file',
        kubeconfig(
          { 'certificate-authority-data': undefined, 'certificate-authority': join(t.sc.cluster.dir, 'pki/ca.crt') },
          { token: 'x' },
        ),
        'clusters[0].cluster.certificate-authority',
      ],
      ['plain-http', kubeconfig({ server: 'http://127.0.0.1:1' }, { token: 'x' }), 'clusters[0].cluster.server'],
      [
        'skip-tls',
        kubeconfig({ 'insecure-skip-tls-verify': true, 'certificate-authority-data': undefined }, { token: 'x' }),
        'clusters[0].cluster.insecure-skip-tls-verify',
      ],
      [
        'proxy',
        kubeconfig({ 'proxy-url': 'http://169.254.169.254:80' }, { token: 'x' }),
        'clusters[0].cluster.proxy-url',
      ],
    ];
    const outside = (o: KubeObject) => !!o.metadata?.namespace && o.metadata.namespace !== 'team-v';
    const before = await snapshot(outside);
    for (const [name, text] of hostile) {
      await t.client.create(R.secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `src-${name}`, namespace: 'team-v' },
        data: { kubeconfig: b64(text) },
      });
      await t.client.create(
        R.virtualclusters,
        vc('team-v', `imp-${name}`, {
          provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: `src-${name}` } } },
        }),
      );
    }
    for (const [name, , field] of hostile) {
      await attempts.attempt(`V imports a kubeconfig with ${name}`, async () => {
        const v = await eventually(async () => {
          const x = await getVC('team-v', `imp-${name}`);
          expect(condition(x)).toMatchObject({ status: 'False', reason: 'KubeconfigRefused' });
          return x;
        }, 60_000);
        expect(v.status?.phase).toBe('Error');
        const message = condition(v)!.message!;
        expect(message).toContain(`Secret team-v/src-${name} (key "kubeconfig")`);
        expect(message).toContain(field);
        expect(await t.client.getOrNull(R.secrets, 'team-v', `imp-${name}-kubeconfig`)).toBeNull();
        expect(existsSync(marker)).toBe(false);
        return message;
      });
    }
    expect(await snapshot(outside)).toEqual(before);
  });

  // ---- V: a Secret planted where the manager writes the kubeconfig ----

  it('V: a hand-made <vc>-kubeconfig Secret is neither adopted nor deleted', async () => {
    const planted = await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hijack-kubeconfig', namespace: 'team-v', labels: { app: 'mine' } },
      data: { kubeconfig: b64('planted') },
    });
    await t.client.create(R.virtualclusters, vc('team-v', 'hijack'));
    await attempts.attempt('V plants the kubeconfig Secret of a VirtualCluster before it exists', async () => {
      const v = await eventually(async () => {
        const x = await getVC('team-v', 'hijack');
        expect(condition(x)).toMatchObject({ status: 'False', reason: 'NotOwned' });
        return x;
      }, 90_000);
      const message = condition(v)!.message!;
      expect(message).toContain('Secret team-v/hijack-kubeconfig');
      const now = await t.client.get(R.secrets, 'team-v', 'hijack-kubeconfig');
      expect(now.metadata!.resourceVersion).toBe(planted.metadata!.resourceVersion);
      expect(now.metadata!.labels).toEqual({ app: 'mine' });
      return message;
    });
    await attempts.attempt('V deletes that VirtualCluster to have the manager delete the planted Secret', async () => {
      await t.client.delete(R.virtualclusters, 'team-v', 'hijack');
      await eventually(
        async () => expect(await t.client.getOrNull(R.virtualclusters, 'team-v', 'hijack')).toBeNull(),
        90_000,
      );
      const now = await t.client.get(R.secrets, 'team-v', 'hijack-kubeconfig');
      expect(now.metadata!.uid).toBe(planted.metadata!.uid);
      expect(now.metadata!.resourceVersion).toBe(planted.metadata!.resourceVersion);
      return 'the hand-made Secret is still there, unchanged';
    });
  });

  it('V: a hand-made <vc>-tenant-ca ConfigMap with a CA of its own is neither adopted nor trusted', async () => {
    const ownCA = await createCA('attacker-ca', 1);
    const planted = await t.client.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'plant-tenant-ca', namespace: 'team-v' },
      data: { 'ca.crt': ownCA.certPem },
    });
    await t.client.create(R.virtualclusters, vc('team-v', 'plant'));
    await attempts.attempt('V plants the tenant CA ConfigMap of a VirtualCluster before it exists', async () => {
      const v = await eventually(async () => {
        const x = await getVC('team-v', 'plant');
        expect(condition(x)).toMatchObject({ status: 'False', reason: 'NotOwned' });
        return x;
      }, 90_000);
      const message = condition(v)!.message!;
      expect(message).toContain('ConfigMap team-v/plant-tenant-ca');
      const now = await t.client.get(R.configmaps, 'team-v', 'plant-tenant-ca');
      expect(now.metadata!.resourceVersion).toBe(planted.metadata!.resourceVersion);
      return message;
    });
    await t.client.delete(R.virtualclusters, 'team-v', 'plant');
    await eventually(
      async () => expect(await t.client.getOrNull(R.virtualclusters, 'team-v', 'plant')).toBeNull(),
      90_000,
    );
    expect((await t.client.get(R.configmaps, 'team-v', 'plant-tenant-ca')).metadata!.uid).toBe(planted.metadata!.uid);
  });

  // ---- T: super namespaces that already belong to someone else ----

  it('T: nothing is created in a super namespace that is hand-made or written for another tenant', async () => {
    const handMade = superNamespace(rootA, 'taken');
    await t.client.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: handMade, labels: { owner: 'platform' } },
    });
    const foreign = superNamespace(rootA, 'stolen');
    await t.client.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: foreign,
        labels: { [LABEL.managedBy]: MANAGER, [LABEL.cluster]: rootB },
        annotations: {
          [ANN.cluster]: rootB,
          [ANN.namespace]: '',
          [ANN.name]: 'default',
          [ANN.uid]: 'x',
          [ANN.vcUid]: beta.metadata!.uid!,
        },
      },
    });
    for (const ns of ['taken', 'stolen']) {
      await a.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      await a.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cfg', namespace: ns },
        data: { k: 'v' },
      });
      await a.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: ns },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      });
    }
    await attempts.attempt('T creates a namespace whose super name is a hand-made namespace', async () => {
      const message = await tenantEvent(a, undefined, 'taken', 'NotManaged');
      expect(message).toContain(handMade);
      expect((await t.client.list(R.pods, { namespace: handMade })).items).toEqual([]);
      expect(
        (await t.client.list(R.configmaps, { namespace: handMade })).items.filter((c) => c.metadata!.name === 'cfg'),
      ).toEqual([]);
      expect((await t.client.get(R.namespaces, undefined, handMade)).metadata!.labels).toMatchObject({
        owner: 'platform',
      });
      return message;
    });
    await attempts.attempt("T creates a namespace whose super name is another tenant's", async () => {
      const message = await tenantEvent(a, 'stolen', 'p', 'NamespaceNotOwned');
      expect(message).toContain(foreign);
      expect((await t.client.list(R.pods, { namespace: foreign })).items).toEqual([]);
      expect(
        (await t.client.list(R.configmaps, { namespace: foreign })).items.filter((c) => c.metadata!.name === 'cfg'),
      ).toEqual([]);
      return message;
    });
  });

  // ---- S: status that points one tenant at another ----

  it("N: node A's agent credential reads only node A's Pods; other nodes' Pods, all Pods and Secrets are refused", async () => {
    // Another node with a Pod bound to it and a Secret that Pod mounts: what node A's agent must not see.
    const nodeB = 'other-node';
    await t.client.create(R.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeB } });
    await t.client.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'node-b-work' } });
    await t.client.create(R.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'node-b-secret', namespace: 'node-b-work' },
      stringData: { password: 'not for node A' },
    });
    await t.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'on-b', namespace: 'node-b-work' },
      spec: {
        nodeName: nodeB,
        containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 's', mountPath: '/s' }] }],
        volumes: [{ name: 's', secret: { secretName: 'node-b-secret' } }],
      },
    });
    const n = nodeSuperClient(t.client, await nodeCredential(nodeA));
    try {
      const nsA = superNamespace(rootA, 'default');
      // What the agent needs still works: node A's own Pods (by field selector and by name) and its own Node.
      const own = await eventually(async () => {
        const l = await n.list<Pod>(R.pods, { fieldSelector: `spec.nodeName=${nodeA}` });
        expect(l.items.map((p) => p.metadata!.name)).toContain('app-a');
        return l.items;
      }, 30_000);
      expect(own.every((p) => p.spec.nodeName === nodeA)).toBe(true);
      expect((await n.get<Pod>(R.pods, nsA, 'app-a')).spec.nodeName).toBe(nodeA);
      expect((await n.get(R.nodes, undefined, nodeA)).metadata!.name).toBe(nodeA);
      const before = await snapshot();
      const refusals: Array<[string, () => Promise<unknown>]> = [
        ['reads a Pod bound to node B', () => n.get(R.pods, 'node-b-work', 'on-b')],
        ['lists the Pods of every node', () => n.list(R.pods)],
        ["lists node B's Pods by field selector", () => n.list(R.pods, { fieldSelector: `spec.nodeName=${nodeB}` })],
        ['lists the Pods of a namespace', () => n.list(R.pods, { namespace: nsA })],
        ['reads the Secret a Pod of node B mounts', () => n.get(R.secrets, 'node-b-work', 'node-b-secret')],
        ['lists every Secret', () => n.list(R.secrets)],
        ["reads node B's Node", () => n.get(R.nodes, undefined, nodeB)],
        ['reads VirtualClusters (left to the ServiceAccount)', () => n.list(R.virtualclusters)],
        [
          "writes the status of node B's Pod (NodeRestriction)",
          () =>
            n.patch(R.pods, 'node-b-work', 'on-b', { status: { message: 'node A was here' } }, 'merge', {
              subresource: 'status',
            }),
        ],
        [
          "labels node B's Node (NodeRestriction)",
          () => n.patch(R.nodes, undefined, nodeB, { metadata: { labels: { owned: 'by-a' } } }, 'merge'),
        ],
      ];
      for (const [what, call] of refusals)
        await attempts.attempt(`N with node A's agent credential ${what}`, () => refusedBy(call()));
      expect(await snapshot()).toEqual(before);
      expect((await t.client.get<KubeObject>(R.nodes, undefined, nodeB)).metadata!.labels?.owned).toBeUndefined();
      // And the agent, reading with that credential, still serves its own node's Pod.
      const logs = await direct('/containerLogs/default/app-a/c', kubeletCert(rootA));
      expect(logs.status, logs.body).toBe(200);
    } finally {
      n.close();
    }
  });

  it("S: another tenant's clusterNamespace and endpoint in a VirtualCluster's status redirect nothing", async () => {
    const nsA = superNamespace(rootA, 'default');
    const nsB = superNamespace(rootB, 'default');
    const before = { a: await superPods(nsA), b: await superPods(nsB) };
    expect(before).toEqual({ a: [`app-a ${rootA}`], b: [`app-b ${rootB}`] });
    await attempts.attempt("S writes tenant B's root namespace and endpoint into tenant A's status", async () => {
      await t.client.patch(
        R.virtualclusters,
        'team-a',
        'alpha',
        {
          status: {
            clusterNamespace: rootB,
            apiserverEndpoint: beta.status?.apiserverEndpoint ?? 'https://127.0.0.1:1',
            kubeconfigSecretName: 'beta-kubeconfig',
          },
        },
        'merge',
        { subresource: 'status' },
      );
      await a.create(R.configmaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'after-forgery', namespace: 'default' },
        data: { k: 'v' },
      });
      await eventually(
        async () => expect(await t.client.getOrNull(R.configmaps, nsA, 'after-forgery')).not.toBeNull(),
        60_000,
      );
      expect(await t.client.getOrNull(R.configmaps, nsB, 'after-forgery')).toBeNull();
      expect({ a: await superPods(nsA), b: await superPods(nsB) }).toEqual(before);
      // The controller puts its own answer back.
      await eventually(
        async () => expect((await getVC('team-a', 'alpha')).status?.clusterNamespace).toBe(rootA),
        30_000,
      );
      return "tenant A's objects stay in its own super namespaces; the status is rewritten from metadata";
    });
  });

  it("S: another tenant's kubelet certificate fingerprint in a VirtualCluster's status opens nothing", async () => {
    const certA = kubeletCert(rootA);
    const certB = kubeletCert(rootB);
    await eventually(
      async () => expect(await direct('/containerLogs/default/app-a/c', certA)).toMatchObject({ status: 200 }),
      60_000,
    );
    // With the controller stopped, the forged status stays as S wrote it.
    await stopController();
    try {
      await t.client.patch(
        R.virtualclusters,
        'team-a',
        'alpha',
        { status: { kubeletClientCertFingerprint: fingerprintSha256(certB.certPem), clusterNamespace: rootB } },
        'merge',
        { subresource: 'status' },
      );
      await attempts.attempt(
        "S records tenant B's kubelet certificate as tenant A's: B's apiserver asks for A's Pod",
        async () => {
          const r = await eventually(async () => {
            const x = await direct('/containerLogs/default/app-a/c', certB);
            expect(x.status).toBe(403);
            return x;
          }, 30_000);
          expect(r.body).toContain('not found for this tenant');
          return `${r.status} ${r.body.trim()}`;
        },
      );
      await attempts.attempt(
        "S records tenant B's kubelet certificate as tenant A's: A's own certificate no longer opens A",
        async () => {
          const r = await eventually(async () => {
            const x = await direct('/containerLogs/default/app-a/c', certA);
            expect(x.status).toBeGreaterThanOrEqual(401);
            return x;
          }, 30_000);
          expect(await direct('/containerLogs/default/app-b/c', certA)).toMatchObject({ status: expect.any(Number) });
          expect((await direct('/containerLogs/default/app-b/c', certA)).status).not.toBe(200);
          return `${r.status} ${r.body.trim()}`;
        },
      );
    } finally {
      await startController();
    }
  });

  it("S: deleting a VirtualCluster whose status names another tenant's root deletes nothing of that tenant", async () => {
    const nsB = superNamespace(rootB, 'default');
    const bNamespaces = async () =>
      (await t.client.list(R.namespaces, { labelSelector: `${LABEL.cluster}=${rootB}` })).items
        .map((n) => `${n.metadata!.name} ${n.metadata!.uid}`)
        .sort();
    const beforeB = await bNamespaces();
    expect(beforeB.length).toBeGreaterThanOrEqual(2);
    // A namespace a super admin labelled with tenant A's key by hand: clean-up must leave it too.
    const labelled = await t.client.create(R.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'admin-labelled', labels: { [LABEL.cluster]: rootA, [LABEL.managedBy]: IDENTITY.syncer } },
    });
    await stopController();
    await t.client.patch(R.virtualclusters, 'team-a', 'alpha', { status: { clusterNamespace: rootB } }, 'merge', {
      subresource: 'status',
    });
    await t.client.delete(R.virtualclusters, 'team-a', 'alpha');
    await startController();
    await attempts.attempt("S points tenant A's clean-up at tenant B's root", async () => {
      await eventually(
        async () => expect(await t.client.getOrNull(R.virtualclusters, 'team-a', 'alpha')).toBeNull(),
        120_000,
      );
      expect(await bNamespaces()).toEqual(beforeB);
      expect(await superPods(nsB)).toEqual([`app-b ${rootB}`]);
      expect((await b.get<Pod>(R.pods, 'default', 'app-b')).status?.phase).toBe('Running');
      expect((await getVC('team-b', 'beta')).status?.phase).toBe('Running');
      expect(local.controlPlane(rootB)).toBeDefined();
      expect((await t.client.get(R.namespaces, undefined, 'admin-labelled')).metadata!.uid).toBe(
        labelled.metadata!.uid,
      );
      expect(
        await t.client.getOrNull(R.namespaces, undefined, rootA).then((n) => !n || !!n.metadata?.deletionTimestamp),
      ).toBe(true);
      return "tenant B's namespaces, Pods and control plane are untouched; only tenant A is gone";
    });
  });

  it('refuses every attempt', () => {
    expect(attempts.summary()).toMatch(/, succeeded 0$/);
    expect(attempts.records.length).toBeGreaterThanOrEqual(27);
  });
});
