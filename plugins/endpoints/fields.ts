import { checkFields, type FieldShape, fieldRule as F } from '@virtualcluster-ts/plugin-sdk';

/** ENDPOINTS_FIELDS_VERSION is the Kubernetes version whose Endpoints fields ENDPOINT_SUBSET_FIELDS names. */
export const ENDPOINTS_FIELDS_VERSION = 'v1.36';

const ADDRESS = F.list(
  {
    ip: F.check('the tenant\u2019s own Pods or endpoints.allowedCIDRs (addressRule)'),
    hostname: F.copy,
    nodeName: F.copy,
    targetRef: F.object(
      {
        kind: F.copy,
        namespace: F.translate('the tenant namespace becomes its super namespace'),
        name: F.copy,
        uid: F.translate('the tenant uid is left out'),
        apiVersion: F.copy,
        resourceVersion: F.translate('the tenant version is left out'),
        fieldPath: F.copy,
      },
      'translate',
    ),
  },
  'check',
  'an address is copied only when the tenant\u2019s policy allows it',
);

/**
 * ENDPOINT_SUBSET_FIELDS is the rule of every core/v1 EndpointSubset field of Kubernetes v1.36: addresses are checked
 * one by one (addressRule), targetRefs point at the super namespace; a field it does not name is refused
 * (checkEndpointsFields).
 */
export const ENDPOINT_SUBSET_FIELDS: FieldShape = {
  addresses: ADDRESS,
  notReadyAddresses: ADDRESS,
  ports: F.list({ name: F.copy, port: F.copy, protocol: F.copy, appProtocol: F.copy }),
};

/** checkEndpointsFields returns the first field of a tenant Endpoints' subsets ENDPOINT_SUBSET_FIELDS does not know. */
export function checkEndpointsFields(
  subsets: readonly unknown[] | undefined,
): { field: string; message: string } | undefined {
  for (const [i, s] of (subsets ?? []).entries()) {
    const r = checkFields(
      s,
      ENDPOINT_SUBSET_FIELDS,
      `subsets[${i}]`,
      `the syncer knows the Endpoints fields of Kubernetes ${ENDPOINTS_FIELDS_VERSION}, and refuses Endpoints with a ` +
        'field added since until a rule says how it is kept within the tenant',
    );
    if (r) return r;
  }
  return undefined;
}
