import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { superNamespace } from '../names/names.ts';
import { createCA, fingerprintSha256, generateControlPlanePKI, issueCert, type CertKeyPair } from '../pki/pki.ts';
import {
  agentTenant,
  authenticate,
  certFingerprint,
  chainsTo,
  splitPem,
  tenantCACommonName,
  type AgentTenant,
} from './auth.ts';

const DAY = 86_400_000;

describe('vn-agent authentication', () => {
  let caA: CertKeyPair;
  let caB: CertKeyPair;
  let kubeletA: CertKeyPair;
  let adminA: CertKeyPair;
  let kubeletB: CertKeyPair;
  let a: AgentTenant;
  let b: AgentTenant;

  beforeAll(async () => {
    [caA, caB] = await Promise.all([createCA('tenant-a-ca', 30), createCA('tenant-b-ca', 30)]);
    [kubeletA, adminA, kubeletB] = await Promise.all([
      issueCert(caA, {
        commonName: 'kube-apiserver-kubelet-client',
        organizations: ['system:masters'],
        usages: ['client'],
        validityDays: 10,
      }),
      issueCert(caA, { commonName: 'admin', organizations: ['system:masters'], usages: ['client'], validityDays: 10 }),
      issueCert(caB, { commonName: 'kube-apiserver-kubelet-client', usages: ['client'], validityDays: 10 }),
    ]);
    a = agentTenant({ key: 'team-a-111111-a', caPem: caA.certPem, fingerprint: fingerprintSha256(kubeletA.certPem) });
    b = agentTenant({ key: 'team-b-222222-b', caPem: caB.certPem, fingerprint: fingerprintSha256(kubeletB.certPem) });
  });

  const x = (p: CertKeyPair) => new X509Certificate(p.certPem);

  it("accepts a tenant apiserver's kubelet client certificate as that tenant", () => {
    const r = authenticate(x(kubeletA), [b, a]);
    expect(r).toMatchObject({ ok: true });
    expect(r.ok && r.tenant.key).toBe('team-a-111111-a');
    const rb = authenticate(x(kubeletB), [a, b]);
    expect(rb.ok && rb.tenant.key).toBe('team-b-222222-b');
  });

  it('accepts the certificates in rotation beside the recorded one, in date and of its own CA only', async () => {
    const renewed = await issueCert(caA, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usages: ['client'],
      validityDays: 10,
    });
    // Status publishes the renewed one first (rotating), then records it with the replaced one rotating.
    const staged = agentTenant({
      key: 'team-a-111111-a',
      caPem: caA.certPem,
      fingerprint: fingerprintSha256(kubeletA.certPem),
      rotating: [fingerprintSha256(renewed.certPem)],
    });
    const swapped = agentTenant({
      key: 'team-a-111111-a',
      caPem: caA.certPem,
      fingerprint: fingerprintSha256(renewed.certPem),
      rotating: [fingerprintSha256(kubeletA.certPem)],
    });
    for (const t of [staged, swapped])
      for (const c of [kubeletA, renewed]) expect(authenticate(x(c), [b, t])).toMatchObject({ ok: true, tenant: t });
    // Without it in status, the renewed certificate is another certificate of the CA (403); past its end, the old
    // one is refused even while still listed (401); another tenant cannot list this tenant's certificate.
    expect(authenticate(x(renewed), [a])).toMatchObject({ ok: false, status: 403 });
    expect(authenticate(x(kubeletA), [swapped], new Date(Date.now() + 11 * DAY))).toMatchObject({ status: 401 });
    const thief = agentTenant({
      key: 'team-b-222222-b',
      caPem: caB.certPem,
      fingerprint: fingerprintSha256(kubeletB.certPem),
      rotating: [fingerprintSha256(renewed.certPem)],
    });
    expect(authenticate(x(renewed), [thief])).toMatchObject({ ok: false, status: 401 });
    expect(() =>
      agentTenant({ key: 'k', caPem: caA.certPem, fingerprint: 'a'.repeat(64), rotating: ['nope'] }),
    ).toThrow(/fingerprint/);
  });

  it('asks for a certificate when none is presented (401)', () => {
    expect(authenticate(undefined, [a])).toMatchObject({
      ok: false,
      status: 401,
      reason: expect.stringMatching(/client certificate is required/),
    });
  });

  it('refuses an expired or not-yet-valid certificate (401)', () => {
    const expired = authenticate(x(kubeletA), [a], new Date(Date.now() + 11 * DAY));
    expect(expired).toMatchObject({ ok: false, status: 401, reason: expect.stringMatching(/expired at/) });
    const early = authenticate(x(kubeletA), [a], new Date(Date.now() - DAY));
    expect(early).toMatchObject({ ok: false, status: 401, reason: expect.stringMatching(/not valid before/) });
  });

  it('refuses a self-signed certificate (401), naming it as such', async () => {
    const self = await createCA('kube-apiserver-kubelet-client', 1);
    expect(authenticate(x(self), [a, b])).toMatchObject({
      ok: false,
      status: 401,
      reason: expect.stringMatching(/self-signed/),
    });
  });

  it('refuses a certificate no tenant CA signed (401)', async () => {
    const other = await createCA('other', 1);
    const leaf = await issueCert(other, {
      commonName: 'kube-apiserver-kubelet-client',
      usages: ['client'],
      validityDays: 1,
    });
    expect(authenticate(x(leaf), [a, b])).toMatchObject({
      ok: false,
      status: 401,
      reason: expect.stringMatching(/not signed by the CA of any known tenant/),
    });
  });

  it("refuses another certificate of the tenant's CA, such as its admin certificate (403)", () => {
    const r = authenticate(x(adminA), [a, b]);
    expect(r).toMatchObject({
      ok: false,
      status: 403,
      reason: expect.stringMatching(/tenant team-a-111111-a but is not its apiserver kubelet client certificate/),
    });
  });

  it('refuses a certificate whose fingerprint is recorded for a tenant whose CA did not sign it (401)', () => {
    const forged = agentTenant({ key: 'team-c', caPem: caB.certPem, fingerprint: certFingerprint(x(kubeletA)) });
    expect(authenticate(x(kubeletA), [forged])).toMatchObject({ ok: false, status: 401 });
  });

  it('refuses a removed tenant (its CA is no longer known)', () => {
    expect(authenticate(x(kubeletA), [b])).toMatchObject({ ok: false, status: 401 });
    expect(authenticate(x(kubeletA), [])).toMatchObject({ ok: false, status: 401 });
  });

  it('checks the CA is in date', () => {
    expect(chainsTo(x(kubeletA), a.cas)).toBe(true);
    expect(chainsTo(x(kubeletA), a.cas, new Date(Date.now() + 31 * DAY))).toBe(false);
    expect(chainsTo(x(kubeletA), b.cas)).toBe(false);
  });

  it('accepts CA bundles and colon-separated upper-case fingerprints', () => {
    const t = agentTenant({
      key: 'k',
      caPem: caB.certPem + caA.certPem,
      fingerprint: new X509Certificate(kubeletA.certPem).fingerprint256,
    });
    expect(t.cas).toHaveLength(2);
    expect(splitPem(t.caPem)).toHaveLength(2);
    expect(authenticate(x(kubeletA), [t])).toMatchObject({ ok: true });
  });

  it("binds the CA to the tenant by name: another tenant's CA and fingerprint do not authenticate as this tenant", async () => {
    const key = 'vc-0123456789abcdef-team-a-a';
    const pki = await generateControlPlanePKI({
      clusterName: key,
      apiserverDnsNames: [],
      apiserverIPs: ['127.0.0.1'],
      serviceIP: '10.96.0.1',
      validityDays: 1,
    });
    const own = agentTenant({
      key,
      caPem: pki.ca.certPem,
      fingerprint: pki.kubeletClientFingerprint,
      caCommonName: tenantCACommonName(key),
    });
    expect(authenticate(x(pki.kubeletClient), [own])).toMatchObject({ ok: true });
    // Tenant B's CA and kubelet fingerprint, swapped into tenant A's entry: the entry is refused outright.
    expect(() =>
      agentTenant({
        key,
        caPem: caB.certPem,
        fingerprint: fingerprintSha256(kubeletB.certPem),
        caCommonName: tenantCACommonName(key),
      }),
    ).toThrow(/no CA certificate is named vc-0123456789abcdef-team-a-a-ca/);
    // A bundle that adds a foreign CA keeps only the one named after the tenant.
    const bundled = agentTenant({
      key,
      caPem: caB.certPem + pki.ca.certPem,
      fingerprint: fingerprintSha256(kubeletB.certPem),
      caCommonName: tenantCACommonName(key),
    });
    expect(bundled.cas).toHaveLength(1);
    expect(authenticate(x(kubeletB), [bundled])).toMatchObject({ ok: false, status: 401 });
  });

  it('rejects broken tenant entries', () => {
    expect(() => agentTenant({ key: 'k', caPem: 'nope', fingerprint: 'a'.repeat(64) })).toThrow(/no PEM certificate/);
    expect(() => agentTenant({ key: 'k', caPem: caA.certPem, fingerprint: 'abc' })).toThrow(/fingerprint/);
  });

  it('names super namespaces as the syncer does, and maps them back', () => {
    const n = agentTenant({ key: 'team-a-111111-a', caPem: caA.certPem, fingerprint: 'a'.repeat(64) }).names;
    expect(n.superNamespace('default')).toBe(superNamespace('team-a-111111-a', 'default'));
    expect(n.tenantNamespace('team-a-111111-a-default')).toBe('default');
    expect(n.tenantNamespace('team-b-222222-b-default')).toBeUndefined();
    const long = n.superNamespace('x'.repeat(60));
    expect(n.tenantNamespace(long)).toBeUndefined();
  });
});
