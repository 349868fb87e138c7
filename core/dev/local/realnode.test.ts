import { describe, expect, it } from 'vitest';
import type { RealNodePreflight } from './nodehost.ts';
import { iptablesCleanupScript, isKubeRouterSet, shimSocketName } from './nodesweep.ts';
import {
  REAL_NODE_TAINT,
  chooseRealNodes,
  cniConfig,
  containerdConfig,
  gatewayOf,
  kubeProxyConfig,
  kubeRouterArgs,
  kubeletConfig,
  nodeNetworkNames,
  protoFields,
  protoString,
  shimSocketDir,
  MAX_SHIM_SOCKET_DIR,
  type RealNodeConfigInput,
  type RealNodeHost,
} from './realnode.ts';

const input: RealNodeConfigInput = {
  name: 'super-real-0',
  dir: '/s/nodes/super-real-0',
  binDir: '/tc/bin',
  cniDir: '/tc/cni',
  podCidr: '10.213.7.0/24',
  serviceCidr: '10.96.0.0/16',
  nodeIP: '10.213.7.1',
  bridge: 'vcbr01234567',
  network: 'vc-01234567',
  cgroupRoot: '/vc-01234567',
  cgroup: 'v1',
  capSysResource: false,
  runsc: false,
  kubeletPort: 20250,
  kubeletHealthzPort: 20248,
  proxyHealthzPort: 20256,
  proxyMetricsPort: 20249,
};

