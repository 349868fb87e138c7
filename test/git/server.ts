/**
 * The tests' git server: the embedded default's smart-HTTP server (core/dev/embedded/gitserver.ts) plus what
 * only tests need: basic or bearer authentication, request statistics, stalls, stop/start, repositories that refuse
 * fetches by commit id, signed commits, tags, forced pushes, and SSH and OpenPGP key makers.
 */
import { execFile, spawn } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import {
  closeServer,
  CommitStatusStore,
  type CommitStatus,
  git,
  gitEnv,
  httpBackendPath,
  listen,
  readBody,
  runHttpBackend,
} from '../../core/dev/embedded/gitserver.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';

export { git, gitEnv };

const execFileP = promisify(execFile);

/** GitServerAuth is what the server demands: basic credentials, or a token (Bearer, or Basic with it as password). */
export type GitServerAuth = { username: string; password: string } | { token: string };

/** GitServerOptions configures startGitServer. */
export interface GitServerOptions {
  /** directory holding the bare repositories; a temporary one (removed by close) when omitted */
  root?: string;
  auth?: GitServerAuth;
  /** port to listen on; a free one when omitted */
  port?: number;
}

/** GitServerStats counts the requests the server answered, by kind. */
export interface GitServerStats {
  /** GET info/refs (ref advertisement) */
  infoRefs: number;
  /** protocol v2 ls-refs commands */
  lsRefs: number;
  /** upload-pack requests that ask for objects (v1 wants or v2 fetch commands) */
  fetches: number;
  /** requests refused with 401 */
  unauthorized: number;
}

/** SignOptions says how commitFiles signs the commit. */
export type SignOptions =
  /** ssh: `gpg.format=ssh` with the private key file */
  | { format: 'ssh'; keyFile: string }
  /** openpgp: real gpg with the given key id and GNUPGHOME */
  | { format: 'openpgp'; keyId: string; gnupgHome: string }
  /** custom: the signature over the commit payload is made by `sign` and inserted as the gpgsig header */
  | { format: 'custom'; sign: (payload: string) => Promise<string> | string };

/** CommitOptions tunes one commitFiles call. */
export interface CommitOptions {
  /** branch to commit on and push (default: main) */
  branch?: string;
  /** tag to create on the new commit and push (moved if it exists) */
  tag?: string;
  /** make `tag` an annotated tag */
  annotated?: boolean;
  sign?: SignOptions;
  /** start a new history (root commit) that only has `files`, and force-push it */
  orphan?: boolean;
}

/** InitRepoOptions tunes initRepo. */
export interface InitRepoOptions {
  /** the default branch (HEAD) of the bare repository (default: main) */
  defaultBranch?: string;
  /**
   * refuse upload-pack wants for object ids that are not the tip of a ref, like servers that do not allow fetching
   * by commit id (the server answers with `ERR upload-pack: not our ref`)
   */
  advertisedWantsOnly?: boolean;
}

/** GitServer is a running test git server. */
export interface GitServer {
  readonly root: string;
  readonly port: number;
  readonly stats: GitServerStats;
  /** statuses lists the commit statuses set on a commit through the Gitea API, newest first. */
  statuses(name: string, sha: string): CommitStatus[];
  /** url is the clone URL of a repository (name without `.git`). */
  url(name: string): string;
  /** initRepo creates an empty bare repository. */
  initRepo(name: string, opts?: InitRepoOptions): Promise<void>;
  /**
   * commitFiles commits the given files (null deletes a file) on top of the branch (or as a new history with
   * `orphan`), pushes it, and returns the commit id.
   */
  commitFiles(
    name: string,
    files: Record<string, string | null>,
    message: string,
    opts?: CommitOptions,
  ): Promise<string>;
  /** forcePush rewrites the branch to a new, unrelated history holding only `files`, and returns the commit id. */
  forcePush(
    name: string,
    files: Record<string, string>,
    message: string,
    opts?: Omit<CommitOptions, 'orphan'>,
  ): Promise<string>;
  /** tag creates (or moves) a tag in the bare repository pointing at `target`. */
  tag(name: string, tag: string, target: string, opts?: { annotated?: boolean }): Promise<void>;
  /** revParse resolves a revision in the bare repository. */
  revParse(name: string, rev: string): Promise<string>;
  /** stall makes the server accept requests and never answer them (until stall(false)). */
  stall(on: boolean): void;
  /** stop stops listening and drops open connections; the repositories stay and start() brings it back. */
  stop(): Promise<void>;
  /** start listens again on the same port after stop(). */
  start(): Promise<void>;
  /** close stops the server and removes the root when startGitServer created it. */
  close(): Promise<void>;
}

