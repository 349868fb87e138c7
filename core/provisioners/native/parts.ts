/**
 * The pieces renderNative assembles: the PKI Secrets, etcd's image and flags, the files projected from the Secrets,
 * and one StatefulSet per component with its selector, metadata and host aliases.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../kube/client.ts';
import { ANN, IDENTITY, LABEL } from '../../names/names.ts';
import { renderKubeconfig } from '../../pki/pki.ts';
import type { ForcedPlacementView } from '../../plugins/contract.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';
import { flagList } from './flags.ts';

import {
  ADMIN_KUBECONFIG_KEY,
  apiserverHost,
  apiserverURL,
  type ClusterVersion,
  type ContainerResources,
  etcdMemoryLimit,
  etcdPeerHost,
  etcdURL,
  FILE_SOURCES,
  KUBE_DIR,
  NATIVE_DEFAULTS,
  NATIVE_PORTS,
  NATIVE_SECRETS,
  type NativeInput,
  type NativeServiceIPs,
} from './layout.ts';

/**
 * hostAliases maps the in-cluster names the control plane dials to the ClusterIPs known so far: each etcd member's
 * name to its own Service (several members) or the one member's name to the client Service.
 */
export function hostAliases(root: string, ips: NativeServiceIPs = {}): Array<{ ip: string; hostnames: string[] }> {
  const out: Array<{ ip: string; hostnames: string[] }> = [];
  if (ips.etcdMembers?.length)
    ips.etcdMembers.forEach((ip, i) => ip && out.push({ ip, hostnames: [etcdPeerHost(root, i)] }));
  else if (ips.etcd) out.push({ ip: ips.etcd, hostnames: [etcdPeerHost(root)] });
  if (ips.apiserver) out.push({ ip: ips.apiserver, hostnames: [apiserverHost(root)] });
  return out;
}

/**
 * etcdImage is spec.etcd.image, else the kubeadm-style tag of spec.etcd.version in registry.k8s.io (`v3.6.16` gives
 * `3.6.16-0`), else NATIVE_DEFAULTS.etcdImage.
 */
export function etcdImage(cv: ClusterVersion): string {
  const e = cv.spec.etcd;
  if (e?.image) return e.image;
  if (!e?.version) return NATIVE_DEFAULTS.etcdImage;
  const tag = e.version.replace(/^v/, '');
  return `registry.k8s.io/etcd:${tag.includes('-') ? tag : `${tag}-0`}`;
}

/** POD_NAME_ENV is the variable an etcd member of several finds its own name in (the Pod's, `etcd-<i>`). */
export const POD_NAME_ENV = 'POD_NAME';

/**
 * etcdFlags is the command line of an etcd of `members` members: plain HTTP on all Pod addresses (the NetworkPolicy
 * limits who connects), data in the volume, health on the metrics port. One member is `etcd-0` with its data in
 * `data` (as tenants made before several members were possible have it); each of several names itself after its Pod
 * (POD_NAME_ENV, expanded by the kubelet), keeps its data in a directory of that name (a host directory may be shared
 * by the members on one node) and starts the cluster of all members with the others.
 */
export function etcdFlags(root: string, extraArgs: ExtraArgs = {}, members = 1): string[] {
  const peerURL = (host: string) => `http://${host}:${NATIVE_PORTS.etcdPeer}`;
  const single = members <= 1;
  const self = single ? 'etcd-0' : `$(${POD_NAME_ENV})`;
  const selfHost = single ? etcdPeerHost(root) : `${self}.etcd.${root}.svc`;
  const cluster = Array.from({ length: Math.max(1, members) }, (_, i) => `etcd-${i}=${peerURL(etcdPeerHost(root, i))}`);
  return flagList(
    [
      ['name', self],
      ['data-dir', single ? '/var/lib/etcd/data' : `/var/lib/etcd/${self}`],
      ['listen-client-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdClient}`],
      ['advertise-client-urls', single ? etcdURL(root) : `http://${selfHost}:${NATIVE_PORTS.etcdClient}`],
      ['listen-peer-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdPeer}`],
      ['initial-advertise-peer-urls', peerURL(selfHost)],
      ['initial-cluster', cluster.join(',')],
      ['initial-cluster-state', 'new'],
      ['initial-cluster-token', root],
      ['listen-metrics-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdMetrics}`],
    ],
    extraArgs,
  );
}

/** renderSecrets are the Secrets of the PKI and the admin and controller-manager kubeconfigs (see NATIVE_SECRETS). */
export function renderSecrets({ vc, pki, rootNamespace: root, kubeletCA }: NativeInput): KubeObject[] {
  const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  const tls = (
    name: string,
    pair: { certPem: string; keyPem: string },
    annotations?: Record<string, string>,
  ): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...objectMeta(root, name), ...(annotations ? { annotations } : {}) },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem) },
  });
  const opaque = (name: string, data: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: objectMeta(root, name),
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  });
  const kubeconfig = (user: string, pair: { certPem: string; keyPem: string }): string =>
    renderKubeconfig({
      clusterName: vc.metadata?.name ?? root,
      server: apiserverURL(root),
      caPem: pki.ca.certPem,
      user,
      clientCertPem: pair.certPem,
      clientKeyPem: pair.keyPem,
    });
  return [
    tls(NATIVE_SECRETS.ca, pki.ca),
    tls(NATIVE_SECRETS.apiserver, pki.apiserver),
    tls(NATIVE_SECRETS.frontProxyCA, pki.frontProxyCA),
    tls(NATIVE_SECRETS.frontProxyClient, pki.frontProxyClient),
    opaque(NATIVE_SECRETS.serviceAccount, {
      'sa.key': pki.serviceAccount.privateKeyPem,
      'sa.pub': pki.serviceAccount.publicKeyPem,
    }),
    tls(NATIVE_SECRETS.kubeletClient, pki.kubeletClient, {
      [ANN.kubeletClientFingerprint]: pki.kubeletClientFingerprint,
    }),
    opaque(NATIVE_SECRETS.adminKubeconfig, { [ADMIN_KUBECONFIG_KEY]: kubeconfig('admin', pki.admin) }),
    opaque(NATIVE_SECRETS.controllerManagerKubeconfig, {
      'controller-manager-kubeconfig': kubeconfig('system:kube-controller-manager', pki.controllerManager),
    }),
    ...(kubeletCA ? [opaque(NATIVE_SECRETS.kubeletCA, { 'ca.crt': kubeletCA })] : []),
  ];
}

