/**
 * SDK_VERSION is the version of this package (its package.json `version`). A host reports it and checks a plugin's
 * declared SDK range against it: a plugin built for an older minor of the same major loads, one built for a newer
 * minor or another major is refused. A plugin declares the version it was built for in its package.json, as a
 * peerDependency on `@virtualcluster-ts/plugin-sdk` (for example `^2.0.0`), not through this constant, which at run
 * time is the host's.
 */
export const SDK_VERSION = '2.0.0';
