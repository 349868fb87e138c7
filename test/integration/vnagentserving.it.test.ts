import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type PeerCertificate } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCRDs } from '../../core/dev/embedded/embedded.ts';
import { runVnAgent, type RunningVnAgent } from '../../core/programs/vn-agent/run.ts';
import { startTestSuper, type TestSuper } from '../harness.ts';

/**
 * The in-cluster vn-agent program (`vc vn-agent`, deploy/vn-agent) with a generated serving certificate of two
 * minutes: it is renewed from the agent's own CA at two thirds of its life while the agent runs, so past the first
 * one's expiry the agent presents a valid certificate, another one, of the same issuer, without a restart.
 */

/** presented is the certificate the agent shows a TLS client (not verified: tenant apiservers do not by default). */
const presented = (port: number) =>
  new Promise<PeerCertificate>((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const c = s.getPeerCertificate();
      s.destroy();
      resolve(c);
    });
    s.on('error', reject);
  });

describe('the vn-agent program renews the serving certificate it generated', () => {
  let t: TestSuper;
  let stateDir: string;
  let running: RunningVnAgent;

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    await applyCRDs(t.sc);
    stateDir = mkdtempSync(join(tmpdir(), 'vn-agent-serving-it-'));
    running = await runVnAgent({
      host: '127.0.0.1',
      port: 0,
      ops: { port: 0 },
      stateDir,
      metaKubeconfig: join(t.sc.cluster.dir, 'admin.kubeconfig'),
      servingCertValidityDays: 2 / 1440,
    });
  }, 120_000);

  afterAll(async () => {
    await running?.stop();
    await t?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it("presents a renewed certificate of the same issuer past the first one's expiry, with no restart", async () => {
    const port = running.agent.port;
    const first = await presented(port);
    const expiresAt = Date.parse(first.valid_to);
    expect(expiresAt - Date.now()).toBeLessThan(3 * 60_000);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 5000));
    const later = await presented(port);
    expect(later.serialNumber).not.toBe(first.serialNumber);
    expect(later.issuer).toEqual(first.issuer);
    expect(later.subject).toEqual(first.subject);
    expect(Date.parse(later.valid_to)).toBeGreaterThan(Date.now());
    expect(running.agent.port).toBe(port);
  }, 300_000);
});
