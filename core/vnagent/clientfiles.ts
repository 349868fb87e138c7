import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CertKeyPair } from '../pki/pki.ts';

/**
 * The in-cluster vn-agent's client certificate towards kubelets comes from a Secret mounted as two files
 * (deploy/vn-agent/daemonset.yaml). When the Secret is replaced (`vc install` renews it at a fraction of its life), the
 * kubelet swaps the mounted files; this notices and hands the new pair to the agent (VnAgent.setKubeletClient), so the
 * renewal needs no restart and cuts no stream.
 */

/** DEFAULT_RELOAD_INTERVAL_MS is how often the files are read: a Secret change reaches a Pod within about a minute. */
export const DEFAULT_RELOAD_INTERVAL_MS = 20_000;

/**
 * readClientPair reads a certificate and key file and checks they belong together, so that a half-updated pair is
 * never taken up; it throws naming the file and what is wrong.
 */
export function readClientPair(certFile: string, keyFile: string): CertKeyPair {
  const certPem = readFileSync(certFile, 'utf8');
  const keyPem = readFileSync(keyFile, 'utf8');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (e) {
    throw new Error(`${certFile}: not a PEM certificate (${e instanceof Error ? e.message : String(e)})`);
  }
  let matches: boolean;
  try {
    matches = cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch (e) {
    throw new Error(`${keyFile}: not a PEM private key (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!matches) throw new Error(`${keyFile}: the key is not the one of the certificate in ${certFile}`);
  return { certPem, keyPem };
}

/**
 * watchClientPair reads the pair every intervalMs and calls apply with it when the certificate differs from the one
 * last applied (`current`); a pair that does not read (mid-update, mismatched) is reported through onError and tried
 * again at the next look. It returns the function that stops watching.
 */
export function watchClientPair(o: {
  certFile: string;
  keyFile: string;
  current: string;
  apply: (pair: CertKeyPair) => void;
  onError: (e: Error) => void;
  intervalMs?: number;
}): () => void {
  let current = o.current;
  const look = () => {
    let pair: CertKeyPair;
    try {
      pair = readClientPair(o.certFile, o.keyFile);
    } catch (e) {
      return o.onError(e instanceof Error ? e : new Error(String(e)));
    }
    if (pair.certPem === current) return;
    current = pair.certPem;
    o.apply(pair);
  };
  const t = setInterval(look, o.intervalMs ?? DEFAULT_RELOAD_INTERVAL_MS);
  t.unref();
  return () => clearInterval(t);
}
