import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/client.ts';
import { KUBELET_PKI, MANAGER_CONFIG, readManagerConfig, withKubeletPkiDir, withManagerConfig } from './overrides.ts';

const managerCM: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: MANAGER_CONFIG.name, namespace: MANAGER_CONFIG.namespace },
  data: { [MANAGER_CONFIG.key]: 'old: true\n', other: 'kept' },
} as KubeObject;
const otherCM: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'vc-system' } };
const agent: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: KUBELET_PKI.daemonSet, namespace: KUBELET_PKI.namespace },
  spec: {
    template: {
      spec: {
        volumes: [
          { name: 'config', configMap: { name: 'vc-vn-agent' } },
          { name: KUBELET_PKI.volume, hostPath: { path: '/var/lib/kubelet/pki', type: 'Directory' } },
        ],
      },
    },
  },
} as KubeObject;

describe('withManagerConfig', () => {
  it("replaces the manager ConfigMap's manager.yaml only, leaving the input untouched", () => {
    const input = [otherCM, managerCM];
    const out = withManagerConfig(input, 'new: true\n');
    expect(out[0]).toBe(otherCM);
    expect((out[1] as { data?: Record<string, string> }).data).toEqual({
      [MANAGER_CONFIG.key]: 'new: true\n',
      other: 'kept',
    });
    expect((managerCM as { data?: Record<string, string> }).data?.[MANAGER_CONFIG.key]).toBe('old: true\n');
  });
  it('a render without the manager ConfigMap is an error naming it', () => {
    expect(() => withManagerConfig([otherCM], 'x: 1')).toThrow(
      /ConfigMap vc-system\/vc-manager is not in the rendered/,
    );
  });
});

describe('withKubeletPkiDir', () => {
  const table: Array<{ dir: string; objects: KubeObject[]; want: string | RegExp }> = [
    { dir: '/srv/node-1/pki', objects: [agent], want: '/srv/node-1/pki' },
    { dir: 'relative/pki', objects: [agent], want: /--kubelet-pki-dir relative\/pki: must be an absolute path/ },
    { dir: '/x', objects: [managerCM], want: /DaemonSet vc-vn-agent\/vc-vn-agent is not in the rendered objects/ },
  ];
  for (const c of table)
    it(`${c.dir} → ${String(c.want)}`, () => {
      if (typeof c.want !== 'string') {
        expect(() => withKubeletPkiDir(c.objects, c.dir)).toThrow(c.want);
        return;
      }
      const out = withKubeletPkiDir(c.objects, c.dir)[0] as typeof agent & {
        spec: { template: { spec: { volumes: Array<{ name: string; hostPath?: { path: string; type: string } }> } } };
      };
      expect(out.spec.template.spec.volumes.find((v) => v.name === KUBELET_PKI.volume)?.hostPath).toEqual({
        path: c.want,
        type: 'Directory',
      });
      expect(JSON.stringify(agent)).toContain('/var/lib/kubelet/pki');
    });
});

describe('readManagerConfig', () => {
  it('returns a valid file as is and refuses an invalid one naming the file and field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-mcfg-'));
    try {
      const good = join(dir, 'good.yaml');
      const text =
        'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: ManagerConfiguration\nvirtualClusters: { enabled: true }\n';
      writeFileSync(good, text);
      expect(readManagerConfig(good)).toBe(text);
      const bad = join(dir, 'bad.yaml');
      writeFileSync(bad, 'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: ManagerConfiguration\nvirtualClusters: 3\n');
      expect(() => readManagerConfig(bad)).toThrow(/--manager-config: .*bad\.yaml.*virtualClusters/);
      expect(() => readManagerConfig(join(dir, 'missing.yaml'))).toThrow(/--manager-config.*missing\.yaml/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000); // compiling the configuration schema takes seconds on a busy machine
});
