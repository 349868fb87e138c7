import { readFileSync } from 'node:fs';
import type { KubeObject } from '../../kube/client.ts';
import { ConfigError, loadManagerConfig } from '../manager/config.ts';
import { InstallError } from './render.ts';

/** MANAGER_CONFIG names the ConfigMap and key deploy/manager/deployment.yaml mounts as the manager's configuration. */
export const MANAGER_CONFIG = { namespace: 'vc-system', name: 'vc-manager', key: 'manager.yaml' } as const;

/** KUBELET_PKI names the vn-agent DaemonSet volume that mounts the nodes' kubelet credential directory. */
export const KUBELET_PKI = { namespace: 'vc-vn-agent', daemonSet: 'vc-vn-agent', volume: 'kubelet-pki' } as const;

/**
 * readManagerConfig reads a `--manager-config` file and validates it as the manager will (the configuration schema);
 * an invalid file is an InstallError naming the file, the field and the problem, before anything is applied.
 */
export function readManagerConfig(file: string): string {
  try {
    loadManagerConfig(file);
  } catch (e) {
    if (e instanceof ConfigError) throw new InstallError(`--manager-config: ${e.message}`);
    throw new InstallError(`--manager-config ${file}: ${(e as Error).message}`);
  }
  return readFileSync(file, 'utf8');
}

type Mutator = (o: KubeObject) => KubeObject;

/** replaceOne returns objects with the one matching object replaced by edit's copy; none matching is an InstallError. */
function replaceOne(objects: readonly KubeObject[], match: (o: KubeObject) => boolean, what: string, edit: Mutator) {
  const i = objects.findIndex(match);
  if (i < 0) throw new InstallError(`render: ${what} is not in the rendered objects`);
  return objects.map((o, j) => (j === i ? edit(structuredClone(o)) : o));
}

/**
 * withManagerConfig is the render with the manager's configuration (the vc-manager ConfigMap's manager.yaml) replaced
 * by text, as a platform's overlay replaces it. Pure.
 */
export function withManagerConfig(objects: readonly KubeObject[], text: string): KubeObject[] {
  const m = MANAGER_CONFIG;
  return replaceOne(
    objects,
    (o) => o.kind === 'ConfigMap' && o.metadata?.namespace === m.namespace && o.metadata?.name === m.name,
    `ConfigMap ${m.namespace}/${m.name}`,
    (o) => {
      const cm = o as KubeObject & { data?: Record<string, string> };
      cm.data = { ...cm.data, [m.key]: text };
      return cm;
    },
  );
}

/**
 * withKubeletPkiDir is the render with the vn-agent's kubelet credential volume on the nodes' directory dir (where
 * their kubelets keep kubelet-client-current.pem; /var/lib/kubelet/pki in the base). Pure.
 */
export function withKubeletPkiDir(objects: readonly KubeObject[], dir: string): KubeObject[] {
  if (!dir.startsWith('/')) throw new InstallError(`--kubelet-pki-dir ${dir}: must be an absolute path on the nodes`);
  const k = KUBELET_PKI;
  return replaceOne(
    objects,
    (o) => o.kind === 'DaemonSet' && o.metadata?.namespace === k.namespace && o.metadata?.name === k.daemonSet,
    `DaemonSet ${k.namespace}/${k.daemonSet}`,
    (o) => {
      const ds = o as KubeObject & {
        spec?: { template?: { spec?: { volumes?: Array<{ name: string; hostPath?: { path: string } }> } } };
      };
      const vol = ds.spec?.template?.spec?.volumes?.find((v) => v.name === k.volume && v.hostPath);
      if (!vol)
        throw new InstallError(`render: DaemonSet ${k.namespace}/${k.daemonSet} has no hostPath volume ${k.volume}`);
      vol.hostPath!.path = dir;
      return ds;
    },
  );
}
