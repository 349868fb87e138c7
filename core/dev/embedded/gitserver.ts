/**
 * The embedded default's tenant repository: a smart-HTTP git server on 127.0.0.1 that runs git's own
 * `git http-backend` CGI over the bare repositories under a root directory, with the commit status part of the Gitea
 * API beside it (for GitSource notifications), and the git CLI helpers it seeds them with. The tests' server
 * (test/git/server.ts: authentication, signing, statistics, stalls) is built on the same request handler.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** gitEnv is a git environment isolated from the user's and system configuration. */
export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: tmpdir(),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'Test Author',
    GIT_AUTHOR_EMAIL: 'author@example.com',
    GIT_COMMITTER_NAME: 'Test Committer',
    GIT_COMMITTER_EMAIL: 'committer@example.com',
    GIT_TERMINAL_PROMPT: '0',
    ...extra,
  };
}

/** git runs the git CLI in `cwd` and returns its trimmed stdout. */
export async function git(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<string> {
  if (input === undefined) {
    const { stdout } = await execFileP('git', args, { cwd, env: gitEnv(env), maxBuffer: 64 * 1024 * 1024 });
    return stdout.trim();
  }
  return new Promise((resolvePromise, reject) => {
    const child = spawn('git', args, { cwd, env: gitEnv(env) });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(Buffer.concat(out).toString('utf8').trim());
      else reject(new Error(`git ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString('utf8')}`));
    });
    child.stdin.end(input);
  });
}

/** httpBackendPath finds git's `git-http-backend` CGI program. */
export async function httpBackendPath(): Promise<string> {
  const { stdout } = await execFileP('git', ['--exec-path']);
  const path = join(stdout.trim(), 'git-http-backend');
  if (!existsSync(path)) throw new Error(`git-http-backend not found at ${path}`);
  return path;
}

/** BackendRequest is one request for runHttpBackend, its body already read. */
export interface BackendRequest {
  /** path of git-http-backend (httpBackendPath) */
  backend: string;
  /** directory holding the bare repositories */
  root: string;
  req: IncomingMessage;
  res: ServerResponse;
  body: Buffer;
  /** the authenticated user, passed on as REMOTE_USER */
  user?: string;
}

/** runHttpBackend answers one smart-HTTP request by running git-http-backend as a CGI program. */
export async function runHttpBackend({ backend, root, req, res, body, user }: BackendRequest): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const env: Record<string, string> = {
    ...gitEnv(),
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    SERVER_SOFTWARE: 'test-git-server',
    PATH_INFO: decodeURIComponent(url.pathname),
    REQUEST_METHOD: req.method ?? 'GET',
    QUERY_STRING: url.search.replace(/^\?/, ''),
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    CONTENT_LENGTH: String(body.length),
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  };
  if (user) env.REMOTE_USER = user;
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name === 'authorization' || name === 'content-type' || name === 'content-length')
      continue;
    env[`HTTP_${name.toUpperCase().replace(/-/g, '_')}`] = Array.isArray(value) ? value.join(', ') : value;
  }

  const child = spawn(backend, [], { env });
  const stderr: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  child.stdin.on('error', () => {});
  child.stdin.end(body);
  res.on('close', () => {
    if (child.exitCode === null) child.kill();
  });

  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const crlf = head.indexOf('\r\n\r\n');
    const lf = head.indexOf('\n\n');
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
    if (end < 0) return;
    headersDone = true;
    let status = 200;
    let statusText = 'OK';
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') {
        status = parseInt(value, 10);
        statusText = value.slice(String(status).length).trim() || statusText;
      } else {
        headers[name] = value;
      }
    }
    res.writeHead(status, statusText, headers);
    const rest = head.subarray(end);
    if (rest.length > 0) res.write(rest);
  });
  await new Promise<void>((done) => {
    child.on('close', (code) => {
      if (!headersDone) {
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end(`git http-backend exited ${code}: ${Buffer.concat(stderr).toString('utf8')}`);
      } else {
        res.end();
      }
      done();
    });
    child.on('error', () => done());
  });
}

/** readBody reads a request's whole body. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** listen starts an HTTP server on 127.0.0.1:port (0: a free port) that tracks its sockets so closeServer can drop them. */
export async function listen(
  port: number,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  sockets: Set<Socket>,
): Promise<{ server: Server; port: number }> {
  const s = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(String(err));
    });
  });
  s.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((ok, fail) => {
    s.once('error', fail);
    s.listen(port, '127.0.0.1', () => {
      s.off('error', fail);
      ok();
    });
  });
  const address = s.address();
  return { server: s, port: address && typeof address === 'object' ? address.port : port };
}

/** closeServer stops listening and drops the open connections. */
export async function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  const closed = new Promise<void>((ok) => server.close(() => ok()));
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await closed;
}

