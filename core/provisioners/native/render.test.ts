import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { ANN } from '../../names/names.ts';
import { fingerprintSha256, generateControlPlanePKI } from '../../pki/pki.ts';
import type { ControlPlanePKI } from '../../pki/pki.ts';
import { TENANT_CONTROLLERS } from './flags.ts';
import {
  ADMIN_KUBECONFIG_KEY,
  KUBE_DIR,
  NATIVE_SECRETS,
  nativePKIOptions,
  PROBE_TIMEOUT_S,
  renderNative,
  resourceFor,
  type ClusterVersion,
  type NativeInput,
  type VirtualCluster,
} from './render.ts';

const ROOT = 'team-a-1a2b3c-dev';

const vc: VirtualCluster = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: '0b3f7a52-0000-4000-8000-000000000001' },
  spec: { clusterVersionName: 'v1', pkiExpireDays: 30 },
};

const cv: ClusterVersion = {
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ClusterVersion',
  metadata: { name: 'v1' },
  spec: { kubernetesVersion: 'v1.36.3' },
};

interface Container {
  name: string;
  image: string;
  command: string[];
  args: string[];
  volumeMounts: Array<{ name: string; mountPath: string }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
}
interface Probe {
  httpGet: { path: string; port: number; scheme: string };
  timeoutSeconds?: number;
}
interface StatefulSet extends KubeObject {
  spec: {
    replicas: number;
    serviceName: string;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string>; annotations: Record<string, string> };
      spec: {
        containers: Container[];
        volumes: Array<{
          name: string;
          projected?: { sources: Array<{ secret: { name: string; items: Array<{ key: string; path: string }> } }> };
        }>;
      };
    };
    volumeClaimTemplates?: Array<{
      metadata: { name: string };
      spec: { resources: { requests: { storage: string } } };
    }>;
  };
}
interface Secret extends KubeObject {
  type: string;
  data: Record<string, string>;
}

let pki: ControlPlanePKI;
let otherPki: ControlPlanePKI;
beforeAll(async () => {
  [pki, otherPki] = await Promise.all([
    generateControlPlanePKI(nativePKIOptions(vc, ROOT)),
    generateControlPlanePKI(nativePKIOptions(vc, ROOT)),
  ]);
});

const render = (o: Partial<NativeInput> = {}): KubeObject[] =>
  renderNative({ vc, clusterVersion: cv, pki, rootNamespace: ROOT, ...o });
