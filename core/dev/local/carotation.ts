import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCA } from '../../pki/pki.ts';
import {
  dropStagedKubeletClient,
  KUBELET_CLIENT,
  pemBlocks,
  RENEWED_LEAVES,
  renewLeaf,
  writeAtomic,
  writeSigningCert,
} from './renewal.ts';

/**
 * The rotation of a local tenant's cluster CA, in three steps that `vc rotate-ca` asks for one at a time through the
 * VirtualCluster's ca-rotation annotation, each idempotent and checked against the step before:
 * - `add`: a new CA is made beside the old one; the trust bundle (pki/ca.crt, which the apiserver's --client-ca-file,
 *   the controller manager's --root-ca-file, every kubeconfig and the vn-agent read) holds both, the old one still
 *   signs. Every certificate and kubeconfig issued before goes on working.
 * - `reissue`: the new CA signs from now on; every client certificate (admin, controller manager, scheduler, the
 *   apiserver's kubelet client) is issued again from it. The serving certificate stays on the old CA, so kubeconfigs
 *   that trust only the old CA still reach the apiserver, and their client certificates are still accepted.
 * - `drop`: the serving certificate is issued from the new CA and the old CA leaves the bundle: a kubeconfig from
 *   before `add` fails with "certificate signed by unknown authority", and its client certificate is refused.
 * The front-proxy CA is not rotated by these steps.
 */

/** CA_ROTATION_STEPS are the steps of a CA rotation, in the order they must be asked for. */
export const CA_ROTATION_STEPS = ['add', 'reissue', 'drop'] as const;
/** CaRotationStep is one of CA_ROTATION_STEPS. */
export type CaRotationStep = (typeof CA_ROTATION_STEPS)[number];

const STATE_FILE = 'ca-rotation.json';
const NEXT_KEY = 'ca-next.key';

/** CaRotationResult is what a step did: done or refused (with why), and which processes must restart. */
export type CaRotationResult =
  | { step: CaRotationStep; done: true; changed: boolean; restart: Array<'apiserver' | 'controllerManager'> }
  | { step: CaRotationStep; done: false; refused: string };

/** isCaRotationStep tells a valid step apart from anything else an annotation may hold. */
export const isCaRotationStep = (v: unknown): v is CaRotationStep =>
  typeof v === 'string' && (CA_ROTATION_STEPS as readonly string[]).includes(v);

/**
 * rotationRefusal says why `step` cannot follow `last` (the last step done, undefined for none or a finished
 * rotation), or undefined when it can: add starts a rotation, reissue follows add, drop follows reissue; asking
 * again for the last step done is allowed (it changes nothing).
 */
export function rotationRefusal(last: CaRotationStep | undefined, step: CaRotationStep): string | undefined {
  if (step === last) return undefined;
  const before: Record<CaRotationStep, CaRotationStep | undefined> = {
    add: undefined,
    reissue: 'add',
    drop: 'reissue',
  };
  if (step === 'add' && last === 'drop') return undefined;
  if (before[step] === last) return undefined;
  const want = before[step];
  return want
    ? `step ${step} follows step ${want}, but the last step done is ${last ?? 'none'}: run vc rotate-ca --step ${want}`
    : `step add starts a rotation, but step ${last} of one is done: finish it with --step ${last === 'add' ? 'reissue' : 'drop'}`;
}

/** lastStep reads the last rotation step done in pkiDir. */
export function lastStep(pkiDir: string): CaRotationStep | undefined {
  const f = join(pkiDir, STATE_FILE);
  if (!existsSync(f)) return undefined;
  const s = (JSON.parse(readFileSync(f, 'utf8')) as { step?: unknown }).step;
  return isCaRotationStep(s) ? s : undefined;
}

/**
 * rotateCa performs `step` on the PKI in pkiDir (leaves of validityDays, a new CA of caValidityDays named as the old).
 * It writes certificates only; the caller writes the kubeconfigs again and restarts what `restart` names. In the drop
 * step servingReloaded waits until the apiserver serves the serving certificate of that serial before the old CA goes.
 */
export async function rotateCa(
  pkiDir: string,
  step: CaRotationStep,
  validity: { leafDays: number; caDays: number },
  servingReloaded?: (serial: string) => Promise<void>,
): Promise<CaRotationResult> {
  const last = lastStep(pkiDir);
  const refused = rotationRefusal(last, step);
  if (refused) return { step, done: false, refused };
  if (last === step) return { step, done: true, changed: false, restart: [] };
  const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
  const bundle = pemBlocks(read('ca.crt'));
  if (step === 'add') {
    const oldCa = bundle[0]!;
    const cn = new X509Certificate(oldCa).subject.replace(/^CN=/, '').split('\n')[0]!;
    const next = await createCA(cn, validity.caDays);
    writeAtomic(join(pkiDir, NEXT_KEY), next.keyPem, 0o600);
    writeAtomic(join(pkiDir, 'ca.crt'), oldCa + next.certPem, 0o644);
    record(pkiDir, step);
    return { step, done: true, changed: true, restart: ['controllerManager'] };
  }
  if (step === 'reissue') {
    const [oldCa, newCa] = bundle;
    // The key first, then the bundle with the new CA first: whoever signs (the controller manager's CSR signer, the
    // next renewal) reads the first certificate of ca.crt with ca.key.
    writeAtomic(join(pkiDir, 'ca.key'), read(NEXT_KEY), 0o600);
    writeAtomic(join(pkiDir, 'ca.crt'), newCa! + oldCa!, 0o644);
    rmSync(join(pkiDir, NEXT_KEY), { force: true });
    for (const leaf of RENEWED_LEAVES.filter((l) => l.issuer === 'ca' && l.base !== 'apiserver'))
      await renewLeaf(pkiDir, leaf, validity.leafDays);
    // The apiserver restarts with it at once; a renewal staged from the old CA is dropped.
    dropStagedKubeletClient(pkiDir);
    await renewLeaf(pkiDir, KUBELET_CLIENT, validity.leafDays);
    record(pkiDir, step);
    return { step, done: true, changed: true, restart: ['apiserver', 'controllerManager'] };
  }
  await renewLeaf(pkiDir, SERVING, validity.leafDays);
  // Until the apiserver serves the new certificate, a client that trusts only the new CA (the controller manager once
  // its kubeconfig is written again) could not reach it.
  await servingReloaded?.(new X509Certificate(read('apiserver.crt')).serialNumber);
  writeAtomic(join(pkiDir, 'ca.crt'), bundle[0]!, 0o644);
  record(pkiDir, step);
  return { step, done: true, changed: true, restart: ['controllerManager'] };
}

const SERVING = RENEWED_LEAVES.find((l) => l.base === 'apiserver')!;

function record(pkiDir: string, step: CaRotationStep): void {
  writeSigningCert(pkiDir);
  writeFileSync(join(pkiDir, STATE_FILE), JSON.stringify({ step, at: new Date().toISOString() }) + '\n');
}
