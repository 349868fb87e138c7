/**
 * gVisor on the real node (issue 13): the node's containerd has runsc (systrap platform, no KVM needed) as a second
 * runtime handler, and a Pod in the platform's sandbox RuntimeClass (the kind `runtimeClasses.required` names) runs
 * on gVisor's kernel, not the host's: its /proc/version and dmesg are gVisor's, while a Pod without a class (runc)
 * sees the host's kernel, which shows the check can tell the two apart.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { LABEL } from '../../core/names/names.ts';
import { hostSnapshot, snapshotDiff, type HostSnapshot } from '../../core/dev/local/testing.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT } from '../../core/dev/local/realnode.ts';
import { NODE_IMAGES, nodeToolchainDir } from '../../core/toolchain/node.ts';
import { binaryPath } from '../../core/toolchain/toolchain.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`gvisor.it.test.ts skipped: ${skip}\n`);

interface Pod extends KubeObject {
  spec?: { nodeName?: string; runtimeClassName?: string };
  status?: { phase?: string };
}

function pod(name: string, runtimeClassName?: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(runtimeClassName && { runtimeClassName }),
      nodeSelector: { [REAL_NODE_LABEL]: 'true' },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'c', image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
    },
  } as Pod;
}

describe.skipIf(!!skip)('gVisor RuntimeClass on the real node', () => {
  let t: TestSuper | undefined;
  let before: HostSnapshot;
  const binDir = join(nodeToolchainDir(), 'bin');
  const kubectl = (...args: string[]) =>
    exec(binaryPath('kubectl'), ['--kubeconfig', t!.sc.kubeconfigPath, ...args], { timeout: 30_000 });
  const running = (name: string) =>
    eventually(async () => {
      const p = await t!.client.get<Pod>(R.pods, 'default', name);
      expect(p.status?.phase).toBe('Running');
      return p;
    }, 90_000);

  beforeAll(async () => {
    before = await hostSnapshot(binDir);
    t = await startTestSuper({ nodes: 1, realNodes: 1 });
    if (!t.sc.realNodes[0]!.cfg.runsc) throw new Error('the node toolchain has no runsc: gVisor did not build');
    // the platform's sandbox class, public to every tenant, as a TenantPolicy's runtimeClasses.required names it
    await t.client.create(R.runtimeclasses, {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'gvisor', labels: { [LABEL.public]: 'true' } },
      handler: 'runsc',
    });
    await eventually(() => t!.client.get(R.serviceaccounts, 'default', 'default'), 30_000);
  }, 600_000);
  afterAll(async () => {
    await t?.stop();
  });

  it('a Pod in the gvisor class sees gVisor kernel, a runc Pod the host kernel', async () => {
    await t!.client.create(R.pods, pod('sandboxed', 'gvisor'));
    await t!.client.create(R.pods, pod('plain'));
    const started = Date.now();
    const sandboxed = await running('sandboxed');
    const sandboxMs = Date.now() - started;
    await running('plain');
    expect(sandboxed.spec?.nodeName).toBe(t!.sc.realNodes[0]!.name);
    const host = readFileSync('/proc/version', 'utf8').trim();
    const inSandbox = (await kubectl('exec', 'sandboxed', '--', 'cat', '/proc/version')).stdout.trim();
    const inRunc = (await kubectl('exec', 'plain', '--', 'cat', '/proc/version')).stdout.trim();
    process.stdout.write(`gvisor: Pod Running ${sandboxMs} ms after create; /proc/version inside: ${inSandbox}\n`);
    expect(inRunc).toBe(host);
    expect(inSandbox).not.toBe(host);
    expect(inSandbox).toMatch(/gvisor/i);
    // gVisor's own kernel log, not the host's (which a container may not read at all)
    const dmesg = (await kubectl('exec', 'sandboxed', '--', 'dmesg')).stdout;
    expect(dmesg).toMatch(/gVisor/);
  });

  it('stopping removes the sandbox too: the runsc processes, its state and mounts are gone', async () => {
    await t!.stop();
    t = undefined;
    expect(snapshotDiff(before, await hostSnapshot(binDir))).toEqual({});
  });
});
