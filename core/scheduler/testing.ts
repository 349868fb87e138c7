/**
 * Test fixtures of the scheduler: a SuperClusterSource without a registry. Only tests and benchmarks import this
 * file; the build leaves testing.ts files out.
 */
import type { ClusterState } from '../superclusters/registration.ts';
import type { RegisteredSuperCluster, SuperClusterSource } from './controller.ts';

/**
 * StaticSuperClusters is a SuperClusterSource over a fixed list, for tests and benchmarks without a registry:
 * setState changes a registration's state as a registry would (draining, unreachable).
 */
export class StaticSuperClusters implements SuperClusterSource {
  private readonly subs = new Set<() => void>();
  private entries: RegisteredSuperCluster[];

  constructor(entries: RegisteredSuperCluster[]) {
    this.entries = entries.map((e) => ({ ...e }));
  }

  /** list returns the registrations. */
  list(): RegisteredSuperCluster[] {
    return this.entries.map((e) => ({ ...e }));
  }

  /** onChange calls cb after every change; it returns an unsubscribe function. */
  onChange(cb: () => void): () => void {
    this.subs.add(cb);
    return () => this.subs.delete(cb);
  }

  /** setState changes one registration's state; an unknown name is an error. */
  setState(name: string, state: ClusterState): void {
    const e = this.entries.find((x) => x.name === name);
    if (!e) throw new Error(`super cluster ${name} is not registered`);
    e.state = state;
    for (const cb of this.subs) cb();
  }

  /** remove deregisters a super cluster. */
  remove(name: string): void {
    this.entries = this.entries.filter((x) => x.name !== name);
    for (const cb of this.subs) cb();
  }
}
