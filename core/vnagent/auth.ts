import { X509Certificate, createHash } from 'node:crypto';
import { tenantNaming, type Naming } from '../names/names.ts';
import type { NodesPolicyView, TenantView } from '../plugins/contract.ts';
import { tenantFrom, tenantView } from '../tenancy/tenant.ts';

/**
 * Tenant identity for the vn-agent. A tenant apiserver reaches the agent with its kubelet client certificate; the
 * agent accepts it only when the certificate (a) chains to the CA of a known tenant and (b) is exactly the
 * certificate recorded for that tenant (`status.kubeletClientCertFingerprint` of its VirtualCluster, or one of
 * `status.rotatingKubeletClientCertFingerprints` while that certificate is renewed), and is in date.
 */

/** AgentTenant is one tenant as the vn-agent knows it: who it is, which CA and which client certificate are its. */
export interface AgentTenant {
  /** cluster key = root namespace */
  readonly key: string;
  /** the tenant CA (PEM, possibly a bundle) */
  readonly caPem: string;
  /** the parsed certificates of caPem */
  readonly cas: readonly X509Certificate[];
  /** lowercase hex SHA-256 of the DER of the tenant apiserver's kubelet client certificate */
  readonly fingerprint: string;
  /** the fingerprints of the certificates in rotation beside it (a renewed one, the one replaced), also accepted */
  readonly rotating: readonly string[];
  /** the tenant as plugins see it (only identity, plugins and pluginConfig are meaningful in the agent) */
  readonly tenant: TenantView;
  /** tenant-bound naming */
  readonly names: Naming;
}

/** AgentTenantSpec is what it takes to build an AgentTenant. */
export interface AgentTenantSpec {
  key: string;
  caPem: string;
  fingerprint: string;
  /** status.rotatingKubeletClientCertFingerprints: a renewed certificate and the one it replaced, accepted too */
  rotating?: readonly string[];
  vcName?: string;
  vcNamespace?: string;
  vcUid?: string;
  plugins?: { enable?: string[]; disable?: string[] };
  pluginConfig?: Record<string, unknown>;
  /** the nodes section of the tenant's effective TenantPolicy (what it sees of a node's totals); absent, scaled */
  nodes?: NodesPolicyView;
  /**
   * caCommonName binds the CA to the tenant: when set, only the CA certificates of caPem whose subject CN is exactly
   * this are the tenant's (the manager's PKI names a tenant's CA `<key>-ca`, see tenantCACommonName), so a CA and
   * fingerprint of another tenant, wherever they were read from, never authenticate as this tenant.
   */
  caCommonName?: string;
}

/**
 * tenantCACommonName is the subject CN the manager gives the CA of the tenant whose key is `key`: the local and
 * native provisioners call generateControlPlanePKI with clusterName = key, which names the CA `<clusterName>-ca`.
 */
export const tenantCACommonName = (key: string): string => `${key}-ca`;

/** subjectCN returns the CN of a certificate's subject, or undefined. */
function subjectCN(c: X509Certificate): string | undefined {
  return c.subject
    .split('\n')
    .find((l) => l.startsWith('CN='))
    ?.slice(3);
}

