import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deleteEtcdPrefix, type EtcdEndpoint } from '../../local/etcd.ts';
import { LocalControlPlane } from '../../local/controlplane.ts';
import { assertFlagsAllowed } from '../native/allowlist.ts';
import { TENANT_CONTROLLERS } from '../native/flags.ts';
import { childLogger } from '../../log.ts';
import { fingerprintSha256 } from '../../pki/pki.ts';
import type { Provisioner, ProvisionState } from '../provisioner.ts';
import type { VirtualCluster } from '../../lifecycle/types.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';

const log = childLogger({ controller: 'provisioner-local' });

/**
 * LocalProvisioner runs each tenant's kube-apiserver and kube-controller-manager as processes on this machine,
 * sharing one etcd under the prefix `/<root namespace>`. State (PKI, kubeconfigs, ports) lives in
 * `<stateDir>/<root namespace>/`, so after a manager restart the same control plane comes back with its data;
 * crashed components are restarted. A change of the service CIDR or of the apiserver or controller-manager flags
 * restarts the components with the new values. The PKI is made once, when the control plane is first created, so
 * the certificate lifetime (and the service IP in the apiserver certificate) keep their first values.
 */
export class LocalProvisioner implements Provisioner {
  readonly type = 'local';
  private readonly running = new Map<string, { cp: LocalControlPlane; hash: string }>();
  private readonly starting = new Map<string, Promise<LocalControlPlane>>();

  constructor(
    private readonly stateDir: string,
    private readonly etcd: EtcdEndpoint,
  ) {}

  private dir(root: string): string {
    return join(this.stateDir, root);
  }

  async ensure(vc: VirtualCluster, root: string): Promise<ProvisionState> {
    // The controller hands over only what the TenantPolicy grants; this is the second line, before any process runs.
    assertFlagsAllowed({
      apiServer: vc.spec.apiServer?.extraArgs,
      controllerManager: vc.spec.controllerManager?.extraArgs,
    });
    const hash = specHash(vc);
    let entry = this.running.get(root);
    let rolled = false;
    if (entry && entry.hash !== hash) {
      log.info({ tenant: root }, 'spec changed; restarting the control plane');
      await entry.cp.stop();
      this.running.delete(root);
      entry = undefined;
      rolled = true;
    }
    if (!entry) {
      const cp = await this.start(vc, root);
      entry = { cp, hash };
      this.running.set(root, entry);
      writeFileSync(join(this.dir(root), 'spec-hash'), hash + '\n');
    }
    const cp = entry.cp;
    return {
      ready: true,
      rolled,
      result: {
        kubeconfig: readFileSync(cp.kubeconfigPath, 'utf8'),
        kubeletClientCertFingerprint: fingerprintSha256(readFileSync(join(cp.dir, 'pki/kubelet-client.crt'), 'utf8')),
        apiserverEndpoint: { host: '127.0.0.1', port: cp.ports.apiserver },
      },
    };
  }

  private start(vc: VirtualCluster, root: string): Promise<LocalControlPlane> {
    let p = this.starting.get(root);
    if (!p) {
      p = LocalControlPlane.start({
        name: root,
        dir: this.dir(root),
        etcd: this.etcd,
        serviceCidr: vc.spec.serviceCidr ?? TENANT_DEFAULTS.serviceCidr,
        controllers: TENANT_CONTROLLERS,
        restart: true,
        pkiValidityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
        apiserverExtraArgs: vc.spec.apiServer?.extraArgs,
        controllerManagerExtraArgs: vc.spec.controllerManager?.extraArgs,
      }).finally(() => this.starting.delete(root));
      this.starting.set(root, p);
    }
    return p;
  }

  /** controlPlane returns the running control plane of a tenant (tests use it to crash components). */
  controlPlane(root: string): LocalControlPlane | undefined {
    return this.running.get(root)?.cp;
  }

  async remove(_vc: VirtualCluster, root: string): Promise<void> {
    const entry = this.running.get(root);
    this.running.delete(root);
    await entry?.cp.stop();
    const deleted = await deleteEtcdPrefix(this.etcd.endpoint, `/${root}`);
    if (existsSync(this.dir(root))) rmSync(this.dir(root), { recursive: true, force: true });
    log.info({ tenant: root, etcdKeys: deleted }, 'tenant control plane removed');
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.values()].map((e) => e.cp.stop()));
    this.running.clear();
  }
}

/**
 * specHash covers every spec field start passes to a running control plane; pkiExpireDays is left out because a
 * restart keeps the certificates it was first made with.
 */
function specHash(vc: VirtualCluster): string {
  const s = vc.spec;
  const relevant = {
    cidr: s.serviceCidr,
    api: s.apiServer?.extraArgs ?? {},
    kcm: s.controllerManager?.extraArgs ?? {},
    version: s.clusterVersionName,
  };
  return createHash('sha256').update(JSON.stringify(relevant)).digest('hex').slice(0, 16);
}
