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

/** hostAliases maps the in-cluster names the control plane dials to the ClusterIPs known so far. */
export function hostAliases(root: string, ips: NativeServiceIPs = {}): Array<{ ip: string; hostnames: string[] }> {
  const out: Array<{ ip: string; hostnames: string[] }> = [];
  if (ips.etcd) out.push({ ip: ips.etcd, hostnames: [etcdPeerHost(root)] });
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

/**
 * etcdFlags is the command line of the single etcd member `etcd-0`: plain HTTP on all Pod addresses (the
 * NetworkPolicy limits who connects), data in the volume, health on the metrics port.
 */
export function etcdFlags(root: string, extraArgs: ExtraArgs = {}): string[] {
  const peer = `http://${etcdPeerHost(root)}:${NATIVE_PORTS.etcdPeer}`;
  return flagList(
    [
      ['name', 'etcd-0'],
      ['data-dir', '/var/lib/etcd/data'],
      ['listen-client-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdClient}`],
      ['advertise-client-urls', etcdURL(root)],
      ['listen-peer-urls', `http://0.0.0.0:${NATIVE_PORTS.etcdPeer}`],
      ['initial-advertise-peer-urls', peer],
      ['initial-cluster', `etcd-0=${peer}`],
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
        files: [...p.files].map(([path, f]) => [path, f.data]).sort(([a], [b]) => a!.localeCompare(b!)),
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
