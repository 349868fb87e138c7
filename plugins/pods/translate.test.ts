import { describe, expect, it } from 'vitest';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { claimEphemeralVolumes, confineAffinityNamespaces, dropNetRaw, setPullPolicies } from './translate.ts';

const caps = (s: PodSpec) =>
  s.containers.map((c) => (c.securityContext as { capabilities?: unknown } | undefined)?.capabilities);

describe('dropNetRaw', () => {
  it.each([
    ['a container with no security context loses NET_RAW', {}, { drop: ['NET_RAW'] }],
    ['other dropped capabilities stay', { capabilities: { drop: ['CHOWN'] } }, { drop: ['CHOWN', 'NET_RAW'] }],
    ['dropping ALL is enough', { capabilities: { drop: ['ALL'] } }, { drop: ['ALL'] }],
    ['a container that adds NET_RAW keeps it', { capabilities: { add: ['NET_RAW'] } }, { add: ['NET_RAW'] }],
    ['NET_RAW is not dropped twice', { capabilities: { drop: ['NET_RAW'] } }, { drop: ['NET_RAW'] }],
  ])('%s', (_n, securityContext, want) => {
    const s: PodSpec = { containers: [{ name: 'a', securityContext }], initContainers: [{ name: 'i' }] };
    dropNetRaw(s);
    expect(caps(s)).toEqual([want]);
    expect(s.initContainers?.[0]?.securityContext).toEqual({ capabilities: { drop: ['NET_RAW'] } });
  });
});

describe('setPullPolicies', () => {
  it('pulls container and image-volume images Always unless preloaded', () => {
    const s: PodSpec = {
      containers: [{ name: 'a', image: 'x:1', imagePullPolicy: 'Never' }],
      volumes: [
        { name: 'v', image: { reference: 'data:1', pullPolicy: 'Never' } },
        { name: 'p', image: { reference: 'pause:3', pullPolicy: 'Always' } },
      ],
    };
    setPullPolicies(s, new Set(['pause:3']));
    expect(s.containers[0]?.imagePullPolicy).toBe('Always');
    expect(s.volumes?.map((v) => v.image)).toEqual([
      { reference: 'data:1', pullPolicy: 'Always' },
      { reference: 'pause:3', pullPolicy: 'IfNotPresent' },
    ]);
  });
});

describe('claimEphemeralVolumes', () => {
  it("reads the claim the tenant's controller makes instead of having the super make one from the template", () => {
    const template = {
      metadata: { labels: { 'tenancy.x-k8s.io/cluster': 'someone-else' } },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'platform-fast' },
    };
    const s: PodSpec = {
      containers: [{ name: 'a' }],
      volumes: [
        { name: 'scratch', ephemeral: { volumeClaimTemplate: template } },
        { name: 'ro', ephemeral: { readOnly: true, volumeClaimTemplate: template } },
        { name: 'e', emptyDir: {} },
      ],
    };
    claimEphemeralVolumes(s, 'web-0');
    expect(s.volumes).toEqual([
      { name: 'scratch', persistentVolumeClaim: { claimName: 'web-0-scratch' } },
      { name: 'ro', persistentVolumeClaim: { claimName: 'web-0-ro', readOnly: true } },
      { name: 'e', emptyDir: {} },
    ]);
  });
});

describe('confineAffinityNamespaces', () => {
  it('maps every listed namespace of every Pod affinity term to the tenant super namespace', () => {
    const term = (namespaces?: string[]) => ({ topologyKey: 'k', ...(namespaces && { namespaces }) });
    const s: PodSpec = {
      containers: [{ name: 'a' }],
      affinity: {
        podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term(['a', 'kube-system']), term()] },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: term(['b']) }],
        },
      },
    };
    confineAffinityNamespaces(s, { superNamespace: (ns) => `root-${ns}` });
    expect(s.affinity).toEqual({
      podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term(['root-a', 'root-kube-system']), term()] },
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: term(['root-b']) }],
      },
    });
  });
});
