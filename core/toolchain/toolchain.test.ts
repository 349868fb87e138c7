import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BINARIES, ensureToolchain, isComplete, toolchainDir, type Versions } from './toolchain.ts';

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

  it('keeps a failed build out of the cache and reports its output', async () => {
    writeFileSync(script, '#!/usr/bin/env bash\necho "compile error in pkg/x" >&2\nexit 3\n');
    await expect(ensureToolchain({ versions, script, out: quiet() })).rejects.toThrow(
      /exit 3[\s\S]*compile error in pkg\/x/,
    );
    expect(isComplete(toolchainDir(versions))).toBe(false);
    expect(readdirSync(join(root, 'cache')).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });
});
