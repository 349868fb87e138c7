import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import tls from 'node:tls';
import type { VirtualCluster } from '../../api/virtualcluster.ts';
import { DEFAULT_RENEW_FRACTION, type CaRotationReport } from '../../lifecycle/certificates.ts';
import { kubeletClientStep } from '../../pki/renewal.ts';
import { childLogger } from '../../log.ts';
import { ANN } from '../../names/names.ts';
import { renewalRequestOf } from '../../provisioners/renewrequest.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import { isCaRotationStep, rotateCa } from '../local/carotation.ts';
import type { LocalControlPlane } from '../local/controlplane.ts';
import {
  dueLeaves,
  KUBELET_CLIENT,
  kubeletClientFingerprints,
  promoteKubeletClient,
  readCertificates,
  stageKubeletClient,
  stagedKubeletClient,
  RENEWED_LEAVES,
  renewLeaf,
  writeLeafKubeconfig,
  type ReportedCertificate,
} from '../local/renewal.ts';
import type { LocalProvisionerOptions } from './start.ts';

const log = childLogger({ controller: 'provisioner-local' });

/** renewFraction is the share of a certificate's life after which the local provisioner renews it. */
export const renewFraction = (o: LocalProvisionerOptions): number =>
  o.certificates?.renewFraction ?? DEFAULT_RENEW_FRACTION;

const leafDays = (vc: VirtualCluster, o: LocalProvisionerOptions): number =>
  o.certificates?.validityDays ?? vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays;

/** writeKubeconfigs writes every kubeconfig of the control plane again from the certificates and CA bundle on disk. */
function writeKubeconfigs(cp: LocalControlPlane, leaves = RENEWED_LEAVES): void {
  const cluster = { clusterName: cp.name, server: cp.server, caPem: cp.caPem };
  for (const leaf of leaves) writeLeafKubeconfig(cp.dir, leaf, cluster);
}

/**
 * renewCertificates renews each leaf certificate of the tenant's PKI (RENEWED_LEAVES) once its renewal fraction of
 * its life has passed, for certificates.validityDays (default the tenant's spec.pkiExpireDays), and makes the
 * processes that use it take it up without the apiserver stopping (a renewal asked for by hand, renewalRequestOf,
 * makes those it covers due from its time on): the apiserver reloads its files, the kubeconfigs
 * that embed a renewed certificate are written again, the controller manager restarts, the admin client reconnects.
 * It reports every certificate of the PKI, CAs and kubelet client included (those marked manual).
 */
export async function renewCertificates(
  cp: LocalControlPlane,
  vc: VirtualCluster,
  o: LocalProvisionerOptions,
): Promise<ReportedCertificate[]> {
  const pkiDir = join(cp.dir, 'pki');
  const now = new Date();
  const request = renewalRequestOf(vc);
  const dueNow = dueLeaves(pkiDir, renewFraction(o), now, request);
  const due = dueNow.filter((l) => l !== KUBELET_CLIENT);
  await renewKubeletClient(cp, vc, dueNow.includes(KUBELET_CLIENT), leafDays(vc, o), now);
  if (due.length) {
    for (const leaf of due) await renewLeaf(pkiDir, leaf, leafDays(vc, o));
    writeKubeconfigs(cp, due);
    if (due.some((l) => l.restart === 'controllerManager')) await cp.restartControllerManager();
    if (due.some((l) => l.base === 'admin')) cp.renewClient();
    log.info({ tenant: cp.name, renewed: due.map((l) => l.name) }, 'certificates renewed');
  }
  return readCertificates(pkiDir, request);
}

/**
 * renewKubeletClient takes the apiserver's kubelet client certificate one step through its renewal (kubeletClientStep):
 * a renewed pair staged once it is due, given to the apiserver (which reloads it for new connections) once the
 * VirtualCluster's status publishes its fingerprint, so that the vn-agent knows it before the apiserver presents it.
 */
