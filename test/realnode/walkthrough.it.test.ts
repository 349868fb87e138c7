import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostLockHeld } from '../../core/dev/local/hostlock.ts';
import { REAL_NODE_LABEL } from '../../core/dev/local/realnode.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually } from '../harness.ts';

const execP = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const vcBin = join(root, 'core/programs/cli/vc.mjs');

interface Status {
  pid: number;
  superKubeconfig: string;
  tenants: Array<{ namespace: string; name: string; phase: string; kubeconfig?: string }>;
}

/**
 * walkthroughCommands are the command lines of the README's Walkthrough code block, in order: comments and blank
 * lines dropped, a trailing comment kept (bash ignores it).
 */
function walkthroughCommands(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Walkthrough\n'));
  const block = /```bash\n([\s\S]*?)\n```/.exec(section);
  if (!block) throw new Error('README.md: no bash block under ## Walkthrough');
  return block[1]!.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
}

/**
 * The README walkthrough, run as a newcomer would: `vc up --detach` with a real node, then every command of the
 * README's block as written (bash, in a fresh directory, `npx vc` being this checkout's vc): a tenant pushed to the
 * tenant repository, an HTTP server Deployment and its Service in a tenant, running as real containers on the real
 * node under the prefixed super namespace, another Pod fetching it by DNS name, kubectl logs and exec into the
 * container, and `vc down` leaving no process.
 */
