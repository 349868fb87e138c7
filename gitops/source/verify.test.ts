import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as openpgp from 'openpgp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  gpgAvailable,
  makeGpgKey,
  makeSshKey,
  sshKeygenAvailable,
  startGitServer,
  stopGpgAgent,
  type GitServer,
  type GpgKey,
  type SshKey,
} from '../../test/git/server.ts';
import { SourceError } from './errors.ts';
import { GitSourceFetcher, type SourceRequest } from './source.ts';
import {
  parseSshPublicKeys,
  parseSshSignature,
  splitSignedCommit,
  verifyCommitObject,
  verifySsh,
  type VerifyKeys,
} from './verify.ts';

// Every test here runs git processes against a real git server: under a loaded machine one clone or key generation
// can take seconds, so the tests and hooks get bounds far above what they need, and nothing waits a fixed time.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const execFileP = promisify(execFile);
const hasSshKeygen = await sshKeygenAvailable();
const hasGpg = await gpgAvailable();

describe('splitSignedCommit', () => {
  const head =
    'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent 1111111111111111111111111111111111111111\n' +
    'author A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000000 +0000\n';
  const mergetag =
    'mergetag object 2222222222222222222222222222222222222222\n type commit\n tag v1\n \n -----BEGIN PGP SIGNATURE-----\n abc\n -----END PGP SIGNATURE-----\n';
  const sig = 'gpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lH\n \n -----END SSH SIGNATURE-----\n';

  it('removes the gpgsig header (and only it) from the payload', () => {
    const raw = Buffer.from(`${head}${mergetag}${sig}\nmessage\n\nbody\n`);
    const { payload, signature } = splitSignedCommit(raw);
    expect(payload.toString()).toBe(`${head}${mergetag}\nmessage\n\nbody\n`);
    expect(signature).toBe('-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n\n-----END SSH SIGNATURE-----\n');
  });

  it('keeps unsigned commits whole and drops gpgsig-sha256 too', () => {
    const unsigned = Buffer.from(`${head}\nmessage\n`);
    expect(splitSignedCommit(unsigned)).toEqual({ payload: unsigned });
    const both = Buffer.from(`${head}gpgsig-sha256 x\n y\n\nmessage\n`);
    expect(splitSignedCommit(both).payload.toString()).toBe(`${head}\nmessage\n`);
  });

  it('says an unsigned commit is not signed', async () => {
    expect(await verifyCommitObject(Buffer.from(`${head}\nm\n`), { ssh: ['x'] })).toEqual({
      verified: false,
      reason: 'commit is not signed',
    });
  });
});

describe.skipIf(!hasSshKeygen)('SSH signatures (SSHSIG) against ssh-keygen', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sshsig-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const sign = async (key: SshKey, message: string, namespace = 'git'): Promise<string> => {
    const file = join(dir, `msg-${Math.random().toString(36).slice(2)}`);
    await writeFile(file, message);
    await execFileP('ssh-keygen', ['-Y', 'sign', '-n', namespace, '-f', key.keyFile, file]);
    return readFile(`${file}.sig`, 'utf8');
  };

  for (const type of ['ed25519', 'rsa', 'ecdsa'] as const) {
    it(`verifies ${type} signatures and refuses other keys, other content and other namespaces`, async () => {
      const key = await makeSshKey(dir, `${type}-a`, type);
      const other = await makeSshKey(dir, `${type}-b`, type);
      const message = 'tree abc\n\nhello\n';
      const armored = await sign(key, message);
      const parsed = parseSshSignature(armored);
      expect(parsed.namespace).toBe('git');
      if (type === 'rsa') expect(parsed.algorithm).toBe('rsa-sha2-512');

      const ok = verifySsh(Buffer.from(message), armored, [key.publicKey]);
      expect(ok.verified).toBe(true);
      expect(ok.signer).toContain(`${type}-a@example.com`);
      const { stdout } = await execFileP('ssh-keygen', ['-l', '-f', `${key.keyFile}.pub`]);
      expect(ok.signer).toContain(stdout.split(' ')[1]);

      const unknown = verifySsh(Buffer.from(message), armored, [other.publicKey]);
      expect(unknown.verified).toBe(false);
      expect(unknown.reason).toMatch(/unknown SSH key SHA256:/);

      const tampered = verifySsh(Buffer.from(`${message}!`), armored, [key.publicKey]);
      expect(tampered).toEqual({ verified: false, reason: 'SSH signature does not verify' });

      const fileNamespace = verifySsh(Buffer.from(message), await sign(key, message, 'file'), [key.publicKey]);
      expect(fileNamespace.reason).toMatch(/namespace is "file"/);
    });
  }

  it('reads allowed_signers lines and skips junk', async () => {
    const key = await makeSshKey(dir, 'allowed');
    const [, blob] = key.publicKey.split(' ');
    const keys = parseSshPublicKeys(
      `# comment\n\nalice@example.com namespaces="git" ssh-ed25519 ${blob}\nnot a key\nssh-ed25519 !!!\n`,
    );
    expect(keys).toHaveLength(1);
    expect(keys[0]?.name).toBe('alice@example.com');
    const message = 'payload\n';
    const result = verifySsh(Buffer.from(message), await sign(key, message), [`alice@example.com ssh-ed25519 ${blob}`]);
    expect(result.verified).toBe(true);
    expect(result.signer).toMatch(/^alice@example\.com SHA256:/);
  });

  it('refuses malformed signatures', () => {
    expect(
      verifySsh(Buffer.from('x'), '-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n', [
        'ssh-ed25519 AAAA',
      ]).reason,
    ).toMatch(/malformed/);
  });
});

