/**
 * APPLIED_TTL_MS is how long an object the syncer applied stands in for a super cache that does not show it yet. The
 * watch event of a create usually comes within a second; past that, the object is applied again (someone may have
 * deleted it).
 */
export const APPLIED_TTL_MS = 2000;

/**
 * RecentApplies runs one apply per id at a time and takes an apply that succeeded within the TTL as done: the
 * effects that ask for an object until the cache shows it (the super ServiceAccount every Pod of a new namespace
 * waits for) would otherwise send the same apply once per waiting Pod and retry, each a write that changes nothing.
 * A caller that arrives while the apply runs waits for it and shares its outcome; a failed apply is forgotten, so the
 * next caller sends it again.
 */
export class RecentApplies {
  private readonly entries = new Map<string, { done: Promise<void>; at?: number }>();

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly ttlMs = APPLIED_TTL_MS,
  ) {}

  /** size is how many ids are being applied or were applied within the TTL (for tests). */
  get size(): number {
    return this.entries.size;
  }

  /** run sends `apply` for `id` unless one is running or succeeded within the TTL; true when this call sent it. */
  async run(id: string, apply: () => Promise<void>): Promise<boolean> {
    const t = this.now();
    for (const [k, e] of this.entries) if (e.at !== undefined && t - e.at >= this.ttlMs) this.entries.delete(k);
    const last = this.entries.get(id);
    if (last) {
      await last.done;
      return false;
    }
    const entry: { done: Promise<void>; at?: number } = { done: apply() };
    this.entries.set(id, entry);
    try {
      await entry.done;
      entry.at = this.now();
      return true;
    } catch (e) {
      if (this.entries.get(id) === entry) this.entries.delete(id);
      throw e;
    }
  }
}