describe('README walkthrough against vc up --detach on a real node', () => {
  let dir: string;
  let state: string;
  const env = {
    ...process.env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Walkthrough',
    GIT_AUTHOR_EMAIL: 'walkthrough@example.com',
    GIT_COMMITTER_NAME: 'Walkthrough',
    GIT_COMMITTER_EMAIL: 'walkthrough@example.com',
    GIT_TERMINAL_PROMPT: '0',
  };
  const vc = async (...args: string[]) =>
    (await execP(process.execPath, [vcBin, ...args], { cwd: dir, timeout: 600_000, env })).stdout;
  const status = async () => JSON.parse(await vc('status', '--state-dir', state, '-o', 'json')) as Status;
  const superKubectl = async (...args: string[]) =>
    (await execP(binaryPath('kubectl'), ['--kubeconfig', (await status()).superKubeconfig, ...args])).stdout;
  // `npx vc` in the README is this checkout's vc; variables the block assigns (A=..., K=...) hold for later lines
  const prelude = `set -eo pipefail\nnpx() { [ "$1" = vc ] || return 127; shift; "${process.execPath}" "${vcBin}" "$@"; }\n`;
  const assignments: string[] = [];
  const bash = async (line: string): Promise<string> => {
    const script = `${prelude}${assignments.join('\n')}\n${line}\n`;
    const r = await execP('bash', ['-c', script], { cwd: dir, timeout: 300_000, env }).catch(
      (e: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`README walkthrough: \`${line}\` failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
      },
    );
    if (/^[A-Za-z_]\w*=/.test(line)) assignments.push(line);
    return r.stdout;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-walkthrough-'));
    // the README's default state directory, relative to where its commands run
    state = join(dir, '.state/default');
    // another checkout's real nodes may run: wait for the host lock to be free rather than fall back to kwok
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      while ((await hostLockHeld()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2000));
      try {
        await vc('up', '--detach', '--state-dir', state, '--real-nodes', '1');
        break;
      } catch (e) {
        const log = existsSync(join(state, 'up.log')) ? readFileSync(join(state, 'up.log'), 'utf8') : '';
        if (!/another set of real nodes/.test(`${String(e)}${log}`) || Date.now() > deadline) throw e;
      }
    }
  }, 35 * 60_000);

  afterAll(async () => {
    const s = await status().catch(() => undefined);
    await vc('down', '--state-dir', state).catch(() => undefined);
    if (s) expect(() => process.kill(s.pid, 0)).toThrow();
    const left = await execP('pgrep', ['-f', state])
      .then((r) => r.stdout.trim())
      .catch(() => '');
    expect(left).toBe('');
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('comes up with the two sample tenants Running', async () => {
    await eventually(async () => {
      const x = await status();
      expect(
        x.tenants
          .filter((t) => t.phase === 'Running')
          .map((t) => t.name)
          .sort(),
      ).toEqual(['dev', 'staging']);
    }, 120_000);
  });

  it(
    'runs every command of the README walkthrough, with the results it names',
    async () => {
      const realNode = (await superKubectl('get', 'nodes', '-l', `${REAL_NODE_LABEL}=true`, '-o', 'name')).trim();
      expect(realNode).toMatch(/^node\/\S+$/);
      const webPods = async () =>
        (
          await superKubectl(
            'get',
            'pods',
            '-A',
            '-l',
            'app=web',
            '-o',
            'jsonpath={range .items[*]}{.metadata.name}\n{end}',
          )
        )
          .trim()
          .split('\n');
      const podName = /^web-[a-z0-9]+-[a-z0-9]{5}$/;
      // what each step must show; every one must name exactly one README line, so the block cannot drift from the test
      const checks: Array<{ line: RegExp; check: (out: string) => Promise<void> }> = [
        {
          line: /git -C tenants push/,
          check: () =>
            eventually(
              async () => expect((await status()).tenants.find((t) => t.name === 'qa')?.phase).toBe('Running'),
              120_000,
            ).then(() => undefined),
        },
        {
          line: /kubectl rollout status deployment web/,
          // real containers on the real node, under the tenant's prefixed namespace in the super cluster
          check: async () => {
            const out = await superKubectl(
              'get',
              'pods',
              '-A',
              '-l',
              'app=web',
              '-o',
              'jsonpath={range .items[*]}{.metadata.namespace} {.spec.nodeName} {.status.phase}{"\\n"}{end}',
            );
            const lines = out.trim().split('\n');
            expect(lines).toHaveLength(2);
            const node = realNode.slice('node/'.length);
            for (const l of lines)
              expect(l).toMatch(new RegExp(`^vc-[0-9a-f]{16}-default-dev-default ${node} Running$`));
          },
        },
        {
          line: /kubectl logs client/,
          check: async (out) => {
            expect(out.trim()).toMatch(podName);
            expect(await webPods()).toContain(out.trim());
          },
        },
        {
          line: /kubectl logs deploy\/web/,
          check: async (out) => expect(out.length).toBeGreaterThan(0),
        },
        {
          line: /kubectl exec deploy\/web -- hostname/,
          check: async (out) => {
            expect(out.trim()).toMatch(podName);
            expect(await webPods()).toContain(out.trim());
          },
        },
        {
          line: /kubectl top pods/,
          // both web Pods under their tenant names, each with CPU and memory in use
          check: async (out) => {
            const rows = out
              .trim()
              .split('\n')
              .slice(1)
              .map((l) => l.trim().split(/\s+/));
            const web = rows.filter(([name]) => podName.test(name ?? ''));
            expect(web.map(([name]) => name).sort()).toEqual((await webPods()).sort());
            for (const [, cpu, memory] of web) {
              expect(cpu).toMatch(/^\d+m$/);
              expect(memory).toMatch(/^[1-9]\d*Mi$/);
            }
          },
        },
      ];
      const lines = walkthroughCommands();
      for (const c of checks)
        expect(
          lines.filter((l) => c.line.test(l)),
          String(c.line),
        ).toHaveLength(1);
      expect(lines.at(-1)).toMatch(/^npx vc down\b/);
      for (const line of lines.slice(0, -1)) {
        const out = await bash(line);
        await checks.find((c) => c.line.test(line))?.check(out);
      }
      const s = await status();
      await bash(lines.at(-1)!);
      expect(() => process.kill(s.pid, 0)).toThrow();
    },
    15 * 60_000,
  );
});
