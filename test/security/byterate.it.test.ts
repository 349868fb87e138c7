/**
 * A tenant filling its caps fast (issue 31 §3, "the other tenants' p99 stays within 1.2x of alone"): the object caps
 * bound what a tenant keeps in the super cluster, not how fast it writes there. The platform gives each tenant a byte
 * rate (its TenantPolicy's quota.byteRate): a tenant writing large ConfigMaps as fast as its own apiserver takes them
 * has its further writes wait in the syncer, and is told so (a metric, an event on the object that waits), while
 * another tenant's object is copied at once, and every ConfigMap of the flood arrives in the end, none lost. A policy
 * that grants more than the platform's maximum is refused by `vc validate` and by the apiserver's admission, naming
 * the file, the object and the field.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BYTE_RATE } from '../../core/api/tenantpolicy.ts';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { provenanceOf } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { syncerMetrics } from '../../core/syncer/metrics.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, startTestSuper, tenantFor, type TestSuper } from '../harness.ts';
import { runVc } from '../vccli.ts';
import { Attempts } from './attempts.ts';

const KiB = 1024;
/** FLOOD ConfigMaps of CHARS characters each: 4 MB, written at once by one tenant. */
const FLOOD = 20;
const CHARS = 200 * KiB;
/** The flooding tenant's rate: after its burst, the flood needs about 28 s to reach the super cluster. */
const RATE = { perSecond: 128 * KiB, burst: 512 * KiB };

const configMap = (name: string, chars: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  data: { blob: 'x'.repeat(chars) },
});

/** skipsOf reads vc_syncer_skips_total{reason="WaitingForByteRate"} for one tenant. */
async function skipsOf(tenant: string): Promise<number> {
  const m = await syncerMetrics.skips.get();
  return m.values
    .filter((v) => v.labels.tenant === tenant && v.labels.reason === 'WaitingForByteRate')
    .reduce((sum, v) => sum + v.value, 0);
}

/** heldNow reads vc_syncer_byte_rate_held: the tenants held back by their byte rate now. */
async function heldNow(): Promise<Record<string, number>> {
  const m = await syncerMetrics.byteRateHeld.get();
  return Object.fromEntries(m.values.map((v) => [String(v.labels.tenant), v.value]));
}

/** superBytesOf reads vc_syncer_super_bytes_total for one tenant. */
async function superBytesOf(tenant: string): Promise<number> {
  const m = await syncerMetrics.superBytes.get();
  return m.values.filter((v) => v.labels.tenant === tenant).reduce((sum, v) => sum + v.value, 0);
}

