import { beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/client.ts';
import { generateControlPlanePKI, type ControlPlanePKI } from '../../pki/pki.ts';
import { ProvisionRefused } from '../provisioner.ts';
import { containerResources, goMemoryLimitEnv, goRuntimeEnv, memoryBytes } from './parts.ts';
import {
  controlPlaneCounts,
  nativePKIOptions,
  renderNative,
  renderNativeServices,
  type ClusterVersion,
  type NativeInput,
  type VirtualCluster,
} from './render.ts';
import { judgeMembersChange, MEMBERS_CHANGE_REFUSED } from './version.ts';

const ROOT = 'team-a-1a2b3c-ha';
const vc = (replicas?: number): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'ha', namespace: 'team-a', uid: '0b3f7a52-0000-4000-8000-000000000002' },
  spec: { clusterVersionName: 'v1', ...(replicas !== undefined && { controlPlane: { replicas } }) },
});
const cv = (spec: Partial<ClusterVersion['spec']> = {}): ClusterVersion => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name: 'v1' },
  spec: { kubernetesVersion: 'v1.36.3', ...spec },
});

interface Container {
  args: string[];
  env?: Array<{ name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
}
interface StatefulSet extends KubeObject {
  spec: {
    replicas: number;
    template: {
      spec: {
        containers: Container[];
        affinity?: { podAntiAffinity: Record<string, unknown> };
        hostAliases?: Array<{ ip: string; hostnames: string[] }>;
      };
    };
  };
}
interface Service extends KubeObject {
  spec: { clusterIP?: string; publishNotReadyAddresses?: boolean; selector: Record<string, string> };
}

let pki: ControlPlanePKI;
beforeAll(async () => {
  pki = await generateControlPlanePKI(nativePKIOptions(vc(3), ROOT));
});
const render = (o: Partial<NativeInput> = {}): KubeObject[] =>
  renderNative({ vc: vc(3), clusterVersion: cv(), pki, rootNamespace: ROOT, ...o });
const sts = (objs: KubeObject[], name: string) =>
  objs.find((x) => x.kind === 'StatefulSet' && x.metadata?.name === name) as StatefulSet;
const container = (objs: KubeObject[], name: string): Container => sts(objs, name).spec.template.spec.containers[0]!;
const flag = (args: string[], name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

describe('controlPlaneCounts', () => {
  it.each<[string, number | undefined, Partial<ClusterVersion['spec']>, ReturnType<typeof controlPlaneCounts>]>([
    ['nothing asked', undefined, {}, { etcd: 1, apiserver: 1, controllerManager: 1 }],
    [
      'the ClusterVersion`s apiservers alone',
      undefined,
      { apiServer: { replicas: 2 } },
      { etcd: 1, apiserver: 2, controllerManager: 1 },
    ],
    ['three members', 3, {}, { etcd: 3, apiserver: 3, controllerManager: 2 }],
    [
      'three members over the ClusterVersion`s apiservers',
      3,
      { apiServer: { replicas: 2 } },
      { etcd: 3, apiserver: 3, controllerManager: 2 },
    ],
    [
      'five members, one controller manager by the ClusterVersion',
      5,
      { controllerManager: { replicas: 1 } },
      { etcd: 5, apiserver: 5, controllerManager: 1 },
    ],
  ])('%s', (_, replicas, spec, want) => expect(controlPlaneCounts(vc(replicas), cv(spec))).toEqual(want));
});

describe('renderNative with three members', () => {
  it('runs three etcd members that name themselves after their Pods and start one cluster together', () => {
    const objs = render();
    expect(sts(objs, 'etcd').spec.replicas).toBe(3);
    const args = container(objs, 'etcd').args;
    expect(flag(args, 'name')).toBe('$(POD_NAME)');
    expect(flag(args, 'data-dir')).toBe('/var/lib/etcd/$(POD_NAME)');
    expect(flag(args, 'initial-advertise-peer-urls')).toBe(`http://$(POD_NAME).etcd.${ROOT}.svc:2380`);
    expect(flag(args, 'advertise-client-urls')).toBe(`http://$(POD_NAME).etcd.${ROOT}.svc:2379`);
    expect(flag(args, 'initial-cluster')).toBe(
      [0, 1, 2].map((i) => `etcd-${i}=http://etcd-${i}.etcd.${ROOT}.svc:2380`).join(','),
    );
    expect(container(objs, 'etcd').env).toEqual([
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
  });

  it('keeps the single member as it was: etcd-0, data in data/, no variable', () => {
    const one = renderNative({ vc: vc(1), clusterVersion: cv(), pki, rootNamespace: ROOT });
    const args = container(one, 'etcd').args;
    expect(flag(args, 'name')).toBe('etcd-0');
    expect(flag(args, 'data-dir')).toBe('/var/lib/etcd/data');
    expect(flag(args, 'initial-cluster')).toBe(`etcd-0=http://etcd-0.etcd.${ROOT}.svc:2380`);
    expect(container(one, 'etcd').env).toBeUndefined();
    expect(sts(one, 'etcd').spec.template.spec.affinity).toBeUndefined();
    expect(one.filter((o) => o.kind === 'Service').map((o) => o.metadata!.name)).toEqual([
      'etcd',
      'etcd-client',
      'apiserver',
    ]);
  });

  it('gives every apiserver all members, three apiservers and two controller managers with leader election', () => {
    const objs = render();
    expect(flag(container(objs, 'apiserver').args, 'etcd-servers')).toBe(
      [0, 1, 2].map((i) => `http://etcd-${i}.etcd.${ROOT}.svc:2379`).join(','),
    );
    expect(sts(objs, 'apiserver').spec.replicas).toBe(3);
    expect(sts(objs, 'controller-manager').spec.replicas).toBe(2);
    expect(flag(container(objs, 'controller-manager').args, 'leader-elect')).toBe('true');
  });

  it('keeps leader election on for two controller managers whatever extraArgs say, and lets one replica have it', () => {
    const off = { controllerManager: { extraArgs: { 'leader-elect': 'false', 'leader-elect-lease-duration': '20s' } } };
    const two = render({ clusterVersion: cv(off) });
    expect(sts(two, 'controller-manager').spec.replicas).toBe(2);
    expect(flag(container(two, 'controller-manager').args, 'leader-elect')).toBe('true');
    expect(flag(container(two, 'controller-manager').args, 'leader-elect-lease-duration')).toBe('20s');
    const on = { controllerManager: { extraArgs: { 'leader-elect': 'true' } } };
    const one = render({ vc: vc(1), clusterVersion: cv(on) });
    expect(sts(one, 'controller-manager').spec.replicas).toBe(1);
    expect(flag(container(one, 'controller-manager').args, 'leader-elect')).toBe('true');
    expect(flag(container(render({ vc: vc(1) }), 'controller-manager').args, 'leader-elect')).toBe('false');
  });

  it('prefers one instance of each component per node, and never requires it', () => {
    const objs = render();
    for (const c of ['etcd', 'apiserver', 'controller-manager']) {
      const anti = sts(objs, c).spec.template.spec.affinity?.podAntiAffinity;
      expect(anti, c).toEqual({
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: {
                matchLabels: { 'tenancy.x-k8s.io/cluster': ROOT, 'tenancy.x-k8s.io/component': c },
              },
            },
          },
        ],
      });
      expect(anti).not.toHaveProperty('requiredDuringSchedulingIgnoredDuringExecution');
    }
  });

  it('gives each member a ClusterIP Service of its own, ready or not, and maps each name to it', () => {
    const services = renderNativeServices(cv(), ROOT, undefined, 3) as Service[];
    const members = services.filter((s) => /^etcd-\d$/.test(s.metadata!.name!));
    expect(members.map((s) => s.metadata!.name)).toEqual(['etcd-0', 'etcd-1', 'etcd-2']);
    members.forEach((s, i) => {
      expect(s.spec.clusterIP).toBeUndefined();
      expect(s.spec.publishNotReadyAddresses).toBe(true);
      expect(s.spec.selector['statefulset.kubernetes.io/pod-name']).toBe(`etcd-${i}`);
    });
    const objs = render({
      serviceIPs: {
        apiserver: '10.96.0.20',
        etcd: '10.96.0.21',
        etcdMembers: ['10.96.0.30', '10.96.0.31', '10.96.0.32'],
      },
    });
    expect(sts(objs, 'apiserver').spec.template.spec.hostAliases).toEqual([
      { ip: '10.96.0.30', hostnames: [`etcd-0.etcd.${ROOT}.svc`] },
      { ip: '10.96.0.31', hostnames: [`etcd-1.etcd.${ROOT}.svc`] },
      { ip: '10.96.0.32', hostnames: [`etcd-2.etcd.${ROOT}.svc`] },
      { ip: '10.96.0.20', hostnames: [`apiserver.${ROOT}.svc`] },
    ]);
  });
});

describe('containerResources', () => {
  it.each<[string, Parameters<typeof containerResources>, ReturnType<typeof containerResources>]>([
    [
      'the apiserver by default',
      ['apiserver'],
      { requests: { cpu: '250m', memory: '320Mi' }, limits: { memory: '1280Mi' } },
    ],
    [
      'etcd by default: its limit follows the 2 GiB default quota',
      ['etcd'],
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '2304Mi' } },
    ],
    [
      'etcd under a 256 MiB quota',
      ['etcd', undefined, 256 * 1024 ** 2],
      { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '512Mi' } },
    ],
    [
      'a request raised alone: the limit follows it',
      ['controller-manager', { requests: { memory: '1Gi' } }],
      { requests: { cpu: '200m', memory: '1Gi' }, limits: { memory: '4096Mi' } },
    ],
    [
      'the ClusterVersion`s own limit and CPU, key by key',
      ['apiserver', { requests: { cpu: '1' }, limits: { cpu: '2', memory: '2Gi' } }],
      { requests: { cpu: '1', memory: '320Mi' }, limits: { cpu: '2', memory: '2Gi' } },
    ],
  ])('%s', (_, args, want) => expect(containerResources(...args)).toEqual(want));

  it('puts them on every container', () => {
    const objs = render({ clusterVersion: cv({ apiServer: { resources: { limits: { memory: '3Gi' } } } }) });
    expect(container(objs, 'apiserver').resources.limits.memory).toBe('3Gi');
    expect(container(objs, 'controller-manager').resources.requests).toEqual({ cpu: '200m', memory: '128Mi' });
    expect(container(objs, 'etcd').resources.limits.memory).toBe('2304Mi');
  });

  it.each([
    ['512Mi', 512 * 1024 ** 2],
    ['1.5G', 1.5e9],
    ['1000', 1000],
    ['2Ti', 2 * 1024 ** 4],
  ])('reads %s', (q, bytes) => expect(memoryBytes(q)).toBe(bytes));
  it('refuses a memory quantity of another form', () => expect(() => memoryBytes('1GB')).toThrow(/512Mi/));
});

