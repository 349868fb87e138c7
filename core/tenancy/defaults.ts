/**
 * TENANT_DEFAULTS are the values of the VirtualCluster fields a tenant leaves out, as
 * schemas/virtualcluster.schema.json states them (its `default` keywords, or its "Defaults to" text where a
 * default keyword would make the apiserver write the value into every object). Every builder of a tenant, a
 * provisioner and a flag list takes them from here; defaults.test.ts holds the table to the schema.
 */
export const TENANT_DEFAULTS = {
  clusterDomain: 'cluster.local',
  weight: 1,
  podSecurityLevel: 'baseline',
  serviceCidr: '10.32.0.0/16',
  pkiExpireDays: 365,
  provisioner: 'local',
} as const;
