import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { ETC_HOSTS, etcHostsExpression, rewriteEtcHosts, withoutEtcHostsStatus } from './etchosts.ts';

const NAMES = {
  tenantNamespace: 'dns-6162',
  superNamespace: 'default-3f2a1b-dev-dns-6162',
  clusterDomain: 'cluster.local',
};
const IMAGE = 'docker.io/library/busybox:1.35';
const PRELOADED = new Set([IMAGE]);

// The kubelet's file for a Pod with hostname and subdomain (managedHostsFileContent), with one hostAliases entry.
const KUBELET_FILE = [
  '# Kubernetes-managed hosts file.',
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
  '10.244.0.17\tdns-querier-1.dns-test-service.default-3f2a1b-dev-dns-6162.svc.super.example\tdns-querier-1',
  'fd00::17\tdns-querier-1.dns-test-service.default-3f2a1b-dev-dns-6162.svc.super.example\tdns-querier-1',
  '',
  '# Entries added by HostAliases.',
  '10.1.2.3\tdns-test-service.default-3f2a1b-dev-dns-6162.svc.other',
  '',
].join('\n');

const sed = (expr: string, input: string): string => execFileSync('sed', ['-E', expr], { input, encoding: 'utf8' });

describe('etcHostsExpression', () => {
  it("rewrites the kubelet's line of the Pod to the tenant's namespace and domain, every address, nothing else", () => {
    const out = sed(etcHostsExpression('dns-test-service', NAMES), KUBELET_FILE);
    expect(out.split('\n')).toEqual([
      '# Kubernetes-managed hosts file.',
      '127.0.0.1\tlocalhost',
      '::1\tlocalhost ip6-localhost ip6-loopback',
      'fe00::0\tip6-localnet',
      'fe00::0\tip6-mcastprefix',
      'fe00::1\tip6-allnodes',
      'fe00::2\tip6-allrouters',
      '10.244.0.17\tdns-querier-1.dns-test-service.dns-6162.svc.cluster.local\tdns-querier-1',
      'fd00::17\tdns-querier-1.dns-test-service.dns-6162.svc.cluster.local\tdns-querier-1',
      '',
      '# Entries added by HostAliases.',
      '10.1.2.3\tdns-test-service.default-3f2a1b-dev-dns-6162.svc.other',
      '',
    ]);
  });

  it('takes the names literally: a dot in a name is not a wildcard', () => {
    const file = '10.0.0.1\tweb-0.sub.defaultx3f2a1b-dev-dns-6162.svc.cluster.local\tweb-0\n';
    const names = { ...NAMES, superNamespace: 'default.3f2a1b-dev-dns-6162' };
    expect(sed(etcHostsExpression('sub', names), file)).toBe(file);
  });
});

const spec = (s: Partial<PodSpec> = {}): PodSpec => ({
  hostname: 'dns-querier-1',
  subdomain: 'dns-test-service',
  containers: [{ name: 'app', image: 'agnhost' }],
  ...s,
});

describe('rewriteEtcHosts', () => {
  it('adds the init container first, its emptyDir, and the file at /etc/hosts in every container', () => {
    const s = spec({ initContainers: [{ name: 'setup', image: 'agnhost' }] });
    rewriteEtcHosts(s, NAMES, IMAGE, PRELOADED);
    const [init, setup] = s.initContainers!;
    expect(init).toMatchObject({
      name: ETC_HOSTS,
      image: IMAGE,
      imagePullPolicy: 'IfNotPresent',
      command: [
        'sh',
        '-c',
        expect.stringContaining('/etc/hosts'),
        ETC_HOSTS,
        etcHostsExpression('dns-test-service', NAMES),
      ],
      volumeMounts: [{ name: ETC_HOSTS, mountPath: `/${ETC_HOSTS}` }],
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65534,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
    });
    expect(init!.resources).toBeUndefined();
    const mount = { name: ETC_HOSTS, mountPath: '/etc/hosts', subPath: 'hosts' };
    expect(setup!.volumeMounts).toEqual([mount]);
    expect(s.containers[0]!.volumeMounts).toEqual([mount]);
    expect(s.volumes).toEqual([{ name: ETC_HOSTS, emptyDir: {} }]);
  });

  it.each<[string, Partial<PodSpec>, string | undefined]>([
    ['no subdomain: the line is the hostname alone, the same as the tenant', { subdomain: undefined }, IMAGE],
    ['host network: the node file', { hostNetwork: true }, IMAGE],
    ['hostnameOverride: the kubelet writes no domain', { hostnameOverride: 'web.example' }, IMAGE],
    ['the platform names no image', {}, undefined],
    ['a volume of the name', { volumes: [{ name: ETC_HOSTS, emptyDir: {} }] }, IMAGE],
  ])('leaves the spec alone: %s', (_, s, image) => {
    const before = spec(s);
    const after = structuredClone(before);
    rewriteEtcHosts(after, NAMES, image, PRELOADED);
    expect(after).toEqual(before);
  });

  it('leaves a container that mounts /etc/hosts itself with its own file', () => {
    const own = { name: 'own', mountPath: '/etc/hosts' };
    const s = spec({ containers: [{ name: 'app', image: 'agnhost', volumeMounts: [own] }] });
    rewriteEtcHosts(s, NAMES, IMAGE, PRELOADED);
    expect(s.containers[0]!.volumeMounts).toEqual([own]);
  });

  it.each<[string, Record<string, unknown> | undefined, unknown]>([
    ['BestEffort stays BestEffort: no resources', undefined, undefined],
    [
      'Guaranteed stays Guaranteed: requests equal limits',
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
      { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '10m', memory: '16Mi' } },
    ],
  ])('sizes the init container by the QoS class: %s', (_, resources, want) => {
    const s = spec({ containers: [{ name: 'app', image: 'agnhost', ...(resources && { resources }) }] });
    rewriteEtcHosts(s, NAMES, IMAGE, PRELOADED);
    expect(s.initContainers![0]!.resources).toEqual(want);
  });

  it('pulls an image the nodes do not hold', () => {
    const s = spec();
    rewriteEtcHosts(s, NAMES, 'registry.example/tools/busybox:1', PRELOADED);
    expect(s.initContainers![0]!.imagePullPolicy).toBe('Always');
  });
});

describe('withoutEtcHostsStatus', () => {
  it("drops the init container's status and keeps the tenant's own", () => {
    expect(withoutEtcHostsStatus([{ name: ETC_HOSTS }, { name: 'setup' }])).toEqual([{ name: 'setup' }]);
  });
});
