import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  BINARIES,
  BuildProgress,
  ensureToolchain,
  isComplete,
  QUIET_MS,
  runBuildScript,
  toolchainDir,
  type Versions,
} from './toolchain.ts';

const versions: Versions = { kubernetes: 'v0.0.1-test', etcd: 'v0.0.2-test', kwok: 'v0.0.3-test' };

describe('toolchain cache', () => {
  let root: string;
  let script: string;
  let prev: string | undefined;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'vc-toolchain-'));
    prev = process.env.VC_TOOLCHAIN_CACHE;
    process.env.VC_TOOLCHAIN_CACHE = join(root, 'cache');
    // A stand-in recipe: slow enough for two callers to overlap, writes every binary, counts its runs.
    script = join(root, 'build.sh');
    writeFileSync(
      script,
      `#!/usr/bin/env bash\nset -e\necho run >> ${join(root, 'runs')}\nmkdir -p "$1"\necho "::step building" >&2\necho "::total 2" >&2\nsleep 1\n` +
        BINARIES.map((b) => `echo "go: building ${b}" >&2; printf '#!/bin/sh\\necho ${b}\\n' > "$1/${b}"`).join('\n') +
        '\n',
    );
    chmodSync(script, 0o755);
  });
  afterEach(() => {
    if (prev === undefined) delete process.env.VC_TOOLCHAIN_CACHE;
    else process.env.VC_TOOLCHAIN_CACHE = prev;
    rmSync(root, { recursive: true, force: true });
  });

  const quiet = () => new PassThrough() as unknown as NodeJS.WriteStream;

  it('builds once when two callers ask at the same time, and both get a complete directory', async () => {
    const [a, b] = await Promise.all([
      ensureToolchain({ versions, script, out: quiet() }),
      ensureToolchain({ versions, script, out: quiet() }),
    ]);
    expect(a).toBe(b);
    expect(a).toBe(toolchainDir(versions));
    expect(isComplete(a)).toBe(true);
    expect(readFileSync(join(root, 'runs'), 'utf8').trim().split('\n')).toHaveLength(1);
    // No half-built leftovers beside the finished directory.
    expect(readdirSync(join(root, 'cache')).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('does nothing when a complete build of these versions is cached', async () => {
    await ensureToolchain({ versions, script, out: quiet() });
    await ensureToolchain({ versions, script, out: quiet() });
    expect(readFileSync(join(root, 'runs'), 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('removes what a build killed outright left beside the directory (its .tmp-<pid> and .tmp-<pid>.work)', async () => {
    const dir = toolchainDir(versions);
    for (const left of [`${dir}.tmp-999999`, `${dir}.tmp-999999.work`]) {
      mkdirSync(join(left, 'bin'), { recursive: true });
      writeFileSync(join(left, 'bin', 'half'), '');
    }
    await ensureToolchain({ versions, script, out: quiet() });
    expect(isComplete(dir)).toBe(true);
    expect(readdirSync(join(root, 'cache')).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('keeps a failed build out of the cache and reports its output', async () => {
    writeFileSync(script, '#!/usr/bin/env bash\necho "compile error in pkg/x" >&2\nexit 3\n');
    await expect(ensureToolchain({ versions, script, out: quiet() })).rejects.toThrow(
      /exit 3[\s\S]*compile error in pkg\/x/,
    );
    expect(isComplete(toolchainDir(versions))).toBe(false);
    expect(readdirSync(join(root, 'cache')).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });
});

describe('build progress on a log (not a terminal)', () => {
  const collect = () => {
    const lines: string[] = [];
    const out = { isTTY: false, write: (s: string) => lines.push(...s.trimEnd().split('\n')) };
    return { lines, out: out as unknown as NodeJS.WriteStream };
  };
  afterEach(() => vi.useRealTimers());

  it('says a step is still running after QUIET_MS of silence, with the packages of ::total done, and then again', () => {
    vi.useFakeTimers();
    const { lines, out } = collect();
    const p = new BuildProgress(out);
    p.step('compiling kubelet');
    p.total(10);
    p.tick('internal/abi');
    p.tick('k8s.io/a');
    p.tick('vendor/golang.org/x/net/http2/hpack');
    lines.length = 0;
    vi.advanceTimersByTime(QUIET_MS - 1000);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(QUIET_MS / 2);
    expect(lines).toEqual(['[1m00s]   compiling kubelet: still running, 1/10 packages compiled']);
    vi.advanceTimersByTime(QUIET_MS);
    expect(lines).toHaveLength(2);
    p.stop();
    vi.advanceTimersByTime(5 * QUIET_MS);
    expect(lines).toHaveLength(2);
  });

  it('counts go module downloads: the first at once, then a line at most every 30 s', () => {
    vi.useFakeTimers();
    const { lines, out } = collect();
    const p = new BuildProgress(out);
    p.step('downloading Kubernetes modules');
    p.download('k8s.io/api v0.36.3');
    p.download('k8s.io/apimachinery v0.36.3');
    vi.advanceTimersByTime(31_000);
    p.download('k8s.io/client-go v0.36.3');
    p.stop();
    expect(lines).toEqual([
      '[0m00s] downloading Kubernetes modules',
      '[0m00s]   downloading Kubernetes modules: downloading Go modules (1 so far: k8s.io/api v0.36.3)',
      '[0m31s]   downloading Kubernetes modules: downloading Go modules (3 so far: k8s.io/client-go v0.36.3)',
    ]);
  });

  it("turns a recipe's go: downloading lines into progress, not into the failure output", async () => {
    const root = mkdtempSync(join(tmpdir(), 'vc-progress-'));
    try {
      const script = join(root, 'build.sh');
      writeFileSync(
        script,
        'echo "::step resolving" >&2\necho "go: downloading example.com/m v1.0.0" >&2\necho "tidy failed" >&2\nexit 1\n',
      );
      const { lines, out } = collect();
      const err = await runBuildScript(script, [], out).catch((e: Error) => e);
      expect(String(err)).toMatch(/exit 1\); last output:\ntidy failed$/);
      expect(lines[1]).toMatch(/resolving: downloading Go modules \(1 so far: example.com\/m v1.0.0\)$/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
