import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { credentialsFor, parseChallenge, parseImageRef, type Credentials, type ImageRef } from './ociref.ts';

/** LayoutImage is one image read from an OCI layout: its manifest bytes and media type, and the blobs it names. */
export interface LayoutImage {
  manifest: Buffer;
  mediaType: string;
  digest: string;
  /** config first, then the layers, in manifest order */
  blobs: Array<{ digest: string; data: Buffer }>;
}

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** untar reads the regular files of a ustar/pax archive into a map from path (without a leading `./`) to bytes. */
export function untar(buf: Buffer, name: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let paxPath: string | undefined;
  for (let off = 0; off + 512 <= buf.length;) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const str = (o: number, n: number): string =>
      h
        .subarray(o, o + n)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const size = parseInt(str(124, 12).trim() || '0', 8);
    if (Number.isNaN(size)) throw new Error(`${name}: not a tar archive (bad size field at byte ${off})`);
    const type = str(156, 1) || '0';
    const prefix = str(345, 155);
    const data = buf.subarray(off + 512, off + 512 + size);
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(data.toString('utf8'));
      paxPath = m?.[1];
    } else {
      const path = (paxPath ?? (prefix ? `${prefix}/${str(0, 100)}` : str(0, 100))).replace(/^\.\//, '');
      if (type === '0') files.set(path, Buffer.from(data));
      paxPath = undefined;
    }
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/**
 * readLayoutImage reads the one image of an OCI layout, given as a directory or as a tar of one (an OCI archive).
 * A layout whose index lists no image, or several, is an error naming it; so is a blob whose bytes do not match
 * its digest.
 */
export function readLayoutImage(from: string): LayoutImage {
  let read: (path: string) => Buffer;
  if (statSync(from).isDirectory()) {
    read = (p) => readFileSync(join(from, p));
  } else {
    const files = untar(readFileSync(from), from);
    read = (p) => {
      const b = files.get(p);
      if (!b) throw new Error(`${from}: no ${p} in the archive (is it an OCI archive?)`);
      return b;
    };
  }
  const blob = (digest: string): Buffer => {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`${from}: unsupported digest ${digest}`);
    const b = read(`blobs/sha256/${digest.slice(7)}`);
    if (sha256(b) !== digest) throw new Error(`${from}: blob ${digest} does not match its digest`);
    return b;
  };
  const index = JSON.parse(read('index.json').toString()) as {
    manifests?: Array<{ digest: string; mediaType?: string }>;
  };
  if (index.manifests?.length !== 1)
    throw new Error(`${from}: index.json lists ${index.manifests?.length ?? 0} images; push needs exactly one`);
  const desc = index.manifests[0]!;
  const manifest = blob(desc.digest);
  const m = JSON.parse(manifest.toString()) as {
    mediaType?: string;
    config: { digest: string };
    layers: Array<{ digest: string }>;
  };
  return {
    manifest,
    mediaType: desc.mediaType ?? m.mediaType ?? 'application/vnd.oci.image.manifest.v1+json',
    digest: desc.digest,
    blobs: [m.config, ...m.layers].map((d) => ({ digest: d.digest, data: blob(d.digest) })),
  };
}

/** RegistryClientOptions tune a RegistryClient. */
export interface RegistryClientOptions {
  /** extra CA certificates (PEM) to trust besides the system's */
  ca?: string;
  /** credentials; default: the docker config file's entry for the registry, else anonymous */
  credentials?: Credentials | null;
}

interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * RegistryClient speaks the OCI distribution API to one repository over HTTPS, with anonymous access, basic auth
 * and the bearer-token flow of the distribution token spec (the registry's 401 names a realm; a token for the
 * repository's pull,push scope is fetched there with the credentials, if any, and sent as `Bearer`).
 */
export class RegistryClient {
  readonly ref: ImageRef;
  private readonly creds: Credentials | undefined;
  private readonly ca: string | undefined;
  private authorization: string | undefined;

  /** constructor parses the reference and finds its credentials (see RegistryClientOptions). */
  constructor(ref: string, o: RegistryClientOptions = {}) {
    this.ref = parseImageRef(ref);
    this.creds = o.credentials === null ? undefined : (o.credentials ?? credentialsFor(this.ref.registry));
    this.ca = o.ca;
  }

  private send(method: string, url: URL, headers: Record<string, string>, body?: Buffer): Promise<Response> {
    const opts: RequestOptions = { method, headers: { 'user-agent': 'virtualcluster-ts', ...headers } };
    if (this.ca) opts.ca = [...rootCertificates, this.ca];
    return new Promise((res, rej) => {
      const req = request(url, opts, (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => res({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks) }));
        r.on('error', rej);
      });
      req.on('error', (e) => rej(new Error(`registry ${this.ref.registry}: ${method} ${url.pathname}: ${e.message}`)));
      req.end(body);
    });
  }

  /** call sends one API request, authenticating once on a 401 as its challenge asks, and returns the response. */
  async call(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Response> {
    const url = path.startsWith('https://') ? new URL(path) : new URL(`https://${this.ref.apiHost}${path}`);
    const withAuth = (): Record<string, string> =>
      this.authorization ? { ...headers, authorization: this.authorization } : headers;
    let r = await this.send(method, url, withAuth(), body);
    if (r.status !== 401) return r;
    const header = r.headers['www-authenticate'];
    const challenge = parseChallenge(Array.isArray(header) ? header[0]! : (header ?? ''));
    await this.authenticate(challenge, `${method} ${url.pathname}`);
    r = await this.send(method, url, withAuth(), body);
    if (r.status === 401 || r.status === 403) {
      throw new Error(
        `registry ${this.ref.registry}: ${method} ${url.pathname} refused (${r.status}) after ${challenge.scheme} ` +
          `authentication${this.creds ? ` as ${this.creds.username} (from ${this.creds.source})` : ' (anonymous)'}: ` +
          errorText(r.body),
      );
    }
    return r;
  }

  private async authenticate(c: { scheme: string; params: Record<string, string> }, step: string): Promise<void> {
    const who = this.creds ? `${this.creds.username} (from ${this.creds.source})` : undefined;
    if (c.scheme === 'basic') {
      if (!this.creds)
        throw new Error(
          `registry ${this.ref.registry}: ${step} needs basic authentication and there are no credentials for ` +
            `${this.ref.registry} in the docker config file`,
        );
      if (this.authorization?.startsWith('Basic '))
        throw new Error(`registry ${this.ref.registry}: basic authentication as ${who} was refused at ${step}`);
      this.authorization = `Basic ${Buffer.from(`${this.creds.username}:${this.creds.password}`).toString('base64')}`;
      return;
    }
    if (c.scheme !== 'bearer' || !c.params.realm)
      throw new Error(`registry ${this.ref.registry}: ${step}: unsupported authentication challenge ${c.scheme}`);
    const token = new URL(c.params.realm);
    if (c.params.service) token.searchParams.set('service', c.params.service);
    token.searchParams.set('scope', c.params.scope ?? `repository:${this.ref.repository}:pull,push`);
    const headers: Record<string, string> = {};
    if (this.creds)
      headers.authorization = `Basic ${Buffer.from(`${this.creds.username}:${this.creds.password}`).toString('base64')}`;
    const r = await this.send('GET', token, headers);
    if (r.status !== 200)
      throw new Error(
        `registry ${this.ref.registry}: the token service ${token.origin}${token.pathname} refused a token ` +
          `(${r.status})${who ? ` for ${who}` : ' anonymously'}: ${errorText(r.body)}`,
      );
    const t = JSON.parse(r.body.toString()) as { token?: string; access_token?: string };
    const value = t.token ?? t.access_token;
    if (!value) throw new Error(`registry ${this.ref.registry}: the token service answered without a token`);
    this.authorization = `Bearer ${value}`;
  }

  private fail(what: string, r: Response): never {
    throw new Error(
      `registry ${this.ref.registry}: ${what} of ${this.ref.repository}: ${r.status} ${errorText(r.body)}`,
    );
  }

  /** pushBlob uploads one blob unless the registry has it (HEAD), with POST then a monolithic PUT; true if sent. */
  async pushBlob(digest: string, data: Buffer): Promise<boolean> {
    const repo = this.ref.repository;
    const head = await this.call('HEAD', `/v2/${repo}/blobs/${digest}`);
    if (head.status === 200) return false;
    const start = await this.call('POST', `/v2/${repo}/blobs/uploads/`, { 'content-length': '0' });
    if (start.status !== 202) this.fail(`starting the upload of ${digest}`, start);
    const location = String(start.headers.location ?? '');
    if (!location) this.fail(`starting the upload of ${digest} (no Location)`, start);
    const url = new URL(location, `https://${this.ref.apiHost}`);
    url.searchParams.set('digest', digest);
    const put = await this.call(
      'PUT',
      url.href,
      { 'content-type': 'application/octet-stream', 'content-length': String(data.length) },
      data,
    );
    if (put.status !== 201) this.fail(`uploading ${digest}`, put);
    return true;
  }

  /** putManifest stores a manifest under reference (a tag or digest) and returns the digest the registry reports. */
  async putManifest(reference: string, manifest: Buffer, mediaType: string): Promise<string> {
    const r = await this.call(
      'PUT',
      `/v2/${this.ref.repository}/manifests/${reference}`,
      { 'content-type': mediaType, 'content-length': String(manifest.length) },
      manifest,
    );
    if (r.status !== 201) this.fail(`putting the manifest ${reference}`, r);
    return String(r.headers['docker-content-digest'] ?? sha256(manifest));
  }

  /** getManifest fetches a manifest by tag or digest and returns its bytes and media type. */
  async getManifest(reference: string): Promise<{ body: Buffer; mediaType: string }> {
    const r = await this.call('GET', `/v2/${this.ref.repository}/manifests/${reference}`, {
      accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
    });
    if (r.status !== 200) this.fail(`getting the manifest ${reference}`, r);
    return { body: r.body, mediaType: String(r.headers['content-type'] ?? '') };
  }
}

