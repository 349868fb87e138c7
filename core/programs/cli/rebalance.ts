/**
 * `vc superclusters rebalance`: ask the namespace scheduler to move placed slices between ready super clusters under
 * its policy, through the request annotation on its state ConfigMap (as Flux's requestedAt), wait for its answer in
 * the published state, and print the moves.
 */
import type { Command } from 'commander';
import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { DEFAULT_MAX_MOVES, MAX_MOVES, REBALANCE_REQUEST, type RebalanceRequest } from '../../scheduler/rebalance.ts';
import type { RebalanceReport } from '../../scheduler/state.ts';
import { addClusterOptions, clusterClient, type ClusterFlags } from './kubeconfig.ts';
import { SCHEDULER_STATE_NAMESPACES } from './placements.ts';
import { timeoutMs } from './sleep.ts';
import { CliError } from './vcs.ts';

const STATE_NAME = 'vc-scheduler-state';

/** parseRebalanceReport reads the answer to the last rebalance request from the state ConfigMap's data, if any. */
export function parseRebalanceReport(data: Readonly<Record<string, string>> | undefined): RebalanceReport | undefined {
  for (const text of Object.values(data ?? {})) {
    try {
      const r = (JSON.parse(text) as { rebalance?: unknown }).rebalance as RebalanceReport | undefined;
      if (r && typeof r === 'object' && typeof r.request === 'string' && Array.isArray(r.moves)) return r;
    } catch {
      // not the summary
    }
  }
  return undefined;
}

/** formatRebalance writes a report for people: what moved (or would), what is left past the bound, or the error. */
export function formatRebalance(r: RebalanceReport): string {
  if (r.error) return `rebalance request refused: ${r.error}\n`;
  const head = r.dryRun
    ? `dry run (${r.policy}): ${r.moves.length} slice move(s) planned, nothing changed`
    : `rebalanced (${r.policy}): ${r.moves.length} slice move(s)`;
  const lines = [`${head}${r.requestedAt ? `, requested at ${r.requestedAt}` : ''}`];
  if (r.moves.length) {
    const rows = r.moves.map((m) => [m.tenant, m.namespace, `${m.from} -> ${m.to}`]);
    const head2 = ['TENANT', 'NAMESPACE', 'MOVE'];
    const w = head2.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i]!.length)));
    for (const row of [head2, ...rows])
      lines.push(
        row
          .map((x, i) => x.padEnd(w[i]!))
          .join('  ')
          .trimEnd(),
      );
  } else lines.push('no move would even out (spread) or consolidate (pack) the placed slices further');
  if (r.remaining > 0)
    lines.push(`${r.remaining} more move(s) past --max-moves ${r.maxMoves ?? '?'}: run it again to go on`);
  return lines.join('\n') + '\n';
}

/** lastRebalanceLine is the line `vc superclusters` prints under its table about the last rebalance. */
export function lastRebalanceLine(r: RebalanceReport | undefined): string {
  if (!r) return '';
  if (r.error) return `Last rebalance request (${r.handledAt}) refused: ${r.error}\n`;
  const pairs = new Map<string, number>();
  for (const m of r.moves) pairs.set(`${m.from}->${m.to}`, (pairs.get(`${m.from}->${m.to}`) ?? 0) + 1);
  const what = [...pairs].map(([k, n]) => `${k} x${n}`).join(', ');
  return (
    `Last rebalance (${r.policy}${r.dryRun ? ', dry run' : ''}) at ${r.handledAt}: ${r.moves.length} slice move(s)` +
    `${what ? ` (${what})` : ''}${r.remaining ? `, ${r.remaining} more past the bound` : ''}\n`
  );
}

interface StateMap extends KubeObject {
  data?: Record<string, string>;
}

