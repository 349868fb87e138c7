/**
 * A tenant's own validating admission webhook that takes its time: a small HTTPS server on loopback (its CA and
 * serving certificate from core/pki) that holds every AdmissionReview it gets for a set delay before allowing it.
 * Registered in a tenant apiserver on `pods/binding` and `pods/status`, it stalls exactly the writes the syncer
 * makes to a tenant when a Pod starts: the bind and the status copied up. Used by the slow-tenant benchmark and the
 * hostile slow-tenant test.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeClient, KubeObject, Resource } from '../core/kube/client.ts';
import { createCA, issueCert } from '../core/pki/pki.ts';

/** VALIDATING_WEBHOOKS is the resource of ValidatingWebhookConfigurations. */
export const VALIDATING_WEBHOOKS: Resource = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  resource: 'validatingwebhookconfigurations',
  kind: 'ValidatingWebhookConfiguration',
  namespaced: false,
};

/** SlowWebhookSeen is one admission request the webhook received. */
export interface SlowWebhookSeen {
  operation: string;
  resource: string;
  subResource: string;
  namespace: string;
  name: string;
}

/** SlowWebhook is a running slow webhook. */
export interface SlowWebhook {
  /** url is where the tenant apiserver calls it. */
  readonly url: string;
  /** caPem is the CA of its serving certificate (the webhook's caBundle). */
  readonly caPem: string;
  /** holding is the number of admission requests being held now. */
  holding(): number;
  /** seen lists every admission request received, in order. */
  readonly seen: SlowWebhookSeen[];
  /** setDelay changes the delay of requests received from now on. */
  setDelay(ms: number): void;
  /** releaseAll answers every held request at once. */
  releaseAll(): void;
  /** register creates the ValidatingWebhookConfiguration `name` in a tenant apiserver, on pods/binding and pods/status. */
  register(client: KubeClient, name?: string): Promise<void>;
  /** close releases what it holds and stops the server. */
  close(): Promise<void>;
}

interface AdmissionReview {
  request?: {
    uid?: string;
    operation?: string;
    resource?: { resource?: string };
    subResource?: string;
    namespace?: string;
    name?: string;
  };
}

/** startSlowWebhook starts a slow webhook on 127.0.0.1 that allows every request after delayMs. */
export async function startSlowWebhook(o: { delayMs: number }): Promise<SlowWebhook> {
  const ca = await createCA('slow-webhook-ca', 1);
  const serving = await issueCert(ca, {
    commonName: 'slow-webhook',
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
    validityDays: 1,
  });
  let delayMs = o.delayMs;
  const held = new Set<() => void>();
  const seen: SlowWebhookSeen[] = [];
  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let review: AdmissionReview;
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AdmissionReview;
      } catch {
        res.writeHead(400).end('not an AdmissionReview');
        return;
      }
      const r = review.request ?? {};
      seen.push({
        operation: r.operation ?? '',
        resource: r.resource?.resource ?? '',
        subResource: r.subResource ?? '',
        namespace: r.namespace ?? '',
        name: r.name ?? '',
      });
      const answer = () => {
        clearTimeout(timer);
        held.delete(answer);
        if (res.destroyed) return;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: r.uid ?? '', allowed: true },
          }),
        );
      };
      const timer = setTimeout(answer, delayMs);
      held.add(answer);
      // The apiserver gave up (its webhook timeout, or the client's request ended): stop holding it.
      res.on('close', () => {
        clearTimeout(timer);
        held.delete(answer);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/validate`;
  const releaseAll = () => [...held].forEach((answer) => answer());
  return {
    url,
    caPem: ca.certPem,
    holding: () => held.size,
    seen,
    setDelay: (ms) => (delayMs = ms),
    releaseAll,
    async register(client, name = 'slow.webhook.test') {
      const config: KubeObject = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name },
        webhooks: [
          {
            name,
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            // The apiserver's maximum: the tenant may make its webhook this slow.
            timeoutSeconds: 30,
            clientConfig: { url, caBundle: Buffer.from(ca.certPem).toString('base64') },
            rules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['pods/binding', 'pods/status'],
                scope: 'Namespaced',
              },
            ],
          },
        ],
      };
      await client.create(VALIDATING_WEBHOOKS, config);
    },
    async close() {
      releaseAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
