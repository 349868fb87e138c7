/**
 * Runnable is one thing a manager runs for a while: a controller, a syncer, a registry. start returns once it
 * serves (caches synced, workers started); stop returns once it has let go of everything it started.
 */
export interface Runnable {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * RunGroup starts runnables in the order given and stops them in the reverse order, so that what a later runnable
 * relies on (a cache, a client, the tenant set) outlives it. A start that fails halfway stops what it started, the
 * failing runnable included (it may have opened connections before failing), and a stop stops each runnable once.
 */
export class RunGroup {
  private started: Runnable[] = [];

  /** start starts each runnable in turn; when one fails, those started are stopped and the error is thrown. */
  async start(list: readonly Runnable[]): Promise<void> {
    for (const r of list) {
      this.started.push(r);
      try {
        await r.start();
      } catch (e) {
        await this.stop();
        throw new Error(`starting ${r.name}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
    }
  }

  /** stop stops every started runnable, the last started first; a stop that fails is reported after the others ran. */
  async stop(): Promise<void> {
    const errors: unknown[] = [];
    for (const r of this.started.splice(0).reverse()) await r.stop().catch((e: unknown) => errors.push(e));
    if (errors.length) throw new AggregateError(errors, `stopping: ${errors.map(String).join('; ')}`);
  }

  /** names lists the runnables running now, in start order. */
  names(): string[] {
    return this.started.map((r) => r.name);
  }
}