describe('containerdConfig', () => {
  it('keeps every path under the node directory and adapts to the host', () => {
    const toml = containerdConfig(input);
    for (const l of toml.split('\n').filter((x) => /= '\//.test(x)))
      expect(l, l).toMatch(/'(\/s\/nodes\/super-real-0|\/tc\/)/);
    expect(toml).toContain('restrict_oom_score_adj = true');
    expect(toml).toContain("BinaryName = '/tc/bin/runc'");
    expect(toml).toContain(`bin_dirs = ['${input.cniDir}', '/s/nodes/super-real-0/cni/bin']`);
    expect(toml).toContain("sandbox = 'registry.k8s.io/pause:3.10'");
    expect(toml).toContain('imports = []');
    expect(toml).toMatch(/nri\.v1\.nri'\]\n {2}disable = true/);
    expect(toml).not.toContain('runtimes.runsc');
    // upstream's preconfigured RuntimeClass handler runs runc
    expect(toml).toMatch(/runtimes\.test-handler\]\n {2}runtime_type = 'io\.containerd\.runc\.v2'/);
    expect(toml).toContain("[plugins.'io.containerd.shim.v1.manager']\n  socket_dir = '/s/nodes/super-real-0/s'");
  });

  it.each([
    [{ capSysResource: true, runsc: true }, 'restrict_oom_score_adj = false', true],
    [{ capSysResource: false, runsc: false }, 'restrict_oom_score_adj = true', false],
  ])('%o', (over, oom, runsc) => {
    const toml = containerdConfig({ ...input, ...over });
    expect(toml).toContain(oom);
    expect(toml.includes("runtime_type = 'io.containerd.runsc.v1'")).toBe(runsc);
  });
});

describe('kube-router', () => {
  it('runs the firewall only, as its own identity, on the node', () => {
    const a = kubeRouterArgs({ ...input, kubeRouter: '/np/bin/kube-router', kubeRouterHealthPort: 20244 });
    for (const f of ['--run-firewall=true', '--run-router=false', '--run-service-proxy=false', '--enable-cni=false'])
      expect(a).toContain(f);
    expect(a).toContain('--kubeconfig=/s/nodes/super-real-0/kube-router.kubeconfig');
    expect(a).toContain('--hostname-override=super-real-0');
    expect(a).toContain('--service-cluster-ip-range=10.96.0.0/16');
    expect(a).toContain('--service-node-port-range=30000-32767');
  });

  it.each([
    ['KUBE-SRC-ABCDEF', true],
    ['KUBE-DST-ABCDEF', true],
    ['kube-router-local-ips', true],
    ['inet6:KUBE-SRC-ABCDEF', true],
    ['cali40all-hosts', false],
    ['my-set', false],
  ])("ipset %s is kube-router's: %s", (name, want) => {
    expect(isKubeRouterSet(name)).toBe(want);
  });
});

describe('shimSocketDir', () => {
  it.each([
    ['/s/nodes/super-real-0', '/s/nodes/super-real-0/s'],
    ['/tmp/vc-test-abcdef/nodes/super-real-0', '/tmp/vc-test-abcdef/nodes/super-real-0/s'],
    ['/root/.local/state/virtualcluster-ts/nodes/super-real-0', /^\/run\/vc-s-[0-9a-f]{8}$/],
  ])('%s -> %s', (dir, want) => {
    const got = shimSocketDir(dir);
    if (typeof want === 'string') expect(got).toBe(want);
    else expect(got).toMatch(want);
    expect(got.length).toBeLessThanOrEqual(MAX_SHIM_SOCKET_DIR);
  });

  it('gives two long node directories two directories', () => {
    const a = '/root/.local/state/virtualcluster-ts/nodes/super-real-0';
    expect(shimSocketDir(a)).not.toBe(shimSocketDir(a.replace('-0', '-1')));
  });
});

describe('kubeletConfig', () => {
  it('requires client certificates and asks the apiserver to authorize', () => {
    const k = kubeletConfig(input);
    expect(k.authentication).toEqual({
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: '/s/nodes/super-real-0/pki/ca.crt' },
    });
    expect(k.authorization).toEqual({ mode: 'Webhook' });
    expect(k.readOnlyPort).toBe(0);
    expect(k.registerWithTaints).toEqual([REAL_NODE_TAINT]);
    expect(k.podLogsDir).toBe('/s/nodes/super-real-0/pod-logs');
    expect(k.cgroupDriver).toBe('cgroupfs');
  });

  it('evicts Pods before the node filesystem is full, and leaves the toolchain images alone', () => {
    const k = kubeletConfig(input);
    expect(k.evictionHard).toEqual({ 'nodefs.available': '5%', 'nodefs.inodesFree': '5%', 'imagefs.available': '0%' });
    expect(k.imageGCHighThresholdPercent).toBe(100);
  });

  it.each([
    [{}, [REAL_NODE_TAINT]],
    [{ untainted: false }, [REAL_NODE_TAINT]],
    [{ untainted: true }, []],
  ] as const)('%j registers with the taints %j', (o, want) => {
    expect(kubeletConfig({ ...input, ...o }).registerWithTaints).toEqual(want);
  });

  it.each([
    ['v1', false],
    ['v2', undefined],
  ] as const)('cgroup %s sets failCgroupV1 to %s', (cgroup, want) => {
    expect(kubeletConfig({ ...input, cgroup }).failCgroupV1).toBe(want);
  });
});

describe('network', () => {
  it('CNI: a bridge of its own with the node IP as gateway, MAC and IP spoofing checked, host-local state under the node', () => {
    const c = cniConfig(input) as { name: string; plugins: Array<Record<string, unknown>> };
    expect(c.name).toBe('vc-01234567');
    expect(c.plugins.map((p) => p.type)).toEqual(['bridge', 'vc-antispoof', 'portmap']);
    expect(c.plugins[1]).toEqual({ type: 'vc-antispoof', bridge: 'vcbr01234567' });
    expect(c.plugins[0]).toMatchObject({
      bridge: 'vcbr01234567',
      macspoofchk: true,
      ipam: {
        ranges: [[{ subnet: '10.213.7.0/24', gateway: '10.213.7.1' }]],
        dataDir: '/s/nodes/super-real-0/cni/ipam',
      },
    });
  });

  it('kube-proxy: iptables mode, the Pod CIDR, no localhost NodePorts', () => {
    expect(kubeProxyConfig(input)).toMatchObject({
      mode: 'iptables',
      clusterCIDR: '10.213.7.0/24',
      iptables: { localhostNodePorts: false },
      hostnameOverride: 'super-real-0',
    });
  });

  it('names fit Linux limits and differ per directory', () => {
    const a = nodeNetworkNames('/a');
    const b = nodeNetworkNames('/b');
    expect(a.bridge.length).toBeLessThanOrEqual(15);
    expect(a.bridge).not.toBe(b.bridge);
    expect(gatewayOf('10.213.7.0/24')).toBe('10.213.7.1');
  });
});

describe('iptablesCleanupScript', () => {
  const save = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    ':CNI-aaa - [0:0]',
    ':CNI-bbb - [0:0]',
    ':KEEP - [0:0]',
    '-A POSTROUTING -s 10.213.7.2/32 -m comment --comment "name: \\"vc-01234567\\" id: \\"x\\"" -j CNI-aaa',
    '-A POSTROUTING -s 10.1.0.2/32 -m comment --comment "name: \\"other\\" id: \\"y\\"" -j CNI-bbb',
    '-A CNI-aaa -d 10.213.7.0/24 -m comment --comment "name: \\"vc-01234567\\" id: \\"x\\"" -j ACCEPT',
    '-A CNI-bbb -d 10.1.0.0/24 -m comment --comment "name: \\"other\\" id: \\"y\\"" -j ACCEPT',
    'COMMIT',
  ].join('\n');

  it("removes only this network's chains and the jumps to them", () => {
    const s = iptablesCleanupScript('nat', save, (c, rules) => rules.some((r) => r.includes('vc-01234567')));
    expect(s.split('\n')).toEqual([
      '*nat',
      '-D POSTROUTING -s 10.213.7.2/32 -m comment --comment "name: \\"vc-01234567\\" id: \\"x\\"" -j CNI-aaa',
      '-F CNI-aaa',
      '-X CNI-aaa',
      'COMMIT',
      '',
    ]);
  });

  it('is empty when nothing matches or the table differs', () => {
    expect(iptablesCleanupScript('nat', save, () => false)).toBe('');
    expect(iptablesCleanupScript('filter', save, () => true)).toBe('');
  });
});

describe('host bits', () => {
  it("computes containerd's shim socket name", () => {
    // checked against a running containerd 2.4.2: /run/containerd/s/<this> was the shim's socket
    expect(
      shimSocketName(
        '/tmp/n2/vc-3YBnd0/nodes/super-real-0/containerd.sock',
        'k8s.io',
        'e66b5c669259bd760a96dd15382528bc25724888ffbbe34f8192ddd641277f8b',
      ),
    ).toBe('36e442344e0a6fc1a9fdccf52c7e85564d845fbf628ddcefa2583d522e5ffad0');
  });

  it('encodes and decodes the protobuf fields CRI calls use', () => {
    const id = 'a'.repeat(200);
    const item = protoString(1, id);
    expect(item.subarray(0, 3)).toEqual(Buffer.from([0x0a, 0xc8, 0x01]));
    // ListPodSandboxResponse { items: [PodSandbox { id }] } plus a varint field to skip
    const reply = Buffer.concat([Buffer.from([0x0a, 0xcb, 0x01]), item, Buffer.from([0x10, 0x01])]);
    const fields = protoFields(reply);
    expect(fields.map((f) => f.field)).toEqual([1]);
    expect(protoFields(fields[0]!.bytes)[0]!.bytes.toString()).toBe(id);
  });
});

describe('chooseRealNodes', () => {
  const ok: RealNodePreflight = { ok: true, problems: [], cgroup: 'v1', capSysResource: true };
  const bad: RealNodePreflight = {
    ok: false,
    problems: ['no overlay file system (modprobe overlay)', 'iptables not found on PATH'],
    capSysResource: false,
  };
  const owner = { pid: 4242, stateDir: '/var/lib/other', since: '2026-11-27T03:00:00Z' };
  const host = (p: RealNodePreflight, held: boolean): RealNodeHost => ({
    preflight: async () => p,
    lockOwner: () => (held ? owner : undefined),
    lockHeld: async () => held,
  });
  const lockLine =
    'another set of real nodes runs on this host (pid 4242, state /var/lib/other, since 2026-11-27T03:00:00Z)';

  it.each([
    [undefined, ok, false, 1, 'real nodes: 1 (kubelet, containerd, kube-proxy on this host; cgroup v1)'],
    [2, ok, false, 2, 'real nodes: 2 (kubelet, containerd, kube-proxy on this host; cgroup v1)'],
    [0, bad, true, 0, 'real nodes: none (--real-nodes 0); simulated (kwok) nodes only'],
    [
      undefined,
      bad,
      false,
      0,
      'real nodes: none, simulated (kwok) nodes only: no overlay file system (modprobe overlay); iptables not found on PATH',
    ],
    [undefined, ok, true, 0, `real nodes: none, simulated (kwok) nodes only: ${lockLine}`],
  ] as const)('requested %s: one line, and the count', async (req, p, held, count, line) => {
    const c = await chooseRealNodes(req, host(p, held));
    expect(c).toEqual({ count, line });
    expect(c.line).not.toContain('\n');
  });

  it('says when nothing may lower oom_score_adj here', async () => {
    const c = await chooseRealNodes(undefined, host({ ...ok, capSysResource: false }, false));
    expect(c.line).toBe(
      'real nodes: 1 (kubelet, containerd, kube-proxy on this host; cgroup v1, restrict_oom_score_adj (no CAP_SYS_RESOURCE))',
    );
  });

  it.each([
    [
      1,
      bad,
      false,
      '--real-nodes 1: this host cannot run real nodes:\n  no overlay file system (modprobe overlay)\n  iptables not found on PATH',
    ],
    [1, ok, true, `--real-nodes 1: ${lockLine}; stop it first or use --real-nodes 0`],
    [-1, ok, false, '--real-nodes: -1 is not a whole number >= 0'],
    [1.5, ok, false, '--real-nodes: 1.5 is not a whole number >= 0'],
  ] as const)('asked for %s where it cannot be: an error naming each missing piece', async (req, p, held, msg) => {
    await expect(chooseRealNodes(req, host(p, held))).rejects.toThrow(msg);
  });

  it('a recorded holder that is gone does not count', async () => {
    const c = await chooseRealNodes(undefined, { ...host(ok, false), lockOwner: () => owner });
    expect(c.count).toBe(1);
  });
});
