import { X509Certificate } from 'node:crypto';
import type { KubeClient, KubeObject, Resource } from '../../kube/client.ts';
import { createCertificateRequest } from '../../pki/pki.ts';
import { DEFAULT_RENEW_FRACTION, renewAt } from '../../pki/renewal.ts';
import { FIELD_MANAGER, INSTALL_LABELS, InstallError } from './render.ts';

/** VN_AGENT_PREREQS name what the vn-agent DaemonSet mounts (deploy/vn-agent/daemonset.yaml) and its user. */
export const VN_AGENT_PREREQS = {
  namespace: 'vc-vn-agent',
  clientSecret: 'vc-vn-agent-kubelet-client',
  caConfigMap: 'vc-vn-agent-kubelet-ca',
  /** the user the kubelets authorize (ClusterRoleBinding vc-vn-agent-kubelet of deploy/vn-agent/rbac.yaml) */
  user: 'vc-vn-agent',
  signer: 'kubernetes.io/kube-apiserver-client',
} as const;

const CSR: Resource = {
  group: 'certificates.k8s.io',
  version: 'v1',
  resource: 'certificatesigningrequests',
  kind: 'CertificateSigningRequest',
  namespaced: false,
};
const SECRETS: Resource = { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true };
const CONFIGMAPS: Resource = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };

/**
 * certificateUsable says whether a PEM certificate is the vn-agent's (CN vc-vn-agent) and not yet `fraction` of the
 * way through its life at `now` (the renewal time of every certificate the manager issues, core/pki/renewal.ts);
 * otherwise why not. It reads nothing but its arguments.
 */
export function certificateUsable(
  pem: string | undefined,
  now: number,
  fraction = DEFAULT_RENEW_FRACTION,
): true | string {
  if (!pem) return 'no certificate';
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch (e) {
    return `not a certificate: ${(e as Error).message}`;
  }
  if (!/(^|\n)CN=vc-vn-agent($|\n)/.test(cert.subject)) return `subject ${cert.subject.replaceAll('\n', ', ')}`;
  const due = renewAt({ notBefore: new Date(cert.validFrom), notAfter: new Date(cert.validTo) }, fraction);
  if (due.getTime() <= now) return `due for renewal since ${due.toISOString()} (expires ${cert.validTo})`;
  return true;
}

function labels(version: string): Record<string, string> {
  return {
    [INSTALL_LABELS.managedBy]: FIELD_MANAGER,
    [INSTALL_LABELS.partOf]: 'virtualcluster-ts',
    [INSTALL_LABELS.version]: version,
  };
}

/** SecretObject is a Secret as read. */
interface SecretObject extends KubeObject {
  data?: Record<string, string>;
}

/**
 * ensureKubeletClientCert keeps the vn-agent's kubelet client certificate in the Secret its DaemonSet mounts: an
 * existing usable one stays as it is (a re-run changes nothing); otherwise a key is made here (core/pki), a
 * CertificateSigningRequest for CN vc-vn-agent is sent for the signer kubernetes.io/kube-apiserver-client, approved
 * with this identity's rights, its certificate awaited and stored with the key (type kubernetes.io/tls), and the
 * request deleted. It says what it did.
 */
export async function ensureKubeletClientCert(
  c: KubeClient,
  o: { version: string; timeoutMs?: number; now?: number },
): Promise<string> {
  const p = VN_AGENT_PREREQS;
  const existing = await c.getOrNull<SecretObject>(SECRETS, p.namespace, p.clientSecret);
  const current = existing?.data?.['tls.crt'] && Buffer.from(existing.data['tls.crt'], 'base64').toString('utf8');
  const usable = certificateUsable(current || undefined, o.now ?? Date.now());
  if (usable === true) return `kept the kubelet client certificate in Secret ${p.namespace}/${p.clientSecret}`;

  const req = await createCertificateRequest(p.user);
  const csr = await c.create<KubeObject>(CSR, {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { generateName: 'vc-vn-agent-', labels: labels(o.version) },
    spec: {
      request: Buffer.from(req.csrPem).toString('base64'),
      signerName: p.signer,
      usages: ['digital signature', 'client auth'],
      expirationSeconds: 365 * 86_400,
    },
  });
  const name = csr.metadata!.name!;
  try {
    await c.request('PUT', `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}/approval`, {
      body: {
        ...csr,
        status: {
          conditions: [
            {
              type: 'Approved',
              status: 'True',
              reason: 'VcInstall',
              message: 'the vn-agent kubelet client certificate, approved by vc install',
            },
          ],
        },
      },
    });
    const deadline = Date.now() + (o.timeoutMs ?? 60_000);
    let certPem = '';
    for (;;) {
      const got = await c.get<
        KubeObject & { status?: { certificate?: string; conditions?: Array<{ type: string; message?: string }> } }
      >(CSR, undefined, name);
      const failed = got.status?.conditions?.find((x) => x.type === 'Failed' || x.type === 'Denied');
      if (failed) throw new InstallError(`CertificateSigningRequest ${name} ${failed.type}: ${failed.message ?? ''}`);
      if (got.status?.certificate) {
        certPem = Buffer.from(got.status.certificate, 'base64').toString('utf8');
        break;
      }
      if (Date.now() > deadline)
        throw new InstallError(
          `CertificateSigningRequest ${name} was approved but no certificate was issued within ` +
            `${Math.round((o.timeoutMs ?? 60_000) / 1000)}s: the signer ${p.signer} is not running (kube-controller-manager ` +
            '--cluster-signing-cert-file/--cluster-signing-key-file); create the Secret by hand (deploy/vn-agent/daemonset.yaml)',
        );
      await new Promise((res) => setTimeout(res, 500));
    }
    await c.apply(
      SECRETS,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: p.clientSecret, namespace: p.namespace, labels: labels(o.version) },
        type: 'kubernetes.io/tls',
        data: {
          'tls.crt': Buffer.from(certPem).toString('base64'),
          'tls.key': Buffer.from(req.keyPem).toString('base64'),
        },
      },
      FIELD_MANAGER,
    );
  } finally {
    await c.delete(CSR, undefined, name);
  }
  return `issued the kubelet client certificate (CSR ${name}; the old one: ${usable}) into Secret ${p.namespace}/${p.clientSecret}`;
}

/** applyKubeletCA stores the kubelet CA in the ConfigMap the DaemonSet mounts (key ca.crt). */
export async function applyKubeletCA(c: KubeClient, pem: string, version: string): Promise<void> {
  const p = VN_AGENT_PREREQS;
  await c.apply(
    CONFIGMAPS,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: p.caConfigMap, namespace: p.namespace, labels: labels(version) },
      data: { 'ca.crt': pem },
    },
    FIELD_MANAGER,
  );
}

/** prerequisiteObjects are the vn-agent prerequisites as objects, kept from pruning while the vn-agent is chosen. */
export function prerequisiteObjects(): KubeObject[] {
  const p = VN_AGENT_PREREQS;
  return [
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: p.clientSecret, namespace: p.namespace } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: p.caConfigMap, namespace: p.namespace } },
  ];
}
