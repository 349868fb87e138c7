/**
 * This module decides, without I/O, whether a tenant's control plane may move from the Kubernetes version it runs to
 * the one its ClusterVersion now names, following Kubernetes' version-skew policy: one minor at a time, upwards, with
 * etcd first, then kube-apiserver, then kube-controller-manager (never newer than the apiserver it talks to). A patch
 * change within a minor is an ordinary roll. Provisioners call it before they restart anything, so a refused change
 * leaves the running tenant as it was.
 */

/** UPGRADE_REFUSED is the reason of a version change the skew policy forbids (a skipped minor, a downgrade). */
export const UPGRADE_REFUSED = 'UpgradeRefused';
/** UNKNOWN_VERSION is the reason of a ClusterVersion that names a Kubernetes version this platform cannot run. */
export const UNKNOWN_VERSION = 'UnknownKubernetesVersion';

/** KubeVersion is a parsed `vMAJOR.MINOR.PATCH` (a pre-release or build suffix is kept in `text` only). */
export interface KubeVersion {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

/** parseKubeVersion parses `v1.36.3` (also `1.36.3`, `v1.36.3-rc.0`); undefined for anything else. */
export function parseKubeVersion(text: string): KubeVersion | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.-]+)?$/.exec(text.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), text };
}

/** UpgradeVerdict is what a version change is: nothing, a patch roll, one minor up, or refused and why. */
export type UpgradeVerdict =
  | { kind: 'same' }
  | { kind: 'patch' }
  | { kind: 'minor' }
  | { kind: 'refused'; reason: typeof UPGRADE_REFUSED | typeof UNKNOWN_VERSION; message: string };

/**
 * upgradeVerdict judges moving a control plane from `from` to `to`. Refused: a version that does not parse, another
 * major, a lower minor (Kubernetes does not support downgrading a control plane: the apiserver may have written
 * objects in a storage version the older one cannot read), and more than one minor up (the skew policy allows an
 * apiserver one minor ahead of the controller manager and of the previous apiserver, so minors are upgraded one by
 * one). A move to a lower patch of the same minor is a patch roll, which Kubernetes allows.
 */
export function upgradeVerdict(from: string, to: string): UpgradeVerdict {
  if (from === to) return { kind: 'same' };
  const a = parseKubeVersion(from);
  const b = parseKubeVersion(to);
  if (!b) return { kind: 'refused', reason: UNKNOWN_VERSION, message: `${to} is not a Kubernetes version (vX.Y.Z)` };
  if (!a) return { kind: 'refused', reason: UPGRADE_REFUSED, message: `the running version ${from} is not vX.Y.Z` };
  const step = `from ${from} to ${to}`;
  if (a.major !== b.major)
    return { kind: 'refused', reason: UPGRADE_REFUSED, message: `${step}: a change of major version is not supported` };
  if (b.minor < a.minor)
    return {
      kind: 'refused',
      reason: UPGRADE_REFUSED,
      message:
        `${step} is a downgrade: a Kubernetes control plane cannot move to an older minor (its data may be stored ` +
        `in versions the older one cannot read)`,
    };
  if (b.minor > a.minor + 1)
    return {
      kind: 'refused',
      reason: UPGRADE_REFUSED,
      message:
        `${step} skips ${b.minor - a.minor - 1} minor version(s): Kubernetes' version-skew policy upgrades one minor ` +
        `at a time; name v${a.major}.${a.minor + 1}.x first`,
    };
  return { kind: b.minor === a.minor ? 'patch' : 'minor' };
}
