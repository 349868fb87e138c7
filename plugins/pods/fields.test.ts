import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFields } from '@virtualcluster-ts/plugin-sdk';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { checkPodFields, POD_SPEC_FIELDS } from './fields.ts';

const spec = (over: Record<string, unknown>, c: Record<string, unknown> = {}): PodSpec => ({
  containers: [{ name: 'app', image: 'nginx', ...c }],
  ...over,
});

const affinity = (term: Record<string, unknown>, kind = 'podAntiAffinity') => ({
  affinity: {
    [kind]: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', ...term }] },
  },
});

const cases: Array<[string, PodSpec, string | undefined, RegExp?]> = [
  ['a plain Pod passes', spec({}), undefined],
  [
    'a Pod using most of the copied fields passes',
    spec(
      {
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 5,
        hostAliases: [{ ip: '10.1.2.3', hostnames: ['db'] }],
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: 'zone',
            whenUnsatisfiable: 'DoNotSchedule',
            matchLabelKeys: ['pod-template-hash'],
          },
        ],
        securityContext: { runAsUser: 1000, fsGroup: 2000, sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }] },
        volumes: [
          { name: 'scratch', emptyDir: { sizeLimit: '1Gi' } },
          { name: 'img', image: { reference: 'example.com/data:1', pullPolicy: 'IfNotPresent' } },
          { name: 'eph', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } },
        ],
        ...affinity({ namespaces: ['other'], matchLabelKeys: ['app'] }),
      },
      {
        ports: [{ containerPort: 80, name: 'http' }],
        livenessProbe: { httpGet: { path: '/healthz', port: 80 }, periodSeconds: 5 },
        lifecycle: { preStop: { sleep: { seconds: 3 } } },
        env: [{ name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
        securityContext: { capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false },
      },
    ),
    undefined,
  ],
  [
    'a gMSA credential spec in a container is refused: the node retrieves any account of its domain',
    spec({}, { securityContext: { windowsOptions: { gmsaCredentialSpec: '{"ActiveDirectoryConfig":{}}' } } }),
    'spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec',
    /identity of the Windows node/,
  ],
  [
    'a gMSA credential spec named at Pod level is refused',
    spec({ securityContext: { windowsOptions: { gmsaCredentialSpecName: 'platform-admin' } } }),
    'spec.securityContext.windowsOptions.gmsaCredentialSpecName',
  ],
  [
    'a Windows user name passes',
    spec({ os: { name: 'windows' }, securityContext: { windowsOptions: { runAsUserName: 'ContainerUser' } } }),
    undefined,
  ],
  [
    'a field no rule names is refused, saying so',
    spec({ futureField: { x: 1 } }),
    'spec.futureField',
    /no rule exists for this field yet.*v1\.36/,
  ],
  [
    'an unknown field deep in a container is refused at its path',
    spec({}, { securityContext: { capabilities: { drop: ['ALL'] }, futureEscape: true } }),
    'spec.containers[0].securityContext.futureEscape',
  ],
  [
    'an unknown volume source is refused',
    spec({ volumes: [{ name: 'x', futureDisk: { id: 'vol-1' } }] }),
    'spec.volumes[0].futureDisk',
  ],
  [
    'a key that would be a prototype is unknown, not inherited',
    JSON.parse('{"containers":[{"name":"a","image":"b"}],"__proto__":{"hostNetwork":true}}') as PodSpec,
    'spec.__proto__',
  ],
  [
    'anti-affinity across every namespace (namespaceSelector {}) is refused',
    spec(affinity({ labelSelector: { matchLabels: { app: 'db' } }, namespaceSelector: {} })),
    'spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector',
    /other tenants/,
  ],
  [
    'preferred affinity by namespace labels is refused',
    spec({
      affinity: {
        podAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 1, podAffinityTerm: { topologyKey: 'k', namespaceSelector: { matchLabels: { a: 'b' } } } },
          ],
        },
      },
    }),
    'spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector',
  ],
  [
    'a liveness probe against another host is refused',
    spec({}, { livenessProbe: { httpGet: { host: '169.254.169.254', path: '/', port: 80 } } }),
    'spec.containers[0].livenessProbe.httpGet.host',
    /from the node/,
  ],
  [
    'a preStop hook against another host is refused',
    spec({}, { lifecycle: { preStop: { tcpSocket: { host: '10.0.0.1', port: 2379 } } } }),
    'spec.containers[0].lifecycle.preStop.tcpSocket.host',
  ],
  [
    'a startup probe of an init container is checked too',
    {
      containers: [{ name: 'a' }],
      initContainers: [{ name: 'i', startupProbe: { tcpSocket: { host: 'x', port: 1 } } }],
    },
    'spec.initContainers[0].startupProbe.tcpSocket.host',
  ],
  [
    'a pod certificate projection is refused',
    spec({
      volumes: [
        { name: 'cert', projected: { sources: [{ podCertificate: { signerName: 'a/b', keyType: 'ED25519' } }] } },
      ],
    }),
    'spec.volumes[0].projected.sources[0].podCertificate',
    /super cluster sign/,
  ],
  [
    'a cluster trust bundle projection is refused',
    spec({
      volumes: [{ name: 'ctb', projected: { sources: [{ clusterTrustBundle: { signerName: 'a/b', path: 'x' } }] } }],
    }),
    'spec.volumes[0].projected.sources[0].clusterTrustBundle',
  ],
  [
    'an in-tree cloud disk by id is refused',
    spec({ volumes: [{ name: 'd', awsElasticBlockStore: { volumeID: 'vol-0abc' } }] }),
    'spec.volumes[0].awsElasticBlockStore',
    /PersistentVolumeClaim/,
  ],
  [
    'a resource claim is refused',
    spec({ resourceClaims: [{ name: 'gpu', resourceClaimName: 'other' }] }),
    'spec.resourceClaims',
  ],
  [
    'a container resource claim is refused',
    spec({}, { resources: { claims: [{ name: 'gpu' }] } }),
    'spec.containers[0].resources.claims',
  ],
  ['a scheduling group is refused', spec({ schedulingGroup: { podGroupName: 'g' } }), 'spec.schedulingGroup'],
  [
    'an unknown toleration field is refused',
    spec({ tolerations: [{ key: 'a', futureMatch: 'all' }] }),
    'spec.tolerations[0].futureMatch',
  ],
  ['an empty refused field passes (omitted, as the apiserver writes it)', spec({ resourceClaims: [] }), undefined],
];

