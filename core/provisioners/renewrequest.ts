import type { VirtualCluster } from '../api/virtualcluster.ts';
import { childLogger } from '../log.ts';
import { ANN } from '../names/names.ts';
import { parseRenewalRequest, type RenewalRequest } from '../pki/renewal.ts';

const log = childLogger({ controller: 'certificates' });

/** refusedSeen keeps the refusals logged already, so that a bad annotation is logged once and not at every reconcile. */
const refusedSeen = new Set<string>();

/**
 * renewalRequestOf reads the renewal of certificates a VirtualCluster asks for by hand (its renew-certificates
 * annotation, `vc certs renew`), both provisioners' way. A value that is not one is refused: logged once, naming the
 * object, the annotation and why, and the tenant's certificates go on being renewed on their schedule alone.
 */
export function renewalRequestOf(vc: VirtualCluster): RenewalRequest | undefined {
  const value = vc.metadata?.annotations?.[ANN.renewCertificates];
  if (value === undefined) return undefined;
  const m = vc.metadata!;
  const r = parseRenewalRequest(value, `VirtualCluster ${m.namespace}/${m.name} annotation ${ANN.renewCertificates}`);
  if (!('refused' in r)) return r;
  if (!refusedSeen.has(r.refused)) {
    refusedSeen.add(r.refused);
    log.warn({ tenant: `${m.namespace}/${m.name}` }, `renewal asked for by hand refused: ${r.refused}`);
  }
  return undefined;
}
