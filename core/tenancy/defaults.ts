import type { ProvisionerType } from '../api/virtualcluster.ts';

/**
 * TENANT_DEFAULTS are the values of the VirtualCluster fields a tenant leaves out, as
 * schemas/virtualcluster.schema.json states them (its `default` keywords, or its "Defaults to" text where a
 * default keyword would make the apiserver write the value into every object). Every builder of a tenant, a
 * provisioner and a flag list takes them from here; defaults.test.ts holds the table to the schema.
 *
 * The provisioner is not among them: which one a VirtualCluster that names none gets is the manager's choice
 * (defaultProvisioner below), because only the manager knows which provisioners it can run.
 */
export const TENANT_DEFAULTS = {
  clusterDomain: 'cluster.local',
  weight: 1,
  podSecurityLevel: 'baseline',
  serviceCidr: '10.32.0.0/16',
  pkiExpireDays: 365,
} as const;

/**
 * defaultProvisioner is the provisioner a manager gives a VirtualCluster that names none: the one its configuration
 * names (virtualClusters.defaultProvisioner) when it offers that one, else local where it offers local (the manager
 * of `vc up`, whose control planes are processes beside it), else native where it offers native (a manager in the
 * cluster), else none. `configured` naming a provisioner the manager does not offer is the caller's error to report;
 * here it yields undefined, never a silent substitute.
 */
export function defaultProvisioner(
  configured: ProvisionerType | undefined,
  offered: Iterable<string>,
): ProvisionerType | undefined {
  const have = new Set(offered);
  if (configured) return have.has(configured) ? configured : undefined;
  for (const p of ['local', 'native'] as const) if (have.has(p)) return p;
  return undefined;
}
