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
  procMount?: string;
  seLinuxOptions?: { user?: string; role?: string; type?: string };
  windowsOptions?: { hostProcess?: boolean };
  appArmorProfile?: { type?: string };
  sysctls?: Array<{ name?: string }>;
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
 * privileged containers, added capabilities beyond BASELINE_CAPABILITIES, Windows host processes, SELinux users, roles
 * and types beyond SELINUX_TYPES, an unmasked /proc, unconfined seccomp and AppArmor profiles and sysctls beyond
 * SAFE_SYSCTLS; restricted also asks every container
 * for allowPrivilegeEscalation false, runAsNonRoot (Pod or container) and no root user, capabilities dropping ALL
 * and adding at most NET_BIND_SERVICE, and a RuntimeDefault or Localhost seccomp profile. Host namespaces, host
 * ports and hostPath are the pods policy's (checkPodPolicy). Privileged checks nothing.
 */
export function checkPodSecurity(spec: PodSpec, level: TenantView['podSecurityLevel']): PodRefusal | undefined {
  if (level === 'privileged') return undefined;
  const pod = sc(spec.securityContext);
  const why = `not allowed at Pod Security level ${level}`;
  const podRefusal = checkBaselineContext(pod, 'spec.securityContext', why) ?? checkSysctls(pod, why);
  if (podRefusal) return podRefusal;
  for (const [where, cs] of groups(spec)) {
    for (const [i, c] of cs.entries()) {
      const at = `spec.${where}[${i}].securityContext`;
      const s = sc(c.securityContext);
      if (s.privileged === true) return { field: `${at}.privileged`, message: `${at}.privileged: ${why}` };
      const baseline = checkBaselineContext(s, at, why);
      if (baseline) return baseline;
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

/** SELINUX_TYPES are the SELinux types the baseline level allows (besides none). */
export const SELINUX_TYPES = ['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'] as const;

/** SAFE_SYSCTLS are the namespaced sysctls the baseline level allows a Pod to set. */
export const SAFE_SYSCTLS = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
] as const;

/**
 * checkBaselineContext checks the fields of a Pod or container security context the baseline level restricts besides
 * privileged and capabilities: Windows host processes, SELinux user, role and type, an unmasked /proc, and unconfined
 * seccomp or AppArmor profiles.
 */
function checkBaselineContext(s: SecurityContext, at: string, why: string): PodRefusal | undefined {
  const refuse = (field: string, what: string): PodRefusal => ({
    field: `${at}.${field}`,
    message: `${at}.${field} ${what}: ${why}`,
  });
  if (s.windowsOptions?.hostProcess === true) return refuse('windowsOptions.hostProcess', 'true');
  const se = s.seLinuxOptions;
  if (se?.user) return refuse('seLinuxOptions.user', `"${se.user}"`);
  if (se?.role) return refuse('seLinuxOptions.role', `"${se.role}"`);
  if (se?.type && !(SELINUX_TYPES as readonly string[]).includes(se.type))
    return refuse('seLinuxOptions.type', `"${se.type}"`);
  if (s.procMount !== undefined && s.procMount !== 'Default') return refuse('procMount', `"${s.procMount}"`);
  if (s.seccompProfile?.type === 'Unconfined') return refuse('seccompProfile.type', 'Unconfined');
  if (s.appArmorProfile?.type === 'Unconfined') return refuse('appArmorProfile.type', 'Unconfined');
  return undefined;
}

function checkSysctls(pod: SecurityContext, why: string): PodRefusal | undefined {
  for (const [i, s] of (pod.sysctls ?? []).entries()) {
    if ((SAFE_SYSCTLS as readonly string[]).includes(s.name ?? '')) continue;
    const field = `spec.securityContext.sysctls[${i}].name`;
    return { field, message: `${field} "${s.name ?? ''}": ${why} (allowed: ${SAFE_SYSCTLS.join(', ')})` };
  }
  return undefined;
}
