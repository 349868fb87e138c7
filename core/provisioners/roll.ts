/**
 * This module names what a roll of a control plane is made of, for provisioners and the lifecycle's decisions
 * (core/lifecycle/rollout.ts) alike: the components in the order they restart, how a changed setting picks them, and
 * how a roll that stopped is told.
 */

/**
 * ROLL_ORDER is the order components restart in: etcd first (the apiserver reconnects to it), then the apiserver,
 * then the controller manager, which needs the apiserver.
 */
export const ROLL_ORDER = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;

/** RollComponent is one of ROLL_ORDER. */
export type RollComponent = (typeof ROLL_ORDER)[number];

/** ComponentSettings is what each component is started with; a change of one component's settings restarts it. */
export type ComponentSettings = Record<RollComponent, unknown>;

/** stableJson is a JSON text of v with object keys sorted, so equal settings compare equal whatever their order. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** planRoll lists, in ROLL_ORDER, the components whose settings differ between `running` and `desired`. */
export function planRoll(running: ComponentSettings, desired: ComponentSettings): RollComponent[] {
  return ROLL_ORDER.filter((c) => stableJson(running[c]) !== stableJson(desired[c]));
}

/** RollFailure is a roll that stopped: the component that did not come back, why, and whether its old one serves. */
export interface RollFailure {
  component: RollComponent;
  message: string;
  /** the previous process (with the previous settings) serves again */
  kept: boolean;
  /**
   * the roll was refused before anything restarted (an upgrade the version-skew policy forbids, a version with no
   * binaries, a snapshot that failed), with this reason: `message` says why, and the tenant runs as it did
   */
  refused?: string;
}
