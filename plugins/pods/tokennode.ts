import type { Effect, ServiceAccountTokenKey } from '@virtualcluster-ts/plugin-sdk';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';
import type { TokenPlan } from './index.ts';

/** serviceAccountOf is the ServiceAccount a tenant Pod runs as. */
export const serviceAccountOf = (p: Pod): string => p.spec?.serviceAccountName || 'default';

/**
 * A token of a Pod's own (not a shared one) is bound to its tenant Pod, and the tenant apiserver writes into it the
 * node that Pod is bound to (`authentication.kubernetes.io/node-name` and `node-uid`), as upstream's kubelet gets it:
 * the kubelet asks for a Pod's tokens only once the Pod is on its node. So the syncer asks for it once the tenant Pod
 * is bound to its vNode (created with `spec.nodeName`, or bound by the syncer after the super scheduler placed the
 * super Pod), not when it creates the super Pod: asked for earlier, the token carries no node, and a workload that
 * reads it at start keeps that one until the refresh. Until then the super Pod's Secret volume waits (the kubelet
 * retries the mount until the Secret is there), as an upstream Pod's projected token waits for its TokenRequest.
 * A shared token is bound to the ServiceAccount alone and waits for nothing.
 */
export function tokenWaitsForBind(tenantPod: Pod, plan: Pick<TokenPlan, 'shared'>): boolean {
  return !plan.shared && !tenantPod.spec?.nodeName;
}

/**
 * tokenEffectOnceBound is the effect keeping the Secret `plan` names with the tokens a tenant Pod asks for, unless
 * that Secret waits for the Pod's bind (tokenWaitsForBind): then none yet.
 */
export function tokenEffectOnceBound(tenantPod: Pod, plan: TokenPlan, tokens: ServiceAccountTokenKey[]): Effect[] {
  if (tokenWaitsForBind(tenantPod, plan)) return [];
  return [
    {
      type: 'serviceAccountToken',
      namespace: tenantPod.metadata?.namespace ?? '',
      pod: tenantPod.metadata?.name ?? '',
      podUid: tenantPod.metadata?.uid ?? '',
      serviceAccount: serviceAccountOf(tenantPod),
      secretName: plan.secretName,
      tokens,
      ...(plan.shared && { shared: true }),
    },
  ];
}
