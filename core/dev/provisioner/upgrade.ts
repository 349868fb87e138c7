import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ComponentSettings, RollFailure } from '../../provisioners/roll.ts';
import { UNKNOWN_VERSION, upgradeVerdict } from '../../provisioners/upgrade.ts';
import {
  ensureKubernetesMinor,
  previousKubernetes,
  tenantBinaries,
  type TenantBinaries,
} from '../../toolchain/minors.ts';
import { pinnedVersions } from '../../toolchain/toolchain.ts';
import { ProvisionRefused } from '../../provisioners/provisioner.ts';
import type { LocalSettings } from './start.ts';

/**
 * This module is the local provisioner's side of a Kubernetes version change: which binaries a version runs, which
 * version a tenant runs now (its settings, and a file in its state directory that outlives the manager), and the
 * verdict on a change before anything restarts (core/provisioners/upgrade.ts holds the skew policy).
 */

/** VERSION_FILE records, in a tenant's state directory, the Kubernetes version its control plane last ran. */
export const VERSION_FILE = 'kubernetes-version';

/** UPGRADE_SNAPSHOT_FAILED is the reason of an upgrade held back because its snapshot could not be taken. */
export const UPGRADE_SNAPSHOT_FAILED = 'UpgradeSnapshotFailed';

/** VersionedBinaries are the binaries of a tenant's version, or why that version cannot run here. */
export type VersionedBinaries = { binaries: TenantBinaries } | { problem: string };

/** kubernetesOf is the Kubernetes version in a component's settings (`version.kubernetes`), else the pinned one. */
export function kubernetesOf(settings: ComponentSettings[keyof ComponentSettings]): string {
  const v = (settings as { version?: { kubernetes?: string } } | undefined)?.version?.kubernetes;
  return v ?? pinnedVersions().kubernetes;
}

/**
 * prepareBinaries builds the previous pinned minor's binaries when `version` is that minor and they are missing (a
 * one-time build with progress on stderr; the pinned version's come with the toolchain). Other versions need nothing,
 * nor does a change from `was` that will be refused: a refused downgrade must not wait for a build.
 */
export async function prepareBinaries(was: string | undefined, version: string | undefined): Promise<void> {
  if (!version || version !== previousKubernetes()) return;
  if (was && upgradeVerdict(was, version).kind === 'refused') return;
  await ensureKubernetesMinor({ version });
}

/**
 * assertStartable refuses to start a tenant whose Kubernetes version has no binaries here, or whose state directory
 * records a version `was` it may not move from in one step (a manager restarted after its ClusterVersion was edited).
 */
export function assertStartable(was: string | undefined, desired: LocalSettings, cvName: string | undefined): void {
  if (desired.bins && 'problem' in desired.bins) throw new ProvisionRefused(UNKNOWN_VERSION, desired.bins.problem);
  const v = was ? upgradeVerdict(was, kubernetesOf(desired.components['kube-apiserver'])) : undefined;
  if (v?.kind === 'refused')
    throw new ProvisionRefused(v.reason, `${cvName ? `ClusterVersion ${cvName} ` : ''}${v.message}`);
}

/** binariesOf resolves the binaries of `version`, or says why it cannot run here. */
export function binariesOf(version: string | undefined, cvName: string | undefined): VersionedBinaries {
  try {
    return { binaries: tenantBinaries(version) };
  } catch (e) {
    const where = cvName ? `ClusterVersion ${cvName} spec.kubernetesVersion` : 'spec.kubernetesVersion';
    return { problem: `${where}: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** recordedVersion is the version a tenant's control plane last ran (VERSION_FILE), if recorded. */
export function recordedVersion(dir: string): string | undefined {
  const f = join(dir, VERSION_FILE);
  return existsSync(f) ? readFileSync(f, 'utf8').trim() || undefined : undefined;
}

/** recordVersion writes the version the tenant's control plane now runs. */
export function recordVersion(dir: string, version: string): void {
  writeFileSync(join(dir, VERSION_FILE), version + '\n');
}

/**
 * judgeChange decides on moving a running tenant from `from` to `to` before anything restarts: a change the skew
 * policy forbids or a version this toolchain cannot run is refused (the tenant keeps running as it is); a move to
 * the next minor calls beforeUpgrade first (the snapshot), and a failure there holds the upgrade back. Answers the
 * refusal, or undefined to roll.
 */
export async function judgeChange(
  from: string,
  to: string,
  bins: VersionedBinaries,
  beforeUpgrade: ((from: string, to: string) => Promise<void>) | undefined,
  cvName: string | undefined,
): Promise<RollFailure | undefined> {
  const refuse = (refused: string, message: string): RollFailure => ({
    component: 'kube-apiserver',
    message,
    kept: true,
    refused,
  });
  const v = upgradeVerdict(from, to);
  const where = cvName ? `ClusterVersion ${cvName} spec.kubernetesVersion` : 'spec.kubernetesVersion';
  if (v.kind === 'refused') return refuse(v.reason, `${where}: ${v.message}; the tenant keeps running ${from}`);
  if ('problem' in bins) return refuse(UNKNOWN_VERSION, `${bins.problem}; the tenant keeps running ${from}`);
  if (v.kind !== 'minor' || !beforeUpgrade) return undefined;
  try {
    await beforeUpgrade(from, to);
    return undefined;
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return refuse(UPGRADE_SNAPSHOT_FAILED, `no upgrade from ${from} to ${to} without a snapshot first: ${why}`);
  }
}
