import { describe, expect, it } from 'vitest';
import { ProvisionRefused } from '../provisioner.ts';
import { judgeNativeChange, runningKubernetesVersion } from './version.ts';

const sts = (image: string) => ({ spec: { template: { spec: { containers: [{ name: 'apiserver', image }] } } } });

describe('runningKubernetesVersion', () => {
  it.each([
    ['registry.k8s.io/kube-apiserver:v1.36.3', 'v1.36.3'],
    ['127.0.0.1:5000/vc/kube-apiserver:v1.35.4', 'v1.35.4'],
    ['127.0.0.1:5000/vc/kube-apiserver:v1.35.4@sha256:abcd', 'v1.35.4'],
    ['127.0.0.1:5000/vc/kube-apiserver:latest', undefined],
    ['127.0.0.1:5000/vc/kube-apiserver', undefined],
  ])('%s', (image, want) => expect(runningKubernetesVersion(sts(image))).toBe(want));
  it('is undefined without a StatefulSet', () => expect(runningKubernetesVersion(null)).toBeUndefined());
});

describe('judgeNativeChange', () => {
  it.each([
    ['a first start', undefined, 'v1.36.3', 0, undefined],
    ['a patch change', 'v1.36.1', 'v1.36.3', 0, undefined],
    ['one minor up: snapshot first', 'v1.35.4', 'v1.36.3', 1, undefined],
    ['a skipped minor', 'v1.34.2', 'v1.36.3', 0, 'UpgradeRefused'],
    ['a downgrade', 'v1.36.3', 'v1.35.4', 0, 'UpgradeRefused'],
  ])('%s', async (_name, from, to, snapshots, refused) => {
    let taken = 0;
    const run = judgeNativeChange(from, to, 'cv', async () => void taken++);
    if (refused) {
      const e = await run.catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ProvisionRefused);
      expect((e as ProvisionRefused).reason).toBe(refused);
      expect((e as ProvisionRefused).message).toMatch(/^ClusterVersion cv spec.kubernetesVersion: /);
    } else await run;
    expect(taken).toBe(snapshots);
  });
});