function errorText(body: Buffer): string {
  try {
    const e = JSON.parse(body.toString()) as { errors?: Array<{ code?: string; message?: string }> };
    if (e.errors?.length) return e.errors.map((x) => `${x.code ?? ''} ${x.message ?? ''}`.trim()).join('; ');
  } catch {
    // not JSON: the text itself
  }
  return body.toString().slice(0, 200).trim() || '(no body)';
}

/** PushResult says what pushImage did. */
export interface PushResult {
  digest: string;
  /** `registry/repository@digest` */
  pinned: string;
  blobsSent: number;
  blobsSkipped: number;
  bytesSent: number;
}

/**
 * pushImage pushes the one image of an OCI layout directory or archive to ref (its tag, or its digest): every blob
 * the registry lacks, then the manifest. The digest the registry reports must be the manifest's own.
 */
export async function pushImage(from: string, ref: string, o: RegistryClientOptions = {}): Promise<PushResult> {
  const img = readLayoutImage(from);
  const client = new RegistryClient(ref, o);
  if (client.ref.digest && client.ref.digest !== img.digest)
    throw new Error(`image reference ${ref}: names ${client.ref.digest} but ${from} holds ${img.digest}`);
  let sent = 0;
  let bytes = 0;
  for (const b of img.blobs) {
    if (await client.pushBlob(b.digest, b.data)) {
      sent++;
      bytes += b.data.length;
    }
  }
  const digest = await client.putManifest(client.ref.tag ?? img.digest, img.manifest, img.mediaType);
  if (digest !== img.digest)
    throw new Error(`registry ${client.ref.registry}: stored the manifest as ${digest}, not ${img.digest}`);
  return {
    digest,
    pinned: `${client.ref.registry}/${client.ref.repository}@${digest}`,
    blobsSent: sent,
    blobsSkipped: img.blobs.length - sent,
    bytesSent: bytes,
  };
}
