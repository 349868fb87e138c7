import type { KubeObject } from './client.ts';

/**
 * Cache budgets: a set of informers (say, every informer of one tenant apiserver) shares one budget of cached objects
 * and bytes, so that whoever controls what the informers list cannot make the process hold more than the budget.
 * Bytes are those of an object's JSON as cached (after compact), a stable stand-in for the heap it takes.
 */

/** CacheLimits are the most objects and bytes a budget allows. */
export interface CacheLimits {
  objects: number;
  bytes: number;
}

/** BudgetExceeded is thrown by an informer's list or watch once its budget is exceeded; the informer then stops. */
export class BudgetExceeded extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** objectBytes is what one cached object counts against a budget. */
export function objectBytes(o: KubeObject): number {
  return Buffer.byteLength(JSON.stringify(o));
}

/** Usage is what one informer holds: objects and bytes. */
export interface Usage {
  objects: number;
  bytes: number;
}

/**
 * CacheBudget is shared by the informers of one source. Each informer reports what it holds (set); once the sum is
 * over a limit the budget is exceeded for good: onExceeded is called once with the reason, and every later set throws
 * BudgetExceeded, so no informer of the source grows any further.
 */
export class CacheBudget {
  private readonly held = new Map<string, Usage>();
  private reason?: string;

  constructor(
    readonly limits: CacheLimits,
    /** what is cached, for the reason: e.g. `the caches of tenant team-a-1f2e3d-dev` */
    private readonly what: string,
    private readonly onExceeded: (reason: string) => void = () => {},
  ) {}

  /** exceeded is the reason the budget was exceeded, or undefined. */
  get exceeded(): string | undefined {
    return this.reason;
  }

  /** total is what every informer of the budget holds now. */
  total(): Usage {
    let objects = 0;
    let bytes = 0;
    for (const u of this.held.values()) {
      objects += u.objects;
      bytes += u.bytes;
    }
    return { objects, bytes };
  }

  /**
   * set records what informer `id` would hold, and throws BudgetExceeded when that takes the sum over a limit (what
   * was recorded before for the informer stays). An informer calls it before it keeps what it listed or watched.
   */
  set(id: string, u: Usage): void {
    if (this.reason) throw new BudgetExceeded(this.reason);
    const before = this.held.get(id) ?? { objects: 0, bytes: 0 };
    const t = this.total();
    const objects = t.objects - before.objects + u.objects;
    const bytes = t.bytes - before.bytes + u.bytes;
    const over =
      objects > this.limits.objects
        ? `${objects} objects, over the limit of ${this.limits.objects}`
        : bytes > this.limits.bytes
          ? `${bytes} bytes, over the limit of ${this.limits.bytes}`
          : undefined;
    if (over) {
      this.reason = `${this.what} would hold ${over}; they are stopped`;
      this.onExceeded(this.reason);
      throw new BudgetExceeded(this.reason);
    }
    this.held.set(id, u);
  }

  /** release forgets what informer `id` holds (it stopped). */
  release(id: string): void {
    this.held.delete(id);
  }
}
