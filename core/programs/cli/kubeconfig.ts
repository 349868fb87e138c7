import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { KubeClient } from '../../kube/client.ts';
import { Kubeconfig } from '../../kube/kubeconfigfile.ts';
import { platformFileHints } from '../../kube/platform.ts';
import { CliError } from './errors.ts';

/**
 * This module finds the kubeconfig a `vc` command talks to, as kubectl does, and says which rule chose it.
 */

/** DEFAULT_STATE_DIR is where `vc up` keeps the embedded default; its super kubeconfig is the default meta cluster. */
export const DEFAULT_STATE_DIR = '.state/default';

/** KUBECONFIG_RULE is the resolution order in one paragraph, for `vc --help` and the errors that need it. */
export const KUBECONFIG_RULE =
  'Which cluster: --kubeconfig FILE; else VC_KUBECONFIG; else KUBECONFIG (a list separated by ' +
  `"${delimiter}", merged as kubectl merges: the first file that names a cluster, user or context wins, and the ` +
  'first current-context); else ~/.kube/config; else, only when none of those exists and `vc up` is running in ' +
  `this directory, its cluster (${DEFAULT_STATE_DIR}). --context picks a context of the chosen kubeconfig.`;

/** KubeconfigSource names the rule that chose a kubeconfig. */
export type KubeconfigSource = '--kubeconfig' | 'VC_KUBECONFIG' | 'KUBECONFIG' | '~/.kube/config' | 'vc up';

/** Resolved is the kubeconfig files a command reads, in precedence order, and the rule that chose them. */
export interface Resolved {
  files: string[];
  source: KubeconfigSource;
}

/** ResolveInput is what resolution looks at; every field defaults to this process's own. */
export interface ResolveInput {
  flag?: string;
  env?: NodeJS.ProcessEnv;
  home?: string;
  cwd?: string;
  exists?: (path: string) => boolean;
  /** upRunning says whether `vc up` runs with the given state directory (default: its status.json names a live pid) */
  upRunning?: (stateDir: string) => boolean;
}

/** KubeconfigError is a kubeconfig that cannot be found or used; its message is one line that says what to do. */
export class KubeconfigError extends CliError {}

/**
 * upRunningIn says whether `vc up` runs with this state directory: its `status.json` (written by `vc up`, see up.ts)
 * names a process that is alive.
 */
