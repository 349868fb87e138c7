/**
 * @virtualcluster-ts/plugin-sdk/network: the NetworkPolicy shapes, CIDR arithmetic and the tenant isolation policy
 * that the namespaces plugin keeps in every super namespace and the networkpolicies plugin keeps tenant policies
 * within.
 */
export * from './types.ts';
export * from './cidr.ts';
export * from './isolation.ts';
export * from './hosts.ts';