const find = <T extends KubeObject>(objs: KubeObject[], kind: string, name: string): T => {
  const o = objs.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o as T;
};
const sts = (objs: KubeObject[], name: string): StatefulSet => find<StatefulSet>(objs, 'StatefulSet', name);
const container = (objs: KubeObject[], name: string): Container => sts(objs, name).spec.template.spec.containers[0]!;
const flag = (args: string[], name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const hashOf = (objs: KubeObject[], name: string): string =>
  sts(objs, name).spec.template.metadata.annotations[ANN.configHash]!;
const decode = (s: Secret, key: string): string => Buffer.from(s.data[key]!, 'base64').toString('utf8');

/** fileContent follows a path from the container's mounts through the projected volume to the Secret's data. */
function fileContent(objs: KubeObject[], component: string, path: string): string {
  const set = sts(objs, component);
  const c = set.spec.template.spec.containers[0]!;
  const mount = c.volumeMounts.find((m) => path.startsWith(`${m.mountPath}/`));
  if (!mount) throw new Error(`${component}: nothing mounted at ${path}`);
  const volume = set.spec.template.spec.volumes.find((v) => v.name === mount.name)!;
  const rel = path.slice(mount.mountPath.length + 1);
  for (const { secret } of volume.projected!.sources) {
    const item = secret.items.find((i) => i.path === rel);
    if (item) {
      const s = find<Secret>(objs, 'Secret', secret.name);
      expect(s.data, `${secret.name} has ${item.key}`).toHaveProperty(item.key);
      return decode(s, item.key);
    }
  }
  throw new Error(`${component}: no projected item for ${path}`);
}

describe('renderNative', () => {
  it('verifies kubelets (the vn-agent) against the platform CA when given one, from a Secret of its own', () => {
    const ca = '-----BEGIN CERTIFICATE-----\nvn-agent CA\n-----END CERTIFICATE-----\n';
    const objs = render({ kubeletCA: ca });
    const file = flag(container(objs, 'apiserver').args, 'kubelet-certificate-authority');
    expect(file).toBe(`${KUBE_DIR}/pki/kubelet-ca.crt`);
    expect(fileContent(objs, 'apiserver', file!)).toBe(ca);
    expect(hashOf(objs, 'apiserver')).not.toBe(hashOf(render(), 'apiserver'));
    expect(flag(container(render(), 'apiserver').args, 'kubelet-certificate-authority')).toBeUndefined();
    expect(render().some((o) => o.metadata?.name === NATIVE_SECRETS.kubeletCA)).toBe(false);
  });
  it('renders the namespace, secrets, etcd, apiserver and controller-manager in the root namespace', () => {
    const objs = render();
    expect(objs.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      `Namespace/${ROOT}`,
      'Secret/root-ca',
      'Secret/apiserver-tls',
      'Secret/front-proxy-ca',
      'Secret/front-proxy-client',
      'Secret/serviceaccount-key',
      'Secret/kubelet-client',
      'Secret/admin-kubeconfig',
      'Secret/controller-manager-kubeconfig',
      'Service/etcd',
      'Service/etcd-client',
      'NetworkPolicy/etcd',
      'StatefulSet/etcd',
      'Service/apiserver',
      'NetworkPolicy/apiserver-egress',
      'StatefulSet/apiserver',
      'StatefulSet/controller-manager',
    ]);
    for (const o of objs.slice(1)) expect(o.metadata?.namespace, `${o.kind}/${o.metadata?.name}`).toBe(ROOT);
    expect(objs[0]!.metadata?.annotations).toEqual({
      'tenancy.x-k8s.io/vcname': 'dev',
      'tenancy.x-k8s.io/vcnamespace': 'team-a',
      'tenancy.x-k8s.io/vcuid': vc.metadata!.uid,
    });
    expect(objs.map((o) => resourceFor(o).kind)).toEqual(objs.map((o) => o.kind));
    expect(resourceFor(find(objs, 'StatefulSet', 'etcd'))).toBe(R.statefulsets);
  });

  it('uses kubernetes.io/tls Secrets for certificate pairs and Opaque for the rest', () => {
    const objs = render();
    const types = Object.fromEntries(
      objs.filter((o) => o.kind === 'Secret').map((o) => [o.metadata!.name, (o as Secret).type]),
    );
    expect(types).toEqual({
      'root-ca': 'kubernetes.io/tls',
      'apiserver-tls': 'kubernetes.io/tls',
      'front-proxy-ca': 'kubernetes.io/tls',
      'front-proxy-client': 'kubernetes.io/tls',
      'kubelet-client': 'kubernetes.io/tls',
      'serviceaccount-key': 'Opaque',
      'admin-kubeconfig': 'Opaque',
      'controller-manager-kubeconfig': 'Opaque',
    });
    const kubelet = find<Secret>(objs, 'Secret', NATIVE_SECRETS.kubeletClient);
    expect(kubelet.metadata?.annotations?.[ANN.kubeletClientFingerprint]).toBe(
      fingerprintSha256(decode(kubelet, 'tls.crt')),
    );
  });

  it('points both kubeconfigs at the apiserver Service with the tenant CA', () => {
    const objs = render();
    const check = (secret: string, key: string, user: string, certPem: string) => {
      const kc = parse(decode(find<Secret>(objs, 'Secret', secret), key)) as {
        clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
        users: Array<{ name: string; user: Record<string, string> }>;
      };
      expect(kc.clusters[0]!.cluster.server).toBe(`https://apiserver.${ROOT}.svc:6443`);
      expect(Buffer.from(kc.clusters[0]!.cluster['certificate-authority-data'], 'base64').toString()).toBe(
        pki.ca.certPem,
      );
      expect(kc.users[0]!.name).toBe(user);
      expect(Buffer.from(kc.users[0]!.user['client-certificate-data']!, 'base64').toString()).toBe(certPem);
    };
    check(NATIVE_SECRETS.adminKubeconfig, ADMIN_KUBECONFIG_KEY, 'admin', pki.admin.certPem);
    check(
      NATIVE_SECRETS.controllerManagerKubeconfig,
      'controller-manager-kubeconfig',
      'system:kube-controller-manager',
      pki.controllerManager.certPem,
    );
  });

  it('connects the apiserver to its own etcd under /registry and runs the tenant controllers', () => {
    const objs = render();
    const api = container(objs, 'apiserver').args;
    expect(flag(api, 'etcd-servers')).toBe(`http://etcd-0.etcd.${ROOT}.svc:2379`);
    expect(flag(api, 'etcd-prefix')).toBe('/registry');
    expect(flag(api, 'secure-port')).toBe('6443');
    expect(flag(api, 'bind-address')).toBe('0.0.0.0');
    expect(flag(api, 'advertise-address')).toBe('$(POD_IP)');
    expect(flag(api, 'service-cluster-ip-range')).toBe('10.32.0.0/16');
    expect(flag(api, 'token-auth-file')).toBeUndefined();
    const kcm = container(objs, 'controller-manager').args;
    expect(flag(kcm, 'controllers')).toBe(TENANT_CONTROLLERS);
    expect(flag(kcm, 'leader-elect')).toBe('false');
    expect(flag(kcm, 'cluster-name')).toBe(ROOT);
    const etcd = container(objs, 'etcd').args;
    expect(flag(etcd, 'listen-client-urls')).toBe('http://0.0.0.0:2379');
    expect(flag(etcd, 'advertise-client-urls')).toBe(flag(api, 'etcd-servers'));
  });

  it.each([
    ['apiserver', 'tls-cert-file', (p: ControlPlanePKI) => p.apiserver.certPem],
    ['apiserver', 'tls-private-key-file', (p: ControlPlanePKI) => p.apiserver.keyPem],
    ['apiserver', 'client-ca-file', (p: ControlPlanePKI) => p.ca.certPem],
    ['apiserver', 'service-account-key-file', (p: ControlPlanePKI) => p.serviceAccount.publicKeyPem],
    ['apiserver', 'service-account-signing-key-file', (p: ControlPlanePKI) => p.serviceAccount.privateKeyPem],
    ['apiserver', 'kubelet-client-certificate', (p: ControlPlanePKI) => p.kubeletClient.certPem],
    ['apiserver', 'kubelet-client-key', (p: ControlPlanePKI) => p.kubeletClient.keyPem],
    ['apiserver', 'requestheader-client-ca-file', (p: ControlPlanePKI) => p.frontProxyCA.certPem],
    ['apiserver', 'proxy-client-cert-file', (p: ControlPlanePKI) => p.frontProxyClient.certPem],
    ['apiserver', 'proxy-client-key-file', (p: ControlPlanePKI) => p.frontProxyClient.keyPem],
    ['controller-manager', 'service-account-private-key-file', (p: ControlPlanePKI) => p.serviceAccount.privateKeyPem],
    ['controller-manager', 'root-ca-file', (p: ControlPlanePKI) => p.ca.certPem],
    ['controller-manager', 'cluster-signing-cert-file', (p: ControlPlanePKI) => p.ca.certPem],
    ['controller-manager', 'cluster-signing-key-file', (p: ControlPlanePKI) => p.ca.keyPem],
  ])('%s --%s names a mounted file holding the right PEM', (component, name, want) => {
    const objs = render();
    const path = flag(container(objs, component).args, name)!;
    expect(path.startsWith(`${KUBE_DIR}/pki/`)).toBe(true);
    expect(fileContent(objs, component, path)).toBe(want(pki));
  });

  it('mounts the controller-manager kubeconfig where its three kubeconfig flags point, and no more than needed', () => {
    const objs = render();
    const kcm = container(objs, 'controller-manager').args;
    for (const name of ['kubeconfig', 'authentication-kubeconfig', 'authorization-kubeconfig']) {
      expect(fileContent(objs, 'controller-manager', flag(kcm, name)!)).toContain(
        'user: system:kube-controller-manager',
      );
    }
    const projected = (component: string) =>
      sts(objs, component)
        .spec.template.spec.volumes.flatMap(
          (v) => v.projected?.sources.flatMap((s) => s.secret.items.map((i) => i.path)) ?? [],
        )
        .sort();
    expect(projected('controller-manager')).toEqual([
      'controller-manager.kubeconfig',
      'pki/ca.crt',
      'pki/ca.key',
      'pki/sa.key',
    ]);
    expect(projected('apiserver')).not.toContain('pki/ca.key');
    expect(projected('etcd')).toEqual([]);
  });

  it('probes the apiserver on /readyz and /livez and the controller-manager on /healthz over HTTPS', () => {
    const objs = render();
    const api = container(objs, 'apiserver');
    expect(api.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 6443, scheme: 'HTTPS' });
    expect(api.livenessProbe?.httpGet).toEqual({ path: '/livez', port: 6443, scheme: 'HTTPS' });
    const kcm = container(objs, 'controller-manager');
    expect(kcm.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 10257, scheme: 'HTTPS' });
    expect(kcm.readinessProbe?.httpGet).toEqual({ path: '/healthz', port: 10257, scheme: 'HTTPS' });
    // a busy node's slow answer does not take a component out of its Service
    for (const c of ['etcd', 'apiserver', 'controller-manager'].map((n) => container(objs, n)))
      for (const p of [c.readinessProbe, c.livenessProbe, c.startupProbe])
        expect(p?.timeoutSeconds, `${c.name}`).toBe(PROBE_TIMEOUT_S);
  });

  it('takes images, replicas, service type and storage size from the ClusterVersion, with defaults', () => {
    const plain = render();
    expect(container(plain, 'etcd').image).toBe('registry.k8s.io/etcd:3.6.6-0');
    expect(container(plain, 'apiserver').image).toBe('registry.k8s.io/kube-apiserver:v1.36.3');
    expect(container(plain, 'controller-manager').image).toBe('registry.k8s.io/kube-controller-manager:v1.36.3');
    expect(sts(plain, 'etcd').spec.replicas).toBe(1);
    expect(sts(plain, 'apiserver').spec.replicas).toBe(1);
    expect(sts(plain, 'etcd').spec.volumeClaimTemplates![0]!.spec.resources.requests.storage).toBe('1Gi');
    expect((find(plain, 'Service', 'apiserver').spec as { type: string }).type).toBe('ClusterIP');
    expect((find(plain, 'Service', 'etcd').spec as { clusterIP: string }).clusterIP).toBe('None');

    const custom = render({
      clusterVersion: {
        ...cv,
        spec: {
          kubernetesVersion: 'v1.35.0',
          etcd: { version: 'v3.5.21', storageSize: '5Gi' },
          apiServer: { image: 'example.com/apiserver:x', replicas: 3, serviceType: 'LoadBalancer' },
          controllerManager: { replicas: 2 },
        },
      },
    });
    expect(container(custom, 'etcd').image).toBe('registry.k8s.io/etcd:3.5.21-0');
    const etcdImage = (etcd: ClusterVersion['spec']['etcd']) =>
      container(render({ clusterVersion: { ...cv, spec: { ...cv.spec, etcd } } }), 'etcd').image;
    expect(etcdImage({ version: 'v3.6.6-1' })).toBe('registry.k8s.io/etcd:3.6.6-1');
    expect(etcdImage({ version: 'v3.6.16', image: 'example.com/etcd:y' })).toBe('example.com/etcd:y');
    expect(container(custom, 'apiserver').image).toBe('example.com/apiserver:x');
    expect(container(custom, 'controller-manager').image).toBe('registry.k8s.io/kube-controller-manager:v1.35.0');
    expect(sts(custom, 'apiserver').spec.replicas).toBe(3);
    expect(sts(custom, 'controller-manager').spec.replicas).toBe(2);
    expect(flag(container(custom, 'controller-manager').args, 'leader-elect')).toBe('true');
    expect(sts(custom, 'etcd').spec.volumeClaimTemplates![0]!.spec.resources.requests.storage).toBe('5Gi');
    expect((find(custom, 'Service', 'apiserver').spec as { type: string }).type).toBe('LoadBalancer');
  });

  it('lets VirtualCluster extraArgs override ClusterVersion extraArgs, which override the defaults', () => {
    const objs = render({
      vc: {
        ...vc,
        spec: {
          ...vc.spec,
          serviceCidr: '10.40.0.0/16',
          apiServer: { extraArgs: { v: '4' } },
          controllerManager: { extraArgs: { 'concurrent-gc-syncs': '5' } },
        },
      },
      clusterVersion: {
        ...cv,
        spec: {
          ...cv.spec,
          apiServer: { extraArgs: { v: '2', 'audit-log-path': '-' } },
          etcd: { extraArgs: { 'quota-backend-bytes': '8589934592' } },
        },
      },
    });
    const api = container(objs, 'apiserver').args;
    expect(flag(api, 'v')).toBe('4');
    expect(flag(api, 'audit-log-path')).toBe('-');
    expect(flag(api, 'service-cluster-ip-range')).toBe('10.40.0.0/16');
    expect(flag(container(objs, 'controller-manager').args, 'concurrent-gc-syncs')).toBe('5');
    expect(flag(container(objs, 'etcd').args, 'quota-backend-bytes')).toBe('8589934592');
  });

  it("bounds the tenant's etcd by the policy's quota.etcdBytes, unless the ClusterVersion sets the flag", () => {
    const quota = (objs: KubeObject[]) => flag(container(objs, 'etcd').args, 'quota-backend-bytes');
    expect(quota(render({ etcdBytes: 268435456 }))).toBe('268435456');
    const platform = { ...cv, spec: { ...cv.spec, etcd: { extraArgs: { 'quota-backend-bytes': '8589934592' } } } };
    expect(quota(render({ clusterVersion: platform, etcdBytes: 268435456 }))).toBe('8589934592');
    expect(quota(render())).toBeUndefined();
  });

  it('refuses a flag naming a file under /etc/kubernetes that no Secret provides', () => {
    expect(() =>
      render({
        vc: { ...vc, spec: { apiServer: { extraArgs: { 'audit-policy-file': '/etc/kubernetes/audit.yaml' } } } },
      }),
    ).toThrow(/no Secret provides \/etc\/kubernetes\/audit.yaml/);
  });

  it('changes the config hash of a pod template exactly when its flags or certificates change', () => {
    const base = render();
    const again = render();
    for (const name of ['etcd', 'apiserver', 'controller-manager'])
      expect(hashOf(again, name)).toBe(hashOf(base, name));
    expect(hashOf(base, 'apiserver')).toMatch(/^[0-9a-f]{32}$/);

    const flags = render({ vc: { ...vc, spec: { ...vc.spec, apiServer: { extraArgs: { v: '4' } } } } });
    expect(hashOf(flags, 'apiserver')).not.toBe(hashOf(base, 'apiserver'));
    expect(hashOf(flags, 'controller-manager')).toBe(hashOf(base, 'controller-manager'));
    expect(hashOf(flags, 'etcd')).toBe(hashOf(base, 'etcd'));

    const etcd = render({
      clusterVersion: { ...cv, spec: { ...cv.spec, etcd: { extraArgs: { 'snapshot-count': '5000' } } } },
    });
    expect(hashOf(etcd, 'etcd')).not.toBe(hashOf(base, 'etcd'));

    const certs = render({ pki: otherPki });
    expect(hashOf(certs, 'apiserver')).not.toBe(hashOf(base, 'apiserver'));
    expect(hashOf(certs, 'controller-manager')).not.toBe(hashOf(base, 'controller-manager'));
    expect(hashOf(certs, 'etcd')).toBe(hashOf(base, 'etcd'));
  });

  it('selects each StatefulSet by its own component labels', () => {
    const objs = render();
    for (const name of ['etcd', 'apiserver', 'controller-manager']) {
      const s = sts(objs, name).spec;
      expect(s.template.metadata.labels).toEqual(s.selector.matchLabels);
      expect(s.selector.matchLabels['tenancy.x-k8s.io/component']).toBe(name);
    }
    expect((find(objs, 'Service', 'apiserver').spec as { selector: unknown }).selector).toEqual(
      sts(objs, 'apiserver').spec.selector.matchLabels,
    );
  });
});

