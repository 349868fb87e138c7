import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { KubeClient } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { fromPackageRoot } from '../../paths.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../../api/virtualcluster.ts';
import { NODE_IMAGES } from '../../toolchain/node.ts';
import { ensureToolchain, toolchainDir } from '../../toolchain/toolchain.ts';
import { CliError, DEFAULT_STATE_DIR } from './vcs.ts';
import { formatData, outputOption } from './output.ts';
import { healthOf } from './describe.ts';
import { resolveShape, shapeOf, type EmbeddedShape } from '../../dev/embedded/shape.ts';

/** UpStatus is what a running embedded default records in `<state-dir>/status.json`. */
export interface UpStatus {
  pid: number;
  ready: boolean;
  startedAt: string;
  superKubeconfig: string;
  managerConfig: string;
  gitURL: string;
  webhookURL?: string;
  opsURL: string;
  kubectl: string;
  /**
   * superClusters are the super clusters of `--super-clusters N` (N > 1, or any N with --meta), each with its admin
   * kubeconfig
   */
  superClusters?: Array<{ name: string; kubeconfig: string }>;
  /** meta is true under --meta: superKubeconfig is then the meta cluster's, which is no super cluster */
  meta?: boolean;
}

/** SuperClusterOption is the `--super-clusters` option of vc up, with `--real-node-super` and `--meta`. */
type SuperClusterOption = { superClusters?: string; realNodeSuper?: string; meta?: boolean };

/** UpOptions are the options of vc up (`--real-nodes` absent: decided by the real-node preflight). */
type UpOptions = {
  stateDir: string;
  nodes: string;
  detach?: boolean;
  plugin: string[];
  realNodes?: string;
  preloadedImage: string[];
  /** false with --no-confine */
  confine: boolean;
  /** false with --no-metrics-server */
  metricsServer: boolean;
} & SuperClusterOption;

const statusFile = (dir: string) => join(dir, 'status.json');
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** readUpStatus returns the recorded status of a running embedded default, or undefined when none runs there. */
export function readUpStatus(stateDir: string): UpStatus | undefined {
  const f = statusFile(stateDir);
  if (!existsSync(f)) return undefined;
  const s = JSON.parse(readFileSync(f, 'utf8')) as UpStatus;
  return alive(s.pid) ? s : undefined;
}

function summary(s: UpStatus): string {
  return [
    `  ${s.meta ? 'meta' : 'super'} cluster kubeconfig: ${s.superKubeconfig}`,
    ...(s.superClusters ?? []).slice(s.meta ? 0 : 1).map((x) => `  super cluster ${x.name}:`.padEnd(28) + x.kubeconfig),
    `  tenant repository:        ${s.gitURL}   (git clone it, edit tenants/*.yaml, git push)`,
    `  manager configuration:    ${s.managerConfig}`,
    `  metrics and probes:       ${s.opsURL}/metrics`,
    `  kubectl:                  ${s.kubectl}`,
    'next:',
    '  npx vc status                      # tenants, phases and kubeconfig paths',
    // the real node pulls nothing (no registry here): an image it holds, which simulated nodes run as well
    `  npx vc exec dev -- kubectl create deployment web --image=${NODE_IMAGES.agnhost} --replicas=2 -- /agnhost netexec`,
    '  npx vc exec dev -- kubectl get pods -o wide',
  ].join('\n');
}

async function tenants(s: UpStatus, stateDir: string) {
  const c = await KubeClient.fromFile(s.superKubeconfig);
  try {
    const vcs = (await c.list<VirtualCluster>(R.virtualclusters)).items;
    const dir = join(stateDir, 'kubeconfigs');
    mkdirSync(dir, { recursive: true });
    const out = [];
    for (const vc of vcs) {
      const m = vc.metadata!;
      let kubeconfig: string | undefined;
      if (vc.status?.phase === 'Running' && vc.status.kubeconfigSecretName) {
        const sec = await c.getOrNull<{ data?: Record<string, string> }>(
          R.secrets,
          m.namespace,
          kubeconfigSecretName(m.name!),
        );
        if (sec?.data?.kubeconfig) {
          kubeconfig = join(dir, `${m.namespace}-${m.name}.kubeconfig`);
          writeFileSync(kubeconfig, Buffer.from(sec.data.kubeconfig, 'base64'), { mode: 0o600 });
        }
      }
      const phase = vc.status?.phase ?? 'Pending';
      out.push({ namespace: m.namespace!, name: m.name!, phase, health: healthOf(vc), kubeconfig });
    }
    return out;
  } finally {
    c.close();
  }
}

