/**
 * Hostile authors against the TenantPolicy: V (whoever can author a VirtualCluster) asks, through a VirtualCluster
 * object or `vc create`, for what only the platform may decide: control-plane flags that reach etcd, authentication,
 * authorization, admission or the service-account issuer; privileged Pods; disabling an enforced plugin; a weight
 * above the ceiling; the import provisioner pointed at another tenant's kubeconfig; plugin settings that override the
 * manager's. Each attempt runs on the real local system (super cluster, VirtualCluster controller, local provisioner
 * sharing the super's etcd) and must be refused with a reason the author sees (condition, event or CLI error), while
 * nothing of the super cluster or of another tenant changes: no new apiserver process, no new etcd prefix, no new
 * namespace, the victim tenant's objects intact.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { VirtualCluster } from '../../core/api/virtualcluster.ts';
import { rootNamespace } from '../../core/names/names.ts';
import type { LocalProvisioner } from '../../core/dev/provisioner/provisioner.ts';
import type { TenantPolicy } from '../../core/tenancy/policy.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';
import { startLocalSystem, type LocalSystem } from '../localsystem.ts';
import { Attempts } from './attempts.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const NS = 'default';

const vcObject = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name, namespace: NS },
  spec: { provisioner: { type: 'local' }, ...spec },
});

const policyObject = (name: string, spec: TenantPolicy['spec']): TenantPolicy => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata: { name },
  // granted to the attacker's namespace: what is refused is what the policy says, not who may name it
  spec: { grants: { subjects: [{ kind: 'Namespace', name: NS }] }, ...spec },
});

/** apiservers lists `pid prefix` of every kube-apiserver process on this machine that uses the test's etcd. */
function apiservers(etcd: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!args[0]?.endsWith('kube-apiserver') || !args.includes(`--etcd-servers=${etcd}`)) continue;
    out.push(`${pid} ${args.find((a) => a.startsWith('--etcd-prefix='))}`);
  }
  return out.sort();
}

