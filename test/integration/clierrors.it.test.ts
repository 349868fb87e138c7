import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');

/** vc runs the CLI as a user would, with no kubeconfig of its own, returning its exit code and output. */
async function vc(args: string[], home: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, HOME: home, KUBECONFIG: '', VC_KUBECONFIG: '' };
  try {
    const r = await execP(process.execPath, [vcBin, ...args], { env, cwd: home, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : 1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

// Every error is one line per problem that names the flag, file, object or field and says what to do; -v adds the
// stack. No cluster is needed to get any of these wrong, except the one whose kubeconfig points at a closed port.
describe('vc errors: one line that says what is wrong and what to do', () => {
  let dir: string;
  let closed: Server;
  const f = (name: string) => join(dir, name);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-errors-'));
    mkdirSync(f('empty'));
    writeFileSync(
      f('bad.yaml'),
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: a\nspec:\n  provisioner:\n    type: nope\n',
    );
    writeFileSync(
      f('ns.yaml'),
      'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: VirtualCluster\nmetadata:\n  name: a\n  namespace: team-a\n',
    );
    // A port that was free a moment ago and is closed now: connecting to it is refused.
    closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    writeFileSync(
      f('closed.kubeconfig'),
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}"}}]\n` +
        'users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    [['gett'], /^vc: unknown command 'gett' \(Did you mean get\?\) \(see --help\)$/],
    [['get', '--bogus'], /^vc: unknown option '--bogus' \(see --help\)$/],
    [['get', '-o', 'table2'], /^vc: --output table2: not a format of this command; use one of table, wide, json/],
    [['version', '--client', '-o', 'wide'], /^vc: --output wide: not a format of this command; use one of text, json/],
    [['version', '--client', '-o', 'jsonpath={.x'], /^vc: --output jsonpath=\{\.x: unclosed action at column 1/],
    [['get', '--kubeconfig', '/nonexistent/kc'], /^vc: --kubeconfig \/nonexistent\/kc: no such file$/],
    [
      ['get', '--kubeconfig', 'closed.kubeconfig'],
      /^vc: cannot reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\): if it is the cluster, check --kubeconfig/,
    ],
    [['create', '-f', 'missing.yaml'], /^vc: .*missing\.yaml: /],
    [
      ['create', '-f', 'bad.yaml'],
      /^vc: .*bad\.yaml: VirtualCluster default\/a: \/spec\/provisioner\/type must be one of "local"/,
    ],
    [
      ['create', '-f', 'ns.yaml', '-n', 'team-b'],
      /^vc: ns\.yaml: VirtualCluster team-a\/a: metadata\.namespace is not team-b \(-n\)/,
    ],
    [['create'], /^vc: required option '-f, --file <file>' not specified \(see --help\)$/],
    [['delete', 'a', '--wait', 'soon'], /^vc: --wait: soon is not a number of seconds >= 0$/],
    [['validate'], /^vc: vc validate: which directory\? give -f DIR/],
    [['validate', '-f', 'empty'], /^vc: empty: no tenant definitions found$/],
    [['status', '--state-dir', 'empty'], /^vc: nothing is running in .*empty: start it with vc up$/],
    [['completion', 'tcsh'], /^vc: completion tcsh: not a shell vc completes; use bash, zsh or fish$/],
    [['manager', '-c', 'missing.yaml'], /^vc: missing\.yaml: /],
  ])('vc %j', async (args, want) => {
    const r = await vc(args, dir);
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(want);
  });

  it('vc diff exits 2 on an error, as kubectl diff, since 1 means differences', async () => {
    const r = await vc(['diff', '-f', 'empty', '--kubeconfig', 'closed.kubeconfig'], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^vc: cannot reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  it('with -v (or --v=N) an error shows its stack as well', async () => {
    for (const v of ['-v', '--v=6']) {
      const r = await vc(['get', v, '--kubeconfig', 'closed.kubeconfig'], dir);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^vc: cannot reach 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
      expect(r.stderr).toMatch(/\n\s+at /);
    }
  });
});
