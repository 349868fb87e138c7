// Fixtures for the Pod plugin's unit tests: super Nodes and the super Pods the syncer writes for a tenant.
import { ANN, LABEL, MANAGER } from '@virtualcluster-ts/plugin-sdk';

/** superNode is a super cluster Node with these labels and taints, Ready unless `ready` says otherwise. */
export const superNode = (
  name: string,
  labels: Record<string, string> = {},
  taints: object[] = [],
  ready = 'True',
) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels },
  spec: { taints },
  status: { conditions: [{ type: 'Ready', status: ready }] },
});

/** superPod is a super Pod the syncer wrote for tenant `cluster`, scheduled on `nodeName`. */
export const superPod = (cluster: string, nodeName: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: `p-${cluster}-${nodeName}`,
    namespace: `${cluster}-default`,
    labels: { [LABEL.managedBy]: MANAGER },
    annotations: { [ANN.cluster]: cluster },
  },
  spec: { nodeName },
});
