import { isIPv4, isIPv6 } from 'node:net';
import type { TenantView } from '@virtualcluster-ts/plugin-sdk';
import {
  cidrContains,
  type Cidr,
  internalCIDRs,
  NUMERIC_HOST,
  parseCidr,
  privateNameRefusal,
} from '@virtualcluster-ts/plugin-sdk/network';
import { DEFAULT_PODS_POLICY, type PodRefusal, type PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

/**
 * ALWAYS_INTERNAL are the ranges an image's registry host is refused in whatever the policy's internal ranges say:
 * the node itself (loopback, "this network"), link-local (the cloud metadata address), IPv4-mapped and NAT64 forms.
 */
const ALWAYS_INTERNAL = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '::/128', '::1/128', 'fe80::/10'].map(parseCidr);

/**
 * registryOf returns the registry host of an image reference as the node's runtime reads it (containerd and
 * Docker share the rule): the first path component when it holds a `.` or a `:`, is `localhost` or is not all
 * lowercase; otherwise none (Docker Hub). The result keeps its port; it is lowercased, as hosts compare.
 */
export function registryOf(image: string): string | undefined {
  const slash = image.indexOf('/');
  if (slash < 0) return undefined;
  const first = image.slice(0, slash);
  const domain = /[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first;
  return domain ? first.toLowerCase() : undefined;
}

/** hostOf strips the port of a registry (`host:port`, `[v6]:port`) and the brackets of an IPv6 literal. */
function hostOf(registry: string): string {
  if (registry.startsWith('[')) {
    const end = registry.indexOf(']');
    return end < 0 ? registry.slice(1) : registry.slice(1, end);
  }
  const colon = registry.lastIndexOf(':');
  return colon < 0 ? registry : registry.slice(0, colon);
}

/** mappedV4 returns the IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) address carries. */
function mappedV4(c: Cidr): Cidr | undefined {
  const high = c.addr >> 32n;
  if (high === 0xffffn || high === 0x64ff9bn << 64n) return { family: 4, addr: c.addr & 0xffffffffn, prefix: 32 };
  return undefined;
}

/**
 * registryRefusal tells why a registry host is one a tenant image may not name, or undefined when it may: a host
 * the node reaches on itself or inside the super cluster's internal ranges, by address (IPv4, IPv6, the mapped and
 * NAT64 forms, numeric forms a resolver reads as addresses) or by a name only the node or a private resolver answers
 * (privateNameRefusal: `localhost.localdomain`, `*.localhost`, `*.internal` such as the cloud's metadata name,
 * `*.local`...; and a single-label name, which the node's resolver completes with its own search domains). Other names
 * are not resolved here: plugins do no I/O, and a name's answer can change.
 */
export function registryRefusal(registry: string, internal: readonly string[]): string | undefined {
  const host = hostOf(registry).replace(/\.$/, '');
  const literal = isIPv4(host) || isIPv6(host);
  if (!literal && NUMERIC_HOST.test(host)) return `${host} is a numeric host that resolvers read as an address`;
  if (!host.includes('.') && !host.includes(':'))
    return `${host} is a single-label name, which the node's resolver completes with the node's own search domains`;
  if (!literal) return privateNameRefusal(host);
  const addr = parseCidr(host);
  const v4 = addr.family === 6 ? mappedV4(addr) : undefined;
  const blocks = [...ALWAYS_INTERNAL, ...internal.flatMap((c) => safeCidr(c))];
  const inside = (a: Cidr) => blocks.some((b) => cidrContains(b, a));
  if (inside(addr) || (v4 && inside(v4))) return `${host} is an address inside the super cluster's internal ranges`;
  return undefined;
}

const safeCidr = (c: string): Cidr[] => {
  try {
    return [parseCidr(c)];
  } catch {
    return [];
  }
};

/** DOCKER_HUB is the registry host of an image reference that names none. */
const DOCKER_HUB = 'docker.io';

/**
 * registryListed tells whether a registry (`host` or `host:port`) is in a pods.registries list: `*` is every host,
 * `*.example.com` every host under example.com (with any port), anything else that host or host:port exactly.
 */
export function registryListed(registry: string, listed: readonly string[]): boolean {
  const host = hostOf(registry);
  return listed.some((p) =>
    p === '*' ? true : p.startsWith('*.') ? host.endsWith(p.slice(1)) : p === registry || p === host,
  );
}

/** ImageField is one image reference of a Pod spec and the field that holds it. */
export interface ImageField {
  field: string;
  image: string;
}

/** imageFields lists every image reference a Pod spec makes the node pull: containers, init containers, image volumes. */
export function imageFields(spec: PodSpec): ImageField[] {
  const out: ImageField[] = [];
  for (const [where, cs] of [
    ['containers', spec.containers ?? []],
    ['initContainers', spec.initContainers ?? []],
    ['ephemeralContainers', (spec as { ephemeralContainers?: Array<{ image?: unknown }> }).ephemeralContainers ?? []],
  ] as const) {
    for (const [i, c] of cs.entries())
      if (typeof c.image === 'string') out.push({ field: `spec.${where}[${i}].image`, image: c.image });
  }
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    const ref = (v as { image?: { reference?: unknown } }).image?.reference;
    if (typeof ref === 'string') out.push({ field: `spec.volumes[${i}].image.reference`, image: ref });
  }
  return out;
}

/**
 * checkImage refuses an image the node would pull from a registry host inside the platform (registryRefusal):
 * the node's container runtime connects there as the node, so a tenant image could make it send requests to the node's
 * own ports, the super cluster's Services and control plane, or the cloud metadata service, and read the answers back
 * in pull errors. Hosts in the policy's `pods.internalRegistries` and images in `pods.preloadedImages` are allowed. A
 * registry not in `pods.registries` (default `*`, every host) is refused too: a list of the platform's registries
 * also closes what registryRefusal cannot see, a public name that resolves to an internal address.
 */
export function checkImage(
  f: ImageField,
  tenant: Pick<TenantView, 'pods' | 'network'>,
  policyName = 'the TenantPolicy',
): PodRefusal | undefined {
  const pods = tenant.pods;
  if (pods?.preloadedImages?.includes(f.image)) return undefined;
  const registry = registryOf(f.image) ?? DOCKER_HUB;
  const allowed = pods?.internalRegistries ?? DEFAULT_PODS_POLICY.internalRegistries;
  if (allowed.includes(registry)) return undefined;
  const why = registryRefusal(registry, internalCIDRs(tenant));
  if (why)
    return {
      field: f.field,
      message:
        `${f.field} "${f.image}": registry ${why}; the node would connect there to pull it. Not allowed by ` +
        `${policyName} (pods.internalRegistries: ${allowed.join(', ') || 'none'})`,
    };
  const listed = pods?.registries ?? DEFAULT_PODS_POLICY.registries;
  if (registryListed(registry, listed)) return undefined;
  return {
    field: f.field,
    message:
      `${f.field} "${f.image}": registry ${registry} is not one ${policyName} lets images name ` +
      `(pods.registries: ${listed.join(', ') || 'none'})`,
  };
}

/** checkImages returns the first image of a Pod spec checkImage refuses, or undefined. */
export function checkImages(
  spec: PodSpec,
  tenant: Pick<TenantView, 'pods' | 'network'>,
  policyName?: string,
): PodRefusal | undefined {
  for (const f of imageFields(spec)) {
    const r = checkImage(f, tenant, policyName);
    if (r) return r;
  }
  return undefined;
}
