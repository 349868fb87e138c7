import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import { childLogger } from '../log.ts';
import { registry } from '../metrics/registry.ts';
import { BudgetExceeded, objectBytes, type CacheBudget } from './budget.ts';
import { RequestTimeoutError } from './errors.ts';
import {
  isGone,
  type KubeClient,
  type KubeObject,
  type ListOptions,
  type Resource,
  type WatchEvent,
} from './client.ts';

/** EventHandler maps informer events to work; it must only enqueue keys: no I/O and no mutation of the objects. */
export interface EventHandler<T extends KubeObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

/** InformerOptions configure one informer. */
export interface InformerOptions {
  client: KubeClient;
  resource: Resource;
  /** restrict to one namespace */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** a name for logs and metrics */
  name?: string;
  /** initial and maximum backoff between failed list/watch attempts */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /**
   * a budget of objects and bytes shared with other informers: a list or an event that would take them over it is
   * not kept, and the informer stops (its cache stays as it was; exceeded names the reason)
   */
  budget?: CacheBudget;
  /** how long a watch may stay silent (no event, no bookmark) before it is reopened; default WATCH_IDLE_MS */
  watchIdleMs?: number;
}

/** InformerStats counts what an informer went through, for tests and metrics. */
export interface InformerStats {
  lists: number;
  relistsAfterGone: number;
  watchRestarts: number;
  watchErrors: number;
  /** watchStalls counts watches closed for silence (see WATCH_IDLE_MS) and reopened */
  watchStalls: number;
  events: number;
  /** handlerErrors counts events a handler threw on (logged and skipped) */
  handlerErrors: number;
}

const handlerErrors = new Counter({
  name: 'vc_informer_handler_errors_total',
  help: 'Informer events an event handler threw on (logged and skipped), per informer.',
  labelNames: ['informer'],
  registers: [registry],
});

/** objectKey is the cache key of an object: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(o: KubeObject): string {
  const m = o.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name}` : String(m.name);
}

/**
 * Informer keeps a local cache of one resource in step with the apiserver, the way client-go's reflector does:
 * list, then watch from the list's resourceVersion with bookmarks; a watch that ends is reopened from the last seen
 * resourceVersion; an error backs off exponentially and retries; a 410 Gone (history compacted) relists and
 * delivers the difference as add/update/delete events, so no change is ever lost.
 */
export class Informer<T extends KubeObject = KubeObject> {
  private readonly store = new Map<string, T>();
  private readonly handlers: Array<EventHandler<T>> = [];
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private abort?: AbortController;
  private loop?: Promise<void>;
  private rv = '';
  private readonly log: Logger;
  /** the bytes of each cached object and their sum, kept only with a budget */
  private sizes = new Map<string, number>();
  private bytes = 0;
  private readonly budgetId = `${Math.random()}`;
  /** stats counts lists, relists, watch restarts and events. */
  readonly stats: InformerStats = {
    lists: 0,
    relistsAfterGone: 0,
    watchRestarts: 0,
    watchErrors: 0,
    watchStalls: 0,
    events: 0,
    handlerErrors: 0,
  };

  constructor(private readonly o: InformerOptions) {
    this.log = childLogger({ controller: 'informer', informer: o.name ?? o.resource.resource });
  }