/** ProjectedFile is one file of KUBE_DIR in a Pod: where it comes from and (base64) what it holds. */
export interface ProjectedFile {
  secret: string;
  key: string;
  data: string;
}

/**
 * projectedFiles finds the files under KUBE_DIR a command line names and the Secret key each comes from; a flag
 * naming a file no Secret provides is an error here rather than a crash loop in the super cluster.
 */
export function projectedFiles(
  args: readonly string[],
  secretData: ReadonlyMap<string, Record<string, string>>,
): Map<string, ProjectedFile> {
  const files = new Map<string, ProjectedFile>();
  for (const arg of args) {
    const v = arg.slice(arg.indexOf('=') + 1);
    if (!v.startsWith(`${KUBE_DIR}/`)) continue;
    const src = FILE_SOURCES[v];
    if (!src) throw new Error(`${arg}: no Secret provides ${v}`);
    files.set(v, { ...src, data: secretData.get(src.secret)![src.key]! });
  }
  return files;
}

/** PodParts are what every control-plane Pod of a tenant shares. */
export interface PodParts {
  hostAliases: Array<{ ip: string; hostnames: string[] }>;
  placement?: ForcedPlacementView;
}

/** MEMORY_UNITS are the binary and decimal suffixes of a memory quantity, in bytes. */
const MEMORY_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** memoryBytes reads a memory quantity of the ClusterVersion schema's form (`512Mi`, `1.5G`, `1000`). */
export function memoryBytes(quantity: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!m) throw new Error(`memory quantity ${quantity} is not of the form 512Mi`);
  return Number(m[1]) * MEMORY_UNITS[m[2] ?? '']!;
}

/**
 * goMemoryLimitEnv is the environment that gives a component's Go runtime the ClusterVersion's goMemoryLimit: GOMEMLIMIT
 * in bytes (Go reads a plain number as bytes); nothing when the ClusterVersion sets none.
 */
export function goMemoryLimitEnv(quantity: string | undefined): Record<string, string> | undefined {
  return quantity === undefined ? undefined : { GOMEMLIMIT: String(Math.floor(memoryBytes(quantity))) };
}

/**
 * goRuntimeEnv is the environment of a component's Go runtime from its ClusterVersion settings: GOMEMLIMIT
 * (goMemoryLimitEnv) and GOGC from goGCPercent, each only when set; nothing when neither is.
 */
export function goRuntimeEnv(
  c: { goMemoryLimit?: string; goGCPercent?: number } | undefined,
): Record<string, string> | undefined {
  const env = {
    ...goMemoryLimitEnv(c?.goMemoryLimit),
    ...(c?.goGCPercent !== undefined && { GOGC: String(c.goGCPercent) }),
  };
  return Object.keys(env).length ? env : undefined;
}

/** NativeComponent is a component of a native tenant's control plane, as NATIVE_DEFAULTS.resources names it. */
export type NativeComponent = keyof typeof NATIVE_DEFAULTS.resources;

/**
 * containerResources are one component's requests and limits: the ClusterVersion's (`given`) key by key over
 * NATIVE_DEFAULTS.resources; etcd's default memory limit follows its storage quota (etcdMemoryLimit). A memory limit
 * the ClusterVersion leaves out is never below four times its memory request, so a request raised alone still fits.
 */
