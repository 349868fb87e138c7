/**
 * Super cluster registration lives in core/superclusters/registration.ts. This re-export keeps the import paths of the
 * vc CLI until it imports it from there; new code imports core/superclusters.
 */
export * from '../superclusters/registration.ts';
