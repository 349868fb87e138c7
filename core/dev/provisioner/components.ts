import type { LocalControlPlane } from '../local/controlplane.ts';
import type { LocalEtcd } from '../local/etcd.ts';
import type { ManagedProcess } from '../local/process.ts';
import type { ComponentReport } from '../../provisioners/provisioner.ts';

/** LocalParts are the processes of one local tenant: its control plane and, unless it is on the shared etcd, its etcd. */
export interface LocalParts {
  cp: LocalControlPlane;
  etcd?: LocalEtcd;
}

/** processesOf names each process of a local tenant by its component. */
function processesOf(r: LocalParts): Array<[string, ManagedProcess]> {
  const out: Array<[string, ManagedProcess]> = [];
  if (r.etcd) out.push(['etcd', r.etcd.process]);
  out.push(['kube-apiserver', r.cp.apiserver]);
  if (r.cp.controllerManager) out.push(['kube-controller-manager', r.cp.controllerManager]);
  return out;
}

/**
 * localComponents reports a local tenant's processes: whether each is alive, how often it was restarted after dying
 * (ManagedProcess restarts it with exponential back-off, 0.5 s doubling to 30 s), and for its own etcd the answer of
 * etcd's /health. A tenant on the shared etcd reports no etcd: the manager's own etcd is not the tenant's to judge.
 */
export async function localComponents(r: LocalParts): Promise<ComponentReport[]> {
  const out: ComponentReport[] = [];
  for (const [name, p] of processesOf(r)) {
    const down = p.lastExit !== undefined ? `${name} exited (${p.lastExit}); restarting with back-off` : undefined;
    const report: ComponentReport = { name, running: p.running, restarts: p.restartCount };
    if (!p.running) report.message = down ?? `${name} is not running`;
    else if (name === 'etcd' && r.etcd) {
      const ok = await r.etcd.healthy().catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
      if (ok !== true) {
        report.healthy = false;
        report.message = `etcd /health: ${ok === false ? 'not healthy' : ok}`;
      }
    }
    out.push(report);
  }
  return out;
}

/** watchCrashes calls emit with the component's name each time a process of the tenant dies. */
export function watchCrashes(r: LocalParts, emit: (component: string) => void): () => void {
  const offs = processesOf(r).map(([name, p]) => p.onCrash(() => emit(name)));
  return () => offs.forEach((off) => off());
}
