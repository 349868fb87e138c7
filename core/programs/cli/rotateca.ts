/**
 * `vc rotate-ca NAME --step add|reissue|drop`: one step of the rotation of a tenant's CA (issue 33 §4), asked through
 * the ca-rotation annotation the manager acts on; it waits for the CARotation condition that reports the step.
 * docs/operations/certificates.md gives the whole procedure.
 */
import type { Command } from 'commander';
import { ANN } from '../../names/names.ts';
import { CA_ROTATION, CA_ROTATION_REASONS, CA_ROTATION_REFUSED } from '../../lifecycle/certificates.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { addClusterOptions, clusterClient } from './kubeconfig.ts';
import { CliError } from './errors.ts';
import { annotate, read, timeoutMs, waitPhase } from './sleep.ts';

interface Flags {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  timeout: string;
  step: string;
}

const STEPS = Object.keys(CA_ROTATION_REASONS) as Array<keyof typeof CA_ROTATION_REASONS>;

const rotation = (vc: VirtualCluster) => vc.status?.conditions?.find((c) => c.type === CA_ROTATION);

/** registerRotateCaCommand adds `vc rotate-ca`. */
export function registerRotateCaCommand(program: Command): void {
  addClusterOptions(program.command('rotate-ca <name>'))
    .description(
      "rotate a tenant's CA one step at a time: add (trust a new CA beside the old), reissue (the new CA signs, " +
        'client certificates are issued again), drop (the old CA is no longer trusted: kubeconfigs from before fail)',
    )
    .requiredOption('--step <step>', `the step to do: ${STEPS.join(', ')}, in this order`)
    .option('-n, --namespace <ns>', 'namespace of the VirtualCluster', 'default')
    .option('--timeout <duration>', 'how long to wait for the manager (seconds, or with s or m)', '3m')
    .action(async (name: string, o: Flags) => {
      const step = o.step as keyof typeof CA_ROTATION_REASONS;
      if (!STEPS.includes(step)) throw new CliError(`--step ${JSON.stringify(o.step)}: give ${STEPS.join(', ')}`);
      const ms = timeoutMs(o.timeout);
      const c = await clusterClient(o);
      await read(c, o.namespace, name);
      await annotate(c, o.namespace, name, ANN.caRotation, step);
      const reason = CA_ROTATION_REASONS[step];
      // Done when the condition reports this step, or a refusal of it (a step out of order).
      const vc = await waitPhase(
        c,
        o.namespace,
        name,
        ms,
        (v) => {
          const r = rotation(v);
          return r?.reason === reason || (r?.reason === CA_ROTATION_REFUSED && !!r.message?.includes(`step ${step}`));
        },
        `done with CA rotation step ${step}`,
      );
      const r = rotation(vc)!;
      if (r.status !== 'True') throw new CliError(`VirtualCluster ${o.namespace}/${name}: ${r.message}`);
      process.stdout.write(`VirtualCluster ${o.namespace}/${name}: ${r.reason}: ${r.message}\n`);
    });
}
