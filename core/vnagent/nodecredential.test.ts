import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueCert, issueNodeCert, type CertKeyPair } from '../pki/pki.ts';
import {
  loadNodeCredential,
  nodeCredentialFileSource,
  nodeIdentityOf,
  parseNodeCredential,
  NodeCredentialError,
  RenewedNodeCredential,
} from './nodecredential.ts';

const dir = mkdtempSync(join(tmpdir(), 'vn-agent-node-credential-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let ca: CertKeyPair;
let nodeA: CertKeyPair;
let nodeB: CertKeyPair;
let agentUser: CertKeyPair;
let noGroup: CertKeyPair;

beforeAll(async () => {
  ca = await createCA('super-ca', 1);
  nodeA = await issueNodeCert(ca, 'node-a', 1);
  nodeB = await issueNodeCert(ca, 'node-b', 1);
  agentUser = await issueCert(ca, { commonName: 'vc-vn-agent', usages: ['client'], validityDays: 1 });
  noGroup = await issueCert(ca, { commonName: 'system:node:node-a', usages: ['client'], validityDays: 1 });
});

describe('nodeIdentityOf', () => {
  it('names the node of a kubelet-style certificate, and why another certificate names none', () => {
    expect(nodeIdentityOf(nodeA.certPem)).toEqual({ nodeName: 'node-a' });
    expect(nodeIdentityOf(agentUser.certPem)).toEqual({ error: expect.stringContaining('"vc-vn-agent"') });
    expect(nodeIdentityOf(noGroup.certPem)).toEqual({
      error: expect.stringContaining('without the group system:nodes'),
    });
    expect(nodeIdentityOf('garbage')).toEqual({ error: expect.stringContaining('not a certificate') });
  });
});

describe('parseNodeCredential', () => {
  const both = (c: CertKeyPair) => `${c.certPem}${c.keyPem}`;
  const cases: Array<{ name: string; cert: () => string; key: () => string; node?: string; error?: string }> = [
    {
      name: 'certificate and key in one file, as the kubelet writes them',
      cert: () => both(nodeA),
      key: () => both(nodeA),
    },
    { name: 'separate files', cert: () => nodeA.certPem, key: () => nodeA.keyPem, node: 'node-a' },
    { name: 'no certificate', cert: () => nodeA.keyPem, key: () => nodeA.keyPem, error: 'holds no CERTIFICATE block' },
    { name: 'no key', cert: () => nodeA.certPem, key: () => nodeA.certPem, error: 'holds no PRIVATE KEY block' },
    {
      name: 'not a node certificate',
      cert: () => agentUser.certPem,
      key: () => agentUser.keyPem,
      error: "the certificate is not a node's",
    },
    {
      name: 'another node than the one the agent runs on',
      cert: () => nodeB.certPem,
      key: () => nodeB.keyPem,
      node: 'node-a',
      error: "the certificate is node node-b's, but this agent runs on node node-a",
    },
    {
      name: "another certificate's key",
      cert: () => nodeA.certPem,
      key: () => nodeB.keyPem,
      error: 'the private key does not belong to the certificate',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const run = () => parseNodeCredential(c.cert(), c.key(), 'kubelet.pem', c.node);
      if (c.error) {
        expect(run).toThrow(NodeCredentialError);
        expect(run).toThrow(`node credential kubelet.pem: ${c.error}`);
      } else {
        const cred = run();
        expect(cred.nodeName).toBe('node-a');
        expect(cred.certPem).toContain('BEGIN CERTIFICATE');
        expect(cred.keyPem).toContain('PRIVATE KEY');
      }
    });
  }

  it('refuses an expired certificate', () => {
    const later = new Date(Date.now() + 3 * 86_400_000);
    expect(() => parseNodeCredential(nodeA.certPem, nodeA.keyPem, 'kubelet.pem', undefined, later)).toThrow(
      /the certificate expired at/,
    );
  });
});

describe('loadNodeCredential', () => {
  it('reads the kubelet-style single file', () => {
    const f = join(dir, 'kubelet-client-current.pem');
    writeFileSync(f, `${nodeA.certPem}${nodeA.keyPem}`);
    expect(loadNodeCredential({ certFile: f, nodeName: 'node-a' }).nodeName).toBe('node-a');
  });

  it('says how to provide a missing credential, naming the field and file', () => {
    const f = join(dir, 'absent.pem');
    expect(() => loadNodeCredential({ certFile: f })).toThrow(
      new RegExp(`nodeClientCert ${f} does not exist.*kubelet-client-current\\.pem.*deploy/vn-agent/daemonset\\.yaml`),
    );
  });
});

describe('nodeCredentialFileSource', () => {
  it('takes up a certificate the kubelet rotated in its file, and keeps the last good one over a bad read', async () => {
    const f = join(dir, 'rotated.pem');
    writeFileSync(f, `${nodeA.certPem}${nodeA.keyPem}`);
    const source = nodeCredentialFileSource({ certFile: f, nodeName: 'node-a' }, 0);
    const first = await source.get();
    expect(first.cert).toBe(nodeA.certPem);
    const rotated = await issueNodeCert(ca, 'node-a', 1);
    writeFileSync(f, `${rotated.certPem}${rotated.keyPem}`);
    expect((await source.get()).cert).toBe(rotated.certPem);
    // node-b's certificate in node-a's file is refused; node-a's last one goes on
    writeFileSync(f, `${nodeB.certPem}${nodeB.keyPem}`);
    expect((await source.get()).cert).toBe(rotated.certPem);
  });
});

describe('RenewedNodeCredential', () => {
  it("gives the renewed credential to the next request and refuses another node's", async () => {
    const held = new RenewedNodeCredential(parseNodeCredential(nodeA.certPem, nodeA.keyPem, 'a', 'node-a'));
    const used = held.get();
    expect(used).toEqual({ cert: nodeA.certPem, key: nodeA.keyPem });
    expect(held.rejected(used)).toBe(false);
    const renewed = await issueNodeCert(ca, 'node-a', 1);
    held.replace(parseNodeCredential(renewed.certPem, renewed.keyPem, 'renewed', 'node-a'));
    expect(held.get()).toEqual({ cert: renewed.certPem, key: renewed.keyPem });
    // a 401 to the old one is worth a retry: the next request carries the renewed one
    expect(held.rejected(used)).toBe(true);
    expect(() => held.replace(parseNodeCredential(nodeB.certPem, nodeB.keyPem, 'b'))).toThrow(
      "a renewal for node node-b cannot replace node node-a's",
    );
  });
});
