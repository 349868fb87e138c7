/**
 * Commit signature verification: OpenPGP signatures (checked with openpgp against armored public keys) and SSH
 * signatures (the SSHSIG format of OpenSSH, namespace "git", checked with node:crypto against authorized keys).
 */
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import * as nodeFs from 'node:fs';
import git from 'isomorphic-git';
import * as openpgp from 'openpgp';

/** VerifyKeys are the keys a commit may be signed with. */
export interface VerifyKeys {
  /** armored OpenPGP public keys (each string may hold several keys) */
  openpgp?: readonly string[];
  /**
   * SSH public keys in authorized_keys form (`ssh-ed25519 AAAA... comment`) or allowed_signers form
   * (`principal [options] ssh-ed25519 AAAA...`); each string may hold several lines
   */
  ssh?: readonly string[];
}

/** VerificationResult is the outcome of verifying one commit; `signer` names the key, `reason` says why not. */
export interface VerificationResult {
  verified: boolean;
  signer?: string;
  reason?: string;
}

/** SignatureFormat is the kind of signature found on a commit. */
export type SignatureFormat = 'openpgp' | 'ssh' | 'x509' | 'unknown';

/** SignedCommit is a raw commit split into the bytes that were signed and the signature. */
export interface SignedCommit {
  /** the commit object without its gpgsig headers: what the signer signed */
  payload: Buffer;
  /** the armored signature, when the commit is signed */
  signature?: string;
}

const NOT_SIGNED = 'commit is not signed';

/**
 * splitSignedCommit separates the `gpgsig` header of a raw commit object (its content, without the object header)
 * from the signed payload. A `gpgsig-sha256` header is dropped from the payload too, as git does.
 */
export function splitSignedCommit(raw: Uint8Array): SignedCommit {
  const text = Buffer.from(raw).toString('latin1');
  const headerEnd = text.indexOf('\n\n');
  const headerText = headerEnd < 0 ? text : text.slice(0, headerEnd);
  const rest = headerEnd < 0 ? '' : text.slice(headerEnd);
  const kept: string[] = [];
  const sigLines: string[] = [];
  let inSig: 'gpgsig' | 'other-sig' | null = null;
  for (const line of headerText.split('\n')) {
    if (line.startsWith(' ') && inSig) {
      if (inSig === 'gpgsig') sigLines.push(line.slice(1));
      continue;
    }
    inSig = null;
    if (line.startsWith('gpgsig ')) {
      inSig = 'gpgsig';
      sigLines.push(line.slice('gpgsig '.length));
    } else if (line.startsWith('gpgsig-sha256 ')) {
      inSig = 'other-sig';
    } else {
      kept.push(line);
    }
  }
  const payload = Buffer.from(kept.join('\n') + rest, 'latin1');
  if (sigLines.length === 0) return { payload };
  return { payload, signature: Buffer.from(`${sigLines.join('\n')}\n`, 'latin1').toString('utf8') };
}

/** signatureFormat tells the kind of an armored signature by its armor header. */
export function signatureFormat(signature: string): SignatureFormat {
  if (signature.includes('-----BEGIN PGP SIGNATURE-----')) return 'openpgp';
  if (signature.includes('-----BEGIN SSH SIGNATURE-----')) return 'ssh';
  if (signature.includes('-----BEGIN SIGNED MESSAGE-----') || signature.includes('-----BEGIN CERTIFICATE-----'))
    return 'x509';
  return 'unknown';
}

