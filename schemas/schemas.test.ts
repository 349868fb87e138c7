import { describe, expect, it } from 'vitest';
import { validate } from './validate.ts';

const meta = { name: 'dev', namespace: 'team-a' };
const vc = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: meta,
  spec,
  ...extra,
});

const fullVC = vc(
  {
    clusterDomain: 'tenant.example',
    clusterVersionName: 'v1-36',
    pkiExpireDays: 365,
    transparentMetaPrefixes: ['transparency.example.com/'],
    opaqueMetaPrefixes: ['secret.example.com/'],
    serviceCidr: '10.32.0.0/16',
    provisioner: { type: 'import', import: { kubeconfigSecretRef: { name: 'dev-admin', key: 'admin.conf' } } },
    weight: 1000,
    podSecurityLevel: 'restricted',
    plugins: { enable: ['sandbox'], disable: ['ingresses'] },
    pluginConfig: { sandbox: { runtimeClassName: 'kata', nested: [1, { a: true }] } },
    superCluster: 'east',
    policyName: 'gold',
    apiServer: { extraArgs: { v: '4', 'feature-gates': 'Foo=true' } },
    controllerManager: { extraArgs: { 'concurrent-deployment-syncs': '10' } },
  },
  {
    status: {
      phase: 'Running',
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'ControlPlaneUp',
          message: 'ok',
          lastTransitionTime: '2026-01-02T03:04:05Z',
          observedGeneration: 2,
        },
      ],
      observedGeneration: 2,
      clusterNamespace: 'team-a-1a2b3c-dev',
      kubeletClientCertFingerprint: 'ab'.repeat(32),
      kubeconfigSecretName: 'dev-kubeconfig',
      apiserverEndpoint: 'https://[fd00::1]:6443',
      message: 'serving',
      reason: 'Synced',
    },
  },
);