function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** authorize returns the authenticated user name, or null when the request does not carry the expected credentials. */
function authorize(auth: GitServerAuth | undefined, header: string | undefined): string | null {
  if (!auth) return '';
  if (!header) return null;
  const [scheme, value = ''] = header.split(' ', 2);
  // Bearer as git hosts take it; `token` as the Gitea API takes it.
  if ('token' in auth && ['bearer', 'token'].includes(scheme?.toLowerCase() ?? ''))
    return safeEqual(value, auth.token) ? 'token' : null;
  if (scheme?.toLowerCase() !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if ('token' in auth) return safeEqual(password, auth.token) ? user || 'token' : null;
  return safeEqual(user, auth.username) && safeEqual(password, auth.password) ? user : null;
}

/** pktLines splits a pkt-line stream into its payloads (flush and delimiter packets are dropped). */
function pktLines(body: Buffer): string[] {
  const lines: string[] = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const len = parseInt(body.subarray(at, at + 4).toString('latin1'), 16);
    if (Number.isNaN(len)) break;
    if (len < 4) {
      at += 4;
      continue;
    }
    lines.push(
      body
        .subarray(at + 4, at + len)
        .toString('latin1')
        .replace(/\n$/, ''),
    );
    at += len;
  }
  return lines;
}

function pkt(line: string): string {
  return (line.length + 4).toString(16).padStart(4, '0') + line;
}

