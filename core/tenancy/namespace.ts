import type { KubeObject, ObjectMeta } from '../kube/client.ts';
import { ANN, IDENTITY, LABEL } from '../names/names.ts';

/**
 * rootNamespaceObject is the super cluster's root Namespace of a tenant: labelled as the manager's and as the
 * tenant's cluster, annotated with the VirtualCluster it belongs to. The VirtualCluster controller applies it before
 * any provisioner runs; the native provisioner renders and creates the same object.
 */
export function rootNamespaceObject(vc: Pick<ObjectMeta, 'name' | 'namespace' | 'uid'>, root: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: root,
      labels: { [LABEL.managedBy]: IDENTITY.manager, [LABEL.cluster]: root },
      annotations: { [ANN.vcName]: vc.name ?? '', [ANN.vcNamespace]: vc.namespace ?? '', [ANN.vcUid]: vc.uid ?? '' },
    },
  };
}
