import { checkFields, type FieldShape, fieldRule as F } from '@virtualcluster-ts/plugin-sdk';

/** NETWORK_POLICY_FIELDS_VERSION is the Kubernetes version whose NetworkPolicy fields NETWORK_POLICY_SPEC_FIELDS names. */
export const NETWORK_POLICY_FIELDS_VERSION = 'v1.36';

const SELECTOR = F.object({
  matchLabels: F.copy,
  matchExpressions: F.list({ key: F.copy, operator: F.copy, values: F.copy }),
});

const PEER: FieldShape = {
  podSelector: SELECTOR,
  namespaceSelector: F.object(
    {
      matchLabels: F.translate('namespace names become super namespace names'),
      matchExpressions: F.list({ key: F.copy, operator: F.copy, values: F.translate('namespace names') }),
    },
    'translate',
    'ANDed with the tenant\u2019s own namespaces (translateNamespaceSelector)',
  ),
  ipBlock: F.object(
    { cidr: F.check('egress: not inside a super-internal range'), except: F.translate('super-internal ranges added') },
    'translate',
    'egress blocks leave out the super-internal ranges (clipEgressBlock)',
  ),
};

const PORTS = F.list({ protocol: F.copy, port: F.copy, endPort: F.copy });

/**
 * NETWORK_POLICY_SPEC_FIELDS is the rule of every networking.k8s.io/v1 NetworkPolicySpec field of Kubernetes v1.36:
 * namespace selectors are confined to the tenant's namespaces and egress address blocks to the outside; a field it does
 * not name is refused (checkNetworkPolicyFields).
 */
export const NETWORK_POLICY_SPEC_FIELDS: FieldShape = {
  podSelector: SELECTOR,
  policyTypes: F.copy,
  ingress: F.list({ ports: PORTS, from: F.list(PEER, 'translate') }, 'translate'),
  egress: F.list({ ports: PORTS, to: F.list(PEER, 'translate') }, 'translate'),
};

/** checkNetworkPolicyFields returns the first field of a tenant NetworkPolicy spec the table does not know. */
export function checkNetworkPolicyFields(spec: unknown): { field: string; message: string } | undefined {
  return checkFields(
    spec,
    NETWORK_POLICY_SPEC_FIELDS,
    'spec',
    `the syncer knows the NetworkPolicy fields of Kubernetes ${NETWORK_POLICY_FIELDS_VERSION}, and refuses a ` +
      'policy with a field added since until a rule says how it is kept within the tenant',
  );
}