  /** addHandler registers a handler; objects already cached are replayed to it as adds. */
  addHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
    if (this.synced) for (const obj of this.store.values()) this.deliver(h, 'add', obj);
  }

  /** removeHandler stops delivering events to a handler added before (a shared informer's user that leaves). */
  removeHandler(h: EventHandler<T>): void {
    const i = this.handlers.indexOf(h);
    if (i >= 0) this.handlers.splice(i, 1);
  }

  /** hasSynced reports whether the first list has been delivered. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** waitForSync resolves once the first list has been delivered, or when the informer is stopped. */
  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((res) => this.syncWaiters.push(res));
  }

  /** get returns the cached object with this key. Callers must not mutate it. */
  get(key: string): T | undefined {
    return this.store.get(key);
  }

  /** list returns every cached object. Callers must not mutate them. */
  list(): T[] {
    return [...this.store.values()];
  }

  /** size is the number of cached objects. */
  get size(): number {
    return this.store.size;
  }

  /** lastResourceVersion is the newest resourceVersion seen. */
  get lastResourceVersion(): string {
    return this.rv;
  }

  /** start begins listing and watching in the background. */
  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = this.run(this.abort.signal);
  }

  /** stop ends the watch and waits for the loop to finish; callers still waiting for the first sync are released. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.loop;
    this.loop = undefined;
    const w = this.syncWaiters;
    this.syncWaiters = [];
    w.forEach((f) => f());
  }

  private listOptions(): ListOptions {
    return { namespace: this.o.namespace, labelSelector: this.o.labelSelector, fieldSelector: this.o.fieldSelector };
  }

  /** exceeded is why the informer stopped for its budget, or undefined. */
  get exceeded(): string | undefined {
    return this.o.budget?.exceeded;
  }

  private async run(signal: AbortSignal): Promise<void> {
    try {
      await this.runWatching(signal);
    } finally {
      this.o.budget?.release(this.budgetId);
    }
  }

  private async runWatching(signal: AbortSignal): Promise<void> {
    const min = this.o.backoffMinMs ?? 800;
    const max = this.o.backoffMaxMs ?? 30_000;
    let backoff = min;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
        }
        // Servers close watches after timeoutSeconds; jitter spreads reconnects of many informers.
        const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
        await this.o.client.watch<T>(
          this.o.resource,
          {
            ...this.listOptions(),
            resourceVersion: this.rv,
            allowWatchBookmarks: true,
            timeoutSeconds,
            idleMs: this.o.watchIdleMs,
          },
          (ev) => this.apply(ev),
          signal,
        );
        this.stats.watchRestarts++;
        backoff = min;
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof BudgetExceeded) {
          this.log.warn({ reason: e.reason }, 'cache budget exceeded; informer stopped');
          break;
        }
        if (isGone(e)) {
          this.stats.relistsAfterGone++;
          this.log.info({ rv: this.rv }, 'watch history is gone (410); relisting');
          needList = true;
          continue;
        }
        this.stats.watchErrors++;
        if (e instanceof RequestTimeoutError && e.method === 'WATCH') {
          this.stats.watchStalls++;
          this.log.warn({ rv: this.rv, silentMs: e.timeoutMs }, 'watch stalled (no event or bookmark); reopening it');
        } else this.log.debug({ err: String(e), backoffMs: backoff }, 'list/watch failed; retrying');
        await sleep(backoff * (0.8 + Math.random() * 0.4), signal);
        backoff = Math.min(max, backoff * 2);
      }
    }
  }

  private async relist(): Promise<void> {
    const budget = this.o.budget;
    const sizes = new Map<string, number>();
    let bytes = 0;
    // With a budget every page is counted as it comes, so a list over it is dropped before it is all read.
    const onPage =
      budget &&
      ((items: T[]) => {
        for (const item of items) {
          const key = objectKey(compact(item));
          const b = objectBytes(item);
          bytes += b - (sizes.get(key) ?? 0);
          sizes.set(key, b);
        }
        budget.set(this.budgetId, { objects: sizes.size, bytes });
      });
    const list = await this.o.client.listAll<T>(this.o.resource, this.listOptions(), onPage);
    if (budget) {
      this.sizes = sizes;
      this.bytes = bytes;
    }
    this.stats.lists++;
    const fresh = new Map<string, T>();
    for (const item of list.items) fresh.set(objectKey(item), compact(item));
    const old = new Map(this.store);
    this.store.clear();
    for (const [k, v] of fresh) this.store.set(k, v);
    this.rv = list.metadata.resourceVersion ?? '';
    for (const [k, obj] of fresh) {
      const prev = old.get(k);
      if (!prev) this.emit('add', obj);
      else if (prev.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit('update', obj, prev);
    }
    for (const [k, prev] of old) if (!fresh.has(k)) this.emit('delete', prev);
    if (!this.synced) {
      this.synced = true;
      const w = this.syncWaiters;
      this.syncWaiters = [];
      w.forEach((f) => f());
    }
  }

  private apply(ev: WatchEvent<T>): void {
    this.stats.events++;
    const rv = ev.object.metadata?.resourceVersion;
    if (rv) this.rv = rv;
    if (ev.type === 'BOOKMARK') return;
    compact(ev.object);
    const key = objectKey(ev.object);
    const prev = this.store.get(key);
    if (this.o.budget) this.charge(key, ev.type === 'DELETED' ? undefined : ev.object, !!prev);
    if (ev.type === 'DELETED') {
      this.store.delete(key);
      this.emit('delete', ev.object);
      return;
    }
    this.store.set(key, ev.object);
    if (prev) this.emit('update', ev.object, prev);
    else this.emit('add', ev.object);
  }

  /** charge counts an event against the budget before it is applied: obj is the new object, undefined a delete. */
  private charge(key: string, obj: T | undefined, cached: boolean): void {
    const before = this.sizes.get(key) ?? 0;
    const after = obj ? objectBytes(obj) : 0;
    const objects = this.store.size + (obj ? (cached ? 0 : 1) : cached ? -1 : 0);
    this.o.budget!.set(this.budgetId, { objects, bytes: this.bytes - before + after });
    this.bytes += after - before;
    if (obj) this.sizes.set(key, after);
    else this.sizes.delete(key);
  }

  private emit(kind: 'add' | 'update' | 'delete', obj: T, prev?: T): void {
    for (const h of this.handlers) this.deliver(h, kind, obj, prev);
  }

  /**
   * deliver hands one event to one handler. A handler that throws is logged and counted in
   * vc_informer_handler_errors_total; the other handlers, the cache and the watch go on.
   */
  private deliver(h: EventHandler<T>, kind: 'add' | 'update' | 'delete', obj: T, prev?: T): void {
    try {
      if (kind === 'add') h.onAdd?.(obj);
      else if (kind === 'update') h.onUpdate?.(prev!, obj);
      else h.onDelete?.(obj);
    } catch (err) {
      this.stats.handlerErrors++;
      handlerErrors.inc({ informer: this.o.name ?? this.o.resource.resource });
      this.log.error({ err, key: objectKey(obj) }, 'event handler threw; handlers must only enqueue');
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((res) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      res();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** LAST_APPLIED is kubectl's copy of the last applied object, kept on the object by client-side apply. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * slim drops what no reader of a cache needs and every cached object would otherwise carry: managedFields, often
 * the largest part of a Pod (the diff ignores it; the GitOps applier reads it from the apiserver, not from caches),
 * and kubectl's last-applied annotation, a second copy of the object (an annotations map left empty goes, as the
 * apiserver leaves it out). Both sides' caches drop the same keys, so a diff never writes for them. The maps are
 * rebuilt rather than deleted from: V8 turns an object a key was deleted from into a slower, larger dictionary.
 */
export function slim<T extends KubeObject>(o: T): T {
  const m = o.metadata;
  if (!m) return o;
  const last = m.annotations !== undefined && LAST_APPLIED in m.annotations;
  if (!m.managedFields && !last) return o;
  const { managedFields: _mf, annotations, ...rest } = m;
  const meta: typeof m = rest;
  if (annotations) {
    const { [LAST_APPLIED]: _la, ...others } = annotations;
    if (!last || Object.keys(others).length) meta.annotations = others;
  }
  o.metadata = meta;
  return o;
}

/** UNIQUE_KEYS name string fields whose values no two objects share, so pooling them would only fill the pool. */
const UNIQUE_KEYS = new Set(['uid', 'resourceVersion']);

/**
 * StringPool hands out one copy of each string value it is given, so the many objects of a cache share the values
 * they repeat (image names, condition types, tolerations, namespaces, timestamps of the same second) instead of each
 * holding its own copy. It forgets everything past `max` entries and starts again: strings already shared stay
 * shared, and what it holds stays bounded.
 */
export class StringPool {
  private readonly strings = new Map<string, string>();

  /** constructor takes the number of strings kept before the pool starts again. */
  constructor(private readonly max = 50_000) {}

  /** size is the number of strings held. */
  get size(): number {
    return this.strings.size;
  }

  /** intern returns the pooled copy of s. */
  intern(s: string): string {
    const had = this.strings.get(s);
    if (had !== undefined) return had;
    if (this.strings.size >= this.max) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }

  /** internAll replaces, in place, every string value in an object tree by its pooled copy, and returns the tree. */
  internAll<T>(v: T): T {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'string') v[i] = this.intern(x);
        else if (x !== null && typeof x === 'object') this.internAll(x);
      }
    } else if (v !== null && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      for (const k in o) {
        const x = o[k];
        if (typeof x === 'string') {
          if (!UNIQUE_KEYS.has(k)) o[k] = this.intern(x);
        } else if (x !== null && typeof x === 'object') this.internAll(x);
      }
    }
    return v;
  }
}

/** cachePool is the string pool every informer of this process shares. */
const cachePool = new StringPool();

/** compact is what an informer does to every object it caches: slim, then its strings shared through cachePool. */
export function compact<T extends KubeObject>(o: T): T {
  return cachePool.internAll(slim(o));
}