export function upRunningIn(stateDir: string): boolean {
  try {
    const s = JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as { pid?: unknown };
    if (typeof s.pid !== 'number') return false;
    process.kill(s.pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** resolveKubeconfig applies KUBECONFIG_RULE; it throws KubeconfigError when a named file is missing or none is found. */
export function resolveKubeconfig(i: ResolveInput = {}): Resolved {
  const env = i.env ?? process.env;
  const exists = i.exists ?? existsSync;
  const cwd = i.cwd ?? process.cwd();
  const abs = (p: string) => resolve(cwd, p);
  if (i.flag !== undefined) {
    if (!exists(abs(i.flag))) throw new KubeconfigError(`--kubeconfig ${i.flag}: no such file`);
    return { files: [abs(i.flag)], source: '--kubeconfig' };
  }
  if (env.VC_KUBECONFIG) {
    if (!exists(abs(env.VC_KUBECONFIG)))
      throw new KubeconfigError(`VC_KUBECONFIG=${env.VC_KUBECONFIG}: no such file (unset it or fix the path)`);
    return { files: [abs(env.VC_KUBECONFIG)], source: 'VC_KUBECONFIG' };
  }
  if (env.KUBECONFIG) {
    // As kubectl: files of the list that do not exist are skipped; an empty entry means nothing.
    const files = [...new Set(env.KUBECONFIG.split(delimiter).filter(Boolean).map(abs))].filter((f) => exists(f));
    if (files.length) return { files, source: 'KUBECONFIG' };
  }
  const home = join(i.home ?? homedir(), '.kube', 'config');
  if (exists(home)) return { files: [home], source: '~/.kube/config' };
  const stateDir = abs(DEFAULT_STATE_DIR);
  const up = join(stateDir, 'clusters/super/admin.kubeconfig');
  if (exists(up) && (i.upRunning ?? upRunningIn)(stateDir)) return { files: [up], source: 'vc up' };
  throw new KubeconfigError(
    'no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or start the embedded default with `vc up` ' +
      '(`vc --help` says how the cluster is chosen)',
  );
}

interface Named {
  name: string;
}

/**
 * mergeKubeconfigs merges kubeconfig files as kubectl does: the first file that defines a cluster, user or context
 * of a name wins, and the first non-empty current-context is the current one; `context` then replaces it. Paths in
 * each file are relative to that file (the loader resolves them).
 */
export function mergeKubeconfigs(files: readonly string[], context?: string): Kubeconfig {
  const loaded = files.map((f) => {
    const kc = new Kubeconfig();
    try {
      kc.loadFromFile(f);
    } catch (e) {
      throw new KubeconfigError(`${f}: not a kubeconfig (${(e as Error).message.split('\n')[0]})`);
    }
    return kc;
  });
  const firstWins = <T extends Named>(pick: (k: Kubeconfig) => T[]): T[] => {
    const seen = new Map<string, T>();
    for (const k of loaded) for (const x of pick(k) ?? []) if (!seen.has(x.name)) seen.set(x.name, x);
    return [...seen.values()];
  };
  const merged = new Kubeconfig();
  merged.loadFromOptions({
    clusters: firstWins((k) => k.clusters),
    users: firstWins((k) => k.users),
    contexts: firstWins((k) => k.contexts),
    currentContext: context ?? loaded.map((k) => k.currentContext).find(Boolean) ?? '',
  });
  const where = files.join(delimiter);
  if (context !== undefined && !merged.getContextObject(context))
    throw new KubeconfigError(
      `--context ${context}: no such context in ${where} (it has: ${merged.contexts.map((c) => c.name).join(', ') || 'none'})`,
    );
  if (!merged.currentContext) throw new KubeconfigError(`${where}: no current-context; pass --context NAME`);
  if (!merged.getCurrentCluster())
    throw new KubeconfigError(`${where}: context ${merged.currentContext} names a cluster the kubeconfig lacks`);
  return merged;
}

/** ClusterFlags are the kubectl-style flags of every command that talks to a cluster. */
export interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
}

/** clusterClient builds a client for the cluster the flags, the environment and KUBECONFIG_RULE choose. */
export async function clusterClient(o: ClusterFlags, input: Omit<ResolveInput, 'flag'> = {}): Promise<KubeClient> {
  const r = resolveKubeconfig({ ...input, flag: o.kubeconfig });
  const kc = mergeKubeconfigs(r.files, o.context);
  // A token file in the user entry is relative to the file that defined that user.
  const userName = kc.getCurrentUser()?.name;
  const owner = r.files.find((f) => fileDefinesUser(f, userName)) ?? r.files[0]!;
  return KubeClient.fromKubeConfig(kc, {}, platformFileHints(owner, kc));
}

function fileDefinesUser(file: string, user: string | undefined): boolean {
  if (!user) return false;
  const kc = new Kubeconfig();
  kc.loadFromFile(file);
  return kc.users.some((u) => u.name === user);
}

/**
 * addClusterOptions adds kubectl's --kubeconfig and --context to a command that talks to a cluster; `what` names the
 * cluster in the help (e.g. "the meta cluster").
 */
export function addClusterOptions(cmd: Command, what = 'the meta cluster'): Command {
  return cmd
    .option('--kubeconfig <file>', `kubeconfig of ${what} (see \`vc --help\` for the default)`)
    .option('--context <name>', 'the kubeconfig context to use (default: its current-context)');
}
