import { describe, expect, it } from 'vitest';
import {
  checkAddresses,
  classifyAddress,
  hostOf,
  resolveChecked,
  type AddressClass,
  type ResolvedAddress,
} from './address.ts';
import { SourceError } from './errors.ts';

describe('classifyAddress', () => {
  const cases: Array<[string, AddressClass | undefined]> = [
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.10.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['172.31.255.1', 'private'],
    ['172.32.0.1', undefined],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fc00::1', 'private'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:a01:203', 'private'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'metadata'],
    ['140.82.112.3', undefined],
    ['2606:50c0:8000::153', undefined],
  ];
  it.each(cases)('%s is %s', (address, cls) => expect(classifyAddress(address)).toBe(cls));
});

describe('checkAddresses', () => {
  const a = (...xs: string[]): ResolvedAddress[] =>
    xs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const cases: Array<{
    name: string;
    host: string;
    addresses: ResolvedAddress[];
    allow?: boolean | string[];
    refused?: RegExp;
  }> = [
    { name: 'a public address', host: 'git.example.com', addresses: a('140.82.112.3') },
    {
      name: 'loopback without allowance',
      host: '127.0.0.1',
      addresses: a('127.0.0.1'),
      refused: /^address 127\.0\.0\.1 is a loopback address; .*gitops\.allowPrivateAddresses/,
    },
    { name: 'metadata', host: '169.254.169.254', addresses: a('169.254.169.254'), refused: /is a metadata address/ },
    {
      name: 'every answer is checked, not just the first',
      host: 'evil.example',
      addresses: a('140.82.112.3', '127.0.0.1'),
      refused: /host evil\.example resolves to 127\.0\.0\.1, which is a loopback address/,
    },
    { name: 'loopback allowed by true', host: 'localhost', addresses: a('127.0.0.1', '::1'), allow: true },
    { name: 'loopback allowed by CIDR', host: '127.0.0.1', addresses: a('127.0.0.1'), allow: ['127.0.0.0/8'] },
    {
      name: 'a CIDR allows only what it covers',
      host: '169.254.169.254',
      addresses: a('169.254.169.254'),
      allow: ['127.0.0.0/8'],
      refused: /metadata/,
    },
    { name: 'no address', host: 'nowhere.example', addresses: [], refused: /has no address/ },
  ];
  it.each(cases)('$name', (c) => {
    const out = checkAddresses(c.host, c.addresses, { allowPrivateAddresses: c.allow });
    if (c.refused) expect(out).toMatch(c.refused);
    else expect(out).toBeUndefined();
  });

  it('strips IPv6 brackets from hosts', () => expect(hostOf('http://[::1]:8080/x.git')).toBe('::1'));

  it('resolves once and refuses with AddressRefused', async () => {
    const asked: string[] = [];
    const resolver = async (host: string): Promise<ResolvedAddress[]> => {
      asked.push(host);
      return [{ address: '169.254.169.254', family: 4 }];
    };
    const err = await resolveChecked('http://metadata.example/repo.git', {}, resolver).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceError);
    expect((err as SourceError).reason).toBe('AddressRefused');
    expect(asked).toEqual(['metadata.example']);
    expect(await resolveChecked('http://127.0.0.1:1/x', { allowPrivateAddresses: true }, resolver)).toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
    expect(asked).toHaveLength(1);
  });
});
