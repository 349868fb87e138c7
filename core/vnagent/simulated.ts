import type { KubeletKind } from './routes.ts';
import type { SuperNode } from './superview.ts';

/** KWOK_NODE_ANNOTATION is the annotation that hands a Node to kwok (the local super cluster sets it to `fake`). */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

/** isSimulatedNode reports whether a super Node is simulated by kwok: it has no container runtime behind it. */
export function isSimulatedNode(node: SuperNode): boolean {
  return Boolean(node.metadata?.annotations?.[KWOK_NODE_ANNOTATION]) || node.metadata?.labels?.type === 'kwok';
}

/** VERBS are the kubectl words for the kubelet endpoints, as a tenant types them. */
const VERBS: Record<KubeletKind, string> = {
  containerLogs: 'logs',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port-forward',
  run: 'run',
};

/**
 * simulatedNodeRefusal returns the one-line reason the vn-agent gives for a request that a simulated node cannot serve
 * without running tenant input on the host (exec, attach, port-forward, run), or undefined when the request may go to
 * the node: logs always (kwok serves a fixed file), and everything on a real node.
 */
export function simulatedNodeRefusal(kind: KubeletKind, pod: string, node: SuperNode): string | undefined {
  if (kind === 'containerLogs' || !isSimulatedNode(node)) return undefined;
  return `${VERBS[kind]} is not available: pod ${pod} runs on simulated node ${node.metadata?.name} (no container runtime)`;
}
