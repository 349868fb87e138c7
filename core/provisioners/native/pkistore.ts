// The tenant PKI of a native control plane, kept in the Secret PKI_SECRET of its root namespace: generated once,
// its leaves renewed from the same CA when due, the serving certificate reissued when only the exposed names change,
// and regenerated (new CAs, the ServiceAccount key kept) when the certificate options change.
import { createHash } from 'node:crypto';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../../kube/client.ts';
import { R } from '../../kube/resources.ts';
import { childLogger } from '../../log.ts';
import { ANN, IDENTITY, LABEL, PREFIX } from '../../names/names.ts';
import {
  generateControlPlanePKI,
  issueApiserverCert,
  type ControlPlanePKI,
  type ControlPlanePKIOptions,
} from '../../pki/pki.ts';
import { stableJson } from '../roll.ts';
import { nativePKIOptions } from './render.ts';
import { renewDueLeaves, renewKubeletClient, type KubeletClientRotation } from './renewal.ts';
import { servingNamesHash, type Exposure } from './expose.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { renewalRequestOf } from '../renewrequest.ts';

const log = childLogger({ controller: 'provisioner-native' });

/** PKI_SECRET is the Secret in the root namespace that keeps a tenant's generated PKI across reconciles. */
export const PKI_SECRET = 'vc-pki';
/** PKI_SECRET_KEY is the data key of the serialized ControlPlanePKI (JSON) in PKI_SECRET. */
export const PKI_SECRET_KEY = 'pki.json';
/**
 * KUBELET_CLIENT_ROTATION_KEY is the data key in PKI_SECRET of the kubelet client certificate's renewal in progress
 * (KubeletClientRotation, JSON): a renewed pair published before the apiserver is given it, the one it replaced.
 */
export const KUBELET_CLIENT_ROTATION_KEY = 'kubelet-client-rotation.json';
/** PKI_OPTIONS_ANNOTATION on PKI_SECRET is pkiOptionsHash of the options the PKI was generated with. */
export const PKI_OPTIONS_ANNOTATION = ANN.pkiOptionsHash;
/**
 * SERVING_NAMES_ANNOTATION on PKI_SECRET is servingNamesHash of the exposed names (spec.apiServer.expose and the
 * addresses of its Service) the apiserver's serving certificate carries; when only they change, only that
 * certificate is issued again, from the same CA, so every kubeconfig and ServiceAccount token stays valid.
 */
export const SERVING_NAMES_ANNOTATION = `${PREFIX}/serving-names-hash`;

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

/** LeafRenewal is how the platform renews a tenant's leaf certificates (NativeOptions.certificates, resolved). */
export interface LeafRenewal {
  /** the lifetime of each leaf issued or renewed; absent, the tenant's spec.pkiExpireDays (the CAs keep that) */
  validityDays?: number;
  /** the share of a leaf's life after which it is renewed */
  renewFraction: number;
}

/** pkiOptionsHash identifies the certificate-relevant options; the PKI is regenerated only when it changes. */
export function pkiOptionsHash(o: ControlPlanePKIOptions): string {
  const stable = { ...o, apiserverDnsNames: [...o.apiserverDnsNames].sort(), apiserverIPs: [...o.apiserverIPs].sort() };
  return createHash('sha256')
    .update(JSON.stringify(stable, Object.keys(stable).sort()))
    .digest('hex')
    .slice(0, 16);
}

/**
 * ensurePKI returns the PKI kept in PKI_SECRET, generating and storing it when the Secret is missing or was made
 * for other certificate options (with `dry`, what it would store, without storing it), with the kubelet client
 * certificate's renewal in progress. Leaves past their renewal time are issued again from the same CA, and the
 * kubelet client certificate is taken one step through its renewal (renewKubeletClient: the status must publish a
 * renewed one before the apiserver is given it). Creation is a create, not an apply: of two racing managers one wins
 * and the other reads its PKI.
 */
