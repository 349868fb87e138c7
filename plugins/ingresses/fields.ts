import { checkFields, type FieldShape, fieldRule as F } from '@virtualcluster-ts/plugin-sdk';

const BACKEND = F.object({
  service: F.object({ name: F.copy, port: F.object({ name: F.copy, number: F.copy }) }),
  resource: F.check('resource backends are refused (checkIngress)'),
});

/**
 * INGRESS_SPEC_FIELDS is the rule of every networking.k8s.io/v1 IngressSpec field of Kubernetes v1.36: hosts and
 * classes are checked against the tenant's policy, Service backends and TLS Secrets keep their names (synced under the
 * same names in the tenant's super namespace); a field it does not name is refused (checkIngressFields).
 */
export const INGRESS_SPEC_FIELDS: FieldShape = {
  ingressClassName: F.check('ingresses.classes'),
  defaultBackend: F.check('refused: it would catch every host (checkIngress)'),
  tls: F.list({ hosts: F.check('ingresses.hosts'), secretName: F.copy }),
  rules: F.list({
    host: F.check('ingresses.hosts'),
    http: F.object({ paths: F.list({ path: F.copy, pathType: F.copy, backend: BACKEND }) }),
  }),
};

/** checkIngressFields returns the first field of a tenant Ingress spec INGRESS_SPEC_FIELDS does not know. */
export function checkIngressFields(spec: unknown): { field: string; message: string } | undefined {
  return checkFields(
    spec,
    INGRESS_SPEC_FIELDS,
    'spec',
    'the syncer knows the Ingress fields of Kubernetes v1.36, and refuses an Ingress with a field added since until a ' +
      'rule says how it is kept within the tenant',
  );
}
