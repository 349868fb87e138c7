import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import lockfile from 'proper-lockfile';
import cliProgress from 'cli-progress';
import { fromPackageRoot } from '../paths.ts';

/** Versions are the pinned toolchain versions, read from deploy/toolchain/versions.json (the one place they live). */
export interface Versions {
  kubernetes: string;
  etcd: string;
  kwok: string;
}

/** BINARIES lists every executable the toolchain provides. */
export const BINARIES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'kwok',
] as const;
/** Binary is one of BINARIES. */
export type Binary = (typeof BINARIES)[number];

/** pinnedVersions reads deploy/toolchain/versions.json. */
export function pinnedVersions(): Versions {
  const v = JSON.parse(readFileSync(fromPackageRoot('deploy/toolchain/versions.json'), 'utf8')) as Versions;
  return { kubernetes: v.kubernetes, etcd: v.etcd, kwok: v.kwok };
}

/** cacheRoot is where toolchains are cached: $VC_TOOLCHAIN_CACHE, else $XDG_CACHE_HOME or ~/.cache, /virtualcluster-ts/toolchain. */
export function cacheRoot(): string {
  if (process.env.VC_TOOLCHAIN_CACHE) return resolve(process.env.VC_TOOLCHAIN_CACHE);
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'virtualcluster-ts', 'toolchain');
}

/** toolchainDir is the directory holding the binaries of the given versions (it may not exist yet). */
export function toolchainDir(v: Versions = pinnedVersions()): string {
  return join(cacheRoot(), `k8s-${v.kubernetes}_etcd-${v.etcd}_kwok-${v.kwok}`);
}

const MARKER = '.complete';

/** isComplete reports whether a finished build of these versions is in the cache. */
export function isComplete(dir: string): boolean {
  return existsSync(join(dir, MARKER)) && BINARIES.every((b) => existsSync(join(dir, b)));
}

/** binaryPath returns the path of one binary of the pinned toolchain; it throws when the toolchain is not built. */
export function binaryPath(name: Binary, dir = toolchainDir()): string {
  if (!isComplete(dir))
    throw new Error(`the Kubernetes toolchain is not built in ${dir}: run \`npx vc toolchain build\``);
  return join(dir, name);
}

/** BuildOptions tune ensureToolchain. */
export interface BuildOptions {
  versions?: Versions;
  /** where progress goes; defaults to stderr */
  out?: NodeJS.WriteStream;
  /** the build recipe (default deploy/toolchain/build.sh); tests substitute a fast one */
  script?: string;
}

/**
 * ensureToolchain returns the directory of a complete toolchain for the pinned versions, building it when missing.
 * The build runs deploy/toolchain/build.sh into a private temporary directory that is renamed into place only when
 * complete, under a lock, so concurrent callers wait for one build instead of corrupting each other.
 */
export async function ensureToolchain(opts: BuildOptions = {}): Promise<string> {
  const v = opts.versions ?? pinnedVersions();
  const script = opts.script ?? fromPackageRoot('deploy/toolchain/build.sh');
  return ensureBuilt({
    dir: toolchainDir(v),
    isComplete,
    what: `the Kubernetes toolchain (kubernetes ${v.kubernetes}, etcd ${v.etcd}, kwok ${v.kwok})`,
    note: 'a cold build takes about 15-20 minutes on 2 cores; later runs reuse it',
    marker: { ...v },
    out: opts.out ?? process.stderr,
    build: (tmp, out) => runBuildScript(script, [tmp, v.kubernetes, v.etcd, v.kwok], out),
  });
}

/** CachedBuild is one directory ensureBuilt builds once and then finds in the cache. */
export interface CachedBuild {
  /** the finished directory */
  dir: string;
  /** whether dir holds a finished build */
  isComplete: (dir: string) => boolean;
  /** what is built, for the progress lines ("the Kubernetes toolchain (...)") */
  what: string;
  /** one line on how long a cold build takes */
  note: string;
  /** fields written into the .complete marker, next to builtAt and seconds */
  marker: Record<string, unknown>;
  out: NodeJS.WriteStream;
  /** builds into tmp (which does not exist yet); the fields it returns are added to the marker */
  build: (tmp: string, out: NodeJS.WriteStream) => Promise<Record<string, unknown> | void>;
}

/**
 * ensureBuilt returns b.dir when it is complete, else builds it: under a lock next to it (so concurrent callers wait
 * for one build), into a private temporary directory that gets the .complete marker and is renamed into place only
 * when the build succeeded; a failed build leaves nothing behind.
 */