/** etcdPrefixes lists the top-level key prefixes of the test's etcd (the super's, then one per tenant). */
async function etcdPrefixes(etcd: string): Promise<string[]> {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const res = await fetch(`${etcd}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: b64('/'), range_end: b64('0'), keys_only: true }),
  });
  const body = (await res.json()) as { kvs?: Array<{ key: string }> };
  return [...new Set((body.kvs ?? []).map((kv) => Buffer.from(kv.key, 'base64').toString().split('/')[1]!))].sort();
}

describe('hostile VirtualCluster authors against the TenantPolicy, on the real local system', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let dir: string;
  let local: LocalProvisioner;
  let sys: LocalSystem;
  const handed = new Map<string, Tenant>();
  let victimClient: KubeClient;

  const getVC = (name: string) => t.client.get<VirtualCluster>(R.virtualclusters, NS, name);
  const running = (name: string) => sys.running(NS, name);

  /** world is what no refused attempt may change: processes, etcd prefixes, super namespaces, the victim's data. */
  const world = async () => ({
    apiservers: apiservers(t.sc.etcd.endpoint),
    etcdPrefixes: await etcdPrefixes(t.sc.etcd.endpoint),
    superNamespaces: (await t.client.list(R.namespaces)).items.map((n) => n.metadata!.name!).sort(),
    victim: await victimClient
      .get<KubeObject & { data?: Record<string, string> }>(R.configmaps, 'vault', 'crown-jewels')
      .then((c) => ({ rv: c.metadata?.resourceVersion, data: c.data })),
    victimTenant: handed.get('victim'),
  });

  const warningEvent = (name: string, reason = 'PolicyViolation') =>
    eventually(async () => {
      const events = await t.client.list<KubeObject & { type?: string; reason?: string; message?: string }>(R.events, {
        namespace: NS,
        fieldSelector: `involvedObject.name=${name}`,
      });
      const e = events.items.find((x) => x.type === 'Warning' && x.reason === reason);
      expect(e, `a ${reason} event on ${name}`).toBeDefined();
      return e!.message!;
    });

  /**
   * refused creates a VirtualCluster as V and checks that the controller refuses it: an Error phase, Ready False with
   * reason PolicyViolation, a message naming object and field, a Warning event, no control plane and nothing else
   * changed. The VirtualCluster is deleted afterwards; the refusal message is returned.
   */
  const refused = async (
    name: string,
    spec: Record<string, unknown>,
    field: string,
    reason: RegExp,
    // a policy that does not exist yet is waited for (Pending), not refused
    as: { phase: string; reason: string } = { phase: 'Error', reason: 'PolicyViolation' },
  ): Promise<string> => {
    const before = await world();
    await t.client.create(R.virtualclusters, vcObject(name, spec));
    const vc = await eventually(async () => {
      const v = await getVC(name);
      expect(v.status?.phase).toBe(as.phase);
      return v;
    });
    const message = vc.status!.message!;
    expect(vc.status!.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: as.reason,
    });
    expect(message).toContain(`VirtualCluster ${NS}/${name}: ${field}: `);
    expect(message).toMatch(reason);
    expect(await warningEvent(name, as.reason)).toContain(field);
    expect(local.controlPlane(rootNamespace(NS, name, vc.metadata!.uid!))).toBeUndefined();
    expect(await world()).toEqual(before);
    await t.client.delete(R.virtualclusters, NS, name);
    await eventually(async () => expect(await t.client.getOrNull(R.virtualclusters, NS, name)).toBeNull());
    return message;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    const tenants = new MutableTenantRegistry();
    tenants.subscribe((e) => {
      if (e.type === 'upsert') handed.set(e.tenant.vcName, e.tenant);
    });
    sys = await startLocalSystem(t, {
      name: 'security-policy',
      tenants,
      defaultPluginConfig: { vnAgent: { port: 10550 } },
    });
    ({ dir, local } = sys);
    await eventually(() => t.client.list(R.tenantpolicies));
    // The victim: another tenant, with data the attacker must not reach.
    await t.client.create(R.virtualclusters, vcObject('victim'));
    const victim = await running('victim');
    const s = await t.client.get<{ data: { kubeconfig: string } }>(R.secrets, NS, victim.status!.kubeconfigSecretName!);
    victimClient = await KubeClient.fromString(Buffer.from(s.data.kubeconfig, 'base64').toString());
    await victimClient.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'vault' } });
    await victimClient.create(R.configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'crown-jewels', namespace: 'vault' },
      data: { secret: 'gold' },
    });
  });

  afterAll(async () => {
    console.log(attempts.summary());
    victimClient?.close();
    await sys?.stop();
    await t?.stop();
  });

  it.each([
    [
      'etcd-prefix /super: the confirmed attack, a tenant apiserver serving the super cluster',
      { 'etcd-prefix': '/super' },
      'etcd-prefix',
      /\(etcd\)/,
    ],
    ['etcd-servers pointing elsewhere', { 'etcd-servers': 'http://127.0.0.1:1' }, 'etcd-servers', /\(etcd\)/],
    [
      'a static token file from the manager host',
      { 'token-auth-file': '/etc/passwd' },
      'token-auth-file',
      /\(authentication\)/,
    ],
    ['authorization AlwaysAllow', { 'authorization-mode': 'AlwaysAllow' }, 'authorization-mode', /\(authorization\)/],
    ['admission plug-ins', { 'enable-admission-plugins': 'AlwaysAdmit' }, 'enable-admission-plugins', /\(admission\)/],
    [
      'another service-account issuer',
      { 'service-account-issuer': 'https://kubernetes.default.svc.super' },
      'service-account-issuer',
      /\(service-account issuer\)/,
    ],
  ])('refuses the apiserver flag: %s', async (what, extraArgs, flag, category) => {
    await attempts.attempt(`apiserver flag: ${what}`, () =>
      refused(`flag-${flag}`, { apiServer: { extraArgs } }, `spec.apiServer.extraArgs.${flag}`, category),
    );
  });

  it('refuses the controller list on the controller-manager', async () => {
    await attempts.attempt('controller-manager flag: controllers', () =>
      refused(
        'flag-controllers',
        { controllerManager: { extraArgs: { controllers: '*' } } },
        'spec.controllerManager.extraArgs.controllers',
        /\(controllers\)/,
      ),
    );
  });

  it('refuses privileged Pods, disabling an enforced plugin, a weight above the ceiling', async () => {
    await attempts.attempt('podSecurityLevel privileged', () =>
      refused('privileged', { podSecurityLevel: 'privileged' }, 'spec.podSecurityLevel', /podSecurity\.allowedLevels/),
    );
    await attempts.attempt('disabling the pods plugin', () =>
      refused('no-pods-plugin', { plugins: { disable: ['pods'] } }, 'spec.plugins.disable', /"pods" is enforced/),
    );
    await attempts.attempt('weight above the ceiling', () =>
      refused('heavy', { weight: 1000 }, 'spec.weight', /above the ceiling 10/),
    );
  });

  it("refuses the import provisioner, even pointed at the victim's own admin kubeconfig", async () => {
    const secret = (await getVC('victim')).status!.kubeconfigSecretName!;
    await attempts.attempt('import provisioner', () =>
      refused(
        'importer',
        { provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: secret } } } },
        'spec.provisioner.type',
        /"import" is not allowed/,
      ),
    );
    expect(handed.has('importer')).toBe(false);
  });

  it("refuses plugin settings that override the manager's defaults", async () => {
    await attempts.attempt('pluginConfig overriding a manager default', () =>
      refused(
        'vnagent-port',
        { pluginConfig: { vnAgent: { port: 1 } } },
        'spec.pluginConfig.vnAgent',
        /set by the platform only/,
      ),
    );
  });

  it('refuses plugin settings only the platform writes, where the platform set nothing', async () => {
    await attempts.attempt('pluginConfig.nodes.extraLabels showing more super node labels on vNodes', () =>
      refused(
        'node-labels',
        { pluginConfig: { nodes: { extraLabels: ['node-role.kubernetes.io/', 'kubernetes.io/'] } } },
        'spec.pluginConfig.nodes.extraLabels',
        /set by the platform only/,
      ),
    );
    await attempts.attempt('pluginConfig.nodes.vnAgent pointing its vNodes elsewhere', () =>
      refused(
        'vnagent-host',
        { pluginConfig: { nodes: { vnAgent: { host: '169.254.169.254', port: 80 } } } },
        'spec.pluginConfig.nodes.vnAgent',
        /set by the platform only/,
      ),
    );
  });

  it('refuses a flag on the allow-list deny side even where a policy lists it as tenant-settable, and from the policy itself', async () => {
    await t.client.apply(
      R.tenantpolicies,
      policyObject('loose', { controlPlane: { tenantSettableArgs: { apiServer: ['etcd-prefix', 'v'] } } }),
      'platform',
    );
    await t.client.apply(
      R.tenantpolicies,
      policyObject('careless', { controlPlane: { apiServer: { extraArgs: { 'etcd-prefix': '/super' } } } }),
      'platform',
    );
    await eventually(async () =>
      expect(await t.client.getOrNull(R.tenantpolicies, undefined, 'careless')).not.toBeNull(),
    );
    await attempts.attempt('etcd-prefix under a policy that lists it as settable', () =>
      refused(
        'loose-prefix',
        { policyName: 'loose', apiServer: { extraArgs: { 'etcd-prefix': '/super' } } },
        'spec.apiServer.extraArgs.etcd-prefix',
        /\(etcd\)/,
      ),
    );
    await attempts.attempt('etcd-prefix from the policy itself', () =>
      refused(
        'careless-tenant',
        { policyName: 'careless' },
        'spec.policyName',
        /TenantPolicy "careless" spec\.controlPlane\.apiServer\.extraArgs\.etcd-prefix: .*\(etcd\)/,
      ),
    );
    await attempts.attempt('a policy name that does not exist', () =>
      refused('ghost-policy', { policyName: 'ghost' }, 'spec.policyName', /TenantPolicy "ghost" does not exist/, {
        phase: 'Pending',
        reason: 'PolicyNotFound',
      }),
    );
  });

  it('shows the author file, object and field at `vc create -f`, creating nothing', async () => {
    await attempts.attempt('vc create -f with etcd-prefix', async () => {
      const before = await world();
      const file = join(dir, 'evil.yaml');
      writeFileSync(file, stringify(vcObject('evil', { apiServer: { extraArgs: { 'etcd-prefix': '/super' } } })));
      const r = await execP(process.execPath, [vcBin, 'create', '-f', file, '--kubeconfig', t.sc.kubeconfigPath], {
        timeout: 120_000,
      }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code?: number; stderr?: string }) => ({ code: e.code ?? 1, stderr: e.stderr ?? '' }),
      );
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        `${file}: VirtualCluster ${NS}/evil: spec.apiServer.extraArgs.etcd-prefix: --etcd-prefix is refused by the flag allow-list (etcd)`,
      );
      expect(await t.client.getOrNull(R.virtualclusters, NS, 'evil')).toBeNull();
      expect(await world()).toEqual(before);
      return r.stderr.trim();
    });
  });

  it('keeps a Running tenant edited into a violation on its last accepted control plane, and records the refusal', async () => {
    await t.client.create(R.virtualclusters, vcObject('attacker', { weight: 2 }));
    const vc = await running('attacker');
    const root = vc.status!.clusterNamespace!;
    const pid = local.controlPlane(root)!.apiserver.pid;
    const tenantBefore = handed.get('attacker');
    expect(tenantBefore?.weight).toBe(2);
    await attempts.attempt('a Running tenant edited to serve the super etcd prefix', async () => {
      const before = await world();
      await t.client.patch(
        R.virtualclusters,
        NS,
        'attacker',
        { spec: { weight: 500, apiServer: { extraArgs: { 'etcd-prefix': '/super' } } } },
        'merge',
      );
      const now = await eventually(async () => {
        const v = await getVC('attacker');
        expect(v.status?.conditions?.find((c) => c.type === 'PolicyAccepted')).toMatchObject({
          status: 'False',
          reason: 'PolicyViolation',
        });
        return v;
      });
      expect(now.status!.phase).toBe('Running');
      expect(now.status!.message).toMatch(/keeps running on its last accepted settings/);
      expect(now.status!.message).toContain(
        `VirtualCluster ${NS}/attacker: spec.apiServer.extraArgs.etcd-prefix: --etcd-prefix is refused by the flag allow-list (etcd)`,
      );
      expect(now.status!.message).toContain(
        `VirtualCluster ${NS}/attacker: spec.weight: weight 500 is above the ceiling 10`,
      );
      expect(await warningEvent('attacker')).toContain('etcd-prefix');
      const cp = local.controlPlane(root)!;
      expect(cp.apiserver.pid).toBe(pid);
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain(`--etcd-prefix=/${root}`);
      expect(handed.get('attacker')).toEqual(tenantBefore);
      expect(await world()).toEqual(before);
      return now.status!.message!;
    });
  });

  it('removes the control plane of a tenant that names another provisioner before its deletion', async () => {
    const vc = await getVC('attacker');
    const root = vc.status!.clusterNamespace!;
    const pid = local.controlPlane(root)!.apiserver.pid;
    await attempts.attempt('escaping clean-up by switching to the import provisioner before deleting', async () => {
      const secret = (await getVC('victim')).status!.kubeconfigSecretName!;
      await t.client.patch(
        R.virtualclusters,
        NS,
        'attacker',
        { spec: { provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: secret } } } } },
        'merge',
      );
      const refusedEdit = await eventually(async () => {
        const v = await getVC('attacker');
        expect(v.status?.message).toContain('spec.provisioner.type: provisioner "import" is not allowed');
        return v.status!.message!;
      });
      await t.client.delete(R.virtualclusters, NS, 'attacker');
      await eventually(
        async () => expect(await t.client.getOrNull(R.virtualclusters, NS, 'attacker')).toBeNull(),
        90_000,
      );
      expect(local.controlPlane(root)).toBeUndefined();
      expect(apiservers(t.sc.etcd.endpoint).some((x) => x.startsWith(`${pid} `))).toBe(false);
      expect(await etcdPrefixes(t.sc.etcd.endpoint)).not.toContain(root);
      expect(await victimClient.get(R.configmaps, 'vault', 'crown-jewels')).toBeDefined();
      return refusedEdit;
    });
  });

  it('leaves no attempt succeeded', () => {
    expect(attempts.records.length).toBe(20);
    expect(attempts.summary()).toBe('attempts 20, refused 20, succeeded 0');
  });
});
