import type { KubeletKind } from './wellknown.ts';

/**
 * NodeCall is a kubelet call the vn-agent has admitted for a tenant (its own Pod, or its own usage), as the node-call
 * hooks see it: in the tenant's names, before anything reaches the kubelet.
 */
export interface NodeCall {
  /** the kubelet endpoint: a Pod call (KubeletKind) or a usage endpoint */
  kind: KubeletKind | 'statsSummary' | 'metricsResource';
  method: string;
  /** the tenant namespace, Pod and container a Pod call names (none for the usage endpoints) */
  namespace?: string;
  pod?: string;
  container?: string;
  /** the query parameters (tailLines, follow, command, ...), each with all its values */
  query: Readonly<Record<string, readonly string[]>>;
  /** labels and annotations of the Pod as the syncer wrote it to the super cluster (what manager plugins put there) */
  podLabels?: Readonly<Record<string, string>>;
  podAnnotations?: Readonly<Record<string, string>>;
}

/** NodeCallVerdict is a request filter's answer: go on (with the query rewritten, if given) or refuse with a reason. */
export type NodeCallVerdict = { allow: true; query?: Record<string, string[]> } | { allow: false; reason: string };
