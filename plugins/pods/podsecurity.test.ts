import { describe, expect, it } from 'vitest';
import { checkPodSecurity } from './podsecurity.ts';
import type { Container, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

const restrictedContainer: Container = {
  name: 'c',
  image: 'nginx',
  securityContext: {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    runAsNonRoot: true,
    seccompProfile: { type: 'RuntimeDefault' },
  },
};
const spec = (c: Partial<Container>, pod: Record<string, unknown> = {}): PodSpec => ({
  containers: [{ name: 'c', image: 'nginx', ...c }],
  ...pod,
});

const cases: Array<[string, PodSpec, 'privileged' | 'baseline' | 'restricted', string | undefined]> = [
  ['a plain container passes baseline', spec({}), 'baseline', undefined],
  [
    'a privileged container is refused at baseline',
    spec({ securityContext: { privileged: true } }),
    'baseline',
    'spec.containers[0].securityContext.privileged',
  ],
  [
    'a privileged container passes at privileged',
    spec({ securityContext: { privileged: true } }),
    'privileged',
    undefined,
  ],
  [
    'SYS_ADMIN is refused at baseline',
    spec({ securityContext: { capabilities: { add: ['NET_BIND_SERVICE', 'SYS_ADMIN'] } } }),
    'baseline',
    'spec.containers[0].securityContext.capabilities.add',
  ],
  ['CHOWN passes at baseline', spec({ securityContext: { capabilities: { add: ['CHOWN'] } } }), 'baseline', undefined],
  [
    'a plain container is refused at restricted',
    spec({}),
    'restricted',
    'spec.containers[0].securityContext.allowPrivilegeEscalation',
  ],
  ['a restricted container passes at restricted', { containers: [restrictedContainer] }, 'restricted', undefined],
  [
    'runAsNonRoot may come from the Pod',
    {
      containers: [
        {
          ...restrictedContainer,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    },
    'restricted',
    undefined,
  ],
  [
    'an init container is checked too',
    { containers: [restrictedContainer], initContainers: [{ name: 'i', image: 'x' }] },
    'restricted',
    'spec.initContainers[0].securityContext.allowPrivilegeEscalation',
  ],
  [
    'a Windows host process is refused at baseline',
    spec({ securityContext: { windowsOptions: { hostProcess: true } } }),
    'baseline',
    'spec.containers[0].securityContext.windowsOptions.hostProcess',
  ],
  [
    'an SELinux type outside the container types is refused',
    spec({ securityContext: { seLinuxOptions: { type: 'spc_t' } } }),
    'baseline',
    'spec.containers[0].securityContext.seLinuxOptions.type',
  ],
  [
    'an SELinux user on the Pod is refused',
    spec({}, { securityContext: { seLinuxOptions: { user: 'system_u' } } }),
    'baseline',
    'spec.securityContext.seLinuxOptions.user',
  ],
  ['container_t passes', spec({ securityContext: { seLinuxOptions: { type: 'container_t' } } }), 'baseline', undefined],
  [
    'an unmasked /proc is refused',
    spec({ securityContext: { procMount: 'Unmasked' } }),
    'baseline',
    'spec.containers[0].securityContext.procMount',
  ],
  [
    'an unconfined seccomp profile on the Pod is refused',
    spec({}, { securityContext: { seccompProfile: { type: 'Unconfined' } } }),
    'baseline',
    'spec.securityContext.seccompProfile.type',
  ],
  [
    'an unconfined AppArmor profile is refused',
    spec({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }),
    'baseline',
    'spec.containers[0].securityContext.appArmorProfile.type',
  ],
  [
    'an unsafe sysctl is refused',
    spec({}, { securityContext: { sysctls: [{ name: 'net.ipv4.tcp_syncookies' }, { name: 'kernel.msgmax' }] } }),
    'baseline',
    'spec.securityContext.sysctls[1].name',
  ],
  [
    'an unsafe sysctl passes at privileged',
    spec({}, { securityContext: { sysctls: [{ name: 'kernel.msgmax' }] } }),
    'privileged',
    undefined,
  ],
];

describe('checkPodSecurity', () => {
  it.each(cases)('%s', (_name, s, level, field) => {
    expect(checkPodSecurity(s, level)?.field).toBe(field);
  });
});
