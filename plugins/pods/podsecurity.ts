import type { TenantView } from '@virtualcluster-ts/plugin-sdk';
import type { Container, PodRefusal, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

/**
 * BASELINE_CAPABILITIES are the capabilities the Pod Security Standards' baseline level lets a container add; the
 * restricted level lets it add NET_BIND_SERVICE only.
 */
export const BASELINE_CAPABILITIES = [
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
] as const;

interface SecurityContext {
  privileged?: boolean;
  allowPrivilegeEscalation?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type?: string };
}

const sc = (o: unknown): SecurityContext => (o && typeof o === 'object' ? (o as SecurityContext) : {});

const groups = (spec: PodSpec): Array<[string, Container[]]> => [
  ['containers', spec.containers],
  ['initContainers', spec.initContainers ?? []],
  ['ephemeralContainers', spec.ephemeralContainers ?? []],
];

/**
 * checkPodSecurity checks the container fields of the Pod Security Standards at the tenant's level, so that a Pod the
 * super namespace's Pod Security admission would reject is refused with a reason the tenant sees: baseline refuses
 * privileged containers and added capabilities beyond BASELINE_CAPABILITIES; restricted also asks every container
 * for allowPrivilegeEscalation false, runAsNonRoot (Pod or container) and no root user, capabilities dropping ALL
 * and adding at most NET_BIND_SERVICE, and a RuntimeDefault or Localhost seccomp profile. Host namespaces, host
 * ports and hostPath are the pods policy's (checkPodPolicy). Privileged checks nothing.
 */
export function checkPodSecurity(spec: PodSpec, level: TenantView['podSecurityLevel']): PodRefusal | undefined {
  if (level === 'privileged') return undefined;
  const pod = sc(spec.securityContext);
  const why = `not allowed at Pod Security level ${level}`;
  for (const [where, cs] of groups(spec)) {
    for (const [i, c] of cs.entries()) {
      const at = `spec.${where}[${i}].securityContext`;
      const s = sc(c.securityContext);
      if (s.privileged === true) return { field: `${at}.privileged`, message: `${at}.privileged: ${why}` };
      const allowedAdd: readonly string[] = level === 'restricted' ? ['NET_BIND_SERVICE'] : BASELINE_CAPABILITIES;
      const extra = (s.capabilities?.add ?? []).filter((cap) => !allowedAdd.includes(cap));
      if (extra.length)
        return { field: `${at}.capabilities.add`, message: `${at}.capabilities.add ${extra.join(', ')}: ${why}` };
      if (level !== 'restricted') continue;
      if (s.allowPrivilegeEscalation !== false) {
        return {
          field: `${at}.allowPrivilegeEscalation`,
          message: `${at}.allowPrivilegeEscalation must be false at Pod Security level restricted`,
        };
      }
      if ((s.runAsNonRoot ?? pod.runAsNonRoot) !== true) {
        return {
          field: `${at}.runAsNonRoot`,
          message: `${at}.runAsNonRoot (or spec.securityContext.runAsNonRoot) must be true at Pod Security level restricted`,
        };
      }
      if ((s.runAsUser ?? pod.runAsUser) === 0)
        return { field: `${at}.runAsUser`, message: `${at}.runAsUser 0: ${why}` };
      if (!(s.capabilities?.drop ?? []).includes('ALL')) {
        return {
          field: `${at}.capabilities.drop`,
          message: `${at}.capabilities.drop must include ALL at Pod Security level restricted`,
        };
      }
      const seccomp = s.seccompProfile?.type ?? pod.seccompProfile?.type;
      if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') {
        return {
          field: `${at}.seccompProfile`,
          message: `${at}.seccompProfile.type (or the Pod's) must be RuntimeDefault or Localhost at Pod Security level restricted`,
        };
      }
    }
  }
  return undefined;
}
