/**
 * @virtualcluster-ts/plugin-sdk/pods: Pods and where they run, as the pods, nodes and runtimeclasses plugins share
 * them and a third-party plugin that edits Pods can reuse them: the Pod and Node shapes, the checks of a tenant's pods
 * policy with its built-in defaults, which super nodes a tenant's Pods may be placed on and which vNodes it sees, and
 * how a Pod's runtimeClassName maps to the super cluster's.
 */
export * from './types.ts';
export * from './policy.ts';
export * from './placement.ts';
export * from './runtimeclass.ts';
