import { isIP } from 'node:net';
import { NUMERIC_HOST, privateNameRefusal } from '@virtualcluster-ts/plugin-sdk/network';
import type { ServiceRefusal } from './policy.ts';

/**
 * CLUSTER_LABELS are labels that make a name one a cluster DNS server answers from the cluster's own records in any
 * cluster domain: `<service>.<namespace>.svc.<domain>` and `<a-b-c-d>.<namespace>.pod.<domain>`, which CoreDNS's
 * `pods insecure` (the kubeadm default) answers with whatever address the name spells.
 */
const CLUSTER_LABELS = new Set(['svc', 'pod']);

/**
 * externalNameRefusal refuses an ExternalName Service whose target lies inside a cluster or is an address. In the super
 * cluster an ExternalName Service becomes a DNS alias that its proxies and ingress controllers follow from the
 * platform's network: a target such as `kubernetes.default.svc`, another tenant's `<service>.<namespace>.svc.<domain>`,
 * a Pod record spelling any address (`169-254-169-254.x.pod.<domain>`), a single label, a name only a hosts file or
 * a private resolver answers (privateNameRefusal: `.local`, `.internal`...) or an address (including numeric forms
 * such as `0x7f.1`) would make the super cluster reach what
 * the tenant cannot. No ExternalName Service is copied to the super cluster at all (the services plugin's notCopied);
 * this refusal tells the tenant at once that an inward alias is what it wrote. The tenant's own DNS still answers the
 * name inside the tenant. Other types are not looked at.
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
      `spec.externalName "${name}" ${what}: an alias into a cluster or a private network is refused; name a host ` +
      `outside the cluster`,
  });
  if (isIP(name) || NUMERIC_HOST.test(name) || name.includes(':')) return why('is an address');
  if (labels.length < 2) return why('is a single label, completed by the super namespace\u2019s DNS search path');
  const domain = clusterDomain.toLowerCase().replace(/\.$/, '');
  const under = (suffix: string) => name === suffix || name.endsWith(`.${suffix}`);
  if (labels.some((l) => CLUSTER_LABELS.has(l)) || under(domain)) return why('names a host inside the cluster');
  const priv = privateNameRefusal(name);
  return priv ? why(priv.slice(name.length + 1)) : undefined;
}
