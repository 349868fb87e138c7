/**
 * `npm run conformance`: builds the upstream e2e suite (cached), starts or reuses the embedded default with a real
 * node, creates a tenant `conformance` whose Pods run on the real node, runs the [Conformance] specs of
 * sig-api-machinery and sig-apps (`--all`: of every SIG) against the tenant's control plane, and ends with one
 * summary line. With `--all` (or `--super`) it then runs the same specs against the super cluster the tenant runs on
 * (superside.ts), classifies every spec side by side (sidebyside.ts) and writes side-by-side.json and the dated docs
 * page. The JUnit reports, the suite's logs and the tenant kubeconfig are in the report directory.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Command } from 'commander';
import { parse } from 'yaml';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { hostLockHeld, hostLockOwner, describeOwner } from '../../core/dev/local/hostlock.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { TEST_HANDLER } from '../../core/dev/local/nodeconfig.ts';
import { kubeconfigSecretName, type VirtualCluster } from '../../core/api/virtualcluster.ts';
import { fromPackageRoot } from '../../core/paths.ts';
import { readUpStatus, type UpStatus } from '../../core/programs/cli/up.ts';
import { DEFAULT_STATE_DIR } from '../../core/programs/cli/vcs.ts';
import { writeOciArchive } from '../../core/toolchain/images.ts';
import { nodeImageSpecs, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { pinnedVersions, toolchainDir } from '../../core/toolchain/toolchain.ts';
import { ensureE2eBinaries, ensureE2eNginx, ensureE2eImages, ensureE2eTools, treeEntries } from './e2e.ts';
import { E2E_IMAGES, e2eImageSpec, type E2eImageSources } from './images.ts';
import {
  CONFORMANCE_FOCUS,
  e2eCommand,
  JSON_REPORT,
  parseJUnit,
  summarize,
  summaryLine,
  type TestCase,
} from './report.ts';
import { renderPage } from './page.ts';
import { classify, compare, reproducibleCommand, selection, type RunMeta } from './sidebyside.ts';
import { mergeRecheck, mergeRuns, parseSigs, readSummary } from './sigruns.ts';
import { readGinkgoReport, stepTimes } from './timeline.ts';
import { prepareSuperRun } from './superside.ts';

/** TENANT is the VirtualCluster (namespace default) and TenantPolicy the run creates. */
const TENANT = 'conformance';

interface Options {
  stateDir: string;
  reportDir: string;
  focus: string;
  skip?: string;
  procs: string;
  timeout: string;
  keep?: boolean;
  /** every [Conformance] spec of every SIG ([Serial]/[Disruptive] only with serial) */
  all?: boolean;
  serial?: boolean;
  /** the [Conformance] specs of these SIGs (comma-separated), side by side, merged into the summary */
  sig?: string;
  /** run the same specs against the super cluster too (default with --all and --sig) */
  super?: boolean;
  /** the dated docs page a side-by-side run writes */
  page: string;
  /** the JSON summary a side-by-side run merges its SIGs into (and the page is made from) */
  summary: string;
  /** real nodes of an embedded default the run starts */
  realNodes: string;
  /** the tenant's pods.serviceAccountTokens */
  tokens: string;
  /** write the page from the summary and run nothing */
  pageOnly?: boolean;
}

