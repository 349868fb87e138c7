/** CreateRate is a tenant's pace of super Pod creates (a TenantPolicy's pods.createRate): a token bucket. */
export interface CreateRate {
  /** creates per second the bucket refills with; 0 turns pacing off */
  perSecond: number;
  /** creates that may go at once after a quiet spell (the bucket's size), at least 1 */
  burst: number;
}

/**
 * DEFAULT_CREATE_RATE is the pace of a tenant without a rate of its own (the built-in TenantPolicy's pods.createRate
 * and the syncer's podCreateRate): 20 per second, as kube-controller-manager's own client creates a tenant's
 * ReplicaSet Pods by default (--kube-api-qps 20), and 10 at once. Measured by the `syncer` bench (2 cores, kwok): a
 * 200-Pod flood paced at 20 per second held the host near one core, where unpaced it took both.
 */
export const DEFAULT_CREATE_RATE: CreateRate = Object.freeze({ perSecond: 20, burst: 10 });
