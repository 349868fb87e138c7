/**
 * Address spoofing on the real node's bridge (issue 31 §2). A platform may grant a tenant NET_RAW and NET_ADMIN (a
 * privileged-level policy), or a Pod may get them some other way; the bridge must still not let it speak as another
 * Pod. The attacker here is a super Pod holding both capabilities, as the syncer would write it for such a tenant: it
 * adds another Pod's IP to its interface and pings a target from it, and sends ARP announcing that IP as its own. The
 * target's own kernel counters are the witness: its ICMP echo count and its ARP table. Each attack is first done
 * honestly from the attacker's own address (the target sees that), so a refusal is the bridge's doing.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { antispoofTable } from '../../core/dev/local/antispoof.ts';
import { hostSnapshot, snapshotDiff, type HostSnapshot } from '../../core/dev/local/testing.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { NODE_IMAGES, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { Attempts } from '../security/attempts.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`antispoof.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  status?: { phase?: string; podIP?: string };
}

function pod(namespace: string, name: string, capabilities?: object): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'c',
          image: NODE_IMAGES.busybox,
          imagePullPolicy: 'Never',
          command: ['sleep', '3600'],
          ...(capabilities && { securityContext: { capabilities } }),
        },
      ],
    },
  } as Pod;
}

/** inEchos reads the ICMP echo requests a kernel received from a /proc/net/snmp listing. */
function inEchos(snmp: string): number {
  const [head, values] = snmp.split('\n').filter((l) => l.startsWith('Icmp:'));
  const i = head!.split(/\s+/).indexOf('InEchos');
  return Number(values!.split(/\s+/)[i]);
}

/** arpMac is the MAC a /proc/net/arp listing has for ip (undefined without a complete entry). */
function arpMac(arp: string, ip: string): string | undefined {
  const row = arp.split('\n').find((l) => l.split(/\s+/)[0] === ip);
  const [, , flags, mac] = row?.split(/\s+/) ?? [];
  return flags === '0x2' ? mac : undefined;
}

describe.skipIf(!!skip)("the real node's bridge refuses forged source addresses", () => {
  const attempts = new Attempts();
  let t: TestSuper | undefined;
  let before: HostSnapshot;
  const ip: Record<'attacker' | 'target' | 'victim', string> = { attacker: '', target: '', victim: '' };
  let attackerMac = '';
  const binDir = join(nodeToolchainDir(), 'bin');
  const ns = { attacker: 'a-app', target: 'b-app', victim: 'b-app' } as const;
  /** sh runs a busybox shell command in one of the Pods; a failing command rejects */
  const sh = async (who: keyof typeof ns, script: string): Promise<string> =>
    (
      await exec(
        binaryPath('kubectl'),
        ['--kubeconfig', t!.sc.kubeconfigPath, 'exec', '-n', ns[who], who, '--', 'sh', '-c', script],
        { timeout: 60_000 },
      )
    ).stdout;
  const echos = async () => inEchos(await sh('target', 'cat /proc/net/snmp'));
  const targetArp = () => sh('target', 'cat /proc/net/arp');
  const nftTables = async () => (await exec('nft', ['list', 'tables'])).stdout;

  beforeAll(async () => {
    before = await hostSnapshot(binDir);
    t = await startTestSuper({ nodes: 1, realNodes: 1 });
    const c = t.client;
    for (const n of ['a-app', 'b-app']) {
      await c.create(R.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });
      await eventually(() => c.get(R.serviceaccounts, n, 'default'), 30_000);
    }
    await c.create(R.pods, pod(ns.attacker, 'attacker', { add: ['NET_RAW', 'NET_ADMIN'] }));
    await c.create(R.pods, pod(ns.target, 'target'));
    await c.create(R.pods, pod(ns.victim, 'victim'));
    for (const who of ['attacker', 'target', 'victim'] as const) {
      const p = await eventually(async () => {
        const x = await c.get<Pod>(R.pods, ns[who], who);
        expect(x.status?.phase).toBe('Running');
        return x;
      }, 120_000);
      ip[who] = p.status!.podIP!;
    }
    attackerMac = (await sh('attacker', 'cat /sys/class/net/eth0/address')).trim();
  }, 600_000);

  afterAll(async () => {
    attempts.report('address spoofing on the bridge');
    await t?.stop();
  });

  it('each Pod sandbox is pinned in the node table, and honest traffic passes: pings and ARP from its own address', async () => {
    const table = antispoofTable(t!.sc.realNodes[0]!.cfg.network);
    const listing = (await exec('nft', ['list', 'table', 'bridge', table])).stdout;
    for (const who of ['attacker', 'target', 'victim'] as const)
      expect(listing).toContain(`ip saddr ${ip[who]} accept`);
    const n0 = await echos();
    await sh('attacker', `ping -c 3 -W 2 ${ip.target}`);
    expect((await echos()) - n0).toBeGreaterThanOrEqual(3);
    await sh('attacker', `arping -c 2 -w 3 -I eth0 ${ip.target}`);
    expect(arpMac(await targetArp(), ip.attacker)).toBe(attackerMac);
  });

  it("a Pod with NET_ADMIN and NET_RAW that takes another Pod's IP reaches nobody with it", async () => {
    // the capabilities are real: the kernel lets the attacker add the victim's address to its interface
    await sh('attacker', `ip addr add ${ip.victim}/32 dev eth0`);
    await attempts.attempt("pings to a target with another Pod's source IP", async () => {
      const n0 = await echos();
      const out = await sh('attacker', `ping -c 3 -W 2 -I ${ip.victim} ${ip.target} 2>&1; true`);
      const n1 = await echos();
      expect(n1 - n0, `the target counted forged echo requests; ping said: ${out}`).toBe(0);
      return `the target received none of the 3 forged echo requests (its InEchos stayed at ${n1})`;
    });
    await attempts.attempt("ARP claiming another Pod's IP, to redirect the target's traffic for it", async () => {
      await sh('attacker', `arping -c 3 -w 4 -I eth0 -s ${ip.victim} ${ip.target} 2>&1; true`);
      const mac = arpMac(await targetArp(), ip.victim);
      expect(mac, "the target's ARP table maps the victim's IP to the attacker").not.toBe(attackerMac);
      return `the target's ARP table has ${mac ?? 'no entry'} for ${ip.victim}, not the attacker's ${attackerMac}`;
    });
    await attempts.attempt('pings with a source outside the Pod network (the node itself)', async () => {
      const node = t!.sc.realNodes[0]!.nodeIP;
      await sh('attacker', `ip addr add ${node}/32 dev eth0`);
      const n0 = await echos();
      await sh('attacker', `ping -c 3 -W 2 -I ${node} ${ip.target} 2>&1; true`);
      expect((await echos()) - n0).toBe(0);
      return `the target received none of the echo requests from ${node}`;
    });
  });

  it('stopping the node removes its anti-spoofing table with the rest', async () => {
    const table = antispoofTable(t!.sc.realNodes[0]!.cfg.network);
    expect(await nftTables()).toContain(table);
    await t!.stop();
    t = undefined;
    expect(await nftTables()).not.toContain(table);
    expect(snapshotDiff(before, await hostSnapshot(binDir))).toEqual({});
  });
});