const log = (s: string): void => void process.stderr.write(`[conformance] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function run(
  cmd: string,
  args: string[],
  o: { quiet?: boolean; env?: Record<string, string> } = {},
): Promise<{ code: number; out: string }> {
  return new Promise((res, rej) => {
    const c = spawn(cmd, args, {
      stdio: ['ignore', o.quiet ? 'pipe' : 'inherit', o.quiet ? 'pipe' : 'inherit'],
      env: { ...process.env, ...o.env },
    });
    let out = '';
    c.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    c.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    c.on('error', rej);
    c.on('close', (code) => res({ code: code ?? 1, out }));
  });
}

// The sources of this checkout, not dist/ (built at `npm ci`, stale after an edit): the run is recorded under the
// checkout's commit, so the embedded default it starts must run that commit's code.
const vc = (...args: string[]) =>
  run(process.execPath, [fromPackageRoot('core/programs/cli/vc.mjs'), ...args], { env: { VC_FROM_SOURCE: '1' } });

/** startOrReuse returns the running embedded default of stateDir, starting one with a real node when none runs. */
async function startOrReuse(stateDir: string, realNodes: string): Promise<{ status: UpStatus; started: boolean }> {
  const running = readUpStatus(stateDir);
  if (running?.ready) {
    log(`reusing the embedded default running in ${stateDir} (pid ${running.pid})`);
    const missing = missingPreloaded(running.managerConfig);
    if (missing.length)
      log(
        `its manager does not list ${missing.join(', ')} as preloaded: tenant Pods pull them Always and fail here ` +
          '(start it with vc up --preloaded-image <ref> for each, or let npm run conformance start it)',
      );
    return { status: running, started: false };
  }
  const otherHolder = async () => {
    const owner = hostLockOwner();
    return (await hostLockHeld()) && owner?.stateDir !== stateDir ? describeOwner(owner) : undefined;
  };
  for (let announced = false; ;) {
    const holder = await otherHolder();
    if (holder) {
      if (!announced) log(`waiting for the real nodes of ${holder} to stop (one set per host)`);
      announced = true;
      await sleep(5000);
      continue;
    }
    log(`starting the embedded default in ${stateDir} with ${realNodes} real node(s)`);
    // The e2e names imported by importImages are platform images like the toolchain's: tenant Pods run them
    // IfNotPresent (every other image is pulled Always, and this host has no registry).
    const preloaded = Object.keys(E2E_IMAGES).flatMap((r) => ['--preloaded-image', r]);
    const r = await vc('up', '--detach', '--real-nodes', realNodes, '--state-dir', stateDir, ...preloaded);
    const status = readUpStatus(stateDir);
    if (r.code === 0 && status?.ready) return { status, started: true };
    // another run took the host lock between the check and vc up's own: wait for it again
    if (await otherHolder()) continue;
    throw new Error(`vc up failed (exit ${r.code}); see ${stateDir}/up.log`);
  }
}

type Node = KubeObject & {
  status?: { conditions?: Array<{ type: string; status: string }> };
  spec?: { taints?: Array<{ key: string }> };
};
const ready = (n: Node) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function waitFor<T>(what: string, timeoutMs: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs / 1000} s`);
    await sleep(1000);
  }
}

function findSockets(dir: string, depth = 4): string[] {
  if (!existsSync(dir) || depth < 0) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isSocket() && e.name === 'containerd.sock') out.push(join(dir, e.name));
    else if (e.isDirectory()) out.push(...findSockets(join(dir, e.name), depth - 1));
  }
  return out;
}

/** ExtraImageDirs are the builds of the images E2E_IMAGES names beyond the node toolchain's. */
interface ExtraImageDirs {
  nginx: string;
  /** ensureE2eImages' directory */
  images: string;
  /** ensureE2eTools' directory */
  tools: string;
}

/**
 * importImages gives the real nodes' containerd the images of E2E_IMAGES (imported: containerd's CRI does not see
 * names added with `ctr images tag`).
 */
async function importImages(stateDir: string, reportDir: string, extra: ExtraImageDirs): Promise<void> {
  const dir = nodeToolchainDir();
  const ctr = join(dir, 'bin', 'ctr');
  // the Debian trees are read once and shared by the images that hold them
  const once = <T>(f: () => T): (() => T) => {
    let v: T | undefined;
    return () => (v ??= f());
  };
  const sources: E2eImageSources = {
    node: nodeImageSpecs(dir, toolchainDir()),
    nginx: once(() => treeEntries(join(extra.nginx, 'rootfs'))),
    images: extra.images,
    tools: once(() => treeEntries(join(extra.tools, 'rootfs'))),
  };
  const archive = join(reportDir, 'e2e-image.tar');
  for (const sock of findSockets(stateDir)) {
    for (const [ref, key] of Object.entries(E2E_IMAGES)) {
      writeOciArchive(archive, { ...e2eImageSpec(key, sources), ref });
      const r = await run(ctr, ['--address', sock, '-n', 'k8s.io', 'images', 'import', archive], { quiet: true });
      if (r.code !== 0) throw new Error(`importing ${ref} into ${sock}: ${r.out.trim()}`);
    }
    log(`imported ${Object.keys(E2E_IMAGES).length} e2e image names into ${sock}`);
  }
  rmSync(archive, { force: true });
}