export async function ensureBuilt(b: CachedBuild): Promise<string> {
  const { dir, out } = b;
  if (b.isComplete(dir)) return dir;
  mkdirSync(dirname(dir), { recursive: true });
  const lockTarget = `${dir}.lock`;
  writeFileSync(lockTarget, '', { flag: 'a' });
  let announced = false;
  const release = await lockfile.lock(lockTarget, {
    stale: 60_000,
    update: 10_000,
    retries: {
      retries: 100_000,
      factor: 1,
      minTimeout: 2000,
      maxTimeout: 2000,
      onRetry: () => {
        if (!announced) out.write(`waiting for another build of ${dir} to finish...\n`);
        announced = true;
      },
    } as lockfile.LockOptions['retries'],
  } as lockfile.LockOptions);
  try {
    // Under the lock no other build of dir runs: what an interrupted one left (its .tmp-<pid>, .tmp-<pid>.work) goes.
    for (const e of readdirSync(dirname(dir)))
      if (e.startsWith(`${basename(dir)}.tmp-`)) rmSync(join(dirname(dir), e), { recursive: true, force: true });
    if (b.isComplete(dir)) return dir;
    const tmp = `${dir}.tmp-${process.pid}`;
    const started = Date.now();
    out.write(`building ${b.what} into ${dir}\n`);
    out.write(`${b.note}\n`);
    let extra: Record<string, unknown> | void;
    try {
      extra = await b.build(tmp, out);
      writeFileSync(
        join(tmp, MARKER),
        JSON.stringify({
          ...b.marker,
          ...extra,
          builtAt: new Date().toISOString(),
          seconds: (Date.now() - started) / 1000,
        }) + '\n',
      );
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    out.write(`toolchain ready in ${Math.round((Date.now() - started) / 1000)} s: ${dir}\n`);
    return dir;
  } finally {
    await release();
  }
}

/**
 * runBuildScript runs a build recipe with bash, turning its progress protocol on stderr ("::step LABEL",
 * "::total N" of the packages outside the standard library, "go: building PKG", "::note TEXT" shown as it is, and go's
 * own "go: downloading MOD VERSION") into progress lines on out; it rejects with the last 40 other lines on failure.
 */
export async function runBuildScript(script: string, args: readonly string[], out: NodeJS.WriteStream): Promise<void> {
  const child = spawn('bash', [script, ...args], { stdio: ['ignore', 'inherit', 'pipe'] });
  const progress = new BuildProgress(out);
  const tail: string[] = [];
  const lines = createInterface({ input: child.stderr!, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.startsWith('::step ')) progress.step(line.slice(7));
    else if (line.startsWith('::total ')) progress.total(Number(line.slice(8)));
    else if (line.startsWith('go: building ')) progress.tick(line.slice(13));
    else if (line.startsWith('go: downloading ')) progress.download(line.slice(16));
    else if (line.startsWith('::note ')) progress.note(line.slice(7));
    else {
      tail.push(line);
      if (tail.length > 40) tail.shift();
    }
  });
  const code = await new Promise<number>((res) => child.on('close', (c) => res(c ?? 1)));
  progress.stop();
  if (code !== 0) {
    throw new Error(`toolchain build failed (exit ${code}); last output:\n${tail.join('\n')}`);
  }
}

/** QUIET_MS is the longest a build stays silent in a log: after it, a line says the step is still running. */
export const QUIET_MS = 60_000;

/**
 * BuildProgress shows a bar on a terminal and a line every few percent (or 30 s) elsewhere, such as in CI logs.
 * Module downloads get a line every 30 s with how many so far, and a step that prints nothing for QUIET_MS (one big
 * package compiling, go resolving modules) gets a line saying it is still running, so a cold build is never silent.
 */
export class BuildProgress {
  private bar?: cliProgress.SingleBar;
  private n = 0;
  private max = 0;
  private downloads = 0;
  private label = '';
  private lastPct = -1;
  private lastPrint = 0;
  private lastDownloadPrint = 0;
  private readonly started = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  constructor(private readonly out: NodeJS.WriteStream) {
    this.heartbeat = setInterval(() => this.quiet(), QUIET_MS / 4);
    this.heartbeat.unref();
  }

  step(label: string): void {
    this.finishBar();
    this.label = label;
    this.n = 0;
    this.max = 0;
    this.downloads = 0;
    this.lastPct = -1;
    this.print(`[${this.elapsed()}] ${label}`);
  }

  total(n: number): void {
    this.max = n;
    if (this.out.isTTY) {
      this.bar = new cliProgress.SingleBar(
        {
          format: '  {bar} {value}/{total} packages | {eta_formatted} left | {pkg}',
          stream: this.out,
          hideCursor: true,
          etaBuffer: 200,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(n, 0, { pkg: '' });
    }
  }

  tick(pkg: string): void {
    // On a cold Go cache `go build -v` names the standard library packages too; ::total counts only the others.
    if (!pkg.split('/')[0]!.includes('.')) return;
    this.n++;
    if (this.bar) {
      this.bar.update(Math.min(this.n, this.max), { pkg: pkg.slice(-60) });
      return;
    }
    const pct = this.max ? Math.floor((100 * this.n) / this.max) : 0;
    if ((this.max && pct >= this.lastPct + 5) || Date.now() - this.lastPrint > 30_000) {
      this.lastPct = pct;
      this.print(`[${this.elapsed()}]   ${this.label}: ${this.n}/${this.max || '?'} packages (${pct}%)`);
    }
  }

  /** download counts one "go: downloading MOD VERSION" line; the first and then one every 30 s are shown. */
  download(mod: string): void {
    this.downloads++;
    if (this.bar) return;
    if (this.downloads === 1 || Date.now() - this.lastDownloadPrint > 30_000) {
      this.lastDownloadPrint = Date.now();
      this.print(`[${this.elapsed()}]   ${this.label}: downloading Go modules (${this.downloads} so far: ${mod})`);
    }
  }

  note(text: string): void {
    this.finishBar();
    this.print(text);
  }

  stop(): void {
    clearInterval(this.heartbeat);
    this.finishBar();
  }

  private quiet(): void {
    if (this.bar || !this.label || Date.now() - this.lastPrint < QUIET_MS) return;
    const done = this.n ? `, ${this.n}/${this.max || '?'} packages compiled` : '';
    const got = this.downloads ? `, ${this.downloads} modules downloaded` : '';
    this.print(`[${this.elapsed()}]   ${this.label}: still running${done}${got}`);
  }

  private finishBar(): void {
    this.bar?.stop();
    this.bar = undefined;
  }

  private print(s: string): void {
    this.lastPrint = Date.now();
    this.out.write(s + '\n');
  }

  private elapsed(): string {
    const s = Math.round((Date.now() - this.started) / 1000);
    return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  }
}
