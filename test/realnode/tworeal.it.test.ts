/**
 * `vc up --real-nodes 2` (issue 13): two real nodes on this host, each its own kubelet, containerd, kube-proxy and
 * bridge; a Pod on one reaches a Pod on the other by IP and a Service spreads over both; `vc down` leaves nothing.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostLockHeld } from '../../core/dev/local/hostlock.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason } from '../harness.ts';

const execP = promisify(execFile);
const vcBin = join(import.meta.dirname, '../../core/programs/cli/vc.mjs');
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`tworeal.it.test.ts skipped: ${skip}\n`);

/** server is an agnhost netexec Pod pinned by the platform to one real node. */
const server = (name: string, node: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'two' } },
    spec: {
      nodeName: node,
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'c',
          image: NODE_IMAGES.agnhost,
          imagePullPolicy: 'Never',
          args: ['netexec', '--http-port=8080'],
        },
      ],
    },
  });

describe.skipIf(!!skip)('vc up --real-nodes 2', () => {
  let dir: string;
  let state: string;
  let kc: string;
  const vc = async (...args: string[]) =>
    (await execP(process.execPath, [vcBin, ...args], { timeout: 600_000 })).stdout;
  const kubectl = async (input: string | undefined, ...args: string[]) => {
    const p = execP(binaryPath('kubectl'), ['--kubeconfig', kc, ...args], { timeout: 60_000 });
    if (input !== undefined) p.child.stdin!.end(input);
    return (await p).stdout;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-tworeal-'));
    state = join(dir, 'state');
    const deadline = Date.now() + 30 * 60_000;
    while ((await hostLockHeld()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2000));
    await vc('up', '--detach', '--state-dir', state, '--nodes', '1', '--real-nodes', '2');
    kc = (JSON.parse(readFileSync(join(state, 'status.json'), 'utf8')) as { superKubeconfig: string }).superKubeconfig;
  }, 35 * 60_000);

  afterAll(async () => {
    await vc('down', '--state-dir', state).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('starts two Ready real nodes, each with its own Pod network, and Pods reach each other across them', async () => {
    const nodes = (await kubectl(undefined, 'get', 'nodes', '-l', `${REAL_NODE_LABEL}=true`, '-o', 'name'))
      .trim()
      .split('\n')
      .map((n) => n.replace(/^node\//, ''))
      .sort();
    expect(nodes).toEqual(['super-real-0', 'super-real-1']);
    for (const [i, n] of nodes.entries()) await kubectl(server(`s${i}`, n), 'create', '-f', '-');
    const ips = await eventually(
      async () => {
        const out = await kubectl(
          undefined,
          'get',
          'pods',
          '-l',
          'app=two',
          '-o',
          'jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.podIP}{"\\n"}{end}',
        );
        const rows = out.trim().split('\n').sort();
        expect(rows).toHaveLength(2);
        for (const r of rows) expect(r.split(' ')[1]).toBe('Running');
        return rows.map((r) => r.split(' ')[2]!);
      },
      120_000,
      1000,
    );
    // two Pod networks: the Pods' addresses are on different /24s
    expect(ips[0]!.split('.').slice(0, 3)).not.toEqual(ips[1]!.split('.').slice(0, 3));
    const fetch = (from: string, url: string) =>
      kubectl(undefined, 'exec', from, '--', 'sh', '-c', `timeout 5 wget -qO- ${url}`);
    // Running is not listening: netexec binds its port a moment after its container starts (no readiness probe here)
    await eventually(
      async () => {
        expect(await fetch('s0', `http://${ips[1]}:8080/hostname`)).toBe('s1');
        expect(await fetch('s1', `http://${ips[0]}:8080/hostname`)).toBe('s0');
      },
      60_000,
      500,
    );
    // a Service spreads over both nodes' Pods, through both kube-proxies' rules
    await kubectl(
      undefined,
      'expose',
      'pod',
      's0',
      '--name=two',
      '--port=80',
      '--target-port=8080',
      '--selector=app=two',
    );
    const ip = (await kubectl(undefined, 'get', 'service', 'two', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    const seen = new Set<string>();
    await eventually(
      async () => {
        seen.add(await fetch('s0', `http://${ip}/hostname`));
        seen.add(await fetch('s1', `http://${ip}/hostname`));
        expect([...seen].sort()).toEqual(['s0', 's1']);
      },
      60_000,
      200,
    );
  });

  it('vc down removes both nodes: no process, interface, mount or iptables rule of them is left', async () => {
    const records = ['super-real-0', 'super-real-1'].map(
      (n) =>
        JSON.parse(readFileSync(join(state, 'nodes', n, 'realnode.json'), 'utf8')) as {
          bridge: string;
          network: string;
        },
    );
    await vc('down', '--state-dir', state);
    const left = await execP('pgrep', ['-f', state])
      .then((r) => r.stdout.trim())
      .catch(() => '');
    expect(left).toBe('');
    const links = (await execP('ip', ['-o', 'link'])).stdout;
    const rules = (await execP('iptables-save')).stdout;
    for (const r of records) {
      expect(links).not.toContain(`${r.bridge}:`);
      expect(rules).not.toContain(`"${r.network}"`);
    }
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(state);
  });
});