/**
 * missingPreloaded lists the e2e image names the manager of a running embedded default does not treat as preloaded
 * (tenant Pods would pull them Always from a registry this host cannot reach).
 */
function missingPreloaded(managerConfig: string): string[] {
  const cfg = parse(readFileSync(managerConfig, 'utf8')) as {
    tenantDefaults?: { pods?: { preloadedImages?: string[] } };
  };
  const listed = new Set(cfg.tenantDefaults?.pods?.preloadedImages ?? []);
  return Object.keys(E2E_IMAGES).filter((r) => !listed.has(r));
}

/**
 * tenant creates (or finds) the conformance tenant: a TenantPolicy forcing its Pods onto the real node and showing
 * it the nodes they may run on, and a VirtualCluster under it; returns its kubeconfig once it runs.
 */
async function tenant(superClient: KubeClient, tokens: string): Promise<string> {
  await superClient.apply(
    R.tenantpolicies,
    {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: TENANT },
      spec: {
        grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
        podSecurity: { allowedLevels: ['privileged', 'baseline', 'restricted'], defaultLevel: 'privileged' },
        pods: {
          // a trusted test tenant: the Job specs' Pods mount hostPath volumes (its Pod Security level is privileged),
          // the StatefulSet eviction spec takes a host port twice on one node
          hostAccess: true,
          hostPorts: true,
          // shared (the default) or perPod: only perPod tokens are bound to their Pod
          serviceAccountTokens: tokens,
          // the Job specs pin Pods with a kubernetes.io/hostname nodeSelector; the default allows only os, arch, zones
          nodeLabelKeys: [
            'kubernetes.io/os',
            'kubernetes.io/arch',
            'topology.kubernetes.io/*',
            'kubernetes.io/hostname',
          ],
          forced: {
            nodeSelector: { [REAL_NODE_LABEL]: 'true' },
            tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
          },
        },
        nodes: { view: 'schedulable' },
        // the Service specs make NodePort Services (several at once across their namespaces); the default refuses them
        // the suite reads a NodePort Service's numbers as created and connects to them at once
        services: { nodePort: { allowed: true, max: 100, keepTenantPorts: true } },
        // the RuntimeClass specs create classes with upstream's preconfigured handler, which the real node registers
        runtimeClasses: { handlers: ['runc', TEST_HANDLER] },
      },
    } as KubeObject,
    'vc-conformance',
  );
  await superClient.apply(
    R.virtualclusters,
    {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name: TENANT, namespace: 'default' },
      spec: { provisioner: { type: 'local' }, policyName: TENANT, podSecurityLevel: 'privileged' },
    } as KubeObject,
    'vc-conformance',
  );
  const started = Date.now();
  await waitFor('VirtualCluster default/conformance Running', 300_000, async () => {
    const v = await superClient.get<VirtualCluster>(R.virtualclusters, 'default', TENANT);
    if (v.status?.phase === 'Error') throw new Error(`VirtualCluster default/conformance: ${v.status.message}`);
    return v.status?.phase === 'Running' && v.status.kubeconfigSecretName ? v : undefined;
  });
  log(`tenant default/${TENANT} Running after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const s = await superClient.get<KubeObject & { data?: Record<string, string> }>(
    R.secrets,
    'default',
    kubeconfigSecretName(TENANT),
  );
  return Buffer.from(s.data?.kubeconfig ?? '', 'base64').toString('utf8');
}

/** SuiteRun is one run of the suite: its JUnit cases and how long it took. */
interface SuiteRun {
  cases: TestCase[];
  seconds: number;
}

/**
 * runSuite runs the suite with its output on the terminal and in dir/e2e.log, and reads the JUnit report it leaves in
 * dir; `started` is given the child process (interrupted on SIGINT and SIGTERM).
 */
async function runSuite(
  cmd: { command: string; args: string[] },
  kubeconfig: string,
  dir: string,
  started: (c: ReturnType<typeof spawn>) => void,
): Promise<SuiteRun> {
  log(`${cmd.command} ${cmd.args.map((a) => (/[\\[\]|*( )]/.test(a) ? `'${a}'` : a)).join(' ')}`);
  const runStarted = Date.now();
  const logFile = createWriteStream(join(dir, 'e2e.log'));
  const child = spawn(cmd.command, cmd.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  started(child);
  child.stdout.on('data', (b: Buffer) => (process.stdout.write(b), logFile.write(b)));
  child.stderr.on('data', (b: Buffer) => (process.stderr.write(b), logFile.write(b)));
  const code = await new Promise<number>((res) => child.on('close', (c) => res(c ?? 1)));
  logFile.end();
  const junit = join(dir, 'junit_01.xml');
  if (!existsSync(junit)) throw new Error(`the suite exited ${code} without a JUnit report; see ${dir}/e2e.log`);
  return { cases: parseJUnit(readFileSync(junit, 'utf8')), seconds: (Date.now() - runStarted) / 1000 };
}

/** gitCommit is the short commit of the checkout the harness runs from ("unknown" outside git). */
async function gitCommit(): Promise<string> {
  const r = await run('git', ['-C', fromPackageRoot('.'), 'rev-parse', '--short', 'HEAD'], { quiet: true }).catch(
    () => ({ code: 1, out: '' }),
  );
  return r.code === 0 ? r.out.trim() : 'unknown';
}

async function main(o: Options): Promise<number> {
  if (o.pageOnly) {
    const summary = readSummary(existsSync(resolve(o.summary)) ? readFileSync(resolve(o.summary), 'utf8') : undefined);
    if (!summary) throw new Error(`--page-only: no summary in ${o.summary}`);
    writeFileSync(resolve(o.page), renderPage(summary));
    process.stdout.write(`wrote ${o.page} from ${o.summary}\n`);
    return 0;
  }
  const stateDir = resolve(o.stateDir);
  const reportDir = resolve(o.reportDir);
  const procs = Number(o.procs);
  const sigs = o.sig !== undefined ? parseSigs(o.sig) : undefined;
  const t0 = Date.now();
  // the commit the run's code comes from: read now, since the checkout may move on during a long run
  const commit = gitCommit();
  const binDir = await ensureE2eBinaries();
  // built before the real node starts, so that a cold build does not hold the host lock
  const extra: ExtraImageDirs = {
    nginx: await ensureE2eNginx(),
    images: await ensureE2eImages(),
    tools: await ensureE2eTools(),
  };
  const { status, started } = await startOrReuse(stateDir, o.realNodes);
  const superClient = await KubeClient.fromFile(status.superKubeconfig);
  let child: ReturnType<typeof spawn> | undefined;
  const stop = () => child?.kill('SIGINT');
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    if (!started && !(await superClient.list<Node>(R.nodes, { labelSelector: `${REAL_NODE_LABEL}=true` })).items.length)
      throw new Error(
        `the embedded default in ${stateDir} runs without a real node: stop it (vc down --state-dir ${stateDir}) ` +
          'or give another --state-dir',
      );
    const nodes = await waitFor('a Ready real node in the super cluster', 180_000, async () => {
      const l = await superClient.list<Node>(R.nodes, { labelSelector: `${REAL_NODE_LABEL}=true` });
      return l.items.some(ready) ? l.items : undefined;
    });
    log(`real node: ${nodes.map((n) => n.metadata!.name).join(', ')}`);
    rmSync(reportDir, { recursive: true, force: true });
    mkdirSync(reportDir, { recursive: true });
    await importImages(stateDir, reportDir, extra);
    const kubeconfigText = await tenant(superClient, o.tokens);
    const kubeconfig = join(reportDir, 'tenant.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigText, { mode: 0o600 });
    const tc = await KubeClient.fromFile(kubeconfig);
    try {
      await waitFor('a Ready node in the tenant (its vNode of the real node)', 180_000, async () => {
        const l = await tc.list<Node>(R.nodes);
        return l.items.some(ready) ? true : undefined;
      });
      await waitFor('the default ServiceAccount of the tenant', 60_000, () =>
        tc.get(R.serviceaccounts, 'default', 'default'),
      );
    } finally {
      tc.close();
    }
    const sel = selection({ ...o, sigs });
    const suite = (kc: string, dir: string) =>
      runSuite(
        e2eCommand({
          binDir,
          kubeconfig: kc,
          kubectl: status.kubectl,
          reportDir: dir,
          ...sel,
          procs,
          timeout: o.timeout,
        }),
        kc,
        dir,
        (c) => (child = c),
      );
    const tenantRun = await suite(kubeconfig, reportDir);
    const sum = summarize(tenantRun.cases, sel.focus, sel.skip);
    for (const f of sum.failures) process.stdout.write(`FAILED [${f.status}] ${f.text}\n`);
    for (const f of sum.setupFailures)
      process.stdout.write(`SETUP FAILED [${f.status}] ${f.node}: ${f.message ?? ''}\n`);
    const line = summaryLine(sum, tenantRun.seconds);
    writeFileSync(
      join(reportDir, 'summary.json'),
      JSON.stringify({ ...sum, seconds: tenantRun.seconds, total: (Date.now() - t0) / 1000 }, null, 2) + '\n',
    );
    process.stdout.write(`${line} (report: ${join(reportDir, 'junit_01.xml')})\n`);
    if (!(o.super ?? (o.all || !!sigs))) return sum.failed || sum.setupFailures.length || sum.passed === 0 ? 1 : 0;
    // the same specs against the super cluster the tenant runs on, on the same real node(s)
    const superDir = join(reportDir, 'super');
    mkdirSync(superDir, { recursive: true });
    const opened = await prepareSuperRun(superClient, REAL_NODE_LABEL, REAL_NODE_TAINT);
    log(
      `super run: cordoned ${opened.changes.cordon.join(', ') || 'no node'}, lifted the real-node taint of ${opened.changes.untaint.join(', ') || 'no node'}`,
    );
    let superRun: SuiteRun;
    try {
      superRun = await suite(status.superKubeconfig, superDir);
    } finally {
      await opened.restore();
    }
    const results = classify(tenantRun.cases, superRun.cases, sel.focus, sel.skip);
    const side = compare(tenantRun.cases, superRun.cases, sel.focus, sel.skip);
    // where the tenant's time went, step by step, beside the super cluster's
    const timelines = [reportDir, superDir].map((d) => join(d, JSON_REPORT));
    if (timelines.every((f) => existsSync(f))) {
      const [tr, sr] = timelines.map((f) => readGinkgoReport(readFileSync(f, 'utf8')));
      const steps = stepTimes(tr!, sr!);
      for (const g of side.sigs) if (g.timing && steps.has(g.sig)) g.timing.steps = steps.get(g.sig);
    }
    writeFileSync(join(reportDir, 'side-by-side.json'), JSON.stringify(side, null, 2) + '\n');
    const run: RunMeta = {
      date: new Date().toISOString().slice(0, 10),
      commit: await commit,
      kubernetes: pinnedVersions().kubernetes,
      command: reproducibleCommand(process.argv.slice(2)),
      focus: sel.focus,
      ...(sel.skip && { skip: sel.skip }),
      seconds: { tenant: tenantRun.seconds, super: superRun.seconds },
    };
    // this run's SIGs in place of the same SIGs of earlier runs (a focused run's specs in place of the same specs);
    // the page shows them all
    const summaryFile = resolve(o.summary);
    const earlier = readSummary(existsSync(summaryFile) ? readFileSync(summaryFile, 'utf8') : undefined);
    const merged = o.all || sigs ? mergeRuns(earlier, side, run) : mergeRecheck(earlier, results, run);
    mkdirSync(dirname(summaryFile), { recursive: true });
    writeFileSync(summaryFile, JSON.stringify(merged, null, 2) + '\n');
    mkdirSync(dirname(resolve(o.page)), { recursive: true });
    writeFileSync(resolve(o.page), renderPage(merged));
    const x = side.totals;
    process.stdout.write(
      `side by side: ${x.selected} selected, ${x.passedTenant} passed on the tenant, ${x.passedSuper} on super; ` +
        `${x.gaps} fidelity gaps, ${x.designLimits} design limits, ${x.environment} environment, ${x.tenantOnly} tenant only ` +
        `(${join(reportDir, 'side-by-side.json')}; merged into ${o.summary} and ${o.page})\n`,
    );
    return x.gaps || x.tenantOnly || superRun.cases.length === 0 ? 1 : 0;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    if (!o.keep) {
      await superClient.delete(R.virtualclusters, 'default', TENANT).catch(() => false);
      await superClient.delete(R.tenantpolicies, undefined, TENANT).catch(() => false);
    }
    superClient.close();
    if (started && !o.keep) {
      log('stopping the embedded default it started');
      await vc('down', '--state-dir', stateDir);
    }
  }
}

const program = new Command('conformance')
  .description(
    'run the upstream [Conformance] specs (sig-api-machinery and sig-apps, or --all) against a tenant on a real node, ' +
      'and with --all against its super cluster too',
  )
  .option('--state-dir <dir>', 'state directory of the embedded default to reuse or start', DEFAULT_STATE_DIR)
  .option(
    '--report-dir <dir>',
    'where the JUnit report, the suite log and the tenant kubeconfig go',
    'conformance-results',
  )
  .option('--focus <regexp>', 'Ginkgo focus: which specs run', CONFORMANCE_FOCUS)
  .option('--skip <regexp>', 'Ginkgo skip: specs left out')
  .option('--procs <n>', 'parallel Ginkgo processes ([Serial] specs still run alone)', '4')
  .option('--timeout <duration>', "the suite's time limit", '3h')
  .option('--keep', 'leave the tenant (and an embedded default it started) running afterwards')
  .option('--all', 'every [Conformance] spec of every SIG, against the tenant and the super cluster side by side')
  .option(
    '--sig <names>',
    'the [Conformance] specs of these SIGs (comma-separated, e.g. node,storage), side by side; their results replace ' +
      'the same SIGs of the summary',
  )
  .option('--serial', 'with --all or --sig, the [Serial] and [Disruptive] specs too')
  .option('--super', 'run the selected specs against the super cluster too (the default with --all and --sig)')
  .option('--no-super', 'with --all or --sig, the tenant only')
  .option('--real-nodes <n>', 'real nodes of an embedded default the run starts (2 for the specs that need two)', '1')
  .option('--tokens <mode>', "the tenant's pods.serviceAccountTokens: shared or perPod", 'shared')
  .option('--page <file>', 'the dated docs page a side-by-side run writes', 'docs/conformance-results.md')
  .option(
    '--summary <file>',
    'the JSON summary a side-by-side run merges its SIGs into, and the page is made from',
    'docs/conformance-results.json',
  )
  .option('--page-only', 'write the page from the summary again (after a change to its format) and run nothing')
  .action(async (o: Options) => {
    process.exitCode = await main(o);
  });

await program.parseAsync(process.argv).catch((e: Error) => {
  process.stderr.write(`conformance: ${e.message}\n`);
  process.exitCode = 1;
});