/** startGitServer starts a smart-HTTP git server on 127.0.0.1. */
export async function startGitServer(opts: GitServerOptions = {}): Promise<GitServer> {
  const backend = await httpBackendPath();
  const ownRoot = opts.root === undefined;
  const root = resolve(opts.root ?? stateDir('git-server-'));
  await mkdir(root, { recursive: true });
  const stats: GitServerStats = { infoRefs: 0, lsRefs: 0, fetches: 0, unauthorized: 0 };
  const strictRepos = new Set<string>();
  const statuses = new CommitStatusStore(root);
  const sockets = new Set<Socket>();
  let stalled = false;
  let server: Server | null = null;
  let port = opts.port ?? 0;

  const refTips = async (repo: string): Promise<Set<string>> => {
    const out = await git(join(root, repo), ['for-each-ref', '--format=%(objectname)']);
    return new Set(out.split('\n').filter(Boolean));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (stalled) return;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const user = authorize(opts.auth, req.headers.authorization);
    if (user === null) {
      stats.unauthorized++;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const body = await readBody(req);
    const encoding = req.headers['content-encoding'];
    const pathInfo = decodeURIComponent(url.pathname);
    const repo = pathInfo.split('/').filter(Boolean)[0] ?? '';

    if (pathInfo.endsWith('/info/refs')) stats.infoRefs++;
    if (req.method === 'POST' && pathInfo.endsWith('/git-upload-pack')) {
      const plain = encoding === 'gzip' ? gunzipSync(body) : body;
      const lines = pktLines(plain);
      if (lines.includes('command=ls-refs')) stats.lsRefs++;
      else stats.fetches++;
      if (strictRepos.has(repo.replace(/\.git$/, ''))) {
        const tips = await refTips(repo);
        const wants = lines.filter((l) => l.startsWith('want ')).map((l) => l.slice(5, 45));
        const refused = wants.find((w) => !tips.has(w));
        if (refused) {
          res.writeHead(200, { 'Content-Type': 'application/x-git-upload-pack-result' });
          res.end(pkt(`ERR upload-pack: not our ref ${refused}\n`));
          return;
        }
      }
    }

    if (statuses.handle(req, res, body)) return;
    await runHttpBackend({ backend, root, req, res, body, user });
  };

  const start = async (): Promise<void> => {
    if (server) return;
    const started = await listen(port, handle, sockets);
    server = started.server;
    port = started.port;
  };

  const stop = async (): Promise<void> => {
    const s = server;
    if (!s) return;
    server = null;
    await closeServer(s, sockets);
  };

  const repoDir = (name: string): string => join(root, `${name}.git`);

  const branchExists = async (name: string, branch: string): Promise<boolean> => {
    try {
      await git(repoDir(name), ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]);
      return true;
    } catch {
      return false;
    }
  };

  const signArgs = (sign: SignOptions | undefined): { args: string[]; env: Record<string, string> } => {
    if (!sign || sign.format === 'custom') return { args: [], env: {} };
    if (sign.format === 'ssh') {
      return { args: ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${sign.keyFile}`], env: {} };
    }
    return {
      args: ['-c', 'gpg.format=openpgp', '-c', `user.signingkey=${sign.keyId}`],
      env: { GNUPGHOME: sign.gnupgHome },
    };
  };

  const commitFiles = async (
    name: string,
    files: Record<string, string | null>,
    message: string,
    opts: CommitOptions = {},
  ): Promise<string> => {
    const branch = opts.branch ?? 'main';
    const work = await mkdtemp(join(tmpdir(), 'git-work-'));
    try {
      if (!opts.orphan && (await branchExists(name, branch))) {
        await git(work, ['clone', '-q', '--branch', branch, '--single-branch', repoDir(name), '.']);
      } else {
        await git(work, ['init', '-q', '-b', branch]);
      }
      for (const [path, content] of Object.entries(files)) {
        const target = join(work, path);
        if (content === null) {
          await rm(target, { force: true });
        } else {
          await mkdir(dirname(target), { recursive: true });
          await writeFile(target, content);
        }
      }
      await git(work, ['add', '-A']);
      const signing = signArgs(opts.sign);
      const signFlag = opts.sign && opts.sign.format !== 'custom' ? ['-S'] : [];
      await git(work, [...signing.args, 'commit', '-q', '--allow-empty', ...signFlag, '-m', message], signing.env);
      if (opts.sign?.format === 'custom') {
        const raw = await git(work, ['cat-file', 'commit', 'HEAD']);
        const payload = `${raw}\n`;
        const signature = (await opts.sign.sign(payload)).replace(/\n+$/, '');
        const split = payload.indexOf('\n\n');
        const header = `gpgsig ${signature.split('\n').join('\n ')}`;
        const signed = `${payload.slice(0, split)}\n${header}${payload.slice(split)}`;
        const oid = await git(work, ['hash-object', '-t', 'commit', '-w', '--stdin'], {}, signed);
        await git(work, ['update-ref', 'HEAD', oid]);
      }
      const force = opts.orphan ? ['--force'] : [];
      await git(work, ['push', '-q', ...force, repoDir(name), `HEAD:refs/heads/${branch}`]);
      const head = await git(work, ['rev-parse', 'HEAD']);
      if (opts.tag) {
        await tag(name, opts.tag, head, opts.annotated ? { annotated: true } : {});
      }
      return head;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };

  const tag = async (
    name: string,
    tagName: string,
    target: string,
    tagOpts: { annotated?: boolean } = {},
  ): Promise<void> => {
    if (tagOpts.annotated) {
      await git(repoDir(name), ['tag', '-f', '-a', '-m', `release ${tagName}`, tagName, target]);
    } else {
      await git(repoDir(name), ['tag', '-f', tagName, target]);
    }
  };

  await start();

  return {
    root,
    get port() {
      return port;
    },
    stats,
    statuses: (name, sha) => statuses.list(name, sha),
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    async initRepo(name, initOpts = {}) {
      const dir = repoDir(name);
      await mkdir(dir, { recursive: true });
      await git(dir, ['init', '-q', '--bare', '-b', initOpts.defaultBranch ?? 'main']);
      if (initOpts.advertisedWantsOnly) strictRepos.add(name);
      else strictRepos.delete(name);
    },
    commitFiles,
    forcePush: (name, files, message, commitOpts = {}) =>
      commitFiles(name, files, message, { ...commitOpts, orphan: true }),
    tag,
    revParse: (name, rev) => git(repoDir(name), ['rev-parse', rev]),
    stall(on) {
      stalled = on;
    },
    stop,
    start,
    async close() {
      await stop();
      if (ownRoot) removeStateDir(root);
    },
  };
}

/** sshKeygenAvailable tells whether `ssh-keygen` can be run (for SSH-signed commits). */
export async function sshKeygenAvailable(): Promise<boolean> {
  return commandAvailable('ssh-keygen', ['-?']);
}

/** gpgAvailable tells whether `gpg` can be run (for OpenPGP-signed commits). */
export async function gpgAvailable(): Promise<boolean> {
  return commandAvailable('gpg', ['--version']);
}

async function commandAvailable(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((ok) => {
    const child = spawn(cmd, args, { stdio: 'ignore' });
    child.on('error', () => ok(false));
    child.on('close', () => ok(true));
  });
}

/** SshKey is a key pair made by makeSshKey. */
export interface SshKey {
  /** private key file, usable as `user.signingkey` */
  keyFile: string;
  /** the public key line (`ssh-ed25519 AAAA... comment`) */
  publicKey: string;
}

/** makeSshKey creates an unencrypted SSH key pair in `dir` with ssh-keygen. */
export async function makeSshKey(
  dir: string,
  name: string,
  type: 'ed25519' | 'rsa' | 'ecdsa' = 'ed25519',
): Promise<SshKey> {
  const keyFile = join(dir, name);
  const bits = type === 'rsa' ? ['-b', '2048'] : [];
  await execFileP('ssh-keygen', ['-q', '-t', type, ...bits, '-N', '', '-C', `${name}@example.com`, '-f', keyFile]);
  return { keyFile, publicKey: (await readFile(`${keyFile}.pub`, 'utf8')).trim() };
}

/** GpgKey is a key made by makeGpgKey in its own GNUPGHOME. */
export interface GpgKey {
  gnupgHome: string;
  keyId: string;
  /** the armored public key */
  publicKey: string;
}

/** makeGpgKey creates an unprotected ed25519 signing key with gpg in a fresh GNUPGHOME under `dir`. */
export async function makeGpgKey(dir: string, name: string): Promise<GpgKey> {
  const gnupgHome = join(dir, `gnupg-${name}`);
  await mkdir(gnupgHome, { recursive: true, mode: 0o700 });
  const env = { ...gitEnv(), GNUPGHOME: gnupgHome };
  const uid = `${name} <${name}@example.com>`;
  await execFileP(
    'gpg',
    ['--batch', '--pinentry-mode', 'loopback', '--passphrase', '', '--quick-gen-key', uid, 'ed25519', 'sign', 'never'],
    { env },
  );
  const { stdout } = await execFileP('gpg', ['--batch', '--with-colons', '--list-keys', uid], { env });
  const fpr = stdout
    .split('\n')
    .find((l) => l.startsWith('fpr:'))
    ?.split(':')[9];
  if (!fpr) throw new Error('gpg did not list the new key');
  const { stdout: publicKey } = await execFileP('gpg', ['--batch', '--armor', '--export', fpr], { env });
  return { gnupgHome, keyId: fpr, publicKey };
}

/** stopGpgAgent stops the gpg-agent that gpg started for a GNUPGHOME. */
export async function stopGpgAgent(gnupgHome: string): Promise<void> {
  await execFileP('gpgconf', ['--kill', 'all'], { env: { ...gitEnv(), GNUPGHOME: gnupgHome } }).catch(() => {});
}
