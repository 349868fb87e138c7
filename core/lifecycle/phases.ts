import { Gauge } from 'prom-client';
import { registry as metricsRegistry } from '../metrics/registry.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';

/** countPhases counts VirtualClusters by status.phase, those with none yet as Pending. */
export function countPhases(vcs: readonly VirtualCluster[]): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const vc of vcs) m.set(vc.status?.phase ?? 'Pending', (m.get(vc.status?.phase ?? 'Pending') ?? 0) + 1);
  return [...m];
}

/** the caches of the running controllers, read at each scrape */
const counted = new Set<() => readonly VirtualCluster[]>();
new Gauge({
  name: 'vc_virtualclusters',
  help: 'VirtualClusters by phase.',
  labelNames: ['phase'],
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const list of counted) for (const [phase, n] of countPhases(list())) this.set({ phase }, n);
  },
});

/**
 * countInPhaseGauge has the VirtualClusters `list` answers counted by the vc_virtualclusters gauge at each scrape,
 * until the function it returns is called.
 */
export function countInPhaseGauge(list: () => readonly VirtualCluster[]): () => void {
  counted.add(list);
  return () => counted.delete(list);
}