describe('nativePKIOptions', () => {
  it('names the apiserver Service in the root namespace and the first IP of the service CIDR', () => {
    expect(nativePKIOptions(vc, ROOT)).toEqual({
      clusterName: ROOT,
      apiserverDnsNames: [
        'apiserver',
        `apiserver.${ROOT}`,
        `apiserver.${ROOT}.svc`,
        `apiserver.${ROOT}.svc.cluster.local`,
      ],
      apiserverIPs: [],
      serviceIP: '10.32.0.1',
      validityDays: 30,
      clusterDomain: 'cluster.local',
    });
  });

  it('follows the spec and the super cluster domain', () => {
    const o = nativePKIOptions(
      { ...vc, spec: { serviceCidr: '172.20.0.0/16', clusterDomain: 'tenant.local' } },
      ROOT,
      'super.local',
    );
    expect(o.serviceIP).toBe('172.20.0.1');
    expect(o.validityDays).toBe(365);
    expect(o.clusterDomain).toBe('tenant.local');
    expect(o.apiserverDnsNames.at(-1)).toBe(`apiserver.${ROOT}.svc.super.local`);
  });

  it('adds the addresses the manager dials the apiserver at', () => {
    expect(nativePKIOptions(vc, ROOT, undefined, ['10.96.0.20']).apiserverIPs).toEqual(['10.96.0.20']);
  });
});