async function findState(meta: KubeClient, namespace: string | undefined): Promise<StateMap> {
  const namespaces = namespace ? [namespace] : SCHEDULER_STATE_NAMESPACES;
  for (const ns of namespaces) {
    const cm = await meta.getOrNull<StateMap>(R.configmaps, ns, STATE_NAME);
    if (cm) return cm;
  }
  throw new CliError(
    `no ConfigMap ${STATE_NAME} in ${namespaces.join(' or ')}: no namespace scheduler publishes there ` +
      '(is a manager with the scheduler running? pass --scheduler-namespace if it runs elsewhere)',
  );
}

/** maxMoves reads --max-moves: a whole number from 1 to MAX_MOVES. */
export function maxMoves(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || n < 1 || n > MAX_MOVES)
    throw new CliError(`--max-moves ${JSON.stringify(v)}: give a whole number from 1 to ${MAX_MOVES}`);
  return n;
}

interface Flags extends ClusterFlags {
  maxMoves: string;
  dryRun?: boolean;
  schedulerNamespace?: string;
  timeout: string;
}

/** registerRebalanceCommand adds `rebalance` under `vc superclusters` (registered by the listing or by drain). */
export function registerRebalanceCommand(program: Command): void {
  const parent =
    program.commands.find((c) => c.name() === 'superclusters') ??
    program.command('superclusters').description('registered super clusters');
  addClusterOptions(
    parent
      .command('rebalance')
      .description(
        "move placed namespace slices from super clusters above their share under the scheduler's policy (spread: " +
          'even out free room; pack: consolidate) to ready, undrained ones with room, at most --max-moves slices, ' +
          'evicting the Pods that must follow (PodDisruptionBudgets apply, as in a drain); pinned namespaces and ' +
          'namespaces placed whole stay',
      ),
  )
    .option('--max-moves <n>', `at most this many slices move (1 to ${MAX_MOVES})`, String(DEFAULT_MAX_MOVES))
    .option('--dry-run', 'list the moves the scheduler would make, and change nothing')
    .option(
      '--scheduler-namespace <ns>',
      "namespace of the scheduler's vc-scheduler-state ConfigMap (default: vc-system, then kube-system)",
    )
    .option('--timeout <duration>', 'how long to wait for the scheduler (seconds, or with s or m)', '60s')
    .action(async (o: Flags, cmd: Command) => {
      const request: RebalanceRequest = {
        requestedAt: new Date().toISOString(),
        maxMoves: maxMoves(o.maxMoves),
        dryRun: !!o.dryRun,
      };
      const ms = timeoutMs(o.timeout);
      // `vc superclusters rebalance --kubeconfig f`: the listing's own --kubeconfig may take the flag, so read both.
      const g = cmd.optsWithGlobals() as ClusterFlags;
      const meta = await clusterClient({ kubeconfig: o.kubeconfig ?? g.kubeconfig, context: o.context ?? g.context });
      try {
        const cm = await findState(meta, o.schedulerNamespace);
        const value = JSON.stringify(request);
        await meta.patch(
          R.configmaps,
          cm.metadata!.namespace!,
          STATE_NAME,
          { metadata: { annotations: { [REBALANCE_REQUEST]: value } } },
          'merge',
          { fieldManager: 'vc-cli' },
        );
        const deadline = Date.now() + ms;
        for (;;) {
          const now = await meta.getOrNull<StateMap>(R.configmaps, cm.metadata!.namespace!, STATE_NAME);
          const r = parseRebalanceReport(now?.data);
          if (r?.request === value) {
            process.stdout.write(formatRebalance(r));
            if (r.error) process.exitCode = 1;
            return;
          }
          if (Date.now() > deadline)
            throw new CliError(
              `the scheduler did not answer the rebalance request within ${ms / 1000}s (ConfigMap ` +
                `${cm.metadata!.namespace}/${STATE_NAME}); is the manager running? It still acts on it when it does`,
            );
          await new Promise((r) => setTimeout(r, 300));
        }
      } finally {
        meta.close();
      }
    });
}
