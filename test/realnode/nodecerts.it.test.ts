/**
 * A real node's client certificates are renewed while it runs (issue 33, §4): kubelet's and kube-proxy's, issued from
 * the super cluster's CA with a lifetime of eight minutes and renewed a quarter of the way through it, and the
 * kubelet's serving certificate, which the kubelet reloads and presents to new connections. Each file gets a
 * new certificate while the processes keep their process ids, and after the first certificates have expired the node
 * still serves: the kubelet renews its Lease and runs a Pod created then, and kube-proxy programs a Service created
 * then; the Node carries a CertificatesValid condition. Several minutes long: client-go takes a replaced certificate
 * up within five minutes, so the old one must outlive its renewal by that much (core/dev/local/nodecerts.ts).
 */
import { X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import type { KubeObject } from '../../core/kube/client.ts';
import { registry as metrics } from '../../core/metrics/registry.ts';
import { REAL_NODE_LABEL, REAL_NODE_TAINT, type RealNode } from '../../core/dev/local/realnode.ts';
import { NODE_IMAGES } from '../../core/toolchain/node.ts';
import { eventually, realNodeSkipReason, startTestSuper, type TestSuper } from '../harness.ts';

const exec = promisify(execFile);
const skip = await realNodeSkipReason();
if (skip) process.stdout.write(`nodecerts.it.test.ts skipped: ${skip}\n`);

const LIFETIME_MINUTES = 8;
const COMPONENTS = ['kubelet', 'kube-proxy'] as const;

describe.skipIf(!!skip)("renewing a real node's client certificates", () => {
  let t: TestSuper | undefined;
  let node: RealNode;
  const cert = (c: (typeof COMPONENTS)[number]) => new X509Certificate(readFileSync(node.certificates.path(c), 'utf8'));
  /**
   * served is the serving certificate the kubelet presents to a new connection, verified as the vn-agent and
   * metrics-server verify it: against the super cluster's CA, for the node's address, in date.
   */
  const served = () =>
    new Promise<X509Certificate>((resolve, reject) => {
      const u = new URL(node.kubeletURL);
      const s = tls.connect({ host: u.hostname, port: Number(u.port), ca: t!.sc.cluster.caPem }, () => {
        const raw = s.getPeerCertificate().raw;
        s.end();
        resolve(new X509Certificate(raw));
      });
      s.on('error', reject);
    });

  beforeAll(async () => {
    t = await startTestSuper({
      nodes: 1,
      realNodes: 1,
      realNodeCertificates: { validityDays: LIFETIME_MINUTES / 1440, renewFraction: 0.25 },
    });
    node = t.sc.realNodes[0]!;
    // as long as the harness waits for other real nodes on this host to stop (startTestSuper), and the start
  }, 35 * 60_000);
  afterAll(async () => {
    await t?.stop();
  });

  it('refuses a lifetime the components could not take a renewal up in, before starting anything', async () => {
    await expect(
      startTestSuper({ realNodes: 1, realNodeCertificates: { validityDays: 4 / 1440, renewFraction: 0.5 } }),
    ).rejects.toThrow(/realNodeCertificates: a certificate renewed with 120 s of life left may expire/);
  });

  it(
    'renews them while kubelet and kube-proxy keep running, and the node serves past the first expiry',
    async () => {
      const c = t!.client;
      const first = Object.fromEntries(COMPONENTS.map((n) => [n, cert(n)]));
      const pids = { kubelet: node.kubelet.pid, kubeProxy: node.kubeProxy.pid };
      expect(pids.kubelet).toBeDefined();
      const firstServing = await served();
      // each is renewed at a quarter of its life (about two minutes in), with the same subject
      for (const n of COMPONENTS)
        await eventually(
          () => {
            const now = cert(n);
            expect(now.serialNumber, n).not.toBe(first[n]!.serialNumber);
            expect(now.subject).toBe(first[n]!.subject);
          },
          4 * 60_000,
          1000,
        );
      // the kubelet's serving certificate too: the kubelet reloads its file and presents the renewed one
      await eventually(
        async () => {
          const now = await served();
          expect(now.serialNumber, 'kubelet serving').not.toBe(firstServing.serialNumber);
          expect([now.subject, now.subjectAltName]).toEqual([firstServing.subject, firstServing.subjectAltName]);
        },
        4 * 60_000,
        1000,
      );
      const text = await metrics.getSingleMetricAsString('vc_real_node_certificate_expiry_timestamp_seconds');
      for (const n of COMPONENTS) {
        const line = text.split('\n').find((l) => l.includes(`node="${node.name}"`) && l.includes(`"${n}"`));
        expect(Number(line?.split(' ').pop()), n).toBe(Date.parse(cert(n).validTo) / 1000);
      }
      // the Node shows the condition as tenants do, beside the kubelet's own
      await eventually(
        async () => {
          const n = await c.get<KubeObject & { status?: { conditions?: Array<Record<string, string>> } }>(
            R.nodes,
            undefined,
            node.name,
          );
          const types = n.status?.conditions?.map((x) => x.type);
          expect(types).toContain('Ready');
          expect(n.status?.conditions?.find((x) => x.type === 'CertificatesValid')).toMatchObject({
            status: 'True',
            reason: 'CertificatesCurrent',
            message: expect.stringMatching(/^earliest expiry: /),
          });
        },
        90_000,
        1000,
      );
      // past the first certificates' end
      const expiry = Math.max(
        ...COMPONENTS.map((n) => Date.parse(first[n]!.validTo)),
        Date.parse(firstServing.validTo),
      );
      await new Promise((r) => setTimeout(r, Math.max(0, expiry - Date.now() + 15_000)));
      expect({ kubelet: node.kubelet.pid, kubeProxy: node.kubeProxy.pid }).toEqual(pids);
      // a verifying client still reaches the kubelet (served() verifies the chain, the address and the dates)
      expect(Date.parse((await served()).validTo)).toBeGreaterThan(Date.now());
      // the kubelet: its Lease renewed after the expiry, and a Pod created now runs
      await eventually(
        async () => {
          const lease = await c.get<KubeObject & { spec?: { renewTime?: string } }>(
            R.leases,
            'kube-node-lease',
            node.name,
          );
          expect(Date.parse(lease.spec!.renewTime!)).toBeGreaterThan(expiry);
        },
        60_000,
        1000,
      );
      await c.create(R.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'after', namespace: 'default', labels: { app: 'after' } },
        spec: {
          nodeSelector: { [REAL_NODE_LABEL]: 'true' },
          tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Exists', effect: REAL_NODE_TAINT.effect }],
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'c', image: NODE_IMAGES.busybox, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
        },
      });
      await eventually(
        async () =>
          expect(
            (await c.get<KubeObject & { status?: { phase?: string } }>(R.pods, 'default', 'after')).status?.phase,
          ).toBe('Running'),
        90_000,
        1000,
      );
      // kube-proxy: a Service created now gets its rules
      const svc = await c.create<KubeObject & { spec?: { clusterIP?: string } }>(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'after', namespace: 'default' },
        spec: { selector: { app: 'after' }, ports: [{ port: 80, targetPort: 8080 }] },
      });
      await eventually(
        async () => expect((await exec('iptables-save', ['-t', 'nat'])).stdout).toContain(`${svc.spec!.clusterIP}/32`),
        60_000,
        1000,
      );
      expect({ kubelet: node.kubelet.pid, kubeProxy: node.kubeProxy.pid }).toEqual(pids);
    },
    15 * 60_000,
  );
});
