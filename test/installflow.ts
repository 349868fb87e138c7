/**
 * The steps of the in-cluster installation that the real-node test (test/realnode/install.it.test.ts) asserts and the
 * `install` benchmark (test/bench/install.ts) times, written once: the local registry with basic auth and the docker
 * config file a platform's `docker login` writes, the local super cluster whose one node is the real node (its
 * apiserver writing an audit log of the manager's and the agents' requests), a kubeconfig whose current context is
 * another cluster's, `vc image build` and `vc image push`, `vc install` with the settings this cluster needs, and what
 * the platform provides before its first tenant (a volume for its etcd, a TenantPolicy, the namespace, a GitSource on a
 * git server the manager Pods reach). Everything runs the `vc` CLI as a user does.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { R } from '../core/kube/resources.ts';
import { TcpForwarder } from '../core/dev/local/forwarder.ts';
import { REAL_NODE_TAINT, type RealNode } from '../core/dev/local/realnode.ts';
import { fileEntry, writeOciArchive } from '../core/toolchain/images.ts';
import { NODE_IMAGES, nodeToolchainDir } from '../core/toolchain/node.ts';
import { startRegistry, type LocalRegistry } from '../core/toolchain/registry.ts';
import { binaryPath } from '../core/toolchain/toolchain.ts';
import { GITSOURCES } from '../gitops/applier/gitsource.ts';
import { startGitServer, type GitServer } from './git/server.ts';
import { startTestSuper, type TestSuper } from './harness.ts';

const exec = promisify(execFile);
const repo = join(import.meta.dirname, '..');
const vcBin = join(repo, 'core/programs/cli/vc.mjs');
const nodeBin = join(repo, 'node_modules/.bin/node');
const USER = { username: 'platform', password: 'install-me-4c1' };
/** TENANT is a tenant's own account on the same registry, for the images it pushes and runs */
export const TENANT_USER = { username: 'team-a', password: 'push-mine-7e2' };
/** CONTEXT is the context of the super cluster in the platform's kubeconfig; its current context is another cluster */
export const CONTEXT = 'super';

/**
 * AUDIT_POLICY records every request of the ServiceAccounts of vc-system and vc-vn-agent and of the nodes' credential
 * (the vn-agent reads the super Pods of its node with it), at Metadata level: enough to tell each answer's code and the
 * User-Agent that asked.
 */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ['system:serviceaccounts:vc-system', 'system:serviceaccounts:vc-vn-agent', 'system:nodes']
  - level: None