describe('goMemoryLimit', () => {
  it.each([
    [undefined, undefined],
    ['160Mi', { GOMEMLIMIT: String(160 * 1024 ** 2) }],
    ['0.5Gi', { GOMEMLIMIT: String(512 * 1024 ** 2) }],
    ['200M', { GOMEMLIMIT: '200000000' }],
  ])('%s gives the environment %j', (q, want) => expect(goMemoryLimitEnv(q)).toEqual(want));

  it("sets GOMEMLIMIT in each component's container the ClusterVersion names, beside its own variables", () => {
    const env = (objs: KubeObject[], name: string) =>
      Object.fromEntries((container(objs, name).env ?? []).map((e) => [e.name, e.valueFrom ? 'fieldRef' : e]));
    const objs = render({
      clusterVersion: cv({
        etcd: { goMemoryLimit: '48Mi' },
        apiServer: { goMemoryLimit: '192Mi' },
        controllerManager: { goMemoryLimit: '64Mi' },
      }),
    });
    expect(env(objs, 'etcd')).toEqual({
      POD_NAME: 'fieldRef',
      GOMEMLIMIT: { name: 'GOMEMLIMIT', value: String(48 * 1024 ** 2) },
    });
    expect(env(objs, 'apiserver')).toEqual({
      POD_IP: 'fieldRef',
      GOMEMLIMIT: { name: 'GOMEMLIMIT', value: String(192 * 1024 ** 2) },
    });
    expect(env(objs, 'controller-manager')).toEqual({
      GOMEMLIMIT: { name: 'GOMEMLIMIT', value: String(64 * 1024 ** 2) },
    });
    const none = render();
    expect(container(none, 'controller-manager').env).toBeUndefined();
    expect(container(none, 'apiserver').env?.map((e) => e.name)).toEqual(['POD_IP']);
  });
});

