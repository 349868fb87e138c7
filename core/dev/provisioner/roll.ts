import type { ExtraArgs } from '../../api/controlplane.ts';
import { LocalControlPlane, type ControlPlaneOptions } from '../local/controlplane.ts';
import { LocalEtcd } from '../local/etcd.ts';
import type { ManagedProcess } from '../local/process.ts';
import type { RollComponent, RollFailure } from '../../provisioners/roll.ts';
import type { LocalParts } from './components.ts';

/** ROLL_STEP_TIMEOUT_MS is how long a restarted component may take to pass its health check before the step fails. */
export const ROLL_STEP_TIMEOUT_MS = 60_000;

/** RollTo is what the local tenant rolls to: its etcd's settings and its control plane's options. */
export interface RollTo {
  etcd: { quotaBackendBytes: number; name: string; extraArgs?: ExtraArgs; env?: Record<string, string> };
  cp: ControlPlaneOptions;
}

/** RollOutcome is the tenant's processes after a roll and, where a step failed, which and why. */
export interface RollOutcome {
  parts: LocalParts;
  failure?: RollFailure;
}

/**
 * settle waits for a (re)started process's health check and fails at once when the process dies meanwhile (it would
 * otherwise be restarted with back-off until the timeout) or when the timeout passes. On failure the process is
 * stopped, so that the previous one can take its port again.
 */
async function settle(p: ManagedProcess, healthy: Promise<void>, timeoutMs: number): Promise<void> {
  let off: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const died = new Promise<never>((_, reject) => {
    off = p.onCrash(() => reject(new Error(`${p.spec.name} exited (${p.lastExit}): ${p.logTail(5)}`)));
    timer = setTimeout(() => reject(new Error(`not healthy within ${timeoutMs} ms: ${p.logTail(5)}`)), timeoutMs);
  });
  try {
    await Promise.race([healthy, died]);
  } catch (e) {
    await p.stop();
    healthy.catch(() => undefined);
    throw e;
  } finally {
    off?.();
    clearTimeout(timer);
  }
}

/** why is an error's message. */
const why = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * rollLocal restarts the components in `plan` (ROLL_ORDER: etcd, kube-apiserver, kube-controller-manager) one at a
 * time with the settings of `to`, each waiting for its health check (etcd's /health, the apiserver's /readyz, the
 * controller manager's /healthz) before the next. A component that does not come back stops the roll: its previous
 * process is started again with the previous settings (`kept` tells whether that one is healthy), components already
 * rolled stay rolled, and later ones are left as they were. Components not in the plan keep running untouched.
 */
export async function rollLocal(
  cur: LocalParts,
  plan: readonly RollComponent[],
  to: RollTo,
  timeoutMs = ROLL_STEP_TIMEOUT_MS,
): Promise<RollOutcome> {
  let etcd = cur.etcd;
  if (plan.includes('etcd') && etcd) {
    const old = etcd;
    await old.stop();
    const next = await LocalEtcd.prepare({
      dir: old.dir,
      clientPort: old.clientPort,
      peerPort: old.peerPort,
      restart: true,
      ...to.etcd,
    });
    try {
      await settle(next.process, next.resume(), timeoutMs);
      etcd = next;
    } catch (e) {
      const kept = await old.resume().then(
        () => true,
        () => false,
      );
      return { parts: { cp: cur.cp, ...(etcd && { etcd }) }, failure: { component: 'etcd', message: why(e), kept } };
    }
  }
  const rollApi = plan.includes('kube-apiserver');
  const rollCm = plan.includes('kube-controller-manager') && !!cur.cp.controllerManager;
  if (!rollApi && !rollCm) return { parts: { cp: cur.cp, ...(etcd && { etcd }) } };
  const old = cur.cp;
  // The same ports: clients, the forwarder, the DNS view and the confinement know the apiserver's.
  const next = await LocalControlPlane.prepare({
    ...to.cp,
    ports: { ...to.cp.ports, apiserver: old.ports.apiserver, controllerManager: old.ports.controllerManager },
  });
  const parts = (cp: LocalControlPlane): LocalParts => ({ cp, ...(etcd && { etcd }) });
  if (!rollCm) next.adopt('controllerManager', old);
  if (rollApi) {
    await old.apiserver.stop();
    try {
      await settle(next.apiserver, next.startApiserver(), timeoutMs);
    } catch (e) {
      const kept = await old.startApiserver().then(
        () => true,
        () => false,
      );
      return { parts: parts(old), failure: { component: 'kube-apiserver', message: why(e), kept } };
    }
  } else next.adopt('apiserver', old);
  if (rollCm) {
    await old.controllerManager!.stop();
    try {
      await settle(next.controllerManager!, next.startControllerManager(), timeoutMs);
    } catch (e) {
      next.adopt('controllerManager', old);
      const kept = await next.startControllerManager().then(
        () => true,
        () => false,
      );
      await old.release();
      return { parts: parts(next), failure: { component: 'kube-controller-manager', message: why(e), kept } };
    }
  }
  await old.release();
  return { parts: parts(next) };
}
