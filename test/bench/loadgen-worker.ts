// The load generator's worker thread (see LoadGenerator in loadgen.ts): a tenant's own client, off the syncer's loop.
import { readlinkSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { KubeClient } from '../../core/kube/client.ts';
import type { LoadGenInit, LoadGenReply, LoadGenRequest, LoadGenResult } from './loadgen.ts';
import {
  createAndTime,
  latenciesOf,
  percentile,
  paced,
  type PodJob,
  PodWatch,
  type Sample,
  sequential,
  stages,
} from './podwatch.ts';

const init = workerData as LoadGenInit;
const port = parentPort!;
const selector = `bench in (${init.labels.join(',')})`;
const epoch = (t: number) => performance.timeOrigin + t;

const superClient = await KubeClient.fromFile(init.superKubeconfig);
const superWatch = new PodWatch(superClient, { labelSelector: selector });
const tenants = await Promise.all(
  init.tenants.map(async (t) => {
    const client = await KubeClient.fromFile(t.kubeconfig);
    const watch = new PodWatch(client, { namespace: 'default', labelSelector: selector });
    await watch.start();
    return { ...t, client, watch };
  }),
);
await superWatch.start();

async function create(r: LoadGenRequest): Promise<LoadGenResult> {
  const t = tenants[r.tenant!];
  if (!t) throw new Error(`no tenant ${String(r.tenant)}`);
  const jobs: PodJob[] = r.names!.map((name) => ({
    client: t.client,
    watch: t.watch,
    namespace: 'default',
    name,
    labels: { bench: r.label! },
    superWatch,
    superKey: `${t.superNamespace}/${name}`,
  }));
  const deadline = r.deadlineMs ?? 180_000;
  const label = `${r.label} in tenant ${r.tenant}`;
  let samples: Sample[];
  let figures: Omit<LoadGenResult, 'latenciesMs' | 'startedAt' | 'createdAt' | 'runningAt' | 'stagesMs'>;
  if (r.mode === 'sequential' || r.mode === 'paced') {
    samples = (
      r.mode === 'paced' ? await paced(jobs, r.everyMs ?? 0, deadline, label) : await sequential(jobs, deadline, label)
    ).samples;
    const lat = latenciesOf(samples);
    const wall = (Math.max(...samples.map((x) => x.running)) - Math.min(...samples.map((x) => x.t0))) / 1000;
    figures = {
      pods: jobs.length,
      podsPerSecond: jobs.length / wall,
      p50Ms: percentile(lat, 50),
      p99Ms: percentile(lat, 99),
      maxMs: Math.max(...lat),
      wallSeconds: wall,
    };
  } else {
    const { samples: s, ...rest } = await createAndTime(jobs, jobs.length, deadline, label);
    samples = s;
    figures = rest;
  }
  const byName = new Map(samples.map((x) => [x.job.name, x]));
  const ordered = r.names!.map((n) => byName.get(n)!);
  return {
    ...figures,
    latenciesMs: latenciesOf(ordered),
    startedAt: ordered.map((x) => epoch(x.t0)),
    createdAt: ordered.map((x) => epoch(x.created)),
    runningAt: ordered.map((x) => epoch(x.running)),
    stagesMs: stages(samples),
  };
}

port.on('message', (r: LoadGenRequest) => {
  const reply = (m: LoadGenReply) => port.postMessage(m);
  if (r.op === 'stop') {
    void Promise.all([superWatch.stop(), ...tenants.map((t) => t.watch.stop())]).then(() => {
      for (const c of [superClient, ...tenants.map((t) => t.client)]) c.close();
      reply({ id: r.id, ok: true });
    });
    return;
  }
  create(r).then(
    (result) => reply({ id: r.id, ok: true, result }),
    (e: unknown) => reply({ id: r.id, ok: false, error: e instanceof Error ? e.message : String(e) }),
  );
});
port.postMessage({ id: -1, ok: true, ready: true, thread: readlinkSync('/proc/thread-self') } satisfies LoadGenReply);