/** splitPem returns every CERTIFICATE block of a PEM text. */
export function splitPem(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * agentTenant builds an AgentTenant from its spec, parsing the CA. It throws when the CA holds no certificate or the
 * fingerprint is not 64 hex characters, so a broken tenant is reported instead of silently never matching.
 */
export function agentTenant(s: AgentTenantSpec): AgentTenant {
  const blocks = splitPem(s.caPem);
  if (!blocks.length) throw new Error(`tenant ${s.key}: the CA holds no PEM certificate`);
  let cas = blocks.map((b) => new X509Certificate(b));
  if (s.caCommonName !== undefined) {
    cas = cas.filter((c) => subjectCN(c) === s.caCommonName);
    if (!cas.length)
      throw new Error(`tenant ${s.key}: no CA certificate is named ${s.caCommonName}: the CA is not this tenant's`);
  }
  const [fingerprint, ...rotating] = [s.fingerprint, ...(s.rotating ?? [])].map((f) => {
    const hex = f.toLowerCase().replace(/:/g, '');
    if (!/^[0-9a-f]{64}$/.test(hex))
      throw new Error(`tenant ${s.key}: kubelet client certificate fingerprint is not a SHA-256 hex digest`);
    return hex;
  });
  const tenant = tenantView(
    tenantFrom({
      key: s.key,
      vcName: s.vcName ?? s.key,
      vcNamespace: s.vcNamespace ?? '',
      vcUid: s.vcUid ?? '',
      settings: { plugins: s.plugins, pluginConfig: s.pluginConfig, ...(s.nodes && { nodes: s.nodes }) },
    }),
  );
  return { key: s.key, caPem: s.caPem, cas, fingerprint: fingerprint!, rotating, tenant, names: tenantNaming(s.key) };
}

/** certFingerprint is the lowercase hex SHA-256 of a certificate's DER, as fingerprintSha256 computes from PEM. */
export function certFingerprint(cert: X509Certificate): string {
  return createHash('sha256').update(cert.raw).digest('hex');
}

const inDate = (c: X509Certificate, now: Date): boolean => now >= new Date(c.validFrom) && now <= new Date(c.validTo);

/** chainsTo reports whether cert is signed by one of the in-date CA certificates. */
export function chainsTo(cert: X509Certificate, cas: readonly X509Certificate[], now = new Date()): boolean {
  return cas.some((ca) => {
    try {
      return ca.ca && inDate(ca, now) && cert.checkIssued(ca) && cert.verify(ca.publicKey);
    } catch {
      return false;
    }
  });
}

/** AuthResult is the outcome of authenticate: the tenant, or the HTTP status and a one-line reason. */
export type AuthResult = { ok: true; tenant: AgentTenant } | { ok: false; status: 401 | 403; reason: string };

const subjectOf = (c: X509Certificate): string => c.subject.replace(/\n/g, ', ');

/**
 * authenticate decides which tenant presented a client certificate. No certificate, a certificate out of date, or
 * one no tenant CA signed (self-signed, another cluster's, a deleted tenant's) answer 401; a certificate a tenant CA
 * signed that is not the one recorded as that tenant's apiserver kubelet client certificate (its admin certificate,
 * say) answers 403.
 */
export function authenticate(
  peer: X509Certificate | undefined,
  tenants: Iterable<AgentTenant>,
  now = new Date(),
): AuthResult {
  if (!peer)
    return {
      ok: false,
      status: 401,
      reason: 'a client certificate is required: present the tenant apiserver kubelet client certificate',
    };
  if (now < new Date(peer.validFrom))
    return {
      ok: false,
      status: 401,
      reason: `client certificate "${subjectOf(peer)}" is not valid before ${peer.validFrom}`,
    };
  if (now > new Date(peer.validTo))
    return { ok: false, status: 401, reason: `client certificate "${subjectOf(peer)}" expired at ${peer.validTo}` };
  const fp = certFingerprint(peer);
  const all = [...tenants];
  const pinned = (t: AgentTenant) => t.fingerprint === fp || t.rotating.includes(fp);
  for (const t of all) if (pinned(t) && chainsTo(peer, t.cas, now)) return { ok: true, tenant: t };
  const signer = all.find((t) => chainsTo(peer, t.cas, now));
  if (signer) {
    return {
      ok: false,
      status: 403,
      reason: `client certificate "${subjectOf(peer)}" is signed by the CA of tenant ${signer.key} but is not its apiserver kubelet client certificate`,
    };
  }
  const selfSigned = peer.checkIssued(peer) && safeVerify(peer, peer);
  return {
    ok: false,
    status: 401,
    reason: selfSigned
      ? `client certificate "${subjectOf(peer)}" is self-signed; it must be the tenant apiserver kubelet client certificate`
      : `client certificate "${subjectOf(peer)}" is not signed by the CA of any known tenant`,
  };
}

function safeVerify(cert: X509Certificate, by: X509Certificate): boolean {
  try {
    return cert.verify(by.publicKey);
  } catch {
    return false;
  }
}
