import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream/promises';
import type { SnapshotMeta } from './catalog.ts';
import { canonicalQuery, EMPTY_SHA256, signV4, uriEncode, type Credentials } from './sigv4.ts';
import { checkId, SnapshotNotFound, verifySnapshot, type BackupStore, type TenantRef } from './store.ts';

/** ObjectStoreSettings name an S3-compatible bucket and how to reach it. */
export interface ObjectStoreSettings {
  /** `https://host[:port]` or `http://host[:port]` (path-style requests: `<endpoint>/<bucket>/<key>`) */
  endpoint: string;
  bucket: string;
  /** the region the signature names; stores that have none accept us-east-1 */
  region?: string;
  /** a key prefix inside the bucket, such as `backups/`; empty by default */
  prefix?: string;
  /** PEM of the CA that signed an https endpoint's certificate, when it is not a public one */
  caPem?: string;
  credentials: Credentials;
}

/** ObjectStoreError is an answer of the object store that is not a success; reason is S3's error code. */
export class ObjectStoreError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string,
  ) {
    super(message);
  }
}

/** CREDENTIAL_CODES are S3's error codes for a key pair the store does not take. */
const CREDENTIAL_CODES = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken']);

/** explain turns an S3 error code into what the operator should check. */
export function explain(code: string, where: string): string {
  if (code === 'InvalidAccessKeyId')
    return `${where}: the store does not know the access key id (${code}); check the credentials in backups.s3`;
  if (code === 'SignatureDoesNotMatch')
    return `${where}: the secret access key is wrong for this access key id (${code}); check the credentials in backups.s3`;
  if (code === 'AccessDenied')
    return `${where}: the key pair may not do this (${code}); check its permissions on the bucket`;
  if (code === 'NoSuchBucket')
    return `${where}: the bucket does not exist (${code}); create it or fix backups.s3.bucket`;
  return `${where}: ${code}`;
}

/** isCredentialError tells whether an error is the store refusing the key pair. */
export function isCredentialError(e: unknown): boolean {
  return e instanceof ObjectStoreError && CREDENTIAL_CODES.has(e.reason);
}

/** xmlValues returns the text of every `<tag>` element of an S3 XML answer, entities decoded. */
export function xmlValues(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g');
  for (let m = re.exec(xml); m; m = re.exec(xml))
    out.push(
      m[1]!
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&quot;/g, '"')
        .replace(/&apos;/g, "'")
        .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
        .replace(/&amp;/g, '&'),
    );
  return out;
}

interface Call {
  method: 'GET' | 'PUT' | 'DELETE' | 'HEAD';
  /** the object key, or undefined for the bucket itself */
  key?: string;
  query?: Record<string, string>;
  /** a file to send as the body, with its sha256 and size */
  body?: { file: string; sha256: string; size: number } | { text: string };
  /** what the call is, for messages */
  what: string;
}

/**
 * ObjectStore keeps snapshots in a bucket of an S3-compatible object store: `<prefix><namespace>/<name>/<id>.db` and
 * `<id>.json` next to it, each request signed with Signature Version 4. The data is uploaded with its sha256 as the
 * signed payload hash, so the store itself refuses a body that changed on the way.
 */
export class ObjectStore implements BackupStore {
  readonly describe: string;
  private readonly url: URL;

  constructor(private readonly s: ObjectStoreSettings) {
    this.url = new URL(s.endpoint);
    if (this.url.protocol !== 'http:' && this.url.protocol !== 'https:')
      throw new Error(`backups.s3.endpoint ${s.endpoint}: must be an http:// or https:// URL`);
    this.describe = `object store ${this.url.origin}/${s.bucket}${s.prefix ? `/${s.prefix}` : ''}`;
  }

  /** fromFiles reads the CA file when one is named; a small helper for the manager's configuration. */
  static fromFiles(s: Omit<ObjectStoreSettings, 'caPem'> & { caFile?: string }): ObjectStore {
    const { caFile, ...rest } = s;
    return new ObjectStore({ ...rest, ...(caFile && { caPem: readFileSync(caFile, 'utf8') }) });
  }

  private key(t: TenantRef, file: string): string {
    checkId(t.namespace);
    checkId(t.name);
    return `${this.s.prefix ?? ''}${t.namespace}/${t.name}/${file}`;
  }

  /**
   * check lists at most one key of the bucket and throws a clear error when the key pair is refused or the bucket is
   * missing; the manager calls it at start, so a wrong credential shows before any tenant needs a backup.
   */
  async check(): Promise<void> {
    // A list of at most one key, not a HEAD: an error answer to a GET carries the store's code in its body, so a
    // wrong access key id and a wrong secret can be told apart (a HEAD answers both with a bare 403).
    const res = await this.call({
      method: 'GET',
      query: { 'list-type': '2', 'max-keys': '1', prefix: this.s.prefix ?? '' },
      what: 'checking the bucket',
    });
    await this.expectOk(res, 'checking the bucket');
  }

  /** ensureBucket makes the bucket when it does not exist (for tests and first setup). */
  async ensureBucket(): Promise<void> {
    const head = await this.call({ method: 'HEAD', what: 'checking the bucket' });
    head.resume();
    if (head.statusCode === 200) return;
    const res = await this.call({ method: 'PUT', what: 'creating the bucket' });
    await this.expectOk(res, 'creating the bucket');
  }