/** verifyCommitObject verifies the signature of a raw commit object (content without the object header). */
export async function verifyCommitObject(raw: Uint8Array, keys: VerifyKeys): Promise<VerificationResult> {
  const { payload, signature } = splitSignedCommit(raw);
  if (!signature) return { verified: false, reason: NOT_SIGNED };
  const format = signatureFormat(signature);
  switch (format) {
    case 'openpgp':
      if (!keys.openpgp?.length)
        return { verified: false, reason: 'commit has an OpenPGP signature but no OpenPGP keys are trusted' };
      return verifyOpenPgp(payload, signature, keys.openpgp);
    case 'ssh':
      if (!keys.ssh?.length)
        return { verified: false, reason: 'commit has an SSH signature but no SSH keys are trusted' };
      return verifySsh(payload, signature, keys.ssh);
    default:
      return { verified: false, reason: `unsupported signature format (${format})` };
  }
}

/** verifyCommit reads commit `oid` from the git directory and verifies its signature. */
export async function verifyCommit(args: {
  gitdir: string;
  oid: string;
  keys: VerifyKeys;
  fs?: typeof nodeFs;
  cache?: object;
}): Promise<VerificationResult> {
  const { object, type } = await git.readObject({
    fs: args.fs ?? nodeFs,
    gitdir: args.gitdir,
    oid: args.oid,
    format: 'content',
    ...(args.cache ? { cache: args.cache } : {}),
  });
  if (type !== 'commit' || !(object instanceof Uint8Array)) {
    return { verified: false, reason: `object ${args.oid} is a ${type}, not a commit` };
  }
  return verifyCommitObject(object, args.keys);
}

/** verifyOpenPgp checks an armored detached OpenPGP signature over `payload` against armored public keys. */
export async function verifyOpenPgp(
  payload: Uint8Array,
  armoredSignature: string,
  armoredKeys: readonly string[],
): Promise<VerificationResult> {
  let signature: openpgp.Signature;
  try {
    signature = await openpgp.readSignature({ armoredSignature });
  } catch (err) {
    return { verified: false, reason: `malformed OpenPGP signature: ${errorMessage(err)}` };
  }
  const keys: openpgp.Key[] = [];
  for (const armored of armoredKeys) {
    try {
      keys.push(...(await openpgp.readKeys({ armoredKeys: armored })));
    } catch (err) {
      return { verified: false, reason: `invalid OpenPGP public key: ${errorMessage(err)}` };
    }
  }
  const signingIds = signature.getSigningKeyIDs();
  const signer = keys.find((key) => signingIds.some((id) => key.getKeys(id).length > 0));
  if (!signer) {
    return {
      verified: false,
      reason: `signed by an unknown OpenPGP key ${signingIds.map((id) => id.toHex().toUpperCase()).join(', ')}`,
    };
  }
  try {
    const message = await openpgp.createMessage({ binary: payload });
    const { signatures } = await openpgp.verify({ message, signature, verificationKeys: [signer] });
    for (const sig of signatures) await sig.verified;
    if (signatures.length === 0) return { verified: false, reason: 'OpenPGP signature holds no signatures' };
  } catch (err) {
    return { verified: false, reason: `OpenPGP signature does not verify: ${errorMessage(err)}` };
  }
  const userId = signer.getUserIDs()[0];
  const fingerprint = signer.getFingerprint().toUpperCase();
  return { verified: true, signer: userId ? `${userId} ${fingerprint}` : fingerprint };
}

/** SshPublicKey is one trusted SSH key. */
export interface SshPublicKey {
  type: string;
  /** the wire-format key blob */
  blob: Buffer;
  /** the principal (allowed_signers) or comment (authorized_keys), when present */
  name?: string;
  /** `SHA256:...`, as ssh-keygen -l prints it */
  fingerprint: string;
}

