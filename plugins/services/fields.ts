import { checkFields, type FieldShape, fieldRule as F } from '@virtualcluster-ts/plugin-sdk';
import type { ServiceRefusal } from './policy.ts';

/** SERVICE_FIELDS_VERSION is the Kubernetes version whose Service fields SERVICE_SPEC_FIELDS names, every one of them. */
export const SERVICE_FIELDS_VERSION = 'v1.36';

const ASSIGNED = 'assigned by the super cluster; the tenant\u2019s value is kept on the tenant Service';
const NOT_OWNED =
  'an address in the shared cluster is assigned by its administrator: a tenant naming one would capture traffic to ' +
  'an address it does not own; leave it out';

/**
 * SERVICE_SPEC_FIELDS is the rule of every core/v1 ServiceSpec field of Kubernetes v1.36. Addresses and ports the
 * super cluster assigns are translated (the super's own), the type, class and external name are checked against the
 * tenant's policy, and externalIPs and loadBalancerIP, with which a tenant would claim addresses of the shared network,
 * are refused. A field it does not name is refused (checkServiceFields).
 */
export const SERVICE_SPEC_FIELDS: FieldShape = {
  type: F.check('services.nodePort and services.loadBalancer (checkServiceType)'),
  selector: F.copy,
  ports: F.list({
    name: F.copy,
    protocol: F.copy,
    appProtocol: F.copy,
    port: F.copy,
    targetPort: F.copy,
    nodePort: F.translate(ASSIGNED),
  }),
  clusterIP: F.translate(`${ASSIGNED} (None, headless, is kept)`),
  clusterIPs: F.translate(ASSIGNED),
  ipFamilies: F.translate(ASSIGNED),
  ipFamilyPolicy: F.copy,
  externalIPs: F.refuse(NOT_OWNED),
  loadBalancerIP: F.refuse(NOT_OWNED),
  loadBalancerSourceRanges: F.copy,
  loadBalancerClass: F.check('services.loadBalancer.classes (checkLoadBalancerClass)'),
  allocateLoadBalancerNodePorts: F.check('services.*.maxPorts counts node ports (checkServiceType)'),
  externalName: F.check('an ExternalName Service stays in the tenant (externalNameRefusal)'),
  externalTrafficPolicy: F.copy,
  internalTrafficPolicy: F.copy,
  healthCheckNodePort: F.translate(ASSIGNED),
  publishNotReadyAddresses: F.copy,
  sessionAffinity: F.copy,
  sessionAffinityConfig: F.object({ clientIP: F.object({ timeoutSeconds: F.copy }) }),
  trafficDistribution: F.copy,
};

/**
 * checkServiceFields refuses a tenant Service with a spec field that SERVICE_SPEC_FIELDS refuses or does not know; the
 * checks its `check` rules name run after it.
 */
export function checkServiceFields(spec: unknown): ServiceRefusal | undefined {
  const r = checkFields(
    spec,
    SERVICE_SPEC_FIELDS,
    'spec',
    `the syncer knows the Service fields of Kubernetes ${SERVICE_FIELDS_VERSION}, and refuses a Service with a ` +
      'field added since until a rule says how it is kept within the tenant',
  );
  return r && { message: r.message };
}
