import { join } from 'node:path';
import { expect } from 'vitest';
import { R } from '../core/kube/resources.ts';
import { VirtualClusterController } from '../core/lifecycle/controller.ts';
import type { VirtualCluster } from '../core/api/virtualcluster.ts';
import { applyCRDs } from '../core/dev/embedded/embedded.ts';
import { ImportProvisioner } from '../core/provisioners/import/provisioner.ts';
import { LocalProvisioner } from '../core/dev/provisioner/provisioner.ts';
import { MutableTenantRegistry } from '../core/tenancy/tenant.ts';
import { eventually, TENANT_START_MS, type TestSuper } from './harness.ts';
import { removeStateDir, stateDir } from './statedirs.ts';

/** LocalSystemOptions tune startLocalSystem. */
export interface LocalSystemOptions {
  /** names the temporary directory (vc-<name>-XXXXXX) */
  name: string;
  /** the registry the controller hands tenants to; a new one by default */
  tenants?: MutableTenantRegistry;
  /** the controller's defaultPluginConfig */
  defaultPluginConfig?: Record<string, unknown>;
}

/**
 * LocalSystem is the lifecycle half of the local system on a test super cluster: the CRDs, a local provisioner
 * sharing the super's etcd, and a VirtualClusterController with the local and import provisioners.
 */
export interface LocalSystem {
  /** dir is a temporary directory of the test (the local provisioner's state is in dir/tenants) */
  dir: string;
  local: LocalProvisioner;
  tenants: MutableTenantRegistry;
  /** controller is the running controller, undefined while stopped */
  readonly controller: VirtualClusterController | undefined;
  /** startController starts a new controller (after stopController) */
  startController(): Promise<void>;
  stopController(): Promise<void>;
  /** running waits until the VirtualCluster ns/name is Running and returns it */
  running(ns: string, name: string): Promise<VirtualCluster>;
  /** stop stops the controller and every tenant control plane and removes dir; the super cluster is the caller's */
  stop(): Promise<void>;
}

/** startLocalSystem applies the CRDs to t and starts the local provisioner and the VirtualCluster controller. */
export async function startLocalSystem(t: TestSuper, o: LocalSystemOptions): Promise<LocalSystem> {
  await applyCRDs(t.sc);
  const dir = stateDir(`vc-${o.name}-`);
  const tenants = o.tenants ?? new MutableTenantRegistry();
  const local = new LocalProvisioner(join(dir, 'tenants'), t.sc.etcd);
  let controller: VirtualClusterController | undefined;
  const sys: LocalSystem = {
    dir,
    local,
    tenants,
    get controller() {
      return controller;
    },
    async startController() {
      controller = new VirtualClusterController({
        meta: t.client,
        superClient: t.client,
        provisioners: { local, import: new ImportProvisioner(t.client) },
        tenants,
        ...(o.defaultPluginConfig && { defaultPluginConfig: o.defaultPluginConfig }),
      });
      await controller.start();
    },
    async stopController() {
      await controller?.stop();
      controller = undefined;
    },
    running: (ns, name) =>
      eventually(async () => {
        const v = await t.client.get<VirtualCluster>(R.virtualclusters, ns, name);
        expect(v.status?.phase, v.status?.message).toBe('Running');
        return v;
      }, TENANT_START_MS),
    async stop() {
      await sys.stopController();
      await local.stop();
      removeStateDir(dir);
    },
  };
  try {
    await sys.startController();
  } catch (e) {
    await sys.stop();
    throw e;
  }
  return sys;
}
