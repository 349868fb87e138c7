import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../metrics/registry.ts';
import type { QueueMetrics } from '../queue/workqueue.ts';
import type { ReconcileEnding, RunnerMetrics } from './runner.ts';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const reconcileTotal = new Counter({
  name: 'vc_controller_reconcile_total',
  help: 'Finished reconciles, by controller and result (success, requeue_after, error).',
  labelNames: ['controller', 'result'],
  registers: [registry],
});
const reconcileDuration = new Histogram({
  name: 'vc_controller_reconcile_duration_seconds',
  help: 'Time of one reconcile, by controller.',
  labelNames: ['controller'],
  buckets: BUCKETS,
  registers: [registry],
});
const queueDepth = new Gauge({
  name: 'vc_workqueue_depth',
  help: 'Keys waiting in a work queue.',
  labelNames: ['name'],
  registers: [registry],
});
const queueAdds = new Counter({
  name: 'vc_workqueue_adds_total',
  help: 'Keys that became dirty in a work queue.',
  labelNames: ['name'],
  registers: [registry],
});
const queueLatency = new Histogram({
  name: 'vc_workqueue_queue_duration_seconds',
  help: 'Time a key waited in a work queue before a worker took it.',
  labelNames: ['name'],
  buckets: BUCKETS,
  registers: [registry],
});
const workDuration = new Histogram({
  name: 'vc_workqueue_work_duration_seconds',
  help: 'Time a worker held a key of a work queue.',
  labelNames: ['name'],
  buckets: BUCKETS,
  registers: [registry],
});
const queueRetries = new Counter({
  name: 'vc_workqueue_retries_total',
  help: 'Rate-limited re-adds to a work queue.',
  labelNames: ['name'],
  registers: [registry],
});

/** runnerMetrics reports a Runner's reconciles on /metrics under the controller's name. */
export function runnerMetrics(controller: string): RunnerMetrics {
  return {
    reconciled(ending: ReconcileEnding, durationMs: number): void {
      reconcileTotal.inc({ controller, result: ending });
      reconcileDuration.observe({ controller }, durationMs / 1000);
    },
  };
}

/** queueMetrics reports a work queue's measurements on /metrics under the queue's name (its controller's). */
export function queueMetrics(name: string): QueueMetrics {
  return {
    add: () => queueAdds.inc({ name }),
    depth: (keys) => queueDepth.set({ name }, keys),
    queueLatency: (ms) => queueLatency.observe({ name }, ms / 1000),
    workDuration: (ms) => workDuration.observe({ name }, ms / 1000),
    retry: () => queueRetries.inc({ name }),
  };
}