export async function ensurePKI(
  client: KubeClient,
  vc: VirtualCluster,
  root: string,
  apiserverIPs: string[],
  exposed: Exposure['sans'],
  leaves: LeafRenewal,
  dry = false,
): Promise<{ pki: ControlPlanePKI; rotation: KubeletClientRotation }> {
  const base = nativePKIOptions(vc, root, undefined, apiserverIPs);
  const hash = pkiOptionsHash(base);
  const namesHash = servingNamesHash(exposed);
  // The exposed names are not part of the options hash: a change of them alone reissues the serving certificate.
  // Neither is the platform's leaf lifetime: the CAs keep the tenant's spec.pkiExpireDays, the leaves get it.
  const leafDays = leaves.validityDays ?? base.validityDays;
  const opts = {
    ...base,
    apiserverDnsNames: [...base.apiserverDnsNames, ...exposed.dnsNames],
    apiserverIPs: [...base.apiserverIPs, ...exposed.ips],
    validityDays: leafDays,
    caValidityDays: base.validityDays,
    kubeletClientValidityDays: leafDays,
  };
  const existing = await client.getOrNull<Secret>(R.secrets, root, PKI_SECRET);
  const annotations = existing?.metadata?.annotations ?? {};
  if (existing && annotations[PKI_OPTIONS_ANNOTATION] === hash) {
    let pki = parsePKI(existing, root);
    const rotation = parseRotation(existing, root);
    const sameNames =
      (annotations[SERVING_NAMES_ANNOTATION] ?? servingNamesHash({ dnsNames: [], ips: [] })) === namesHash;
    if (!sameNames) {
      if (!dry)
        log.info(
          { tenant: root, names: exposed },
          'exposed names changed; reissuing the apiserver serving certificate',
        );
      pki = { ...pki, apiserver: await issueApiserverCert(pki.ca, opts) };
    }
    const now = new Date();
    const request = renewalRequestOf(vc);
    const due = await renewDueLeaves(pki, opts, now, leaves.renewFraction, leafDays, request);
    // The kubelet client's renewal needs the status its last step published: a dry run leaves it where it is (its
    // files are reloaded by the apiserver, so no StatefulSet a dry run plans for depends on it).
    if (dry) return { pki: due.pki, rotation };
    const s = vc.status;
    const kubelet = await renewKubeletClient(due.pki, rotation, {
      now,
      fraction: leaves.renewFraction,
      request,
      validityDays: leafDays,
      published: [s?.kubeletClientCertFingerprint, ...(s?.rotatingKubeletClientCertFingerprints ?? [])].filter(
        (f) => f !== undefined,
      ),
    });
    const sameRotation = stableJson(kubelet.rotation) === stableJson(rotation);
    if (sameNames && !due.renewed.length && sameRotation) return kubelet;
    if (due.renewed.length) log.info({ tenant: root, renewed: due.renewed }, 'certificates renewed');
    if (kubelet.step === 'stage')
      log.info({ tenant: root }, 'kubelet client certificate renewed; published before the apiserver takes it');
    if (kubelet.step === 'promote')
      log.info({ tenant: root }, 'renewed kubelet client certificate given to the apiserver');
    await client.update(R.secrets, pkiSecret(root, kubelet.pki, hash, namesHash, existing, kubelet.rotation), {
      fieldManager: IDENTITY.manager,
    });
    return kubelet;
  }

  // A new PKI has new CAs: a renewal of the kubelet client in progress under the old one is dropped. It keeps the
  // ServiceAccount signing key of the PKI it replaces, where that one is readable: tokens issued before stay valid.
  const generated = await generateControlPlanePKI(opts);
  const kept = existing ? keptServiceAccountKey(existing) : undefined;
  const pki = kept ? { ...generated, serviceAccount: kept } : generated;
  if (dry) return { pki, rotation: {} };
  if (existing) {
    log.info({ tenant: root }, 'certificate options changed; regenerating the tenant PKI (new CAs)');
    // Replace only the Secret we read: a concurrent writer makes this a conflict, and the next reconcile reads theirs.
    await client.update(R.secrets, pkiSecret(root, pki, hash, namesHash, existing), {
      fieldManager: IDENTITY.manager,
    });
    return { pki, rotation: {} };
  }
  try {
    await client.create(R.secrets, pkiSecret(root, pki, hash, namesHash), {
      fieldManager: IDENTITY.manager,
    });
    log.info({ tenant: root }, 'tenant PKI generated');
    return { pki, rotation: {} };
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    const theirs = await client.get<Secret>(R.secrets, root, PKI_SECRET);
    return { pki: parsePKI(theirs, root), rotation: parseRotation(theirs, root) };
  }
}

