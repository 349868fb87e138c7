import { hasVnAgent } from '../plugins/contract.ts';
import { KUBELET_PATHS, type KubeletKind } from '../../plugins/sdk/src/wellknown.ts';
import { PluginError, reportPluginError } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import type { AgentTenant } from './auth.ts';

/** KUBELET_KINDS are the kubelet endpoints the vn-agent serves (the plugin SDK's KUBELET_PATHS); every other path is refused. */
export { KUBELET_KINDS, type KubeletKind } from '../../plugins/sdk/src/wellknown.ts';

/** METHODS are the HTTP methods each kind accepts (the kubelet's own routes). */
export const METHODS: Record<KubeletKind, readonly string[]> = {
  containerLogs: ['GET'],
  exec: ['GET', 'POST'],
  attach: ['GET', 'POST'],
  portForward: ['GET', 'POST'],
  run: ['POST'],
};

/** kindOf returns the kubelet endpoint a request path names, or undefined for a path the agent does not serve. */
export function kindOf(path: string): KubeletKind | undefined {
  const m = /^\/([A-Za-z]+)\//.exec(path);
  const k = m?.[1];
  return k && Object.hasOwn(KUBELET_PATHS, k) ? (k as KubeletKind) : undefined;
}

/** PodTarget is the pod a translated kubelet path addresses. */
export interface PodTarget {
  kind: KubeletKind;
  namespace: string;
  pod: string;
}

/**
 * SEGMENT is what every segment after the kind must look like: a namespace, pod or container name or a pod uid
 * (lowercase DNS characters, starting and ending with a letter or digit). `.`, `..`, empty segments and any escape
 * (`%2F`, `%2e`) fail it, so no path the agent relays can be cleaned by the kubelet into another pod's or endpoint's.
 */
const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * targetOf reads the kind, namespace and pod of a kubelet path (`/<kind>/<namespace>/<pod>/...`), or undefined when
 * the path does not have that shape or a segment is not a plain name (SEGMENT).
 */
export function targetOf(path: string): PodTarget | undefined {
  const q = path.indexOf('?');
  const parts = (q >= 0 ? path.slice(0, q) : path).split('/');
  const kind = kindOf(path);
  if (!kind || parts[0] !== '' || parts.length < 4) return undefined;
  if (!parts.slice(2).every((s) => SEGMENT.test(s))) return undefined;
  const namespace = parts[2]!;
  const pod = parts[3]!;
  if (!namespace || !pod) return undefined;
  return { kind, namespace, pod };
}

/**
 * translatePath asks the vn-agent-capable plugins enabled for the tenant, in load order, to rewrite a kubelet path
 * from tenant names to super names; the first non-null answer wins, null means every plugin refused the path (or one
 * threw: counted in vc_plugin_errors_total and logged).
 */
export function translatePath(host: PluginHost, t: AgentTenant, path: string): string | null {
  for (const name of host.names()) {
    const p = host.get(name);
    if (!p || !hasVnAgent(p) || !host.enabledFor(t.tenant, name)) continue;
    let out: string | null;
    try {
      out = p.translateKubeletPath(path, { names: t.names, tenant: t.tenant });
    } catch (err) {
      // A plugin that throws refuses the path: reported, and no other plugin's answer is taken in its place.
      reportPluginError(new PluginError(name, 'translateKubeletPath', err), t.key, { path });
      return null;
    }
    if (out !== null) return out;
  }
  return null;
}
