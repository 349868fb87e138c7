import { describe, expect, it } from 'vitest';
import { canonicalQuery, EMPTY_SHA256, signV4, uriEncode } from './sigv4.ts';

// The examples of the Amazon S3 documentation ("Signature Calculations for the Authorization Header"), with its
// example key pair and the signatures it prints.
const credentials = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const now = new Date('2013-05-24T00:00:00Z');
const host = 'examplebucket.s3.amazonaws.com';

interface Case {
  name: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  signedHeaders: string;
  signature: string;
}

describe('signV4', () => {
  const cases: Case[] = [
    {
      name: 'GET an object with a Range header',
      path: '/test.txt',
      query: {},
      headers: { Host: host, Range: 'bytes=0-9' },
      signedHeaders: 'host;range;x-amz-content-sha256;x-amz-date',
      signature: 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    },
    {
      name: 'GET a bucket subresource (?lifecycle)',
      path: '/',
      query: { lifecycle: '' },
      headers: { Host: host },
      signedHeaders: 'host;x-amz-content-sha256;x-amz-date',
      signature: 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543',
    },
    {
      name: 'list objects: query parameters sorted by name',
      path: '/',
      query: { prefix: 'J', 'max-keys': '2' },
      headers: { Host: host },
      signedHeaders: 'host;x-amz-content-sha256;x-amz-date',
      signature: '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
    },
  ];
  it.each(cases)('$name', (c) => {
    const h = signV4({
      method: 'GET',
      path: c.path,
      query: c.query,
      headers: c.headers,
      payloadHash: EMPTY_SHA256,
      region: 'us-east-1',
      service: 's3',
      now,
      credentials,
    });
    expect(h['x-amz-date']).toBe('20130524T000000Z');
    expect(h.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ` +
        `SignedHeaders=${c.signedHeaders}, Signature=${c.signature}`,
    );
  });

  it('another secret gives another signature', () => {
    const sign = (secretAccessKey: string) =>
      signV4({
        method: 'GET',
        path: '/test.txt',
        headers: { host },
        payloadHash: EMPTY_SHA256,
        region: 'us-east-1',
        service: 's3',
        now,
        credentials: { ...credentials, secretAccessKey },
      }).authorization;
    expect(sign('a')).not.toBe(sign('b'));
  });
});

describe('uriEncode and canonicalQuery', () => {
  it.each([
    ['a b', 'a%20b'],
    ['a/b', 'a%2Fb'],
    ["!'()*~._-", '%21%27%28%29%2A~._-'],
    ['é', '%C3%A9'],
  ])('%s -> %s', (s, want) => expect(uriEncode(s)).toBe(want));
  it('sorts by encoded name and keeps empty values', () => {
    expect(canonicalQuery({ 'list-type': '2', prefix: 'a/b', 'continuation-token': 'x=y', delimiter: '' })).toBe(
      'continuation-token=x%3Dy&delimiter=&list-type=2&prefix=a%2Fb',
    );
  });
});
