/**
 * The VirtualCluster types moved to core/api/virtualcluster.ts, below every domain folder. This re-export keeps the
 * import paths of the vc CLI and the tests until they import core/api themselves; new code imports core/api.
 */
export * from '../api/virtualcluster.ts';