/**
 * pkiSecret is PKI_SECRET holding pki, annotated with the hashes it was made for; given the Secret it replaces, with
 * that one's resourceVersion, so a concurrent writer makes the update a conflict (the next reconcile reads theirs).
 */
function pkiSecret(
  root: string,
  pki: ControlPlanePKI,
  hash: string,
  namesHash: string,
  replaces?: Secret,
  rotation: KubeletClientRotation = {},
): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: PKI_SECRET,
      namespace: root,
      labels: { [LABEL.managedBy]: IDENTITY.manager, [LABEL.cluster]: root },
      annotations: { [PKI_OPTIONS_ANNOTATION]: hash, [SERVING_NAMES_ANNOTATION]: namesHash },
      ...(replaces && { resourceVersion: replaces.metadata?.resourceVersion }),
    },
    type: 'Opaque',
    data: {
      [PKI_SECRET_KEY]: Buffer.from(JSON.stringify(pki), 'utf8').toString('base64'),
      ...((rotation.next || rotation.previousCertPem) && {
        [KUBELET_CLIENT_ROTATION_KEY]: Buffer.from(JSON.stringify(rotation), 'utf8').toString('base64'),
      }),
    },
  };
}

/** keptServiceAccountKey is the ServiceAccount signing key of the PKI in PKI_SECRET, or undefined when it is unreadable. */
function keptServiceAccountKey(secret: Secret): ControlPlanePKI['serviceAccount'] | undefined {
  try {
    const sa = parsePKI(secret, '').serviceAccount;
    return sa?.privateKeyPem && sa.publicKeyPem ? sa : undefined;
  } catch {
    return undefined;
  }
}

/**
 * parseRotation reads the kubelet client certificate's renewal in progress from PKI_SECRET ({} without one); a value
 * that is not one is refused, naming the Secret and key, rather than dropped (its certificates may be in use).
 */
function parseRotation(secret: Secret, root: string): KubeletClientRotation {
  const data = secret.data?.[KUBELET_CLIENT_ROTATION_KEY];
  if (!data) return {};
  try {
    const r = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as KubeletClientRotation;
    if (typeof r !== 'object' || r === null) throw new Error('not an object');
    if (r.next && (!r.next.certPem || !r.next.keyPem || Number.isNaN(Date.parse(r.next.stagedAt))))
      throw new Error('next needs certPem, keyPem and stagedAt');
    if (r.previousCertPem !== undefined && typeof r.previousCertPem !== 'string')
      throw new Error('previousCertPem is not a string');
    return r;
  } catch (e) {
    throw new Error(
      `Secret ${root}/${PKI_SECRET} key "${KUBELET_CLIENT_ROTATION_KEY}" is not a kubelet client renewal ` +
        `(${(e as Error).message}); delete that key to start the renewal again`,
    );
  }
}

function parsePKI(secret: Secret, root: string): ControlPlanePKI {
  const data = secret.data?.[PKI_SECRET_KEY];
  if (!data)
    throw new Error(
      `Secret ${root}/${PKI_SECRET} has no key "${PKI_SECRET_KEY}"; delete it to have the PKI regenerated`,
    );
  try {
    const pki = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as ControlPlanePKI;
    if (!pki.ca?.certPem || !pki.kubeletClient?.certPem || !pki.kubeletClientFingerprint) throw new Error('incomplete');
    return pki;
  } catch (e) {
    throw new Error(
      `Secret ${root}/${PKI_SECRET} key "${PKI_SECRET_KEY}" is not a serialized PKI (${(e as Error).message}); delete it to have the PKI regenerated`,
    );
  }
}