describe("renderNative on a super cluster without DNS, on the platform's nodes", () => {
  type PodSpec = {
    hostAliases?: Array<{ ip: string; hostnames: string[] }>;
    nodeSelector?: Record<string, string>;
    tolerations?: Array<Record<string, unknown>>;
    volumes: Array<{ name: string; hostPath?: { path: string; type: string } }>;
  };
  const podOf = (objs: KubeObject[], name: string): PodSpec => sts(objs, name).spec.template.spec as unknown as PodSpec;
  const COMPONENTS = ['etcd', 'apiserver', 'controller-manager'];

  it('maps the names the control plane dials to the Service IPs in every Pod, and only the IPs known', () => {
    const objs = render({ serviceIPs: { apiserver: '10.96.0.20', etcd: '10.96.0.21' } });
    for (const c of COMPONENTS)
      expect(podOf(objs, c).hostAliases, c).toEqual([
        { ip: '10.96.0.21', hostnames: [`etcd-0.etcd.${ROOT}.svc`] },
        { ip: '10.96.0.20', hostnames: [`apiserver.${ROOT}.svc`] },
      ]);
    // the names are the ones the flags and the kubeconfig use
    expect(flag(container(objs, 'apiserver').args, 'etcd-servers')).toBe(`http://etcd-0.etcd.${ROOT}.svc:2379`);
    expect(podOf(render({ serviceIPs: { apiserver: '10.96.0.20' } }), 'etcd').hostAliases).toEqual([
      { ip: '10.96.0.20', hostnames: [`apiserver.${ROOT}.svc`] },
    ]);
    expect(podOf(render(), 'apiserver').hostAliases).toBeUndefined();
  });

  it("serves etcd's client port on a ClusterIP Service next to the headless one", () => {
    const svc = find<KubeObject & { spec: Record<string, unknown> }>(render(), 'Service', 'etcd-client');
    expect(svc.spec.clusterIP).toBeUndefined();
    expect(svc.spec.selector).toEqual(sts(render(), 'etcd').spec.selector.matchLabels);
    expect(svc.spec.ports).toEqual([{ name: 'client', port: 2379, targetPort: 2379 }]);
  });

  it('adds the placement to every Pod without sharing its objects', () => {
    const placement = {
      nodeSelector: { 'vc.tenancy.x-k8s.io/real-node': 'true' },
      tolerations: [
        { key: 'vc.tenancy.x-k8s.io/real-node', operator: 'Exists' as const, effect: 'NoSchedule' as const },
      ],
    };
    const objs = render({ placement });
    for (const c of COMPONENTS) {
      expect(podOf(objs, c).nodeSelector, c).toEqual(placement.nodeSelector);
      expect(podOf(objs, c).tolerations, c).toEqual(placement.tolerations);
      expect(podOf(objs, c).tolerations).not.toBe(placement.tolerations);
    }
    for (const c of COMPONENTS) {
      expect(podOf(render(), c).nodeSelector).toBeUndefined();
      expect(podOf(render(), c).tolerations).toBeUndefined();
    }
  });

  it('keeps etcd data in a host directory instead of a claim when asked', () => {
    const objs = render({ etcdHostPath: `/var/lib/vc/native/${ROOT}` });
    const etcd = sts(objs, 'etcd');
    expect(etcd.spec.volumeClaimTemplates).toBeUndefined();
    expect(podOf(objs, 'etcd').volumes).toContainEqual({
      name: 'data',
      hostPath: { path: `/var/lib/vc/native/${ROOT}`, type: 'DirectoryOrCreate' },
    });
    expect(container(objs, 'etcd').volumeMounts).toContainEqual({ name: 'data', mountPath: '/var/lib/etcd' });
    expect(sts(render(), 'etcd').spec.volumeClaimTemplates?.[0]?.metadata.name).toBe('data');
    expect(podOf(render(), 'etcd').volumes.some((v) => v.hostPath)).toBe(false);
  });
});
