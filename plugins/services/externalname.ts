import { isIP } from 'node:net';
import type { ServiceRefusal } from './policy.ts';

/**
 * externalNameRefusal refuses an ExternalName Service whose target lies inside a cluster or is an address. In the super
 * cluster an ExternalName Service becomes a DNS alias that its proxies and ingress controllers follow from the
 * platform's network: a target such as `kubernetes.default.svc`, another tenant's `<service>.<namespace>.svc.<domain>`,
 * a single label (completed by the super namespace's search path), a `.local` name or an IP literal (the node's
 * metadata address) would make the super cluster reach what the tenant cannot. The tenant's own DNS still answers the
 * name inside the tenant; only the super copy is refused. Other types are not looked at.
 */
export function externalNameRefusal(
  spec: { type?: string; externalName?: unknown } | undefined,
  clusterDomain: string,
): ServiceRefusal | undefined {
  if (spec?.type !== 'ExternalName') return undefined;
  const name = typeof spec.externalName === 'string' ? spec.externalName.toLowerCase().replace(/\.$/, '') : '';
  const labels = name.split('.');
  const why = (what: string): ServiceRefusal => ({
    message:
      `spec.externalName "${name}" ${what}: the super cluster's proxies and ingress controllers would follow it from ` +
      `the platform's network; name a host outside the cluster`,
  });
  if (isIP(name) || /^[0-9.]+$/.test(name) || name.includes(':')) return why('is an address');
  if (labels.length < 2) return why('is a single label, completed by the super namespace\u2019s DNS search path');
  const domain = clusterDomain.toLowerCase().replace(/\.$/, '');
  if (labels.includes('svc') || name.endsWith('.local') || name === domain || name.endsWith(`.${domain}`))
    return why('names a host inside the cluster');
  return undefined;
}