describe('checkPodFields', () => {
  it.each(cases)('%s', (_name, s, field, message) => {
    const r = checkPodFields(s);
    expect(r?.field).toBe(field);
    if (message) expect(r?.message).toMatch(message);
    if (field) expect(r?.message.startsWith(`${field}:`)).toBe(true);
  });
});

/**
 * goJsonFields reads the JSON field names of a struct from the pinned Kubernetes API module's core/v1 types.go, skipping
 * commented-out (tombstoned) fields; inline structs' fields are merged in.
 */
function goJsonFields(src: string, struct: string): string[] {
  const m = new RegExp(`^type ${struct} struct \\{([\\s\\S]*?)^\\}`, 'm').exec(src);
  if (!m) throw new Error(`no struct ${struct}`);
  const out: string[] = [];
  for (const line of m[1]!.split('\n')) {
    if (line.trim().startsWith('//')) continue;
    const tag = /json:"([^,"]*)(,inline)?/.exec(line);
    if (!tag) continue;
    if (tag[2]) out.push(...goJsonFields(src, line.trim().split(/\s+/)[0]!));
    else if (tag[1] && tag[1] !== '-') out.push(tag[1]);
  }
  return out;
}

const API = join(homedir(), 'go/pkg/mod/k8s.io/api@v0.36.3/core/v1/types.go');
const source = (() => {
  try {
    return readFileSync(API, 'utf8');
  } catch {
    return undefined;
  }
})();

describe.runIf(source)('POD_SPEC_FIELDS against the pinned Kubernetes v1.36 API types', () => {
  const rows = describeFields(POD_SPEC_FIELDS);
  const ruled = (path: string) => new Set(rows.filter((r) => r.field.startsWith(path)).map((r) => r.field));
  it.each([
    ['', 'PodSpec'],
    ['containers[].', 'Container'],
    ['initContainers[].', 'Container'],
    ['containers[].securityContext.', 'SecurityContext'],
    ['securityContext.', 'PodSecurityContext'],
    ['volumes[].', 'Volume'],
    ['volumes[].projected.sources[].', 'VolumeProjection'],
    ['affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[].', 'PodAffinityTerm'],
    ['topologySpreadConstraints[].', 'TopologySpreadConstraint'],
    ['containers[].livenessProbe.', 'Probe'],
    ['containers[].lifecycle.preStop.', 'LifecycleHandler'],
    ['containers[].env[].valueFrom.', 'EnvVarSource'],
  ])('every field of %s(%s) has a rule', (path, struct) => {
    const have = ruled(path);
    const missing = goJsonFields(source!, struct).filter((f) => !have.has(`${path}${f}`) && !have.has(`${path}${f}[]`));
    expect(missing).toEqual([]);
  });
});
