import { describe, expect, it } from 'vitest';
import { assertFlagsAllowed, checkFlags, flagCategory, type CheckedComponent, type FlagCategory } from './allowlist.ts';

describe('the global flag allow-list', () => {
  it.each<[CheckedComponent, string, FlagCategory | undefined]>([
    ['apiServer', 'v', undefined],
    ['apiServer', 'max-requests-inflight', undefined],
    ['apiServer', 'max-mutating-requests-inflight', undefined],
    ['apiServer', 'event-ttl', undefined],
    ['apiServer', 'feature-gates', undefined],
    ['apiServer', 'runtime-config', undefined],
    ['apiServer', 'audit-log-maxage', undefined],
    ['apiServer', 'service-node-port-range', undefined],
    ['controllerManager', 'concurrent-deployment-syncs', undefined],
    ['controllerManager', 'concurrent-gc-syncs', undefined],
    ['controllerManager', 'kube-api-qps', undefined],
    ['controllerManager', 'horizontal-pod-autoscaler-sync-period', undefined],
    ['apiServer', 'etcd-prefix', 'etcd'],
    ['apiServer', 'etcd-servers', 'etcd'],
    ['apiServer', 'etcd-cafile', 'etcd'],
    ['apiServer', 'storage-backend', 'etcd'],
    ['apiServer', 'encryption-provider-config', 'etcd'],
    ['apiServer', 'token-auth-file', 'authentication'],
    ['apiServer', 'client-ca-file', 'authentication'],
    ['apiServer', 'anonymous-auth', 'authentication'],
    ['apiServer', 'oidc-issuer-url', 'authentication'],
    ['apiServer', 'requestheader-allowed-names', 'authentication'],
    ['apiServer', 'authentication-token-webhook-config-file', 'authentication'],
    ['apiServer', 'service-account-key-file', 'authentication'],
    ['apiServer', 'tls-cert-file', 'authentication'],
    ['controllerManager', 'cluster-signing-key-file', 'authentication'],
    ['controllerManager', 'root-ca-file', 'authentication'],
    ['apiServer', 'authorization-mode', 'authorization'],
    ['apiServer', 'authorization-webhook-config-file', 'authorization'],
    ['controllerManager', 'authorization-always-allow-paths', 'authorization'],
    ['apiServer', 'enable-admission-plugins', 'admission'],
    ['apiServer', 'disable-admission-plugins', 'admission'],
    ['apiServer', 'admission-control-config-file', 'admission'],
    ['apiServer', 'allow-privileged', 'admission'],
    ['apiServer', 'service-account-issuer', 'service-account issuer'],
    ['apiServer', 'service-account-signing-key-file', 'service-account issuer'],
    ['apiServer', 'api-audiences', 'service-account issuer'],
    ['controllerManager', 'service-account-private-key-file', 'service-account issuer'],
    ['controllerManager', 'controllers', 'controllers'],
    ['controllerManager', 'kubeconfig', 'host files'],
    ['apiServer', 'audit-log-path', 'host files'],
    ['apiServer', 'audit-policy-file', 'host files'],
    ['apiServer', 'cert-dir', 'host files'],
    ['controllerManager', 'tracing-config-file', 'host files'],
    ['apiServer', 'bind-address', 'not allow-listed'],
    ['apiServer', 'secure-port', 'not allow-listed'],
    ['apiServer', 'endpoint-reconciler-type', 'not allow-listed'],
    ['controllerManager', 'max-requests-inflight', 'not allow-listed'],
    ['controllerManager', 'leader-elect-resource-name', 'not allow-listed'],
    ['controllerManager', 'leader-elect-resource-namespace', 'not allow-listed'],
    ['controllerManager', 'leader-elect-resource-lock', 'not allow-listed'],
    ['controllerManager', 'leader-elect', undefined],
    ['controllerManager', 'leader-elect-lease-duration', undefined],
    ['apiServer', 'leader-elect', 'not allow-listed'],
    // etcd: tuning only, from a ClusterVersion; where it listens, its data and its TLS are the provisioner's
    ['etcd', 'quota-backend-bytes', undefined],
    ['etcd', 'snapshot-count', undefined],
    ['etcd', 'listen-client-urls', 'not allow-listed'],
    ['etcd', 'advertise-client-urls', 'not allow-listed'],
    ['etcd', 'initial-cluster', 'not allow-listed'],
    ['etcd', 'data-dir', 'host files'],
    ['etcd', 'wal-dir', 'host files'],
    ['etcd', 'trusted-ca-file', 'host files'],
    ['etcd', 'client-cert-auth', 'not allow-listed'],
    ['etcd', 'unsafe-no-fsync', 'not allow-listed'],
    ['etcd', 'enable-pprof', 'not allow-listed'],
  ])('%s --%s: %s', (component, flag, category) => {
    expect(flagCategory(component, flag)).toBe(category);
  });

  it('lists every refused flag in name order, with its category', () => {
    expect(checkFlags('apiServer', { v: '4', 'token-auth-file': '/x', 'etcd-prefix': '/registry' })).toEqual([
      { flag: 'etcd-prefix', category: 'etcd' },
      { flag: 'token-auth-file', category: 'authentication' },
    ]);
    expect(checkFlags('apiServer', undefined)).toEqual([]);
  });

  it('throws naming component, flag and category, and passes allowed flags', () => {
    expect(() =>
      assertFlagsAllowed({ apiServer: { 'etcd-prefix': '/registry' }, controllerManager: { 'kube-api-qps': '5' } }),
    ).toThrow('refusing to start the control plane: apiServer: --etcd-prefix is refused by the flag allow-list (etcd)');
    expect(() =>
      assertFlagsAllowed({ apiServer: { v: '2' }, controllerManager: { 'concurrent-gc-syncs': '5' } }),
    ).not.toThrow();
    expect(() => assertFlagsAllowed({ etcd: { 'listen-client-urls': 'http://0.0.0.0:2379' } })).toThrow(
      'refusing to start the control plane: etcd: --listen-client-urls is refused by the flag allow-list (not allow-listed)',
    );
    expect(() => assertFlagsAllowed({ etcd: { 'snapshot-count': '5000' } })).not.toThrow();
  });
});
