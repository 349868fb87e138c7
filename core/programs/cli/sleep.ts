/**
 * `vc sleep NAME` and `vc wake NAME`: put a tenant to sleep or wake it by hand (issue 34 §4), through the
 * sleep-requested annotation the manager acts on, and wait for the phase that follows.
 */
import type { Command } from 'commander';
import { isNotFound, type KubeClient } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { ANN } from '../../names/names.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { addClusterOptions, clusterClient } from './kubeconfig.ts';
import { CliError } from './errors.ts';

interface Flags {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  timeout: string;
  wait: boolean;
}

/** timeoutMs reads --timeout: seconds, or a number with s or m. */
export function timeoutMs(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m)?$/.exec(v.trim());
  if (!m) throw new CliError(`--timeout ${JSON.stringify(v)}: give seconds, or a number with s or m (90s, 2m)`);
  return Number(m[1]) * (m[2] === 'm' ? 60_000 : 1000);
}

/** read gets the VirtualCluster ns/name, or fails with a CliError naming it. */
export async function read(c: KubeClient, ns: string, name: string): Promise<VirtualCluster> {
  try {
    return await c.get<VirtualCluster>(R.virtualclusters, ns, name);
  } catch (e) {
    if (isNotFound(e)) throw new CliError(`VirtualCluster ${ns}/${name} not found (vc get)`);
    throw e;
  }
}

/** annotate sets (a string) or removes (null) one annotation of the VirtualCluster ns/name by a merge patch. */
export async function annotate(
  c: KubeClient,
  ns: string,
  name: string,
  key: string,
  value: string | null,
): Promise<void> {
  await c.patch(R.virtualclusters, ns, name, { metadata: { annotations: { [key]: value } } }, 'merge');
}

/** waitPhase polls the VirtualCluster until done says it is there, or the timeout passes. */
export async function waitPhase(
  c: KubeClient,
  ns: string,
  name: string,
  ms: number,
  done: (vc: VirtualCluster) => boolean,
  what: string,
): Promise<VirtualCluster> {
  const deadline = Date.now() + ms;
  for (;;) {
    const vc = await read(c, ns, name);
    if (done(vc)) return vc;
    if (Date.now() > deadline)
      throw new CliError(
        `VirtualCluster ${ns}/${name} is ${vc.status?.phase ?? 'Pending'} (${vc.status?.message ?? 'no message'}), ` +
          `not ${what} after ${ms / 1000}s; is the manager running? (vc describe vc ${name})`,
      );
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** registerSleepCommands adds `vc sleep` and `vc wake`. */
export function registerSleepCommands(program: Command): void {
  const common = (cmd: Command) =>
    addClusterOptions(cmd)
      .option('-n, --namespace <ns>', 'namespace of the VirtualCluster', 'default')
      .option('--timeout <duration>', 'how long to wait for the manager (seconds, or with s or m)', '2m')
      .option('--no-wait', 'ask and return without waiting for the phase');

  common(program.command('sleep <name>'))
    .description(
      'stop an idle tenant (apiserver, controller manager, its etcd) until the first request through its front door',
    )
    .action(async (name: string, o: Flags) => {
      const ms = timeoutMs(o.timeout);
      const c = await clusterClient(o);
      const vc = await read(c, o.namespace, name);
      if (!vc.spec.sleep)
        throw new CliError(
          `VirtualCluster ${o.namespace}/${name} has no spec.sleep: its kubeconfig names the apiserver itself, so ` +
            'nothing would wake it; set spec.sleep.afterIdle (e.g. 15m) first',
        );
      const at = new Date().toISOString();
      await annotate(c, o.namespace, name, ANN.sleepRequested, at);
      if (!o.wait) return void process.stdout.write(`VirtualCluster ${o.namespace}/${name}: sleep requested\n`);
      const after = await waitPhase(
        c,
        o.namespace,
        name,
        ms,
        (v) => v.status?.phase === 'Sleeping' || v.metadata?.annotations?.[ANN.sleepRequested] === undefined,
        'Sleeping',
      );
      if (after.status?.phase !== 'Sleeping')
        throw new CliError(
          `VirtualCluster ${o.namespace}/${name} did not sleep: a request came through its front door since ` +
            '(or it woke as often this hour as its policy allows, or it cannot sleep: vc describe vc ' +
            name +
            ')',
        );
      process.stdout.write(`VirtualCluster ${o.namespace}/${name} is Sleeping\n`);
    });

  common(program.command('wake <name>'))
    .description('start a sleeping tenant again and wait until it serves')
    .action(async (name: string, o: Flags) => {
      const ms = timeoutMs(o.timeout);
      const c = await clusterClient(o);
      await read(c, o.namespace, name);
      await annotate(c, o.namespace, name, ANN.sleepRequested, null);
      if (!o.wait) return void process.stdout.write(`VirtualCluster ${o.namespace}/${name}: wake requested\n`);
      await waitPhase(c, o.namespace, name, ms, (v) => v.status?.phase === 'Running', 'Running');
      process.stdout.write(`VirtualCluster ${o.namespace}/${name} is Running\n`);
    });
}
