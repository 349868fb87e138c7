import type { KubeClient, KubeObject, Resource } from './client.ts';
import type { CacheBudget } from './budget.ts';
import { type EventHandler, Informer } from './informer.ts';

/** SharedInformerOptions select what one shared informer caches: a resource, optionally one namespace and selectors. */
export interface SharedInformerOptions {
  resource: Resource;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/**
 * SharedInformer is one user's handle on an informer that other users of the same factory share: it reads the
 * shared cache, adds handlers of its own, and starts and stops only its own use. The watch opens on the first
 * user's start and closes after the last user's stop; a user's stop removes its handlers, so an event never reaches a
 * controller that has left.
 */
export interface SharedInformer<T extends KubeObject> {
  addHandler(h: EventHandler<T>): void;
  get(key: string): T | undefined;
  list(): T[];
  hasSynced(): boolean;
  waitForSync(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * syncedWithin waits for an informer's first list at most `ms` and says whether it came: a caller that can go on
 * without the cache (a resource whose CRD may be missing) reports it instead of waiting for ever.
 */
export async function syncedWithin(inf: Pick<SharedInformer<KubeObject>, 'waitForSync'>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([inf.waitForSync().then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

interface Entry {
  informer: Informer<KubeObject>;
  users: number;
}

/**
 * InformerFactory gives every controller of one cluster the same informer for the same selection (client-go's
 * SharedInformerFactory): one list and one watch per resource, namespace and selector per cluster, however many
 * controllers read it. Informers are made on first use and named `<prefix>/<resource>` in logs and metrics.
 */
export class InformerFactory {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly client: KubeClient,
    private readonly prefix = 'shared',
    /** the objects and bytes every informer of the factory may cache together (core/kube/budget.ts); none: no limit */
    readonly budget?: CacheBudget,
  ) {}

  /** informer returns a new handle on the shared informer for this selection. */
  informer<T extends KubeObject>(o: SharedInformerOptions): SharedInformer<T> {
    const key = [
      o.resource.group,
      o.resource.version,
      o.resource.resource,
      o.namespace,
      o.labelSelector,
      o.fieldSelector,
    ]
      .map((x) => x ?? '')
      .join('|');
    let e = this.entries.get(key);
    if (!e) {
      e = {
        informer: new Informer<KubeObject>({
          client: this.client,
          ...o,
          name: `${this.prefix}/${o.resource.resource}`,
          ...(this.budget && { budget: this.budget }),
        }),
        users: 0,
      };
      this.entries.set(key, e);
    }
    const entry = e;
    const inf = entry.informer as unknown as Informer<T>;
    const mine: Array<EventHandler<T>> = [];
    let started = false;
    return {
      addHandler: (h) => {
        mine.push(h);
        inf.addHandler(h);
      },
      get: (k) => inf.get(k),
      list: () => inf.list(),
      hasSynced: () => inf.hasSynced(),
      waitForSync: () => inf.waitForSync(),
      start: () => {
        if (started) return;
        started = true;
        if (entry.users++ === 0) inf.start();
      },
      stop: async () => {
        for (const h of mine.splice(0)) inf.removeHandler(h);
        if (!started) return;
        started = false;
        if (--entry.users === 0) await inf.stop();
      },
    };
  }

  /** watching counts the informers with at least one started user: the watches this factory holds open. */
  watching(): number {
    return [...this.entries.values()].filter((e) => e.users > 0).length;
  }
}
