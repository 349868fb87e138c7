import { describe, expect, it } from 'vitest';
import {
  apiserverFlags,
  controllerManagerFlags,
  parseFlagArgs,
  pkiPaths,
  type ApiserverFlagsInput,
  type ControllerManagerFlagsInput,
} from './flags.ts';

const paths = pkiPaths('/s/pki', { kubeconfig: '/s/controller-manager.kubeconfig', tokenFile: '/s/tokens.csv' });

const apiserver: ApiserverFlagsInput = {
  paths,
  etcdServers: 'http://127.0.0.1:2379',
  etcdPrefix: '/tenant-a',
  bindAddress: '127.0.0.1',
  advertiseAddress: '127.0.0.1',
  securePort: 6443,
  serviceCidr: '10.96.0.0/16',
};

const kcm: ControllerManagerFlagsInput = {
  paths,
  bindAddress: '127.0.0.1',
  securePort: 10257,
  clusterName: 'tenant-a',
  serviceCidr: '10.96.0.0/16',
  controllers: '*',
};

/** The kube-apiserver command line of core/dev/local/controlplane.ts before the flag builder, for dir `/s`. */
const LOCAL_APISERVER = [
  '--etcd-servers=http://127.0.0.1:2379',
  '--etcd-prefix=/tenant-a',
  '--bind-address=127.0.0.1',
  '--advertise-address=127.0.0.1',
  '--secure-port=6443',
  '--tls-cert-file=/s/pki/apiserver.crt',
  '--tls-private-key-file=/s/pki/apiserver.key',
  '--client-ca-file=/s/pki/ca.crt',
  '--token-auth-file=/s/tokens.csv',
  '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
  '--service-account-jwks-uri=https://kubernetes.default.svc.cluster.local/openid/v1/jwks',
  '--service-account-key-file=/s/pki/sa.pub',
  '--service-account-signing-key-file=/s/pki/sa.key',
  '--service-cluster-ip-range=10.96.0.0/16',
  '--authorization-mode=Node,RBAC',
  '--endpoint-reconciler-type=none',
  '--allow-privileged=true',
  '--kubelet-preferred-address-types=InternalIP,Hostname',
  '--kubelet-client-certificate=/s/pki/kubelet-client.crt',
  '--kubelet-client-key=/s/pki/kubelet-client.key',
  '--requestheader-client-ca-file=/s/pki/front-proxy-ca.crt',
  '--requestheader-allowed-names=front-proxy-client',
  '--requestheader-extra-headers-prefix=X-Remote-Extra-',
  '--requestheader-group-headers=X-Remote-Group',
  '--requestheader-username-headers=X-Remote-User',
  '--proxy-client-cert-file=/s/pki/front-proxy-client.crt',
  '--proxy-client-key-file=/s/pki/front-proxy-client.key',
  '--profiling=false',
  '--v=1',
];

/** The kube-controller-manager command line of core/dev/local/controlplane.ts before the flag builder, for dir `/s`. */
const LOCAL_KCM = [
  '--kubeconfig=/s/controller-manager.kubeconfig',
  '--authentication-kubeconfig=/s/controller-manager.kubeconfig',
  '--authorization-kubeconfig=/s/controller-manager.kubeconfig',
  '--leader-elect=false',
  '--bind-address=127.0.0.1',
  '--secure-port=10257',
  '--use-service-account-credentials=true',
  '--service-account-private-key-file=/s/pki/sa.key',
  '--root-ca-file=/s/pki/ca.crt',
  '--cluster-signing-cert-file=/s/pki/ca.crt',
  '--cluster-signing-key-file=/s/pki/ca.key',
  '--cluster-name=tenant-a',
  '--service-cluster-ip-range=10.96.0.0/16',
  '--controllers=*',
  '--profiling=false',
  '--v=1',
];

const names = (flags: string[]): string[] => flags.map((f) => f.slice(2, f.indexOf('=')));
const value = (flags: string[], name: string): string | undefined =>
  flags.find((f) => f.startsWith(`--${name}=`))?.slice(name.length + 3);

