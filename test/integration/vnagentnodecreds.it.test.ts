import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodesAgent } from '../../core/dev/embedded/embedded.ts';
import type { KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { issueNodeCert } from '../../core/pki/pki.ts';
import type { VnAgent } from '../../core/vnagent/agent.ts';
import { nodeSuperClient, parseNodeCredential } from '../../core/vnagent/nodecredential.ts';
import { StaticTenantDirectory } from '../../core/vnagent/testing.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';

/**
 * The embedded vn-agent reads each node's super Pods with that node's own credential (user system:node:<node>, of the
 * super cluster's CA) and renews it at two thirds of its life while it runs. With two-minute credentials, past the
 * first one's expiry the agent still reads the super cluster through the node's client, while a client holding a
 * credential issued at the same moment for the same life is refused (401): what the agent would be without renewal.
 */

const LIFE_DAYS = 2 / 1440;

describe("the embedded vn-agent renews each node's credential while it runs", () => {
  let t: TestSuper;
  let agent: VnAgent;
  let control: KubeClient;
  let expiresAt: number;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    agent = await startNodesAgent(t.sc, {
      port: 0,
      directory: new StaticTenantDirectory(),
      nodeCredentialDays: LIFE_DAYS,
    });
    const node = t.sc.cluster.kwokNodeNames[0]!;
    const cert = await issueNodeCert(t.sc.cluster.ca, node, LIFE_DAYS);
    const cred = parseNodeCredential(cert.certPem, cert.keyPem, 'of the control', node);
    expiresAt = cred.notAfter.getTime();
    control = nodeSuperClient(t.client, cred);
  }, 120_000);

  afterAll(async () => {
    control?.close();
    await agent?.stop();
    await t?.stop();
  });

  it("reads super Pods past the first credential's expiry, where a credential of the same life is refused", async () => {
    // Before the expiry both are authenticated: the Node authorizer answers 403 for a Pod bound to no node, which the
    // agent reads as not there.
    expect(await agent.superView.pod('default', 'absent')).toBeUndefined();
    await expect(control.getOrNull(R.pods, 'default', 'absent')).rejects.toMatchObject({ code: 403 });
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 5000));
    await expect(control.getOrNull(R.pods, 'default', 'absent')).rejects.toMatchObject({ code: 401 });
    // The agent's node client asks the apiserver (the Pod is not in its cache) with its renewed credential: 403, not
    // 401 (which superView.pod would throw).
    expect(await agent.superView.pod('default', 'absent')).toBeUndefined();
    // A super Pod bound to the node after the expiry is seen through the node's client.
    await t.client.create(R.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'after-expiry', namespace: 'default' },
      spec: { nodeName: t.sc.cluster.kwokNodeNames[0], containers: [{ name: 'c', image: 'nginx' }] },
    });
    const seen = await agent.superView.pod('default', 'after-expiry');
    expect(seen?.metadata?.name).toBe('after-expiry');
  }, 300_000);
});
