/**
 * The nftables table the CNI bridge plugin's `macspoofchk` writes (see cniConfig): a PREROUTING base chain with one
 * jump per Pod interface into chains `cni-br-iface-…`. The plugin removes a Pod's chains when the Pod is torn down
 * but leaves the table and its base chain; a node killed outright leaves the Pod chains too.
 */

/** SPOOFCHECK_TABLE is the family and name of the bridge plugin's MAC spoof-check table. */
export const SPOOFCHECK_TABLE = ['bridge', 'nat'] as const;

/** SPOOFCHECK_CHAIN_PREFIX starts the name of every per-interface chain of the bridge plugin. */
export const SPOOFCHECK_CHAIN_PREFIX = 'cni-br-iface-';

/**
 * onlySpoofCheckChains tells whether an `nft list table bridge nat` listing holds nothing but the bridge plugin's:
 * its chains are PREROUTING and `cni-br-iface-…` ones, and PREROUTING only jumps into those. Such a table can be
 * deleted when no real node runs on the host; anything else in it belongs to someone else and stays.
 */
export function onlySpoofCheckChains(listing: string): boolean {
  const chains = [...listing.matchAll(/^\s*chain (\S+) \{/gm)].map((m) => m[1]!);
  if (!chains.every((c) => c === 'PREROUTING' || c.startsWith(SPOOFCHECK_CHAIN_PREFIX))) return false;
  const pre = /chain PREROUTING \{([^}]*)\}/.exec(listing)?.[1] ?? '';
  const rules = pre
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('type ') && !l.startsWith('policy '));
  return rules.every((r) => r.includes(`jump ${SPOOFCHECK_CHAIN_PREFIX}`));
}
