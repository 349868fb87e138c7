import type { KubeObject } from '../kube.ts';

/** LabelSelectorRequirement is one matchExpressions entry of a metav1 LabelSelector. */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** LabelSelector is a metav1 LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** IPBlock is a networking/v1 IPBlock. */
export interface IPBlock {
  cidr: string;
  except?: string[];
}

/** NetworkPolicyPeer is a networking/v1 NetworkPolicyPeer. */
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: IPBlock;
}

/** NetworkPolicyPort is a networking/v1 NetworkPolicyPort. */
export interface NetworkPolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

/** NetworkPolicyIngressRule is a networking/v1 NetworkPolicyIngressRule. */
export interface NetworkPolicyIngressRule {
  from?: NetworkPolicyPeer[];
  ports?: NetworkPolicyPort[];
}

/** NetworkPolicyEgressRule is a networking/v1 NetworkPolicyEgressRule. */
export interface NetworkPolicyEgressRule {
  to?: NetworkPolicyPeer[];
  ports?: NetworkPolicyPort[];
}

/** NetworkPolicySpec is a networking/v1 NetworkPolicySpec. */
export interface NetworkPolicySpec {
  podSelector?: LabelSelector;
  policyTypes?: string[];
  ingress?: NetworkPolicyIngressRule[];
  egress?: NetworkPolicyEgressRule[];
}

/** NetworkPolicy is the part of a networking/v1 NetworkPolicy the plugins touch. */
export interface NetworkPolicy extends KubeObject {
  spec?: NetworkPolicySpec;
}
