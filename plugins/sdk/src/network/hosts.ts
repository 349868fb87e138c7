/**
 * NUMERIC_HOST matches a host made only of numbers (decimal, octal or hex) in one to four parts: resolvers (inet_aton)
 * read `127.1`, `0x7f.1` or `2130706433` as addresses.
 */
export const NUMERIC_HOST = /^(0x[0-9a-f]*|\d+)(\.(0x[0-9a-f]*|\d+)){0,3}$/;

/**
 * LOOPBACK_NAMES are first labels that the hosts files of common node images map to loopback (`localhost4`,
 * `localhost.localdomain`, `ip6-localhost`), in whatever domain follows them.
 */
const LOOPBACK_NAMES = new Set(['localhost', 'localhost4', 'localhost6', 'ip6-localhost', 'ip6-loopback']);

/**
 * UNDELEGATED_SUFFIXES are DNS suffixes the public DNS does not delegate, so that only a resolver inside some network
 * answers them (with that network's addresses): mDNS `.local`, `.localhost`, the hosts-file `.localdomain`,
 * `.internal` (reserved for private use; the clouds' metadata name and node names live there), `.home.arpa`, and
 * the never-delegated `.home`, `.corp`, `.lan` and `.intranet` that private networks use.
 */
export const UNDELEGATED_SUFFIXES = [
  'local',
  'localhost',
  'localdomain',
  'internal',
  'home.arpa',
  'home',
  'corp',
  'lan',
  'intranet',
] as const;

/**
 * privateNameRefusal tells why a DNS name (lowercase, without a trailing dot) is one that only the node's hosts file or
 * a private resolver answers, or undefined: a first label the hosts files map to loopback (`localhost.localdomain`,
 * `localhost6`), or a suffix the public DNS does not delegate (UNDELEGATED_SUFFIXES). Whoever follows such a name
 * from the platform's network (the node pulling an image, a super-side proxy following an alias) reaches the node
 * itself or the platform's private network. It does not resolve anything: a public name may still resolve inward.
 */
export function privateNameRefusal(name: string): string | undefined {
  const labels = name.split('.');
  if (LOOPBACK_NAMES.has(labels[0]!)) return `${name} is a name the node's hosts file maps to loopback`;
  const suffix = UNDELEGATED_SUFFIXES.find((s) => name === s || name.endsWith(`.${s}`));
  if (suffix)
    return `${name} is under .${suffix}, which the public DNS does not delegate: only a private resolver answers it`;
  return undefined;
}
