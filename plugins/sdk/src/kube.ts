/**
 * The minimal Kubernetes object shapes the plugin contract needs. They are deliberately open (`[field: string]:
 * unknown`): a plugin declares the fields of its own resource by extending KubeObject.
 */

/** Resource names one API resource: where it lives and what kind it serves. */
export interface Resource {
  readonly group: string;
  readonly version: string;
  /** plural, lower case: `pods`, `virtualclusters` */
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** KubeObject is the part of every Kubernetes object the core relies on. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [field: string]: unknown;
}

/** ObjectMeta is the subset of metav1.ObjectMeta the core reads and writes. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<Record<string, unknown>>;
  [field: string]: unknown;
}

/** ObjectReference is core/v1 ObjectReference: Endpoints targets, PV claimRefs, Event subjects. */
export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}