const SSH_KEY_TYPES = new Set([
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

/** sshFingerprint is the SHA256 fingerprint of a key blob, as ssh-keygen -l prints it. */
export function sshFingerprint(blob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** parseSshPublicKeys reads authorized_keys or allowed_signers lines; lines it cannot read are skipped. */
export function parseSshPublicKeys(text: string): SshPublicKey[] {
  const keys: SshPublicKey[] = [];
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (!line || line.startsWith('#')) continue;
    const tokens = line.split(/\s+/);
    const at = tokens.findIndex((t) => SSH_KEY_TYPES.has(t));
    const data = at >= 0 ? tokens[at + 1] : undefined;
    if (at < 0 || !data) continue;
    const blob = Buffer.from(data, 'base64');
    try {
      if (new SshReader(blob).string().toString('latin1') !== tokens[at]) continue;
    } catch {
      continue;
    }
    const name = at > 0 ? tokens[0] : tokens.slice(at + 2).join(' ');
    keys.push({ type: tokens[at] as string, blob, fingerprint: sshFingerprint(blob), ...(name ? { name } : {}) });
  }
  return keys;
}

/** SshSignature is a parsed SSHSIG blob. */
export interface SshSignature {
  publicKey: Buffer;
  namespace: string;
  hashAlgorithm: string;
  /** the signature algorithm (`ssh-ed25519`, `rsa-sha2-512`, ...) */
  algorithm: string;
  signature: Buffer;
}

class SshReader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}

  bytes(n: number): Buffer {
    if (this.at + n > this.buf.length) throw new Error('truncated SSH data');
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  u32(): number {
    return this.bytes(4).readUInt32BE(0);
  }

  string(): Buffer {
    return this.bytes(this.u32());
  }

  get done(): boolean {
    return this.at === this.buf.length;
  }
}

function sshString(data: Uint8Array | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length, 0);
  return Buffer.concat([len, body]);
}

const SSHSIG_MAGIC = Buffer.from('SSHSIG', 'latin1');

/** parseSshSignature decodes an armored SSH signature (`-----BEGIN SSH SIGNATURE-----`). */
export function parseSshSignature(armored: string): SshSignature {
  const match = /-----BEGIN SSH SIGNATURE-----([\s\S]*?)-----END SSH SIGNATURE-----/.exec(armored);
  if (!match?.[1]) throw new Error('no SSH signature armor');
  const blob = Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
  const r = new SshReader(blob);
  if (!r.bytes(6).equals(SSHSIG_MAGIC)) throw new Error('bad SSHSIG magic');
  const version = r.u32();
  if (version !== 1) throw new Error(`unsupported SSHSIG version ${version}`);
  const publicKey = r.string();
  const namespace = r.string().toString('utf8');
  r.string();
  const hashAlgorithm = r.string().toString('utf8');
  const sig = new SshReader(r.string());
  if (!r.done) throw new Error('trailing data after SSH signature');
  const algorithm = sig.string().toString('latin1');
  const signature = sig.string();
  return { publicKey, namespace, hashAlgorithm, algorithm, signature };
}

function b64url(data: Buffer): string {
  return data.toString('base64url');
}

function unsignedInt(mpint: Buffer): Buffer {
  let i = 0;
  while (i < mpint.length - 1 && mpint[i] === 0) i++;
  return mpint.subarray(i);
}

const EC_CURVES: Record<string, { crv: string; size: number; hash: string }> = {
  nistp256: { crv: 'P-256', size: 32, hash: 'sha256' },
  nistp384: { crv: 'P-384', size: 48, hash: 'sha384' },
  nistp521: { crv: 'P-521', size: 66, hash: 'sha512' },
};

/** sshKeyObject turns an SSH public key blob into a node KeyObject (ed25519, RSA and ECDSA keys). */
export function sshKeyObject(blob: Buffer): { type: string; key: KeyObject; curve?: string } {
  const r = new SshReader(blob);
  const type = r.string().toString('latin1');
  if (type === 'ssh-ed25519') {
    const x = r.string();
    if (x.length !== 32) throw new Error('bad ed25519 key length');
    return { type, key: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(x) }, format: 'jwk' }) };
  }
  if (type === 'ssh-rsa') {
    const e = unsignedInt(r.string());
    const n = unsignedInt(r.string());
    return { type, key: createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(e) }, format: 'jwk' }) };
  }
  if (type.startsWith('ecdsa-sha2-')) {
    const curveName = r.string().toString('latin1');
    const curve = EC_CURVES[curveName];
    const q = r.string();
    if (!curve || q[0] !== 4 || q.length !== 1 + 2 * curve.size)
      throw new Error(`unsupported ECDSA key (${curveName})`);
    const x = q.subarray(1, 1 + curve.size);
    const y = q.subarray(1 + curve.size);
    return {
      type,
      curve: curveName,
      key: createPublicKey({ key: { kty: 'EC', crv: curve.crv, x: b64url(x), y: b64url(y) }, format: 'jwk' }),
    };
  }
  throw new Error(`unsupported SSH key type ${type}`);
}