/** CommitStatus is one status set on a commit, as the Gitea and Forgejo API take and list it. */
export interface CommitStatus {
  state: 'pending' | 'success' | 'error' | 'failure' | 'warning';
  context: string;
  description?: string;
  target_url?: string;
  created_at: string;
}

const STATUS_PATH = /^\/api\/v1\/repos\/(.+)\/statuses\/([0-9a-f]{40,64})$/;

/**
 * CommitStatusStore serves the commit status part of the Gitea API over the repositories under a root (in memory):
 * POST /api/v1/repos/REPO/statuses/SHA sets one, GET lists them newest first. REPO is the clone path without `.git`.
 */
export class CommitStatusStore {
  private readonly statuses = new Map<string, CommitStatus[]>();

  constructor(private readonly root: string) {}

  /** list is the statuses of a commit, newest first. */
  list(repo: string, sha: string): CommitStatus[] {
    return [...(this.statuses.get(`${repo}@${sha}`) ?? [])].reverse();
  }

  /** handle answers a commit status request and returns true; false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse, body: Buffer): boolean {
    const m = STATUS_PATH.exec(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
    if (!m) return false;
    const [, repo, sha] = m as unknown as [string, string, string];
    const reply = (code: number, value: unknown) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (repo.split('/').includes('..') || !existsSync(join(this.root, `${repo}.git`)))
      return (reply(404, { message: 'repository not found' }), true);
    if (req.method === 'GET') return (reply(200, this.list(repo, sha)), true);
    if (req.method !== 'POST') return (reply(405, { message: 'method not allowed' }), true);
    let v: Partial<CommitStatus>;
    try {
      v = JSON.parse(body.toString('utf8')) as Partial<CommitStatus>;
    } catch {
      return (reply(400, { message: 'body is not JSON' }), true);
    }
    if (!['pending', 'success', 'error', 'failure', 'warning'].includes(v.state ?? ''))
      return (
        reply(422, { message: `state ${String(v.state)} is not one of pending, success, error, failure, warning` }),
        true
      );
    const status: CommitStatus = {
      state: v.state!,
      context: typeof v.context === 'string' ? v.context : 'default',
      ...(typeof v.description === 'string' && { description: v.description }),
      ...(typeof v.target_url === 'string' && { target_url: v.target_url }),
      created_at: new Date().toISOString(),
    };
    const key = `${repo}@${sha}`;
    this.statuses.set(key, [...(this.statuses.get(key) ?? []), status]);
    return (reply(201, status), true);
  }
}

/** TenantRepositoryServer is the embedded default's git server. */
export interface TenantRepositoryServer {
  readonly port: number;
  /** url is the clone URL of a repository (name without `.git`). */
  url(name: string): string;
  /** initRepo creates an empty bare repository whose default branch is main. */
  initRepo(name: string): Promise<void>;
  /** commitFiles commits the given files on top of main, pushes it, and returns the commit id. */
  commitFiles(name: string, files: Record<string, string>, message: string): Promise<string>;
  close(): Promise<void>;
}

/** startGitServer serves the bare repositories under `root` on 127.0.0.1:port (0: a free port), unauthenticated. */
export async function startGitServer(opts: { root: string; port?: number }): Promise<TenantRepositoryServer> {
  const backend = await httpBackendPath();
  const root = resolve(opts.root);
  await mkdir(root, { recursive: true });
  const sockets = new Set<Socket>();
  const statuses = new CommitStatusStore(root);
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    if (!statuses.handle(req, res, body)) await runHttpBackend({ backend, root, req, res, body });
  };
  const { server, port } = await listen(opts.port ?? 0, handle, sockets);
  const repoDir = (name: string): string => join(root, `${name}.git`);
  return {
    port,
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    async initRepo(name) {
      await mkdir(repoDir(name), { recursive: true });
      await git(repoDir(name), ['init', '-q', '--bare', '-b', 'main']);
    },
    async commitFiles(name, files, message) {
      const work = await mkdtemp(join(tmpdir(), 'git-work-'));
      try {
        await git(work, ['init', '-q', '-b', 'main']);
        if (await git(repoDir(name), ['rev-parse', '--verify', '--quiet', 'refs/heads/main']).catch(() => '')) {
          await git(work, ['pull', '-q', repoDir(name), 'main']);
        }
        for (const [path, content] of Object.entries(files)) {
          await mkdir(dirname(join(work, path)), { recursive: true });
          await writeFile(join(work, path), content);
        }
        await git(work, ['add', '-A']);
        await git(work, ['commit', '-q', '-m', message]);
        await git(work, ['push', '-q', repoDir(name), 'HEAD:refs/heads/main']);
        return await git(work, ['rev-parse', 'HEAD']);
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    },
    close: () => closeServer(server, sockets),
  };
}