async function renewKubeletClient(
  cp: LocalControlPlane,
  vc: VirtualCluster,
  due: boolean,
  validityDays: number,
  now: Date,
): Promise<void> {
  const pkiDir = join(cp.dir, 'pki');
  const s = vc.status;
  const published = [s?.kubeletClientCertFingerprint, ...(s?.rotatingKubeletClientCertFingerprints ?? [])];
  const step = kubeletClientStep({
    due,
    staged: stagedKubeletClient(pkiDir, now),
    published: published.filter((f) => f !== undefined),
  });
  if (step === 'stage') {
    await stageKubeletClient(pkiDir, validityDays);
    log.info({ tenant: cp.name }, 'kubelet client certificate renewed; published before the apiserver takes it');
  } else if (step === 'promote') {
    promoteKubeletClient(pkiDir);
    log.info({ tenant: cp.name }, 'renewed kubelet client certificate given to the apiserver');
  }
}

/**
 * kubeletClientStatus is what the VirtualCluster's status says of the apiserver's kubelet client certificates in pkiDir:
 * the one it presents, and the others the vn-agent accepts meanwhile (a renewal staged, the one replaced until expiry).
 */
export function kubeletClientStatus(pkiDir: string): {
  kubeletClientCertFingerprint: string;
  rotatingKubeletClientCertFingerprints: string[];
} {
  const f = kubeletClientFingerprints(pkiDir, new Date());
  return { kubeletClientCertFingerprint: f.current, rotatingKubeletClientCertFingerprints: f.rotating };
}

/**
 * rotateCaAsked does the CA rotation step the VirtualCluster's ca-rotation annotation asks for (see
 * core/dev/local/carotation.ts), writes every kubeconfig again with the new trust bundle and restarts what the step
 * needs; undefined without the annotation. A step already done changes nothing.
 */
export async function rotateCaAsked(
  cp: LocalControlPlane,
  vc: VirtualCluster,
  o: LocalProvisionerOptions,
): Promise<CaRotationReport | undefined> {
  const step = vc.metadata?.annotations?.[ANN.caRotation];
  if (step === undefined) return undefined;
  if (!isCaRotationStep(step)) return { step, refused: `unknown CA rotation step ${JSON.stringify(step)}` };
  const caDays = vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays;
  const r = await rotateCa(join(cp.dir, 'pki'), step, { leafDays: leafDays(vc, o), caDays }, (serial) =>
    servedSerial(cp.ports.apiserver, serial),
  );
  if (!r.done) return { step, refused: r.refused };
  if (r.changed) {
    writeKubeconfigs(cp);
    if (r.restart.includes('apiserver')) {
      // The controller manager stops first: it would exit (and count as a crash) when its apiserver goes away.
      await cp.controllerManager?.stop();
      await cp.apiserver.stop();
      await cp.startApiserver();
      await cp.startControllerManager();
    } else if (r.restart.includes('controllerManager')) await cp.restartControllerManager();
    cp.renewClient();
    log.info({ tenant: cp.name, step }, 'CA rotation step done');
  }
  return { step };
}

/** SERVING_RELOAD_TIMEOUT_MS bounds the wait for the apiserver to serve a renewed serving certificate (it polls). */
const SERVING_RELOAD_TIMEOUT_MS = 90_000;

/** servedSerial waits until the TLS server on 127.0.0.1:port presents the certificate of this serial. */
async function servedSerial(port: number, serial: string): Promise<void> {
  const deadline = Date.now() + SERVING_RELOAD_TIMEOUT_MS;
  for (;;) {
    const now = await new Promise<string | undefined>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        const raw = s.getPeerCertificate().raw;
        s.end();
        resolve(raw ? new X509Certificate(raw).serialNumber : undefined);
      });
      s.on('error', () => resolve(undefined));
    });
    if (now === serial) return;
    if (Date.now() > deadline) throw new Error(`the apiserver on port ${port} does not serve its renewed certificate`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
