/**
 * @virtualcluster-ts/plugin-sdk: the contract a VirtualCluster syncer plugin is written against, the helpers the
 * built-in plugins share, and a test kit that runs a plugin's transforms from tables without any server.
 */
export * from './kube.ts';
export * from './contract.ts';
export * from './meta.ts';
export * from './wellknown.ts';
export * from './helpers.ts';
export * from './config.ts';
