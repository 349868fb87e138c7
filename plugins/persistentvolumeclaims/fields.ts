import { checkFields, type FieldShape, fieldRule as F } from '@virtualcluster-ts/plugin-sdk';

/** CLAIM_FIELDS_VERSION is the Kubernetes version whose PersistentVolumeClaim fields CLAIM_SPEC_FIELDS names. */
export const CLAIM_FIELDS_VERSION = 'v1.36';

const REFERENCE = { apiGroup: F.copy, kind: F.copy, name: F.copy };

/**
 * CLAIM_SPEC_FIELDS is the rule of every core/v1 PersistentVolumeClaimSpec field of Kubernetes v1.36. The class and
 * the selector are checked (checkClaim); a cross-namespace data source names the tenant namespace's super namespace;
 * a volume named by the tenant and a VolumeAttributesClass (cluster-scoped, the platform's, not shown to tenants) are
 * refused. A field it does not name is refused (checkClaimFields).
 */
export const CLAIM_SPEC_FIELDS: FieldShape = {
  accessModes: F.copy,
  resources: F.object({ requests: F.copy, limits: F.copy }),
  storageClassName: F.check('a StorageClass the super cluster shares with tenants (checkClaim)'),
  volumeMode: F.copy,
  selector: F.check('refused: it binds volumes made beforehand (checkClaim)'),
  dataSource: F.object(REFERENCE),
  dataSourceRef: F.object(
    { ...REFERENCE, namespace: F.translate('the tenant namespace becomes its super namespace') },
    'translate',
  ),
  volumeName: F.refuse(
    'the super cluster binds a claim to the volume it provisions; a claim naming a volume would bind one made ' +
      'beforehand in the super cluster, another tenant\u2019s released one included; leave it out',
  ),
  volumeAttributesClassName: F.refuse(
    'VolumeAttributesClasses are cluster-scoped objects of the super cluster that the platform does not share with ' +
      'tenants; leave it out for the StorageClass\u2019s own parameters',
  ),
};

/**
 * checkClaimFields returns the first field of a tenant claim's spec that CLAIM_SPEC_FIELDS refuses or does not know, or
 * undefined; the checks its `check` rules name run after it (checkClaim).
 */
export function checkClaimFields(spec: unknown): { field: string; message: string } | undefined {
  return checkFields(
    spec,
    CLAIM_SPEC_FIELDS,
    'spec',
    `the syncer knows the PersistentVolumeClaim fields of Kubernetes ${CLAIM_FIELDS_VERSION}, and refuses a claim ` +
      'with a field added since until a rule says how it is kept within the tenant',
  );
}