describe('apiserverFlags', () => {
  it('reproduces the local control plane command line exactly', () => {
    expect(apiserverFlags(apiserver)).toEqual(LOCAL_APISERVER);
  });

  it.each<[string, Partial<ApiserverFlagsInput>, Record<string, string | undefined>]>([
    ['no token file', { paths: { ...paths, tokenFile: undefined } }, { 'token-auth-file': undefined }],
    [
      'several etcd servers',
      { etcdServers: ['http://a:2379', 'http://b:2379'] },
      { 'etcd-servers': 'http://a:2379,http://b:2379' },
    ],
    [
      'a Pod',
      { bindAddress: '0.0.0.0', advertiseAddress: '$(POD_IP)', etcdPrefix: '/registry' },
      { 'bind-address': '0.0.0.0', 'advertise-address': '$(POD_IP)', 'etcd-prefix': '/registry' },
    ],
    [
      'another cluster domain',
      { clusterDomain: 'tenant.local' },
      {
        'service-account-issuer': 'https://kubernetes.default.svc.tenant.local',
        'service-account-jwks-uri': 'https://kubernetes.default.svc.tenant.local/openid/v1/jwks',
      },
    ],
    [
      'an issuer of the platform: upstream chooses the key set URI',
      { extraArgs: { '--service-account-issuer': 'https://oidc.example.com/t1' } },
      { 'service-account-issuer': 'https://oidc.example.com/t1', 'service-account-jwks-uri': undefined },
    ],
    [
      'an issuer and a key set URI of the platform',
      {
        extraArgs: {
          'service-account-issuer': 'https://oidc.example.com/t1',
          'service-account-jwks-uri': 'https://oidc.example.com/t1/keys',
        },
      },
      { 'service-account-jwks-uri': 'https://oidc.example.com/t1/keys' },
    ],
    ['extraArgs overriding a default', { extraArgs: { v: '4' } }, { v: '4' }],
    ['extraArgs naming a flag with dashes', { extraArgs: { '--profiling': 'true' } }, { profiling: 'true' }],
    [
      'extraArgs filling an absent default',
      { paths: { ...paths, tokenFile: undefined }, extraArgs: { 'token-auth-file': '/t' } },
      { 'token-auth-file': '/t' },
    ],
  ])('%s', (_, change, want) => {
    const flags = apiserverFlags({ ...apiserver, ...change });
    for (const [name, v] of Object.entries(want)) expect(value(flags, name), name).toBe(v);
    expect(new Set(names(flags)).size).toBe(flags.length);
  });

  it('keeps overridden flags in place and appends new ones in name order', () => {
    const flags = apiserverFlags({
      ...apiserver,
      extraArgs: { 'secure-port': '7443', 'audit-log-path': '-', 'anonymous-auth': 'false' },
    });
    expect(flags.slice(0, LOCAL_APISERVER.length)).toEqual(
      LOCAL_APISERVER.map((f) => (f === '--secure-port=6443' ? '--secure-port=7443' : f)),
    );
    expect(flags.slice(LOCAL_APISERVER.length)).toEqual(['--anonymous-auth=false', '--audit-log-path=-']);
  });

  it('does not depend on the order of extraArgs', () => {
    const a = apiserverFlags({ ...apiserver, extraArgs: { z: '1', 'a-b': '2', v: '3' } });
    const b = apiserverFlags({ ...apiserver, extraArgs: { v: '3', z: '1', 'a-b': '2' } });
    expect(a).toEqual(b);
  });

  it('rejects a flag given twice and names that are not flags', () => {
    expect(() => apiserverFlags({ ...apiserver, extraArgs: { v: '1', '--v': '2' } })).toThrow(/given twice/);
    expect(() => apiserverFlags({ ...apiserver, extraArgs: { 'x=y': '1' } })).toThrow(/invalid flag name/);
    expect(() => apiserverFlags({ ...apiserver, extraArgs: { 'a --b': '1' } })).toThrow(/invalid flag name/);
    expect(() => apiserverFlags({ ...apiserver, extraArgs: { '': '1' } })).toThrow(/invalid flag name/);
  });
});