describe('VirtualCluster schema', () => {
  it.each([
    ['minimal', vc({})],
    ['full, with status', fullVC],
    ['native provisioner without import', vc({ provisioner: { type: 'native' } })],
    ['extra metadata fields', vc({}, { metadata: { ...meta, uid: 'u1', resourceVersion: '7', labels: { a: 'b' } } })],
    [
      'an exposed apiserver',
      vc({
        apiServer: {
          expose: {
            type: 'NodePort',
            nodePort: 30443,
            extraDNSNames: ['api.team-a.example.com'],
            extraIPs: ['192.0.2.10', '2001:db8::1'],
          },
        },
      }),
    ],
    ['a LoadBalancer apiserver', vc({ apiServer: { expose: { type: 'LoadBalancer' } } })],
  ])('accepts %s', (_, value) => {
    expect(validate('virtualCluster', value)).toEqual([]);
  });

  it.each([
    ['weight 0', vc({ weight: 0 }), '/spec/weight'],
    ['weight 1001', vc({ weight: 1001 }), '/spec/weight'],
    ['a fractional weight', vc({ weight: 1.5 }), '/spec/weight'],
    ['an unknown pod security level', vc({ podSecurityLevel: 'open' }), '/spec/podSecurityLevel'],
    ['type import without import', vc({ provisioner: { type: 'import' } }), '/spec/provisioner/import'],
    [
      'import with another type',
      vc({ provisioner: { type: 'native', import: { kubeconfigSecretRef: { name: 's' } } } }),
      '/spec/provisioner/import',
    ],
    ['a provisioner without type', vc({ provisioner: {} }), '/spec/provisioner/type'],
    ['an unknown provisioner type', vc({ provisioner: { type: 'cloud' } }), '/spec/provisioner/type'],
    [
      'an import without secret name',
      vc({ provisioner: { type: 'import', import: { kubeconfigSecretRef: {} } } }),
      '/spec/provisioner/import/kubeconfigSecretRef/name',
    ],
    ['an unknown spec field', vc({ foo: 1 }), '/spec/foo'],
    ['an unknown nested field', vc({ plugins: { enabled: ['x'] } }), '/spec/plugins/enabled'],
    ['a CIDR prefix over 32', vc({ serviceCidr: '10.0.0.0/33' }), '/spec/serviceCidr'],
    ['an octet over 255', vc({ serviceCidr: '10.0.256.0/16' }), '/spec/serviceCidr'],
    ['an IPv6 CIDR', vc({ serviceCidr: 'fd00::/108' }), '/spec/serviceCidr'],
    ['pkiExpireDays 0', vc({ pkiExpireDays: 0 }), '/spec/pkiExpireDays'],
    ['pkiExpireDays over ten years', vc({ pkiExpireDays: 3651 }), '/spec/pkiExpireDays'],
    ['an uppercase cluster domain', vc({ clusterDomain: 'Cluster.Local' }), '/spec/clusterDomain'],
    ['a duplicate plugin', vc({ plugins: { enable: ['a', 'a'] } }), '/spec/plugins/enable'],
    ['an extra arg with dashes', vc({ apiServer: { extraArgs: { '--v': '4' } } }), '/spec/apiServer/extraArgs'],
    [
      'a non-string extra arg',
      vc({ controllerManager: { extraArgs: { v: 4 } } }),
      '/spec/controllerManager/extraArgs/v',
    ],
    ['a non-object pluginConfig', vc({ pluginConfig: 'x' }), '/spec/pluginConfig'],
    ['an unknown expose type', vc({ apiServer: { expose: { type: 'Ingress' } } }), '/spec/apiServer/expose/type'],
    [
      'a node port without type NodePort',
      vc({ apiServer: { expose: { type: 'LoadBalancer', nodePort: 30443 } } }),
      '/spec/apiServer/expose/nodePort',
    ],
    [
      'a node port without a type',
      vc({ apiServer: { expose: { nodePort: 30443 } } }),
      '/spec/apiServer/expose/nodePort',
    ],
    [
      'a node port of 0',
      vc({ apiServer: { expose: { type: 'NodePort', nodePort: 0 } } }),
      '/spec/apiServer/expose/nodePort',
    ],
    [
      'an extra IP that is no address',
      vc({ apiServer: { expose: { extraIPs: ['192.0.2.300'] } } }),
      '/spec/apiServer/expose/extraIPs/0',
    ],
    [
      'an extra DNS name with an underscore',
      vc({ apiServer: { expose: { extraDNSNames: ['api_1.example.com'] } } }),
      '/spec/apiServer/expose/extraDNSNames/0',
    ],
    ['an unknown expose field', vc({ apiServer: { expose: { port: 443 } } }), '/spec/apiServer/expose/port'],
    ['a name with a dot', vc({}, { metadata: { name: 'a.b', namespace: 'n' } }), '/metadata/name'],
    ['no namespace', vc({}, { metadata: { name: 'a' } }), '/metadata/namespace'],
    ['no spec', { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', metadata: meta }, '/spec'],
    ['the wrong kind', vc({}, { kind: 'ClusterVersion' }), '/kind'],
    ['an unknown top-level field', vc({}, { data: {} }), '/data'],
    ['an unknown phase', vc({}, { status: { phase: 'Ready' } }), '/status/phase'],
    [
      'a condition status Maybe',
      vc(
        {},
        {
          status: {
            conditions: [{ type: 'Ready', status: 'Maybe', reason: 'X', lastTransitionTime: '2026-01-01T00:00:00Z' }],
          },
        },
      ),
      '/status/conditions/0/status',
    ],
    [
      'a snake_case reason',
      vc(
        {},
        {
          status: {
            conditions: [
              { type: 'Ready', status: 'True', reason: 'not_camel', lastTransitionTime: '2026-01-01T00:00:00Z' },
            ],
          },
        },
      ),
      '/status/conditions/0/reason',
    ],
    [
      'a bad transition time',
      vc(
        {},
        { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Up', lastTransitionTime: 'yesterday' }] } },
      ),
      '/status/conditions/0/lastTransitionTime',
    ],
    [
      'an uppercase fingerprint',
      vc({}, { status: { kubeletClientCertFingerprint: 'AB'.repeat(32) } }),
      '/status/kubeletClientCertFingerprint',
    ],
    [
      'a short fingerprint',
      vc({}, { status: { kubeletClientCertFingerprint: 'ab'.repeat(31) } }),
      '/status/kubeletClientCertFingerprint',
    ],
    [
      'an endpoint without scheme',
      vc({}, { status: { apiserverEndpoint: '10.0.0.1:6443' } }),
      '/status/apiserverEndpoint',
    ],
    [
      'an IPv6 endpoint without brackets',
      vc({}, { status: { apiserverEndpoint: 'https://fd00::1:6443' } }),
      '/status/apiserverEndpoint',
    ],
  ])('rejects %s at its pointer', (_, value, pointer) => {
    expect([...new Set(validate('virtualCluster', value).map((e) => e.pointer))]).toEqual([pointer]);
  });
});

const cv = (spec: Record<string, unknown>) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name: 'v1-36' },
  spec,
});

