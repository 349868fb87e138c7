/** The plugin contract lives in the plugin SDK (plugins/sdk); the core imports it from here. */
export * from '../../plugins/sdk/src/contract.ts';
export * from '../../plugins/sdk/src/nodecalls.ts';
