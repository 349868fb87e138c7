/**
 * Where a git source may connect: a URL whose host resolves to a loopback, link-local, unspecified, private (RFC 1918,
 * RFC 6598 shared, IPv6 unique local) or cloud metadata address is refused unless the platform allows it in the
 * manager configuration (`gitops.allowPrivateAddresses`; the embedded default allows loopback for its own git server).
 * Classification is pure; resolution happens once per network call and the connection is pinned to the addresses
 * that were checked, so a second, different DNS answer cannot slip in.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { SourceError } from './errors.ts';

/** AddressClass is why an address is refused by default. */
export type AddressClass = 'loopback' | 'link-local' | 'unspecified' | 'metadata' | 'private';

/** AddressPolicy is the platform's allowance: `true` allows every class, a list allows the addresses in those CIDRs. */
export interface AddressPolicy {
  allowPrivateAddresses?: boolean | readonly string[];
}

/** ResolvedAddress is one DNS answer. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

const RANGES: ReadonlyArray<readonly [AddressClass, string, number, 'ipv4' | 'ipv6']> = [
  ['metadata', '169.254.169.254', 32, 'ipv4'],
  ['metadata', '169.254.170.2', 32, 'ipv4'],
  ['metadata', '100.100.100.200', 32, 'ipv4'],
  ['metadata', '168.63.129.16', 32, 'ipv4'],
  ['metadata', 'fd00:ec2::254', 128, 'ipv6'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['loopback', '::1', 128, 'ipv6'],
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['private', '100.64.0.0', 10, 'ipv4'],
  ['private', 'fc00::', 7, 'ipv6'],
];

const LISTS = RANGES.map(([cls, net, prefix, type]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { cls, list };
});

/**
 * unmapIPv4 turns an IPv6 address that carries an IPv4 one, IPv4-mapped (`::ffff:127.0.0.1`, also in hex) or through
 * the NAT64 well-known prefix (`64:ff9b::10.0.0.1`), into that IPv4 address, so that it is classified as itself.
 */
function unmapIPv4(address: string): string {
  const m = /^(?:::ffff|64:ff9b:):(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1]!;
  const hex = /^(?:::ffff|64:ff9b:):([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return address;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** classifyAddress tells which refused class an IP address falls in, or undefined for an address allowed by default. */
export function classifyAddress(address: string): AddressClass | undefined {
  const a = unmapIPv4(address);
  const type = isIP(a) === 6 ? 'ipv6' : 'ipv4';
  return LISTS.find(({ list }) => list.check(a, type))?.cls;
}

/** allowedBy tells whether the policy lets a source connect to an address of the given class. */
function allowedBy(address: string, policy: AddressPolicy): boolean {
  const allow = policy.allowPrivateAddresses;
  if (allow === true) return true;
  if (!allow || allow.length === 0) return false;
  const a = unmapIPv4(address);
  const list = new BlockList();
  for (const cidr of allow) {
    const [net, bits] = cidr.split('/');
    const type = isIP(net ?? '') === 6 ? 'ipv6' : 'ipv4';
    if (!net || !isIP(net)) continue;
    list.addSubnet(net, bits === undefined ? (type === 'ipv6' ? 128 : 32) : Number(bits), type);
  }
  return list.check(a, isIP(a) === 6 ? 'ipv6' : 'ipv4');
}

/**
 * checkAddresses refuses a host when any of its addresses falls in a refused class the policy does not allow, with a
 * message naming the host, the address and the class; undefined when every address may be used.
 */
export function checkAddresses(
  host: string,
  addresses: readonly ResolvedAddress[],
  policy: AddressPolicy,
): string | undefined {
  if (addresses.length === 0) return `host ${host} has no address`;
  for (const { address } of addresses) {
    const cls = classifyAddress(address);
    if (cls && !allowedBy(address, policy)) {
      const shown = host === address ? `address ${address}` : `host ${host} resolves to ${address}, which`;
      return `${shown} is a ${cls} address; git sources may not reach it unless the manager configuration allows it (gitops.allowPrivateAddresses)`;
    }
  }
  return undefined;
}

/**
 * ambiguousAuthority is a url's authority (between `//` and the path) when it holds a `%` or a `\`, else undefined.
 * Host names never need either, and parsers disagree on them: WHATWG decodes `127.0.0.1%2ex.example` to a name that
 * may resolve to a public address, while the legacy parser the git client connects with reads the host `127.0.0.1`.
 */
export function ambiguousAuthority(url: string): string | undefined {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url)?.[1];
  return authority !== undefined && /[%\\]/.test(authority) ? authority : undefined;
}

/** hostOf is the host of a URL without IPv6 brackets. */
export function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
}

/** Resolver resolves a host name to all its addresses. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/** systemResolver resolves with the system resolver (getaddrinfo), every address. */
export const systemResolver: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/**
 * resolveChecked resolves the host of a URL once (an IP literal as itself), checks every address against the policy
 * and returns them; a refused address throws SourceError AddressRefused.
 */
export async function resolveChecked(
  url: string,
  policy: AddressPolicy,
  resolve: Resolver = systemResolver,
): Promise<ResolvedAddress[]> {
  // The checked host must be the connected one: an authority the git client's parser reads differently is refused.
  if (ambiguousAuthority(url) !== undefined)
    throw new SourceError('AddressRefused', `the host of ${url} holds a percent-escape or a backslash`);
  const host = hostOf(url);
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch (err) {
      throw new SourceError(
        'FetchFailed',
        `cannot resolve host ${host}: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }
  const refused = checkAddresses(host, addresses, policy);
  if (refused) throw new SourceError('AddressRefused', refused);
  return addresses;
}

/** pinnedAgent is an HTTP(S) agent that connects `host` only to the given, already checked addresses. */
export function pinnedAgent(url: string, host: string, addresses: readonly ResolvedAddress[]): http.Agent {
  const lookup: LookupFunction = (name, options, callback) => {
    if (name !== host) {
      callback(new SourceError('AddressRefused', `connection to ${name} was not checked`), '', 4);
      return;
    }
    if (options.all)
      callback(
        null,
        addresses.map((a) => ({ address: a.address, family: a.family })),
      );
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  return new URL(url).protocol === 'https:' ? new https.Agent({ lookup }) : new http.Agent({ lookup });
}