export function containerResources(
  component: NativeComponent,
  given: ContainerResources = {},
  etcdBytes?: number,
): { requests: Record<string, string>; limits: Record<string, string> } {
  const d: ContainerResources = NATIVE_DEFAULTS.resources[component];
  const requests: Record<string, string> = { ...d.requests, ...given.requests };
  const defaultLimit = component === 'etcd' ? etcdMemoryLimit(etcdBytes) : d.limits?.memory;
  const limits: Record<string, string> = { ...(defaultLimit && { memory: defaultLimit }), ...given.limits };
  if (!given.limits?.memory && requests.memory && limits.memory) {
    const atLeast = 4 * memoryBytes(requests.memory);
    if (memoryBytes(limits.memory) < atLeast) limits.memory = `${Math.ceil(atLeast / 1024 ** 2)}Mi`;
  }
  return { requests, limits };
}

/** StatefulSetParts are what statefulSet needs of one component. */
export interface StatefulSetParts extends PodParts {
  replicas: number;
  serviceName: string;
  files: ReadonlyMap<string, ProjectedFile>;
  args: string[];
  container: Record<string, unknown> & { image: string };
  volumeClaimTemplates?: KubeObject[];
  /** volumes of the Pod besides the projected Secrets */
  volumes?: Array<Record<string, unknown>>;
  /**
   * files the component reads again when they change (the kubelet rewrites projected files when their Secret
   * changes): left out of the config hash, so a new version of them does not roll the StatefulSet
   */
  reloaded?: ReadonlySet<string>;
}

/**
 * spreadAcrossNodes is the Pod affinity of a component of several instances: preferably no two on one node
 * (preferred, not required, so a super cluster of fewer nodes still runs them all).
 */
export function spreadAcrossNodes(root: string, component: string): Record<string, unknown> {
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            topologyKey: 'kubernetes.io/hostname',
            labelSelector: { matchLabels: selector(root, component) },
          },
        },
      ],
    },
  };
}

/** statefulSet renders one component as a StatefulSet in the root namespace, its Secrets projected as files. */
export function statefulSet(root: string, component: string, p: StatefulSetParts): KubeObject {
  const sources = new Map<string, Array<{ key: string; path: string }>>();
  for (const [path, f] of [...p.files].sort(([a], [b]) => a.localeCompare(b))) {
    const items = sources.get(f.secret) ?? [];
    items.push({ key: f.key, path: path.slice(KUBE_DIR.length + 1) });
    sources.set(f.secret, items);
  }
  const hash = createHash('sha256')
    .update(
      JSON.stringify({
        args: p.args,
        files: [...p.files]
          .filter(([path]) => !p.reloaded?.has(path))
          .map(([path, f]) => [path, f.data])
          .sort(([a], [b]) => a!.localeCompare(b!)),
      }),
    )
    .digest('hex')
    .slice(0, 32);
  const volumes = [
    ...(p.volumes ?? []),
    ...(sources.size === 0
      ? []
      : [
          {
            name: 'kubernetes',
            projected: {
              defaultMode: 0o400,
              sources: [...sources].map(([name, items]) => ({ secret: { name, items } })),
            },
          },
        ]),
  ];
  const { nodeSelector, tolerations } = p.placement ?? {};
  const mounts = sources.size === 0 ? [] : [{ name: 'kubernetes', mountPath: KUBE_DIR, readOnly: true }];
  const existingMounts = (p.container.volumeMounts as unknown[] | undefined) ?? [];
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: objectMeta(root, component, component),
    spec: {
      replicas: p.replicas,
      serviceName: p.serviceName,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: selector(root, component) },
      template: {
        metadata: { labels: selector(root, component), annotations: { [ANN.configHash]: hash } },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
          ...(p.hostAliases.length ? { hostAliases: p.hostAliases } : {}),
          ...(nodeSelector && Object.keys(nodeSelector).length ? { nodeSelector: { ...nodeSelector } } : {}),
          ...(tolerations?.length ? { tolerations: tolerations.map((t) => ({ ...t })) } : {}),
          ...(p.replicas > 1 ? { affinity: spreadAcrossNodes(root, component) } : {}),
          containers: [
            {
              name: component,
              ...p.container,
              args: p.args,
              volumeMounts: [...existingMounts, ...mounts],
              securityContext: {
                allowPrivilegeEscalation: false,
                ...(p.container.securityContext as object | undefined),
              },
            },
          ],
          volumes,
        },
      },
      ...(p.volumeClaimTemplates ? { volumeClaimTemplates: p.volumeClaimTemplates } : {}),
    },
  };
}

/** selector is the label selector of one component's Pods. */
export function selector(root: string, component: string): Record<string, string> {
  return { [LABEL.cluster]: root, [LABEL.component]: component };
}

/** objectMeta is the metadata of every object renderNative makes: root namespace, labels, identity. */
export function objectMeta(
  root: string,
  name: string,
  component?: string,
): { name: string; namespace: string; labels: Record<string, string> } {
  return {
    name,
    namespace: root,
    labels: {
      [LABEL.managedBy]: IDENTITY.manager,
      [LABEL.cluster]: root,
      ...(component ? { [LABEL.component]: component } : {}),
    },
  };
}
