import type { Container, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { pullPolicyFor } from './translate.ts';

/** ETC_HOSTS is the name of the init container and the emptyDir volume that give a super Pod the tenant's /etc/hosts. */
export const ETC_HOSTS = 'vc-etc-hosts';
/** ETC_HOSTS_PATH is where containers read their hosts file. */
export const ETC_HOSTS_PATH = '/etc/hosts';
const DIR = `/${ETC_HOSTS}`;
const FILE = 'hosts';

/** EtcHostsNames are the names the kubelet's line and the tenant's differ in. */
export interface EtcHostsNames {
  /** the tenant Pod's namespace and the tenant's cluster domain: the names the tenant's line has */
  tenantNamespace: string;
  clusterDomain: string;
  /** the super Pod's namespace: the name the super kubelet's line has */
  superNamespace: string;
}

const escape = (s: string): string => s.replace(/[.\\^$*+?()[\]{}|/]/g, '\\$&');

/**
 * etcHostsExpression is the `sed -E` expression that turns the super kubelet's line for a Pod with a subdomain,
 * `<ip>\t<hostname>.<subdomain>.<super namespace>.svc.<super domain>\t<hostname>`, into the tenant's,
 * `<ip>\t<hostname>.<subdomain>.<tenant namespace>.svc.<tenant domain>\t<hostname>`. The hostname is kept as the
 * kubelet wrote it (spec.hostname or the Pod's name, cut to 63 characters); the super domain, which the syncer does
 * not know, is whatever the kubelet wrote. Every other line is left as it is (localhost, hostAliases).
 */
export function etcHostsExpression(subdomain: string, n: EtcHostsNames): string {
  const from = `^([^[:space:]]+[[:space:]]+[^[:space:].]+)\\.${escape(subdomain)}\\.${escape(n.superNamespace)}\\.svc\\.[^[:space:]]+`;
  return `s/${from}/\\1.${subdomain}.${n.tenantNamespace}.svc.${n.clusterDomain}/`;
}

const RESOURCE_NAMES = ['cpu', 'memory'] as const;

interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

const hasResources = (c: Container): boolean => {
  const r = c.resources as Resources | undefined;
  return RESOURCE_NAMES.some((k) => r?.requests?.[k] !== undefined || r?.limits?.[k] !== undefined);
};

/**
 * INIT_RESOURCES are the init container's requests and limits, equal so that a Guaranteed Pod stays Guaranteed; a
 * BestEffort Pod's init container asks for nothing, so that it stays BestEffort. An init container counts in the Pod's
 * requests only where it asks for more than the Pod's containers together, which these rarely do.
 */
export const INIT_RESOURCES = { cpu: '10m', memory: '16Mi' } as const;

const initResources = (spec: PodSpec): Resources | undefined => {
  if (spec.resources !== undefined) return undefined; // pod-level resources bound every container already
  if (![...spec.containers, ...(spec.initContainers ?? [])].some(hasResources)) return undefined;
  return { requests: { ...INIT_RESOURCES }, limits: { ...INIT_RESOURCES } };
};

const mountsHosts = (c: Container): boolean =>
  !!(c.volumeMounts as Array<{ mountPath?: string }> | undefined)?.some((m) => m.mountPath === ETC_HOSTS_PATH);

/**
 * rewriteEtcHosts gives a super Pod the /etc/hosts its tenant Pod has upstream. The kubelet writes a Pod with a
 * `subdomain` the line `<ip> <hostname>.<subdomain>.<namespace>.svc.<cluster domain> <hostname>` from the namespace it
 * sees and its own cluster domain, which for a super Pod are the super namespace and the super cluster's domain; no
 * field of the Pod can carry the tenant's (subdomain is one DNS label, and hostAliases would need the Pod's IP before it
 * has one). So, as vcluster does, a first init container copies the kubelet's file with that line rewritten
 * (etcHostsExpression) into an emptyDir, which every container that does not mount /etc/hosts itself (the kubelet
 * then leaves it alone too) gets at /etc/hosts. The init container runs the platform's image (`image`, an image with
 * `sh` and `sed`: busybox), as an unprivileged user, with no capability, allowed at Pod Security level restricted.
 *
 * Nothing is added where the kubelet's line is already the tenant's: a Pod without subdomain (its line is its
 * hostname, which is the tenant's), a host-network Pod (the node's file), a Pod with hostnameOverride (no domain), or
 * when the platform names no image. A Pod that uses the name ETC_HOSTS for a volume or an init container keeps the
 * kubelet's file. Ephemeral containers keep the kubelet's file too: they cannot mount with a subPath.
 */
export function rewriteEtcHosts(
  spec: PodSpec,
  n: EtcHostsNames,
  image: string | undefined,
  preloaded: ReadonlySet<string>,
): void {
  const subdomain = spec.subdomain;
  if (!image || !subdomain || spec.hostNetwork || spec.hostnameOverride !== undefined) return;
  if (n.superNamespace === n.tenantNamespace) return;
  if (spec.volumes?.some((v) => v.name === ETC_HOSTS) || spec.initContainers?.some((c) => c.name === ETC_HOSTS)) return;
  const resources = initResources(spec);
  const init: Container = {
    name: ETC_HOSTS,
    image,
    imagePullPolicy: pullPolicyFor(image, preloaded),
    command: [
      'sh',
      '-c',
      `sed -E "$1" ${ETC_HOSTS_PATH} > ${DIR}/${FILE}`,
      ETC_HOSTS,
      etcHostsExpression(subdomain, n),
    ],
    volumeMounts: [{ name: ETC_HOSTS, mountPath: DIR }],
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 65534,
      runAsGroup: 65534,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    terminationMessagePolicy: 'FallbackToLogsOnError',
    ...(resources && { resources }),
  };
  const mount = { name: ETC_HOSTS, mountPath: ETC_HOSTS_PATH, subPath: FILE };
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
    if (mountsHosts(c)) continue;
    c.volumeMounts = [...((c.volumeMounts as object[] | undefined) ?? []), { ...mount }];
  }
  spec.initContainers = [init, ...(spec.initContainers ?? [])];
  spec.volumes = [...(spec.volumes ?? []), { name: ETC_HOSTS, emptyDir: {} }];
}

/** withoutEtcHostsStatus drops the init container's status from a super Pod's initContainerStatuses. */
export function withoutEtcHostsStatus<T extends { name?: string }>(statuses: T[]): T[] {
  return statuses.filter((s) => s.name !== ETC_HOSTS);
}
