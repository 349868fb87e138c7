/**
 * The `vc-antispoof` CNI plugin (core/dev/local/antispoof.ts): chained after the bridge plugin in a real node's
 * network, it pins each Pod's veth to the Pod's own MAC and IPv4 addresses with nftables. containerd runs it through
 * the wrapper the node writes into its plugin directory (antispoofWrapper); it speaks CNI 1.0 on stdin, stdout and
 * the CNI_* environment variables, and fails the sandbox when its rules cannot be written.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  antispoofTable,
  ANTISPOOF_MAP,
  mapElements,
  podChain,
  podChainScript,
  podInterfaceOf,
  podRemoveScript,
} from './antispoof.ts';

const exec = promisify(execFile);
const VERSIONS = ['0.4.0', '1.0.0', '1.1.0'];

interface NetConf {
  cniVersion?: string;
  /** the node's CNI network name (antispoofTable) */
  name?: string;
  /** the bridge, told apart from the host veth in the previous result */
  bridge?: string;
  prevResult?: Parameters<typeof podInterfaceOf>[0];
}

async function nft(script: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile('nft', ['-f', '-'], { timeout: 20_000 }, (err, _out, stderr) =>
      err ? reject(new Error(`nft: ${stderr || err.message}`)) : resolve(),
    );
    child.stdin!.end(script);
  });
}

async function elements(table: string): Promise<Array<{ veth: string; chain: string }>> {
  try {
    const { stdout } = await exec('nft', ['-j', 'list', 'map', 'bridge', table, ANTISPOOF_MAP], { timeout: 20_000 });
    return mapElements(stdout);
  } catch {
    return [];
  }
}

async function main(): Promise<void> {
  const cmd = process.env.CNI_COMMAND;
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const conf = (chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {}) as NetConf;
  const cniVersion = conf.cniVersion ?? '1.0.0';
  if (cmd === 'VERSION') {
    process.stdout.write(JSON.stringify({ cniVersion, supportedVersions: VERSIONS }));
    return;
  }
  if (!conf.name || !conf.bridge) throw new Error('vc-antispoof: the network config needs name and bridge');
  const table = antispoofTable(conf.name);
  const chain = podChain(process.env.CNI_CONTAINERID ?? '');
  if (cmd === 'ADD' || cmd === 'CHECK') {
    if (!conf.prevResult) throw new Error('vc-antispoof runs chained after the bridge plugin: no prevResult');
    const pod = podInterfaceOf(conf.prevResult, conf.bridge, process.env.CNI_IFNAME ?? '', process.env.CNI_NETNS ?? '');
    const current = await elements(table);
    if (cmd === 'CHECK') {
      if (!current.some((e) => e.veth === pod.veth && e.chain === chain))
        throw new Error(`vc-antispoof: ${pod.veth} is not pinned in table bridge ${table}`);
      return;
    }
    await nft(
      podChainScript(
        table,
        chain,
        pod,
        current.some((e) => e.veth === pod.veth),
      ),
    );
    process.stdout.write(JSON.stringify({ ...conf.prevResult, cniVersion }));
    return;
  }
  if (cmd === 'DEL') {
    const current = await elements(table);
    // gone already (a second DEL, or the node's table swept): nothing to do
    await nft(podRemoveScript(table, chain, current)).catch(() => undefined);
    return;
  }
  throw new Error(`vc-antispoof: unknown CNI_COMMAND ${JSON.stringify(cmd)}`);
}

main().catch((e: unknown) => {
  const msg = e instanceof Error ? e.message : String(e);
  process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', code: 999, msg }));
  process.exit(1);
});
