/**
 * The local provisioner's front doors: one TLS-passthrough relay per tenant with spec.sleep (local/frontdoor.ts), on
 * 127.0.0.1 at a port kept in the tenant's state directory, which relays to wherever `upstream` says (waking the
 * tenant first when it sleeps).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withServer } from '../../pki/kubeconfig.ts';
import type { FrontDoorActivity } from '../../provisioners/provisioner.ts';
import { ConnectionCap, FRONT_DOORS_CONNECTIONS, FrontDoor } from '../local/frontdoor.ts';

/** FRONT_PORT_FILE keeps a tenant's front door port: its kubeconfig Secret names it. */
const FRONT_PORT_FILE = 'front-port';

/** FrontDoors keeps the front doors of a provisioner's tenants, by root. */
export class FrontDoors {
  private readonly doors = new Map<string, FrontDoor>();
  private readonly opening = new Map<string, Promise<FrontDoor>>();
  /** the connections all the doors hold together: one tenant's door cannot take the manager's file descriptors */
  private readonly shared: ConnectionCap;

  constructor(
    /** the state directory of a tenant */
    private readonly dir: (root: string) => string,
    /** where a tenant's front door relays to: its running apiserver, woken first when it sleeps */
    private readonly upstream: (root: string) => Promise<{ host: string; port: number }>,
    /** the most connections one door, and all doors together, hold at once (FrontDoor's defaults) */
    private readonly limits: { perDoor?: number; all?: number } = {},
  ) {
    this.shared = new ConnectionCap(limits.all ?? FRONT_DOORS_CONNECTIONS);
  }

  /** activity is what the tenant's front door saw; undefined without one. */
  activity(root: string): FrontDoorActivity | undefined {
    return this.doors.get(root)?.activity();
  }

  /**
   * open starts the tenant's front door on 127.0.0.1 (the apiserver certificate names it) at its kept port, or a free
   * one when that is taken; its idle time counts from activeSinceMs.
   */
  open(root: string, activeSinceMs: number): Promise<FrontDoor> {
    const have = this.doors.get(root);
    if (have) return Promise.resolve(have);
    let p = this.opening.get(root);
    if (!p) {
      const file = join(this.dir(root), FRONT_PORT_FILE);
      const kept = existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
      const start = (port: number) =>
        FrontDoor.start({
          host: '127.0.0.1',
          port,
          activeSinceMs,
          upstream: () => this.upstream(root),
          shared: this.shared,
          ...(this.limits.perDoor !== undefined && { maxConnections: this.limits.perDoor }),
        });
      p = start(kept)
        .catch((e: unknown) => {
          if (!kept) throw e;
          return start(0);
        })
        .then((door) => {
          writeFileSync(file, `${door.port}\n`);
          this.doors.set(root, door);
          return door;
        })
        .finally(() => this.opening.delete(root));
      this.opening.set(root, p);
    }
    return p;
  }

  /** close stops the tenant's front door, if it has one (spec.sleep was removed); it answers undefined. */
  async close(root: string): Promise<undefined> {
    const door = this.doors.get(root);
    this.doors.delete(root);
    await door?.stop();
    return undefined;
  }

  /** closeAll stops every front door. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.doors.keys()].map((root) => this.close(root)));
  }
}

/**
 * frontDoorAccess is how the tenant's users reach it through its front door: the admin kubeconfig naming the front
 * door (the kubeconfig Secret's `kubeconfig`; the manager keeps the direct one, so its own requests never count as use).
 */
export function frontDoorAccess(
  door: FrontDoor,
  kubeconfig: string,
): { type: string; server: string; kubeconfig: string } {
  const server = `https://127.0.0.1:${door.port}`;
  return { type: 'FrontDoor', server, kubeconfig: withServer(kubeconfig, server) };
}