describe('a tenant writing large objects fast, held to its byte rate', () => {
  const attempts = new Attempts();
  let t: TestSuper;
  let cpFlood: LocalControlPlane;
  let cpQuiet: LocalControlPlane;
  let flood: KubeClient;
  let quiet: KubeClient;
  let floodTenant: Tenant;
  let quietTenant: Tenant;
  let syncer: Syncer;
  let dir: string;

  const superConfigMapsOf = async (tenant: Tenant, prefix: string) =>
    (await t.client.list(R.configmaps)).items.filter(
      (o) => provenanceOf(o)?.cluster === tenant.key && o.metadata!.name!.startsWith(prefix),
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vc-byterate-'));
    t = await startTestSuper({ nodes: 0 });
    [cpFlood, cpQuiet] = await Promise.all([
      t.sc.addControlPlane('tenant-bytes', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-calm', { controllers: TENANT_CONTROLLERS }),
    ]);
    [flood, quiet] = await Promise.all([cpFlood.client(), cpQuiet.client()]);
    // The platform's policy for the flooding tenant gives it RATE (Tenant.byteRate is its quota.byteRate); the other
    // tenant has the syncer's default.
    floodTenant = tenantFor(cpFlood, 'team-bytes', 'bytes', '77777777-aaaa-4aaa-8aaa-0000000000a7', {
      byteRate: RATE,
    });
    quietTenant = tenantFor(cpQuiet, 'team-calm', 'calm', '88888888-bbbb-4bbb-8bbb-0000000000b8');
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([floodTenant, quietTenant]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() =>
      expect(syncer.tenantReady(floodTenant.key) && syncer.tenantReady(quietTenant.key)).toBe(true),
    );
    // Each tenant's default namespace is in the super cluster before the flood starts.
    await eventually(async () => {
      const names = (await t.client.list(R.namespaces)).items.map((n) => n.metadata!.name!);
      expect(names.filter((n) => n.endsWith('-default'))).toHaveLength(2);
    });
  }, 240_000);

  afterAll(async () => {
    attempts.report('byte rate');
    await syncer?.stop();
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("holds a tenant's flood of large ConfigMaps back and copies another tenant's ConfigMap while it waits", async () => {
    await attempts.attempt(`${FLOOD} ConfigMaps of ${CHARS / KiB} KiB at once ahead of another tenant's`, async () => {
      const quietSkipsBefore = await skipsOf(quietTenant.key);
      await Promise.all(
        Array.from({ length: FLOOD }, (_, i) => flood.create(R.configmaps, configMap(`big-${i}`, CHARS))),
      );
      // The flood reached its rate: its further writes wait in the syncer, and the gauge names the tenant.
      await eventually(async () => expect((await heldNow())[floodTenant.key] ?? 0).toBeGreaterThan(0), 60_000);
      await quiet.create(R.configmaps, configMap('calm-0', 100));
      await eventually(async () => expect(await superConfigMapsOf(quietTenant, 'calm-')).toHaveLength(1), 60_000);
      // Order, not speed: when the other tenant's ConfigMap is in the super cluster, the flood is still arriving.
      const floodCopied = (await superConfigMapsOf(floodTenant, 'big-')).length;
      expect(floodCopied).toBeLessThan(FLOOD);
      expect(await skipsOf(floodTenant.key)).toBeGreaterThan(0);
      expect(await skipsOf(quietTenant.key)).toBe(quietSkipsBefore);
      expect((await heldNow())[quietTenant.key]).toBeUndefined();
      // The tenant is told, on an object that waits, why and by which rate.
      const warned = async () =>
        (await flood.list<KubeObject & { reason?: string; message?: string }>(R.events, { namespace: 'default' })).items
          .filter((e) => e.reason === 'WaitingForByteRate')
          .map((e) => e.message ?? '');
      await eventually(async () => expect(await warned()).not.toEqual([]), 30_000);
      const [message] = await warned();
      expect(message).toMatch(/^ConfigMap default\/big-\d+ waits in the syncer: /);
      expect(message).toContain(
        "this tenant's writes to the super cluster reached its byte rate " +
          '(0.13 MiB per second after 0.5 MiB at once, TenantPolicy quota.byteRate)',
      );
      return `${floodCopied} of ${FLOOD} flood ConfigMaps copied when the other tenant's was; the rest waited (WaitingForByteRate)`;
    });
  });

  it('copies every ConfigMap of the flood in the end, none lost, and counts its bytes', async () => {
    await eventually(async () => expect(await superConfigMapsOf(floodTenant, 'big-')).toHaveLength(FLOOD), 180_000);
    await eventually(async () => expect((await heldNow())[floodTenant.key]).toBeUndefined(), 30_000);
    // Every ConfigMap's bytes were counted against the rate (a little more than the data: the object around it).
    expect(await superBytesOf(floodTenant.key)).toBeGreaterThanOrEqual(FLOOD * CHARS);
  });

  it("refuses a TenantPolicy over the platform's maximum byte rate, in vc validate and at admission", async () => {
    const over = {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'greedy' },
      spec: { quota: { byteRate: { perSecond: MAX_BYTE_RATE.perSecond + 1 } } },
    };
    await attempts.attempt('a TenantPolicy granting more than the maximum byte rate', async () => {
      const file = join(dir, 'policy.yaml');
      writeFileSync(file, JSON.stringify(over));
      const repo = join(dir, 'repo');
      mkdirSync(repo);
      const r = await runVc(t.sc.kubeconfigPath, dir, ['validate', '--policy', file, repo]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        `${file}: TenantPolicy greedy: /spec/quota/byteRate/perSecond must be <= ${MAX_BYTE_RATE.perSecond}`,
      );
      // The CRD generated from the same schema: the apiserver refuses it by name and field.
      const crd = parseAllDocuments(
        readFileSync(join(import.meta.dirname, '../../deploy/crds/tenantpolicies.yaml'), 'utf8'),
      )[0]!.toJS() as KubeObject;
      await t.client.apply(R.crds, crd, 'test');
      let refusal = '';
      await eventually(async () => {
        refusal = await t.client.create(R.tenantpolicies, over).then(
          () => 'admitted',
          (e: unknown) => String(e),
        );
        expect(refusal).toMatch(/spec\.quota\.byteRate\.perSecond/);
      }, 60_000);
      expect(refusal).toMatch(/less than or equal to 16777216/);
      return `vc validate and the apiserver named spec.quota.byteRate.perSecond`;
    });
  });
});