/** verifySshSignature checks a parsed SSHSIG over `message` with the key it names; it does not decide trust. */
export function verifySshSignature(message: Uint8Array, sig: SshSignature, namespace = 'git'): string | null {
  if (sig.namespace !== namespace) return `SSH signature namespace is "${sig.namespace}", want "${namespace}"`;
  if (sig.hashAlgorithm !== 'sha256' && sig.hashAlgorithm !== 'sha512')
    return `unsupported SSHSIG hash ${sig.hashAlgorithm}`;
  const signed = Buffer.concat([
    SSHSIG_MAGIC,
    sshString(namespace),
    sshString(''),
    sshString(sig.hashAlgorithm),
    sshString(createHash(sig.hashAlgorithm).update(message).digest()),
  ]);
  const { type, key, curve } = sshKeyObject(sig.publicKey);
  let ok: boolean;
  if (type === 'ssh-ed25519') {
    if (sig.algorithm !== 'ssh-ed25519') return `signature algorithm ${sig.algorithm} does not match key type ${type}`;
    ok = cryptoVerify(null, signed, key, sig.signature);
  } else if (type === 'ssh-rsa') {
    const hash = sig.algorithm === 'rsa-sha2-512' ? 'sha512' : sig.algorithm === 'rsa-sha2-256' ? 'sha256' : null;
    if (!hash) return `unsupported RSA signature algorithm ${sig.algorithm}`;
    ok = cryptoVerify(hash, signed, key, sig.signature);
  } else {
    const params = curve ? EC_CURVES[curve] : undefined;
    if (!params || sig.algorithm !== type)
      return `signature algorithm ${sig.algorithm} does not match key type ${type}`;
    const inner = new SshReader(sig.signature);
    const rs = Buffer.concat(
      [inner.string(), inner.string()].map((n) => {
        const v = unsignedInt(n);
        if (v.length > params.size) throw new Error('bad ECDSA signature');
        return Buffer.concat([Buffer.alloc(params.size - v.length), v]);
      }),
    );
    ok = cryptoVerify(params.hash, signed, { key, dsaEncoding: 'ieee-p1363' }, rs);
  }
  return ok ? null : 'SSH signature does not verify';
}

/** verifySsh checks an armored SSH signature over `payload` against trusted SSH public keys (namespace "git"). */
export function verifySsh(
  payload: Uint8Array,
  armoredSignature: string,
  trusted: readonly string[],
): VerificationResult {
  let sig: SshSignature;
  try {
    sig = parseSshSignature(armoredSignature);
  } catch (err) {
    return { verified: false, reason: `malformed SSH signature: ${errorMessage(err)}` };
  }
  const keys = trusted.flatMap((text) => parseSshPublicKeys(text));
  const key = keys.find((k) => k.blob.equals(sig.publicKey));
  if (!key) return { verified: false, reason: `signed by an unknown SSH key ${sshFingerprint(sig.publicKey)}` };
  let failure: string | null;
  try {
    failure = verifySshSignature(payload, sig, 'git');
  } catch (err) {
    failure = `SSH signature does not verify: ${errorMessage(err)}`;
  }
  if (failure) return { verified: false, reason: failure };
  return { verified: true, signer: key.name ? `${key.name} ${key.fingerprint}` : key.fingerprint };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