describe('goGCPercent', () => {
  it.each([
    [undefined, undefined],
    [{}, undefined],
    [{ goGCPercent: 50 }, { GOGC: '50' }],
    [
      { goGCPercent: 50, goMemoryLimit: '1Mi' },
      { GOGC: '50', GOMEMLIMIT: String(1024 ** 2) },
    ],
  ])('%j gives the environment %j', (c, want) => expect(goRuntimeEnv(c)).toEqual(want));

  it("sets GOGC in each component's container the ClusterVersion names, beside GOMEMLIMIT", () => {
    const env = (objs: KubeObject[], name: string) =>
      Object.fromEntries(
        (container(objs, name).env ?? []).map((e) => [
          e.name,
          e.valueFrom ? 'fieldRef' : (e as { value?: string }).value,
        ]),
      );
    const objs = render({
      clusterVersion: cv({
        etcd: { goGCPercent: 50 },
        apiServer: { goGCPercent: 60, goMemoryLimit: '192Mi' },
        controllerManager: { goGCPercent: 70 },
      }),
    });
    expect(env(objs, 'etcd')).toMatchObject({ GOGC: '50' });
    expect(env(objs, 'apiserver')).toEqual({ POD_IP: 'fieldRef', GOGC: '60', GOMEMLIMIT: String(192 * 1024 ** 2) });
    expect(env(objs, 'controller-manager')).toEqual({ GOGC: '70' });
  });
});

describe('judgeMembersChange', () => {
  it.each([
    ['a first start', undefined, 3],
    ['the same count', 3, 3],
  ])('lets %s through', (_, running, wanted) => expect(() => judgeMembersChange(running, wanted)).not.toThrow());
  it.each([
    [1, 3],
    [3, 1],
    [3, 5],
  ])('refuses %i members to %i, naming the field', (running, wanted) => {
    let e: unknown;
    try {
      judgeMembersChange(running, wanted);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(ProvisionRefused);
    expect((e as ProvisionRefused).reason).toBe(MEMBERS_CHANGE_REFUSED);
    expect((e as ProvisionRefused).message).toMatch(
      new RegExp(`^spec.controlPlane.replicas: the tenant's etcd runs ${running} member\\(s\\) .*asked: ${wanted}`),
    );
  });
});