describe('ClusterVersion schema', () => {
  it.each([
    ['minimal', cv({ kubernetesVersion: 'v1.36.3' })],
    [
      'full',
      cv({
        kubernetesVersion: 'v1.36.3',
        etcd: {
          image: 'registry.k8s.io/etcd:3.6.16-0',
          version: 'v3.6.16',
          extraArgs: { 'quota-backend-bytes': '8589934592' },
          storageSize: '1Gi',
        },
        apiServer: {
          image: 'registry.k8s.io/kube-apiserver:v1.36.3',
          replicas: 3,
          extraArgs: { v: '2' },
          serviceType: 'LoadBalancer',
        },
        controllerManager: { image: 'registry.k8s.io/kube-controller-manager:v1.36.3', replicas: 1, extraArgs: {} },
      }),
    ],
  ])('accepts %s', (_, value) => {
    expect(validate('clusterVersion', value)).toEqual([]);
  });

  it.each([
    ['no kubernetesVersion', cv({}), '/spec/kubernetesVersion'],
    ['a version without v', cv({ kubernetesVersion: '1.36.3' }), '/spec/kubernetesVersion'],
    ['zero replicas', cv({ kubernetesVersion: 'v1.36.3', apiServer: { replicas: 0 } }), '/spec/apiServer/replicas'],
    [
      'six replicas',
      cv({ kubernetesVersion: 'v1.36.3', controllerManager: { replicas: 6 } }),
      '/spec/controllerManager/replicas',
    ],
    [
      'an unknown service type',
      cv({ kubernetesVersion: 'v1.36.3', apiServer: { serviceType: 'ExternalName' } }),
      '/spec/apiServer/serviceType',
    ],
    [
      'a bad storage size',
      cv({ kubernetesVersion: 'v1.36.3', etcd: { storageSize: 'lots' } }),
      '/spec/etcd/storageSize',
    ],
    ['an image with spaces', cv({ kubernetesVersion: 'v1.36.3', etcd: { image: 'a b' } }), '/spec/etcd/image'],
    ['an unknown etcd field', cv({ kubernetesVersion: 'v1.36.3', etcd: { replicas: 3 } }), '/spec/etcd/replicas'],
  ])('rejects %s at its pointer', (_, value, pointer) => {
    expect([...new Set(validate('clusterVersion', value).map((e) => e.pointer))]).toEqual([pointer]);
  });
});

const tp = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { name: 'gold' }) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'TenantPolicy',
  metadata,
  spec,
});

describe('TenantPolicy schema', () => {
  it.each([
    ['empty (the built-in defaults)', tp({})],
    [
      'full',
      tp(
        {
          controlPlane: {
            apiServer: { extraArgs: { 'max-requests-inflight': '800' } },
            controllerManager: { extraArgs: { 'kube-api-qps': '50' } },
            tenantSettableArgs: { apiServer: ['v', 'event-ttl'], controllerManager: ['concurrent-deployment-syncs'] },
          },
          podSecurity: { allowedLevels: ['privileged', 'baseline', 'restricted'], defaultLevel: 'restricted' },
          weight: { max: 100, default: 5 },
          provisioners: { allowed: ['local', 'native', 'import'] },
          plugins: { enforced: ['namespaces', 'pods', 'dns', 'sandbox'], allowedOptIn: ['ingresses'] },
          pluginConfig: { sandbox: { runtimeClassName: 'kata' } },
        },
        { name: 'gold', annotations: { 'tenancy.x-k8s.io/is-default-policy': 'true' } },
      ),
    ],
  ])('accepts %s', (_, value) => {
    expect(validate('tenantPolicy', value)).toEqual([]);
  });

  it.each([
    ['a namespace-less name with capitals', tp({}, { name: 'Gold' }), '/metadata/name'],
    ['an unknown spec field', tp({ bogus: {} }), '/spec/bogus'],
    ['an unknown pod security level', tp({ podSecurity: { defaultLevel: 'open' } }), '/spec/podSecurity/defaultLevel'],
    ['no allowed level at all', tp({ podSecurity: { allowedLevels: [] } }), '/spec/podSecurity/allowedLevels'],
    ['a weight ceiling of 0', tp({ weight: { max: 0 } }), '/spec/weight/max'],
    ['an unknown provisioner', tp({ provisioners: { allowed: ['cloud'] } }), '/spec/provisioners/allowed/0'],
    [
      'a settable flag with dashes',
      tp({ controlPlane: { tenantSettableArgs: { apiServer: ['--v'] } } }),
      '/spec/controlPlane/tenantSettableArgs/apiServer/0',
    ],
    [
      'a non-string flag value',
      tp({ controlPlane: { apiServer: { extraArgs: { v: 4 } } } }),
      '/spec/controlPlane/apiServer/extraArgs/v',
    ],
    ['a duplicate enforced plugin', tp({ plugins: { enforced: ['pods', 'pods'] } }), '/spec/plugins/enforced'],
  ])('rejects %s at its pointer', (_, value, pointer) => {
    expect([...new Set(validate('tenantPolicy', value).map((e) => e.pointer))]).toEqual([pointer]);
  });
});
