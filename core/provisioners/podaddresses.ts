import type { KubeObject } from '../kube/client.ts';
import type { SharedInformer } from '../kube/factory.ts';
import { childLogger } from '../log.ts';
import { LABEL, MANAGER } from '../../plugins/sdk/src/names.ts';
import type { TenantPodAddresses } from './provisioner.ts';

const log = childLogger({ controller: 'pod-addresses' });

/** SuperPod is what podAddressesOf reads of a super cluster Pod. */
type SuperPod = KubeObject & {
  spec?: { hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string; podIPs?: Array<{ ip?: string }> };
};

/**
 * podAddressesOf is the tenant (cluster key) a super Pod belongs to and the addresses it holds for that tenant, or
 * undefined when it holds none: a Pod the syncer did not make (no managed-by label, no cluster label), one being
 * deleted or finished (its address is about to go back to the pool and then to any other Pod), and one on the
 * host network (its address is the node's, not its own).
 */
export function podAddressesOf(pod: SuperPod): { root: string; addresses: string[] } | undefined {
  const labels = pod.metadata?.labels ?? {};
  const root = labels[LABEL.cluster];
  if (labels[LABEL.managedBy] !== MANAGER || !root) return undefined;
  if (pod.metadata?.deletionTimestamp || pod.spec?.hostNetwork) return undefined;
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return undefined;
  const addresses = [pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((a) => a.ip)].filter((a): a is string => !!a);
  return addresses.length ? { root, addresses: [...new Set(addresses)] } : undefined;
}

/**
 * PodAddressIndex folds super Pod events into each tenant's addresses (podAddressesOf): change takes a Pod before and
 * after an event (absent when added or deleted) and answers the tenants whose set changed.
 */
export class PodAddressIndex {
  /** tenant -> Pod (namespace/name) -> its addresses */
  private readonly byTenant = new Map<string, Map<string, string[]>>();

  /** roots lists the tenants that hold an address here. */
  roots(): string[] {
    return [...this.byTenant.keys()];
  }

  /** of lists a tenant's addresses, each once, sorted. */
  of(root: string): string[] {
    return [...new Set([...(this.byTenant.get(root)?.values() ?? [])].flat())].sort();
  }

  /** change records one event of a Pod and answers the tenants whose addresses it changed. */
  change(before: KubeObject | undefined, now: KubeObject | undefined): string[] {
    const key = (p: KubeObject) => `${p.metadata?.namespace}/${p.metadata?.name}`;
    const was = before && podAddressesOf(before);
    const is = now && podAddressesOf(now);
    if (was) {
      const m = this.byTenant.get(was.root);
      m?.delete(key(before));
      if (m?.size === 0) this.byTenant.delete(was.root);
    }
    if (is) {
      let m = this.byTenant.get(is.root);
      if (!m) this.byTenant.set(is.root, (m = new Map()));
      m.set(key(now), is.addresses);
    }
    const same = was && is && was.root === is.root && was.addresses.join(' ') === is.addresses.join(' ');
    return same ? [] : [...new Set([was?.root, is?.root])].filter((r): r is string => !!r);
  }
}

/** Followed is one super cluster's Pods as SuperPodAddresses reads them. */
interface Followed {
  informer: SharedInformer<KubeObject>;
  index: PodAddressIndex;
}

/**
 * SuperPodAddresses follows the Pods of every super cluster it is given (each the syncer's shared informer of them)
 * and tells the addresses of each tenant's (PodAddressIndex, one per super cluster: the same super namespace and Pod
 * name can exist on two). Subscribers hear of a tenant whenever its set changed. The super clusters of the
 * configuration are given at construction; one registered at run time is followed (follow) while it is registered and
 * left (unfollow) when it goes, whose tenants then hear that its Pods' addresses are no longer theirs.
 */
export class SuperPodAddresses implements TenantPodAddresses {
  private readonly named = new Map<string, Followed>();
  private readonly subs = new Set<(root: string) => void>();
  /** the indexes of() reads: every one followed now */
  private readonly live = new Set<Followed>();
  private started = false;

  constructor(pods: ReadonlyArray<SharedInformer<KubeObject>>) {
    for (const informer of pods) this.watch(informer);
  }

  /** start opens (or joins) the informers' watches. */
  start(): void {
    this.started = true;
    for (const f of this.live) f.informer.start();
  }

  /** stop ends this feed's use of the informers. */
  async stop(): Promise<void> {
    this.started = false;
    this.subs.clear();
    const all = [...this.live];
    this.named.clear();
    this.live.clear();
    await Promise.all(all.map((f) => f.informer.stop()));
  }

  /**
   * follow adds the Pods of a super cluster registered at run time under its name; a name already followed with
   * another informer (new credentials) is left first. Started at once when this feed is.
   */
  async follow(name: string, informer: SharedInformer<KubeObject>): Promise<void> {
    const known = this.named.get(name);
    if (known?.informer === informer) return;
    if (known) await this.unfollow(name);
    const f = this.watch(informer);
    this.named.set(name, f);
    if (this.started) informer.start();
    log.info({ superCluster: name }, 'following the Pods of a registered super cluster');
  }

  /** unfollow stops following a super cluster followed by name; its tenants hear that its addresses are gone. */
  async unfollow(name: string): Promise<void> {
    const f = this.named.get(name);
    if (!f) return;
    this.named.delete(name);
    this.live.delete(f);
    await f.informer.stop();
    this.tell(f.index.roots());
    log.info({ superCluster: name }, 'no longer following the Pods of a super cluster');
  }

  /** following names the super clusters followed by name, sorted. */
  following(): string[] {
    return [...this.named.keys()].sort();
  }

  of(root: string): string[] {
    return [...new Set([...this.live].flatMap((f) => f.index.of(root)))].sort();
  }

  subscribe(changed: (root: string) => void): () => void {
    this.subs.add(changed);
    return () => this.subs.delete(changed);
  }

  private watch(informer: SharedInformer<KubeObject>): Followed {
    const index = new PodAddressIndex();
    const f = { informer, index };
    this.live.add(f);
    // An event still queued for an informer left behind changes its index only: of() no longer reads it.
    const tell = (roots: string[]) => {
      if (this.live.has(f)) this.tell(roots);
    };
    informer.addHandler({
      onAdd: (p) => tell(index.change(undefined, p)),
      onUpdate: (old, p) => tell(index.change(old, p)),
      onDelete: (p) => tell(index.change(p, undefined)),
    });
    return f;
  }

  private tell(roots: string[]): void {
    for (const root of roots)
      for (const s of this.subs) {
        try {
          s(root);
        } catch (e) {
          log.error({ tenant: root, err: e instanceof Error ? e.message : String(e) }, 'subscriber threw');
        }
      }
  }
}