  async put(meta: SnapshotMeta, file: string): Promise<void> {
    checkId(meta.id);
    const db = this.key(meta.tenant, `${meta.id}.db`);
    const what = `storing snapshot ${meta.id} of ${meta.tenant.namespace}/${meta.tenant.name}`;
    const res = await this.call({
      method: 'PUT',
      key: db,
      body: { file, sha256: meta.sha256, size: meta.sizeBytes },
      what,
    });
    await this.expectOk(res, what);
    // The metadata goes last: a snapshot is listed only once its data is whole.
    const text = JSON.stringify(meta, null, 2) + '\n';
    const res2 = await this.call({
      method: 'PUT',
      key: this.key(meta.tenant, `${meta.id}.json`),
      body: { text },
      what,
    });
    await this.expectOk(res2, what);
  }

  async list(t: TenantRef): Promise<SnapshotMeta[]> {
    const prefix = this.key(t, '');
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const what = `listing the snapshots of ${t.namespace}/${t.name}`;
      const res = await this.call({
        method: 'GET',
        query: { 'list-type': '2', prefix, ...(token && { 'continuation-token': token }) },
        what,
      });
      const xml = await this.expectOk(res, what);
      keys.push(...xmlValues(xml, 'Key'));
      token = xmlValues(xml, 'IsTruncated')[0] === 'true' ? xmlValues(xml, 'NextContinuationToken')[0] : undefined;
    } while (token);
    const metas: SnapshotMeta[] = [];
    for (const k of keys.filter((k) => k.endsWith('.json'))) {
      const what = `reading ${k}`;
      const res = await this.call({ method: 'GET', key: k, what });
      if (res.statusCode === 404) {
        res.resume();
        continue;
      }
      metas.push(JSON.parse(await this.expectOk(res, what)) as SnapshotMeta);
    }
    return metas.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async fetch(t: TenantRef, id: string, path: string): Promise<SnapshotMeta> {
    checkId(id);
    const name = `snapshot ${id} of ${t.namespace}/${t.name}`;
    const res = await this.call({ method: 'GET', key: this.key(t, `${id}.json`), what: `reading ${name}` });
    if (res.statusCode === 404) {
      res.resume();
      throw new SnapshotNotFound(`${name} is not in ${this.describe}`);
    }
    const meta = JSON.parse(await this.expectOk(res, `reading ${name}`)) as SnapshotMeta;
    const data = await this.call({ method: 'GET', key: this.key(t, `${id}.db`), what: `reading ${name}` });
    if (data.statusCode !== 200) await this.expectOk(data, `reading ${name}`);
    await pipeline(data, createWriteStream(path));
    await verifySnapshot(`${name} in ${this.describe}`, meta, path);
    return meta;
  }

  async delete(t: TenantRef, id: string): Promise<void> {
    checkId(id);
    for (const f of [`${id}.json`, `${id}.db`]) {
      const what = `deleting snapshot ${id} of ${t.namespace}/${t.name}`;
      const res = await this.call({ method: 'DELETE', key: this.key(t, f), what });
      if (res.statusCode === 404) res.resume();
      else await this.expectOk(res, what);
    }
  }

  /** expectOk reads the body of a 2xx answer, or throws an ObjectStoreError that says what to fix. */
  private async expectOk(res: IncomingMessage, what: string): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
    const body = Buffer.concat(chunks).toString('utf8');
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return body;
    const where = `${this.describe}: ${what}`;
    // HEAD answers have no body: the status is all there is.
    const code =
      xmlValues(body, 'Code')[0] ??
      (status === 403 ? 'AccessDenied' : status === 404 ? 'NoSuchBucket' : `HTTP ${status}`);
    throw new ObjectStoreError(explain(code, where), status, code);
  }

  private async call(c: Call): Promise<IncomingMessage> {
    const segments = [this.s.bucket, ...(c.key !== undefined ? c.key.split('/') : [])];
    const base = this.url.pathname.replace(/\/$/, '');
    const path = `${base}/${segments.map(uriEncode).join('/')}`;
    const query = canonicalQuery(c.query);
    let payloadHash = EMPTY_SHA256;
    let length = 0;
    if (c.body && 'file' in c.body) {
      payloadHash = c.body.sha256;
      length = c.body.size;
    } else if (c.body) {
      payloadHash = createHash('sha256').update(c.body.text, 'utf8').digest('hex');
      length = Buffer.byteLength(c.body.text);
    }
    const headers: Record<string, string> = { host: this.url.host };
    if (c.method === 'PUT') headers['content-length'] = String(length);
    const signed = signV4({
      method: c.method,
      path,
      query: c.query ?? {},
      headers,
      payloadHash,
      region: this.s.region ?? 'us-east-1',
      service: 's3',
      now: new Date(),
      credentials: this.s.credentials,
    });
    const request = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port,
          method: c.method,
          path: query ? `${path}?${query}` : path,
          headers: { ...headers, ...signed },
          timeout: 60_000,
          ...(this.s.caPem && { ca: this.s.caPem }),
        },
        resolve,
      );
      req.on('timeout', () => req.destroy(new Error(`${this.describe}: ${c.what}: no answer in 60 s`)));
      req.on('error', (e) =>
        reject(new ObjectStoreError(`${this.describe}: ${c.what}: ${e.message}`, 0, 'Unreachable')),
      );
      if (c.body && 'file' in c.body)
        pipeline(createReadStream(c.body.file), req).catch((e: unknown) => req.destroy(e as Error));
      else req.end(c.body && 'text' in c.body ? c.body.text : undefined);
    });
  }
}