`;

/** AuditTally is what the super apiserver's audit log says of the manager's and the vn-agent's requests. */
export interface AuditTally {
  /** requests answered, by the component the User-Agent names (manager, vn-agent) */
  answered: Record<string, number>;
  /** each request answered 403: `<component> <user> <verb> <URI>: <message>` */
  refused: string[];
}

/**
 * tallyAudit reads audit log lines (JSON, one event each) and counts the answers to requests whose User-Agent is the
 * manager's or the vn-agent's (`virtualcluster-ts-<component>/…`), listing the 403s.
 */
export function tallyAudit(text: string): AuditTally {
  const t: AuditTally = { answered: {}, refused: [] };
  for (const line of text.split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as {
      stage?: string;
      verb?: string;
      requestURI?: string;
      userAgent?: string;
      user?: { username?: string };
      responseStatus?: { code?: number; message?: string };
    };
    const component = /^virtualcluster-ts-(manager|vn-agent)\//.exec(e.userAgent ?? '')?.[1];
    if (!component || e.stage === 'ResponseStarted') continue;
    t.answered[component] = (t.answered[component] ?? 0) + 1;
    if (e.responseStatus?.code === 403)
      t.refused.push(
        `${component} ${e.user?.username} ${e.verb} ${e.requestURI}: ${e.responseStatus.message ?? '(no message)'}`,
      );
  }
  return t;
}

/** InstallFlow is one local super cluster with a real node and an authenticated registry, ready for `vc install`. */
export class InstallFlow {
  private gitServer?: GitServer;
  private gitRelay?: TcpForwarder;
  private readonly volumes: string[] = [];
  /** image is the pushed reference by digest, once buildAndPush ran */
  image?: string;

  private constructor(
    readonly dir: string,
    readonly reg: LocalRegistry,
    readonly t: TestSuper,
  ) {}

  /**
   * InstallFlow.start starts the registry (basic auth), writes the docker config file with its credentials, and
   * starts a super cluster whose one node is the real node, without the taint that keeps other tests' Pods off it.
   */
  static async start(): Promise<InstallFlow> {
    // the registry first: a registry that fails to start (or to build, on a first run) leaves no directory behind
    const reg = await startRegistry({ users: [USER, TENANT_USER] });
    const dir = mkdtempSync(join(tmpdir(), 'vc-install-flow-'));
    try {
      writeFileSync(join(dir, 'registry-ca.crt'), reg.caPem);
      for (const [d, u] of [
        ['docker', USER],
        ['tenant-docker', TENANT_USER],
      ] as const) {
        mkdirSync(join(dir, d));
        const auth = Buffer.from(`${u.username}:${u.password}`).toString('base64');
        writeFileSync(join(dir, d, 'config.json'), JSON.stringify({ auths: { [reg.host]: { auth } } }));
      }
      writeFileSync(join(dir, 'audit-policy.yaml'), AUDIT_POLICY);
      const t = await startTestSuper({
        nodes: 0,
        realNodes: 1,
        // the installed vn-agent DaemonSet translates tenant cluster IPs on the node (its cluster-ips container)
        realNodeClusterIPs: false,
        registries: [{ host: reg.host, caPem: reg.caPem }],
        apiserverExtraArgs: {
          'audit-policy-file': join(dir, 'audit-policy.yaml'),
          'audit-log-path': join(dir, 'audit.log'),
        },
      });
      const f = new InstallFlow(dir, reg, t);
      f.writePlatformKubeconfig();
      await f.kubectl('taint', 'nodes', f.node.name, `${REAL_NODE_TAINT.key}-`);
      return f;
    } catch (e) {
      await reg.stop();
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  /** node is the real node. */
  get node(): RealNode {
    return this.t.sc.realNodes[0]!;
  }

  /** vc runs the CLI (the compiled dist/, Node 22) with this flow's docker config and kubeconfig; returns stdout. */
  async vc(...args: string[]): Promise<string> {
    return this.vcWith(join(this.dir, 'docker'), ...args);
  }

  /** vcWith runs the CLI as vc does, with the docker config directory `dockerConfig` (a tenant's, say). */
  async vcWith(dockerConfig: string, ...args: string[]): Promise<string> {
    const env = { ...process.env, DOCKER_CONFIG: dockerConfig, KUBECONFIG: this.t.sc.kubeconfigPath };
    return (await exec(nodeBin, [vcBin, ...args], { env, timeout: 600_000, maxBuffer: 64 << 20 })).stdout;
  }

  /**
   * platformKubeconfig is a kubeconfig as a platform engineer's usually is: its current context another cluster's
   * (an address nothing listens on), the super cluster's under CONTEXT; `vc install` and `vc uninstall` get both flags.
   */
  get platformKubeconfig(): string {
    return join(this.dir, 'platform.kubeconfig');
  }

  private writePlatformKubeconfig(): void {
    const kc = parse(readFileSync(this.t.sc.kubeconfigPath, 'utf8')) as {
      clusters: Array<{ name: string; cluster: Record<string, unknown> }>;
      contexts: Array<{ name: string; context: { cluster: string; user: string } }>;
      'current-context': string;
    };
    const own = kc.contexts.find((x) => x.name === kc['current-context'])!;
    kc.clusters.push({
      name: 'elsewhere',
      cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true },
    });
    kc.contexts = [
      { name: CONTEXT, context: own.context },
      { name: 'elsewhere', context: { cluster: 'elsewhere', user: own.context.user } },
    ];
    kc['current-context'] = 'elsewhere';
    writeFileSync(this.platformKubeconfig, stringify(kc), { mode: 0o600 });
  }

  /** auditTally reads the super apiserver's audit log so far (tallyAudit). */
  auditTally(): AuditTally {
    return tallyAudit(readFileSync(join(this.dir, 'audit.log'), 'utf8'));
  }

  /**
   * pushTenantImage does what a tenant does with an image of its own: writes it (busybox printing `marker`, then
   * sleeping) and runs `vc image push` with the tenant's docker config (TENANT_USER). Returns the reference and digest.
   */
  async pushTenantImage(marker: string): Promise<{ ref: string; digest: string }> {
    const archive = join(this.dir, 'tenant-image.tar');
    const ref = `${this.reg.host}/team-a/hello:1`;
    writeOciArchive(archive, {
      ref,
      files: [
        fileEntry('bin/busybox', join(nodeToolchainDir(), 'bin', 'busybox')),
        { type: 'file', path: 'etc/hello.txt', data: Buffer.from(`${marker}\n`) },
      ],
      entrypoint: ['/bin/busybox', 'sh', '-c', '/bin/busybox cat /etc/hello.txt; exec /bin/busybox sleep 3600'],
      user: '65532:65532',
      createdBy: 'test/installflow.ts',
    });
    const ca = join(this.dir, 'registry-ca.crt');
    const digest = (
      await this.vcWith(join(this.dir, 'tenant-docker'), 'image', 'push', ref, '--from', archive, '--ca-file', ca)
    ).trim();
    return { ref, digest };
  }

  /** kubectl runs kubectl against the super cluster as its admin; returns stdout. */
  async kubectl(...args: string[]): Promise<string> {
    const kc = ['--kubeconfig', this.t.sc.kubeconfigPath];
    return (await exec(binaryPath('kubectl'), [...kc, ...args], { timeout: 30_000 })).stdout;
  }

  /**
   * buildAndPush runs `vc image build --archive` and `vc image push` to the local registry and returns the digest
   * each printed and what the build reported on stderr (its size).
   */
  async buildAndPush(): Promise<{ built: string; pushed: string; ref: string }> {
    const archive = join(this.dir, 'image.tar');
    const built = (await this.vc('image', 'build', '--archive', archive)).trim();
    const ref = `${this.reg.host}/platform/virtualcluster-ts:e2e`;
    const ca = join(this.dir, 'registry-ca.crt');
    const pushed = (await this.vc('image', 'push', ref, '--from', archive, '--ca-file', ca)).trim();
    this.image = `${ref.replace(/:e2e$/, '')}@${pushed}`;
    return { built, pushed, ref };
  }

  /**
   * installArgs are `vc install`'s arguments for this cluster, through the platform kubeconfig's CONTEXT: the pushed
   * image by digest (or `image`) with the registry's credentials, manager and vn-agent, the shipped manager
   * configuration except that tenant apiservers are dialled by ClusterIP (this cluster runs no cluster DNS, so
   * `apiserver.<root>.svc` resolves nowhere), and the real node's kubelet credential directory.
   */
  installArgs(image = this.image): string[] {
    const shipped = readFileSync(join(repo, 'deploy/manager/deployment.yaml'), 'utf8').split('\n---\n')[0]!;
    const cm = parse(shipped) as { data: Record<string, string> };
    const cfg = parse(cm.data['manager.yaml']!) as {
      virtualClusters: Record<string, unknown>;
      gitops: Record<string, unknown>;
    };
    cfg.virtualClusters.native = { apiserverAccess: 'ClusterIP' };
    // The platform's git server is on the node's private network: allowed by name, as a platform allows its own.
    cfg.gitops.allowPrivateAddresses = [`${this.node.nodeIP}/32`];
    writeFileSync(join(this.dir, 'manager.yaml'), stringify(cfg));
    if (!image) throw new Error('installArgs: buildAndPush first');
    return [
      'install',
      '--kubeconfig',
      this.platformKubeconfig,
      '--context',
      CONTEXT,
      '--image',
      image,
      '--components',
      'manager,vn-agent',
      '--pull-credentials',
      '--manager-config',
      join(this.dir, 'manager.yaml'),
      '--kubelet-pki-dir',
      join(this.node.opts.dir, 'pki'),
      '--timeout',
      '300',
    ];
  }

  /**
   * prepareTenants does what the platform provides before tenants come from git: a hostPath volume per tenant for their etcds
   * (this cluster has no volume provisioner), the TenantPolicy `e2e` (NodePort exposure, native only, the node's
   * agnhost image run from its store since nothing can be pulled from the internet here, the local registry allowed
   * as one inside the platform), the namespace `tenants`,
   * the repository `tenants` with a native VirtualCluster per name (commitTenants) on a git server that the manager
   * Pods reach through the node's gateway, and the GitSource `tenants/tenants` that follows it.
   */
  async prepareTenants(names: readonly string[]): Promise<void> {
    const c = this.t.client;
    for (let i = 0; i < names.length; i++) {
      const name = `tenant-etcd-${i}`;
      const path = join(this.dir, name);
      mkdirSync(path, { mode: 0o777 });
      await c.create(R.persistentvolumes, {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          hostPath: { path, type: 'Directory' },
        },
      });
      this.volumes.push(name);
    }
    await c.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'e2e' },
      spec: {
        grants: { subjects: [{ kind: 'GitSource', namespace: 'tenants', name: 'tenants' }] },
        controlPlane: { expose: { allowedTypes: ['NodePort'] } },
        provisioners: { allowed: ['native'] },
        // The platform's registry is inside the platform: its tenants' images may name it only by this grant.
        pods: { preloadedImages: [NODE_IMAGES.agnhost], internalRegistries: [this.reg.host] },
      },
    });
    await this.kubectl('create', 'namespace', 'tenants');
    this.gitServer = await startGitServer();
    const target = { host: '127.0.0.1', port: this.gitServer.port };
    this.gitRelay = await TcpForwarder.start({ host: this.node.nodeIP, port: 0, target });
    await this.gitServer.initRepo('tenants');
    await this.commitTenants(names);
    await c.create(GITSOURCES, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'GitSource',
      metadata: { name: 'tenants', namespace: 'tenants' },
      spec: {
        url: `http://${this.node.nodeIP}:${this.gitRelay.port}/tenants.git`,
        ref: { branch: 'main' },
        path: 'tenants',
        interval: '10s',
      },
    });
  }

  /** commitTenants pushes a native VirtualCluster `tenants/<name>` (NodePort, policy e2e) per name to the repository. */
  async commitTenants(names: readonly string[]): Promise<void> {
    const files: Record<string, string> = {};
    for (const name of names)
      files[`tenants/${name}.yaml`] = stringify({
        apiVersion: 'tenancy.x-k8s.io/v1alpha1',
        kind: 'VirtualCluster',
        metadata: { name, namespace: 'tenants' },
        spec: { provisioner: { type: 'native' }, policyName: 'e2e', apiServer: { expose: { type: 'NodePort' } } },
      });
    await this.gitServer!.commitFiles('tenants', files, names.join(', '));
  }

  /**
   * stop removes the installation if it is still there (the GitSource first, else it would apply its tenants again),
   * the volumes, the git server and its relay, the super cluster and the registry.
   */
  async stop(installed: boolean): Promise<void> {
    if (installed) {
      await this.kubectl('delete', 'gitsources.tenancy.x-k8s.io', '--all', '-A').catch(() => undefined);
      await this.vc('uninstall', '--crds', '--delete-tenants', '--timeout', '120').catch(() => undefined);
    }
    for (const v of this.volumes) await this.kubectl('delete', 'pv', v, '--wait=false').catch(() => undefined);
    await this.gitRelay?.stop();
    await this.gitServer?.close();
    await this.t.stop();
    await this.reg.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
