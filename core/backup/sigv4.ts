import { createHash, createHmac } from 'node:crypto';

/** EMPTY_SHA256 is the sha256 (hex) of an empty body, the payload hash of requests without one. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Credentials are an access key pair of an S3-compatible store. */
export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** SignInput is one request to sign: everything the signature covers. */
export interface SignInput {
  method: string;
  /** the path as sent, already percent-encoded (S3 paths are signed as sent, not encoded twice) */
  path: string;
  /** query parameters, unencoded */
  query?: Readonly<Record<string, string>>;
  /** the headers to sign, host included; names in any case */
  headers: Readonly<Record<string, string>>;
  /** sha256 (hex) of the body */
  payloadHash: string;
  region: string;
  service: string;
  now: Date;
  credentials: Credentials;
}

/** uriEncode encodes a string the way Signature Version 4 does: every byte but A-Z a-z 0-9 - _ . ~ as %XX. */
export function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** canonicalQuery is the query string as SigV4 signs it (and as it must then be sent): encoded, sorted by name. */
export function canonicalQuery(q: Readonly<Record<string, string>> = {}): string {
  return Object.entries(q)
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
const sha256hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

/**
 * signV4 returns the headers to send with a request signed by AWS Signature Version 4: x-amz-date,
 * x-amz-content-sha256 and Authorization, to add to the input's headers.
 */
export function signV4(i: SignInput): Record<string, string> {
  const amzDate = i.now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(i.headers)) headers[k.toLowerCase()] = v.trim().replace(/\s+/g, ' ');
  headers['x-amz-date'] = amzDate;
  headers['x-amz-content-sha256'] = i.payloadHash;
  const names = Object.keys(headers).sort();
  const signedHeaders = names.join(';');
  const canonical = [
    i.method.toUpperCase(),
    i.path,
    canonicalQuery(i.query),
    names.map((n) => `${n}:${headers[n]}\n`).join(''),
    signedHeaders,
    i.payloadHash,
  ].join('\n');
  const scope = `${day}/${i.region}/${i.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonical)].join('\n');
  let key = hmac(`AWS4${i.credentials.secretAccessKey}`, day);
  for (const part of [i.region, i.service, 'aws4_request']) key = hmac(key, part);
  const signature = createHmac('sha256', key).update(toSign, 'utf8').digest('hex');
  return {
    'x-amz-date': amzDate,
    'x-amz-content-sha256': i.payloadHash,
    authorization:
      `AWS4-HMAC-SHA256 Credential=${i.credentials.accessKeyId}/${scope}, ` +
      `SignedHeaders=${signedHeaders}, Signature=${signature}`,
  };
}
