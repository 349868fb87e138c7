import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * Signed plugin packages. A platform team lists the Ed25519 public keys it trusts; a plugin author (or the team that
 * vets a plugin) signs the package folder with a private key, which writes SIGNATURE_FILE into it; the host loads a
 * third-party plugin only when that file verifies against a listed key over the package's contents as installed.
 */

/** SIGNATURE_FILE is the file in a plugin package that holds its signature. */
export const SIGNATURE_FILE = 'vc-plugin.sig';

/** PackageSignature is the content of SIGNATURE_FILE. */
export interface PackageSignature {
  algorithm: 'ed25519';
  /** keyId of the signing key */
  keyId: string;
  /** the digest of the package's files that was signed (packageDigest) */
  digest: string;
  /** the Ed25519 signature of the digest, base64 */
  signature: string;
}

/** keyId names a public key: the first 16 hex digits of the SHA-256 of its DER (SPKI) encoding. */
export function keyId(publicKeyPem: string): string {
  const der = createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex').slice(0, 16);
}

/**
 * packageFiles lists a package folder's files, relative and sorted: everything but SIGNATURE_FILE and the folders a
 * package manager writes (node_modules, .git), so the signature covers the code that runs and its package.json.
 */
export function packageFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name === '.git') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() || e.isSymbolicLink()) out.push(relative(dir, p).split(sep).join('/'));
    }
  };
  walk(dir);
  return out.filter((f) => f !== SIGNATURE_FILE).sort();
}

/** packageDigest is the SHA-256 over each file's relative path and the SHA-256 of its content, in packageFiles order. */
export function packageDigest(dir: string): string {
  const h = createHash('sha256');
  for (const f of packageFiles(dir)) {
    h.update(
      `${f}\0${createHash('sha256')
        .update(readFileSync(join(dir, f)))
        .digest('hex')}\n`,
    );
  }
  return `sha256:${h.digest('hex')}`;
}

/** generateSigningKey returns a new Ed25519 key pair as PEM. */
export function generateSigningKey(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** signPackage signs the package folder `dir` with an Ed25519 private key (PEM) and writes SIGNATURE_FILE into it. */
export function signPackage(dir: string, privateKeyPem: string): PackageSignature {
  const key = createPrivateKey(privateKeyPem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`the signing key is ${key.asymmetricKeyType}, not ed25519`);
  const digest = packageDigest(dir);
  const sig: PackageSignature = {
    algorithm: 'ed25519',
    keyId: keyId(createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString()),
    digest,
    signature: sign(null, Buffer.from(digest), key).toString('base64'),
  };
  writeFileSync(join(dir, SIGNATURE_FILE), `${JSON.stringify(sig, null, 2)}\n`);
  return sig;
}

/** TrustedKey is a public key the platform lists, and where it came from (for messages). */
export interface TrustedKey {
  pem: string;
  source: string;
}

/**
 * signatureProblem says why the package folder `dir` may not be installed under `keys`, or undefined when its
 * signature verifies: no signature, a key the platform does not list, contents that changed after signing, or a
 * signature that does not verify.
 */
export function signatureProblem(dir: string, keys: readonly TrustedKey[]): string | undefined {
  const file = join(dir, SIGNATURE_FILE);
  if (!existsSync(file)) return `package ${dir} is not signed (no ${SIGNATURE_FILE}; sign it with vc plugin sign)`;
  let sig: PackageSignature;
  try {
    sig = JSON.parse(readFileSync(file, 'utf8')) as PackageSignature;
  } catch (e) {
    return `${file} is not JSON: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (sig.algorithm !== 'ed25519') return `${file} uses algorithm ${String(sig.algorithm)}; only ed25519 is accepted`;
  const key = keys.find((k) => keyId(k.pem) === sig.keyId);
  if (!key) {
    const listed = keys.map((k) => `${keyId(k.pem)} (${k.source})`).join(', ') || 'none';
    return `package ${dir} is signed by key ${String(sig.keyId)}, which is not a trusted key (trusted: ${listed})`;
  }
  const digest = packageDigest(dir);
  if (digest !== sig.digest)
    return `package ${dir} changed after it was signed: its files digest to ${digest}, the signature covers ${String(sig.digest)}`;
  const ok = verify(
    null,
    Buffer.from(sig.digest),
    createPublicKey(key.pem),
    Buffer.from(String(sig.signature), 'base64'),
  );
  if (!ok) return `the signature in ${file} does not verify against key ${sig.keyId} (${key.source})`;
  return undefined;
}

/** readTrustedKeys reads PEM public key files, each checked to be an Ed25519 key. */
export function readTrustedKeys(files: readonly string[]): TrustedKey[] {
  return files.map((f) => {
    const pem = readFileSync(f, 'utf8');
    const type = createPublicKey(pem).asymmetricKeyType;
    if (type !== 'ed25519') throw new Error(`trusted key ${f} is ${type}, not ed25519`);
    return { pem, source: f };
  });
}