describe('controllerManagerFlags', () => {
  it('reproduces the local control plane command line exactly', () => {
    expect(controllerManagerFlags(kcm)).toEqual(LOCAL_KCM);
  });

  it.each<[string, Partial<ControllerManagerFlagsInput>, Record<string, string>]>([
    ['leader election', { leaderElect: true }, { 'leader-elect': 'true' }],
    [
      'tenant controllers',
      { controllers: '*,-node-lifecycle-controller' },
      { controllers: '*,-node-lifecycle-controller' },
    ],
    [
      'a Pod',
      { bindAddress: '0.0.0.0', clusterName: 'root-ns' },
      { 'bind-address': '0.0.0.0', 'cluster-name': 'root-ns' },
    ],
    [
      'extraArgs overriding a default',
      { extraArgs: { 'leader-elect': 'true', controllers: 'a' } },
      { 'leader-elect': 'true', controllers: 'a' },
    ],
    [
      'extraArgs adding a flag',
      { extraArgs: { 'concurrent-deployment-syncs': '2' } },
      { 'concurrent-deployment-syncs': '2' },
    ],
  ])('%s', (_, change, want) => {
    const flags = controllerManagerFlags({ ...kcm, ...change });
    for (const [name, v] of Object.entries(want)) expect(value(flags, name), name).toBe(v);
    expect(new Set(names(flags)).size).toBe(flags.length);
    expect(names(flags).slice(0, LOCAL_KCM.length)).toEqual(names(LOCAL_KCM));
  });

  it('is stable across calls', () => {
    const input = { ...kcm, extraArgs: { b: '1', a: '2' } };
    expect(controllerManagerFlags(input)).toEqual(controllerManagerFlags(structuredClone(input)));
    expect(controllerManagerFlags(input).slice(-2)).toEqual(['--a=2', '--b=1']);
  });
});

describe('parseFlagArgs', () => {
  it('reads --name=value and bare --name, the last of a name winning', () => {
    expect(parseFlagArgs(['--v=4', '--feature-gates=A=true,B=false', '--anonymous-auth', '--v=5', '--x='])).toEqual({
      v: '5',
      'feature-gates': 'A=true,B=false',
      'anonymous-auth': 'true',
      x: '',
    });
  });

  it('rejects arguments that are not flags', () => {
    expect(() => parseFlagArgs(['v=4'])).toThrow(/want --name=value/);
    expect(() => parseFlagArgs(['--Bad=1'])).toThrow(/invalid flag name/);
  });

  it('round-trips through apiserverFlags as the local provisioner passes extra args', () => {
    const flags = apiserverFlags({ ...apiserver, extraArgs: parseFlagArgs(['--v=4', '--audit-log-path=-']) });
    expect(value(flags, 'v')).toBe('4');
    expect(flags.at(-1)).toBe('--audit-log-path=-');
  });
});

describe('pkiPaths', () => {
  it('uses the kubeadm file names of PKI_FILES and leaves out an absent token file', () => {
    const p = pkiPaths('/etc/kubernetes/pki', { kubeconfig: '/etc/kubernetes/controller-manager.kubeconfig' });
    expect(p).toEqual({
      caFile: '/etc/kubernetes/pki/ca.crt',
      caKey: '/etc/kubernetes/pki/ca.key',
      apiserverCert: '/etc/kubernetes/pki/apiserver.crt',
      apiserverKey: '/etc/kubernetes/pki/apiserver.key',
      saPub: '/etc/kubernetes/pki/sa.pub',
      saKey: '/etc/kubernetes/pki/sa.key',
      frontProxyCa: '/etc/kubernetes/pki/front-proxy-ca.crt',
      frontProxyClientCert: '/etc/kubernetes/pki/front-proxy-client.crt',
      frontProxyClientKey: '/etc/kubernetes/pki/front-proxy-client.key',
      kubeletClientCert: '/etc/kubernetes/pki/kubelet-client.crt',
      kubeletClientKey: '/etc/kubernetes/pki/kubelet-client.key',
      kubeconfig: '/etc/kubernetes/controller-manager.kubeconfig',
    });
    expect('tokenFile' in p).toBe(false);
  });
});
