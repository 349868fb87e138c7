/**
 * @virtualcluster-ts/plugin-sdk: the contract a VirtualCluster syncer plugin is written against, the resources,
 * naming and ownership rules it shares with the core, the helpers the built-in plugins share, and (in the `testing`
 * subpath) a test kit that runs a plugin's transforms from tables without any server.
 */
export * from './kube.ts';
export * from './resources.ts';
export * from './contract.ts';
export * from './nodecalls.ts';
export * from './meta.ts';
export * from './names.ts';
export * from './wellknown.ts';
export * from './helpers.ts';
export * from './fields.ts';
export * from './config.ts';
export * from './version.ts';