describe('signed commits through the git source', () => {
  let server: GitServer;
  let dir: string;
  let fetcher: GitSourceFetcher;
  let ssh: SshKey | undefined;
  let sshOther: SshKey | undefined;
  let gpg: GpgKey | undefined;
  let gpgOther: GpgKey | undefined;
  let pgp: { privateKey: openpgp.PrivateKey; publicKey: string };
  let pgpOther: { publicKey: string };

  beforeAll(async () => {
    server = await startGitServer();
    dir = await mkdtemp(join(tmpdir(), 'verify-'));
    fetcher = new GitSourceFetcher({
      cacheRoot: join(dir, 'cache'),
      addresses: { allowPrivateAddresses: ['127.0.0.0/8'] },
    });
    if (hasSshKeygen) {
      ssh = await makeSshKey(dir, 'signer');
      sshOther = await makeSshKey(dir, 'stranger');
    }
    if (hasGpg) {
      gpg = await makeGpgKey(dir, 'gpgsigner');
      gpgOther = await makeGpgKey(dir, 'gpgstranger');
    }
    const gen = async (name: string) =>
      openpgp.generateKey({ userIDs: [{ name, email: `${name}@example.com` }], format: 'armored' });
    const a = await gen('pgp-signer');
    pgp = { privateKey: await openpgp.readPrivateKey({ armoredKey: a.privateKey }), publicKey: a.publicKey };
    pgpOther = { publicKey: (await gen('pgp-stranger')).publicKey };
  });

  afterAll(async () => {
    await server?.close();
    for (const key of [gpg, gpgOther]) if (key) await stopGpgAgent(key.gnupgHome);
    await rm(dir, { recursive: true, force: true });
  });

  const artifactOf = (repo: string, verify: VerifyKeys): Promise<unknown> => {
    const req: SourceRequest = { url: server.url(repo), ref: { branch: 'main' }, verify };
    return fetcher.artifact(req);
  };

  const refusal = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      expect(err).toBeInstanceOf(SourceError);
      expect((err as SourceError).reason).toBe('VerificationFailed');
      return (err as SourceError).message;
    }
    throw new Error('expected VerificationFailed');
  };

  it.skipIf(!hasSshKeygen)('verifies an SSH-signed commit with the right key and refuses it with another', async () => {
    await server.initRepo('ssh-signed');
    const c = await server.commitFiles('ssh-signed', { 'a.yaml': 'kind: A\n' }, 'signed', {
      sign: { format: 'ssh', keyFile: ssh!.keyFile },
    });
    const a = (await artifactOf('ssh-signed', { ssh: [ssh!.publicKey] })) as {
      revision: string;
      verification: unknown;
    };
    expect(a.revision).toBe(c);
    expect(a.verification).toMatchObject({ verified: true, signer: expect.stringContaining('signer@example.com') });
    expect(await refusal(artifactOf('ssh-signed', { ssh: [sshOther!.publicKey] }))).toMatch(/unknown SSH key/);
    expect(await refusal(artifactOf('ssh-signed', { openpgp: [pgp.publicKey] }))).toMatch(/no SSH keys are trusted/);
  });

  it('refuses an unsigned commit', async () => {
    await server.initRepo('unsigned');
    await server.commitFiles('unsigned', { 'a.yaml': 'kind: A\n' }, 'unsigned');
    const keys: VerifyKeys = { openpgp: [pgp.publicKey], ...(ssh ? { ssh: [ssh.publicKey] } : {}) };
    expect(await refusal(artifactOf('unsigned', keys))).toMatch(/commit is not signed/);
    const plain = await fetcher.artifact({ url: server.url('unsigned'), ref: { branch: 'main' } });
    expect(plain.verification).toBeUndefined();
  });

  it('verifies a commit signed with OpenPGP (openpgp.js over the commit payload) and refuses other keys and altered content', async () => {
    await server.initRepo('pgp-signed');
    const sign = async (payload: string): Promise<string> =>
      openpgp.sign({
        message: await openpgp.createMessage({ binary: Buffer.from(payload) }),
        signingKeys: pgp.privateKey,
        detached: true,
      });
    const c = await server.commitFiles('pgp-signed', { 'a.yaml': 'kind: A\n' }, 'signed', {
      sign: { format: 'custom', sign },
    });
    const a = (await artifactOf('pgp-signed', { openpgp: [pgp.publicKey] })) as {
      revision: string;
      verification: { signer: string };
    };
    expect(a.revision).toBe(c);
    expect(a.verification).toMatchObject({ verified: true });
    expect(a.verification.signer).toContain('pgp-signer <pgp-signer@example.com>');
    expect(await refusal(artifactOf('pgp-signed', { openpgp: [pgpOther.publicKey] }))).toMatch(/unknown OpenPGP key/);

    await server.initRepo('pgp-altered');
    const forged = async (payload: string): Promise<string> => sign(payload.replace('altered', 'original'));
    await server.commitFiles('pgp-altered', { 'a.yaml': 'kind: A\n' }, 'altered', {
      sign: { format: 'custom', sign: forged },
    });
    expect(await refusal(artifactOf('pgp-altered', { openpgp: [pgp.publicKey] }))).toMatch(/does not verify/);
  });

  it('checks every commit since the last applied one, not only the tip', async () => {
    await server.initRepo('pgp-range');
    const sign = async (payload: string): Promise<string> =>
      openpgp.sign({
        message: await openpgp.createMessage({ binary: Buffer.from(payload) }),
        signingKeys: pgp.privateKey,
        detached: true,
      });
    const applied = await server.commitFiles('pgp-range', { 'a.yaml': 'kind: A\n' }, 'signed 1', {
      sign: { format: 'custom', sign },
    });
    const unsigned = await server.commitFiles('pgp-range', { 'b.yaml': 'kind: B\n' }, 'unsigned in the middle');
    const tip = await server.commitFiles('pgp-range', { 'c.yaml': 'kind: C\n' }, 'signed 2', {
      sign: { format: 'custom', sign },
    });
    const req: SourceRequest = {
      url: server.url('pgp-range'),
      ref: { branch: 'main' },
      verify: { openpgp: [pgp.publicKey] },
    };
    expect(((await fetcher.artifact(req)) as { revision: string }).revision).toBe(tip);
    const message = await refusal(fetcher.artifact({ ...req, since: applied }));
    expect(message).toContain(`commit ${unsigned} (between the last applied ${applied} and ${tip})`);
    expect(message).toMatch(/not signed/);
  });

  it.skipIf(!hasGpg)('verifies a commit signed by gpg and refuses it with another key', async () => {
    await server.initRepo('gpg-signed');
    const c = await server.commitFiles('gpg-signed', { 'a.yaml': 'kind: A\n' }, 'signed', {
      sign: { format: 'openpgp', keyId: gpg!.keyId, gnupgHome: gpg!.gnupgHome },
    });
    const a = (await artifactOf('gpg-signed', { openpgp: [gpgOther!.publicKey, gpg!.publicKey] })) as {
      revision: string;
      verification: { signer: string };
    };
    expect(a.revision).toBe(c);
    expect(a.verification.signer).toContain(gpg!.keyId);
    expect(await refusal(artifactOf('gpg-signed', { openpgp: [gpgOther!.publicKey] }))).toMatch(/unknown OpenPGP key/);
  });
});