/** UpNumbers are vc up's numeric options, checked. */
export interface UpNumbers {
  nodes: number;
  superClusters: number;
  realNodeSuper: string;
  /**
   * realNodeSupers are the super clusters `--real-node-super` names (comma-separated); more than one puts every real
   * node in a network namespace of its own, --real-nodes of them on each
   */
  realNodeSupers: string[];
  /** meta: the meta cluster runs apart from the super clusters r1..rN */
  meta: boolean;
  /** undefined: decided by the real-node preflight */
  realNodes?: number;
}

/**
 * upNumbers checks vc up's numeric options and returns them parsed, or throws a CliError naming the option, the value
 * given and what it accepts.
 */
export function upNumbers(
  o: {
    nodes: string;
    /** undefined: as the state directory was started, else 1 */
    superClusters?: string;
    realNodes?: string;
    realNodeSuper?: string;
    /** undefined: as the state directory was started, else false */
    meta?: boolean;
  },
  /** state is the state directory and the shape an earlier start left there (shapeOf), if any */
  state?: { dir: string; shape?: EmbeddedShape },
): UpNumbers {
  const whole = (flag: string, raw: string, min: number, max: number): number => {
    const n = /^\d+$/.test(raw.trim()) ? Number(raw) : NaN;
    if (!Number.isInteger(n) || n < min || n > max)
      throw new CliError(`${flag} ${JSON.stringify(raw)}: must be a whole number from ${min} to ${max}`);
    return n;
  };
  const nodes = whole('--nodes', o.nodes, 0, 1000);
  const asked = o.superClusters === undefined ? undefined : whole('--super-clusters', o.superClusters, 1, 9);
  let shape: EmbeddedShape;
  try {
    shape = resolveShape({ meta: o.meta, superClusters: asked }, state?.shape, state?.dir ?? '');
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  const { superClusters, meta } = shape;
  // One set of real nodes per host; each is a kubelet, containerd and kube-proxy of this machine.
  const realNodes = o.realNodes === undefined ? undefined : whole('--real-nodes', o.realNodes, 0, 4);
  const realNodeSuper = o.realNodeSuper ?? 'r1';
  const realNodeSupers = realNodeSuper.split(',').map((r) => r.trim());
  for (const [i, r] of realNodeSupers.entries()) {
    if (r !== 'r1' && !((superClusters > 1 || meta) && /^r[1-9]$/.test(r) && Number(r.slice(1)) <= superClusters))
      throw new CliError(`--real-node-super ${r}: must be one of r1..r${superClusters} (--super-clusters)`);
    if (realNodeSupers.indexOf(r) !== i) throw new CliError(`--real-node-super ${realNodeSuper}: names ${r} twice`);
  }
  return {
    nodes,
    superClusters,
    realNodeSuper,
    realNodeSupers,
    meta,
    ...(realNodes === undefined ? {} : { realNodes }),
  };
}

/** registerUpCommands adds `vc up`, `vc status` and `vc down`. */
export function registerUpCommands(program: Command): void {
  program
    .command('up')
    .description('start the embedded default here: super cluster, tenant git repository, manager; Ctrl-C stops it all')
    .option('--state-dir <dir>', 'where all state lives', DEFAULT_STATE_DIR)
    .option('--nodes <n>', 'number of kwok nodes', '3')
    .option(
      '--super-clusters <n>',
      'super clusters to run (more than one: r1..rN, registered in the meta cluster, which is r1 unless --meta); ' +
        'default: as many as the state directory ran, else 1 (a restart may add super clusters, never remove one)',
    )
    .option('--real-nodes <n>', 'real nodes (kubelet + containerd here); default: 1 when the host allows it, else 0')
    .option(
      '--real-node-super <names>',
      'with --super-clusters N: the super cluster (r1..rN) of the real nodes; several, comma-separated (r1,r2), put ' +
        '--real-nodes on each, every node in a network namespace of its own',
      'r1',
    )
    .option(
      '--meta',
      'run the meta cluster (VirtualClusters, registrations, no nodes) apart from the super clusters r1..rN, each ' +
        'registered in it; no tenant Pod runs on it. A state directory keeps it: vc up again there runs it apart ' +
        'without the flag, and one started without it refuses it',
    )
    .option('-d, --detach', 'return once everything is ready and leave it running (stop it with vc down)')
    .option(
      '--no-confine',
      "do not network-confine local tenants' control planes (by default they reach only their own ports, the " +
        "vn-agents, their own tenant's Pods and the outside, where the host has cgroup v2 and nftables)",
    )
    .option(
      '--no-metrics-server',
      'do not run metrics-server beside each tenant (by default, with a real node, `kubectl top` and HPAs work in ' +
        'every tenant; the first start builds metrics-server)',
    )
    .option(
      '--plugin <path-or-package>',
      'load a third-party plugin in the manager (repeatable)',
      (v: string, all: string[]) => [...all, isPluginPath(v) ? resolve(v) : v],
      [],
    )
    .option(
      '--preloaded-image <ref>',
      "an image put on the real nodes besides the toolchain's: tenant Pods run it IfNotPresent (repeatable)",
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .action(async (o: UpOptions) => {
      // Bad numbers are refused before anything is built or started.
      const stateDir = resolve(o.stateDir);
      const { superClusters, realNodeSuper, realNodeSupers, realNodes, nodes, meta } = upNumbers(o, {
        dir: stateDir,
        shape: shapeOf(stateDir),
      });
      mkdirSync(stateDir, { recursive: true });
      await ensureToolchain();
      // The quick start's first line on a fresh machine: the node toolchain (and its Debian packages) too, unless
      // real nodes are turned off; a machine that cannot run them says why in one line and stays simulated.
      let metricsServer = false;
      if (o.realNodes !== '0' && process.env.VC_REAL_NODES !== '0') {
        const { setupNodeToolchain } = await import('../../toolchain/setup.ts');
        const nodeToolchain = await setupNodeToolchain();
        // Tenants' kubectl top and HPAs: metrics-server from the toolchain, built once; without it tenants still run.
        if (o.metricsServer && nodeToolchain) {
          const { ensureMetricsServer } = await import('../../toolchain/metricsserver.ts');
          metricsServer = await ensureMetricsServer().then(
            () => true,
            (e: unknown) => {
              process.stderr.write(
                `metrics-server could not be built, tenants run without kubectl top: ${e instanceof Error ? e.message : String(e)}\n`,
              );
              return false;
            },
          );
        }
      }
      const running = readUpStatus(stateDir);
      if (running?.ready) {
        process.stdout.write(`already running (pid ${running.pid}) in ${stateDir}\n${summary(running)}\n`);
        return;
      }
      const realArgs = o.realNodes === undefined ? [] : ['--real-nodes', o.realNodes];
      const preloadedArgs = o.preloadedImage.flatMap((r) => ['--preloaded-image', r]);
      if (o.detach)
        return detach(stateDir, o.nodes, o.plugin, [
          '--super-clusters',
          String(superClusters),
          '--real-node-super',
          realNodeSuper,
          ...(meta ? ['--meta'] : []),
          ...realArgs,
          ...preloadedArgs,
          ...(o.confine ? [] : ['--no-confine']),
          ...(metricsServer ? [] : ['--no-metrics-server']),
        ]);
      const { chooseRealNodes, sweepLeftoverNodes } = await import('../../dev/local/realnode.ts');
      for (const l of await sweepLeftoverNodes(stateDir)) process.stderr.write(`${l}\n`);
      const real = await chooseRealNodes(realNodes).catch((e: Error) => {
        throw new CliError(e.message);
      });
      process.stderr.write(`[0.0s] ${real.line}\n`);
      // Progress goes to the terminal; component logs stay in the state directory. LOG_LEVEL=info shows them.
      // Modules imported before this line already made their loggers: setting LOG_LEVEL alone would not quiet them.
      (await import('../../log.ts')).setDefaultLogLevel('warn');
      const { startEmbedded } = await import('../../dev/embedded/embedded.ts');
      const guards = (await import('../guards.ts')).installProcessGuards();
      const started = Date.now();
      const since = () => `[${((Date.now() - started) / 1000).toFixed(1)}s]`;
      const e = await startEmbedded({
        stateDir,
        nodes,
        realNodes: real.count,
        plugins: o.plugin,
        preloadedImages: o.preloadedImage,
        onStep: (s) => process.stderr.write(`${since()} ${s}\n`),
        superClusters,
        ...(superClusters > 1 || meta ? (realNodeSupers.length > 1 ? { realNodeSupers } : { realNodeSuper }) : {}),
        meta,
        confine: o.confine,
        metricsServer,
      });
      const status: UpStatus = {
        pid: process.pid,
        ready: true,
        startedAt: new Date().toISOString(),
        superKubeconfig: e.superCluster.kubeconfigPath,
        managerConfig: e.configPath,
        gitURL: e.gitURL,
        webhookURL: e.webhookURL,
        opsURL: `http://127.0.0.1:${e.manager.opsPort}`,
        kubectl: join(toolchainDir(), 'kubectl'),
        ...(superClusters > 1 || meta
          ? { superClusters: e.superClusters.map((x) => ({ name: x.name, kubeconfig: x.kubeconfigPath })) }
          : {}),
        ...(meta && { meta }),
      };
      writeFileSync(statusFile(stateDir), JSON.stringify(status, null, 2) + '\n');
      guards.onFatal(async () => {
        await e.stop();
        rmSync(statusFile(stateDir), { force: true });
      });
      process.stdout.write(`${since()} ready\n${summary(status)}\npress Ctrl-C to stop everything\n`);
      await new Promise<void>((res) => {
        process.once('SIGINT', res);
        process.once('SIGTERM', res);
      });
      process.stderr.write('stopping ...\n');
      await e.stop();
      rmSync(statusFile(stateDir), { force: true });
    });

  program
    .command('status')
    .description('the embedded default: kubeconfigs, tenant repository, and each tenant with its phase and kubeconfig')
    .option('--state-dir <dir>', 'state directory of vc up', DEFAULT_STATE_DIR)
    .addOption(outputOption(['table', 'json', 'yaml', 'jsonpath']))
    .action(async (o: { stateDir: string; output: string }) => {
      const stateDir = resolve(o.stateDir);
      const s = readUpStatus(stateDir);
      if (!s) throw new CliError(`nothing is running in ${stateDir}: start it with vc up`);
      const ts = await tenants(s, stateDir);
      const data = formatData({ ...s, tenants: ts }, o.output);
      if (data !== undefined) return void process.stdout.write(data);
      process.stdout.write(`running (pid ${s.pid}) since ${s.startedAt}\n${summary(s)}\ntenants:\n`);
      for (const t of ts)
        process.stdout.write(`  ${t.namespace}/${t.name}  ${t.phase}  ${t.health}  ${t.kubeconfig ?? ''}\n`);
    });

  program
    .command('down')
    .description('stop the embedded default started with vc up --detach; no process is left')
    .option('--state-dir <dir>', 'state directory of vc up', DEFAULT_STATE_DIR)
    .action(async (o: { stateDir: string }) => {
      const stateDir = resolve(o.stateDir);
      const s = readUpStatus(stateDir);
      // real nodes of a vc up that was killed outright left processes, mounts and network state: remove them
      const sweep = async () => {
        const { sweepLeftoverNodes } = await import('../../dev/local/realnode.ts');
        for (const l of await sweepLeftoverNodes(stateDir)) process.stderr.write(`${l}\n`);
        // and the network confinement and cpu cgroups of tenant control planes that died with it
        const { sweepConfinements } = await import('../../dev/local/netconfine.ts');
        const { sweepCpuCgroups } = await import('../../dev/local/cpulimit.ts');
        const gone = [...(await sweepConfinements()), ...sweepCpuCgroups()];
        if (gone.length)
          process.stderr.write(`removed ${gone.length} leftover confinement pieces (${gone.join(', ')})\n`);
      };
      if (!s) {
        await sweep();
        process.stderr.write(`nothing is running in ${stateDir}\n`);
        return;
      }
      process.kill(s.pid, 'SIGTERM');
      const deadline = Date.now() + 90_000;
      while (alive(s.pid)) {
        if (Date.now() > deadline) process.kill(s.pid, 'SIGKILL');
        await new Promise((r) => setTimeout(r, 200));
      }
      rmSync(statusFile(stateDir), { force: true });
      await sweep();
      process.stderr.write(`stopped (pid ${s.pid})\n`);
    });
}

/** detach starts `vc up` as a daemon with its output in `<state-dir>/up.log`, shows its progress and waits for ready. */
const isPluginPath = (v: string): boolean => v.startsWith('.') || v.startsWith('/');

async function detach(stateDir: string, nodes: string, plugins: string[], extra: string[] = []): Promise<void> {
  rmSync(statusFile(stateDir), { force: true });
  const logFile = join(stateDir, 'up.log');
  const fd = openSync(logFile, 'w');
  const vc = fromPackageRoot('core/programs/cli/vc.mjs');
  const args = [vc, 'up', '--state-dir', stateDir, '--nodes', nodes, ...plugins.flatMap((p) => ['--plugin', p])];
  args.push(...extra);
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', fd, fd], env: process.env });
  child.unref();
  let shown = 0;
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    const lines = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n') : [];
    for (const l of lines.slice(shown, -1)) if (/^\[\d/.test(l)) process.stderr.write(`${l}\n`);
    shown = Math.max(shown, lines.length - 1);
    const s = readUpStatus(stateDir);
    if (s?.ready) {
      process.stdout.write(
        `running in the background (pid ${s.pid}); stop it with: npx vc down --state-dir ${stateDir}\n${summary(s)}\n`,
      );
      return;
    }
    if (!alive(child.pid!)) throw new CliError(`vc up exited before it was ready; see ${logFile}`);
    if (Date.now() > deadline) throw new CliError(`vc up not ready after 10 minutes; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
