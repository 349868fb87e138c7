import { randomUUID } from 'node:crypto';
import { isAlreadyExists, KubeClient } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import type { CreateRate } from '../../core/api/tenantpolicy.ts';
import { SERVICE_ACCOUNT_TOKEN_MODES, type ServiceAccountTokenMode } from '../../core/plugins/contract.ts';
import { checkCreateRate } from '../../core/syncer/pacer.ts';
import type { Tenant } from '../../core/tenancy/tenant.ts';
import { DEFAULT_POLICY } from '../../core/tenancy/policy.ts';
import { tenantFor, type TestSuper } from '../harness.ts';
import { envInt } from './pods.ts';
import { pool, waitUntil } from './podwatch.ts';
import { memAvailableMiB } from './procstat.ts';

/**
 * benchTokens is the tenants' pods.serviceAccountTokens: BENCH_TOKENS (`shared` or `perPod`), default the policy's,
 * so one build measures both.
 */
export function benchTokens(): ServiceAccountTokenMode {
  const v = process.env.BENCH_TOKENS ?? DEFAULT_POLICY.podServiceAccountTokens;
  if (!(SERVICE_ACCOUNT_TOKEN_MODES as readonly string[]).includes(v))
    throw new Error(`BENCH_TOKENS=${v}: must be one of ${SERVICE_ACCOUNT_TOKEN_MODES.join(', ')}`);
  return v as ServiceAccountTokenMode;
}

/** tenantOf describes a local control plane as a syncer tenant with a fresh uid. */
function tenantOf(cp: LocalControlPlane, vcNamespace: string, vcName: string): Tenant {
  return tenantFor(cp, vcNamespace, vcName, randomUUID(), {
    pluginConfig: { nodes: { vnAgent: { port: 10550 } } },
    pods: { serviceAccountTokens: benchTokens() },
  });
}

/** SyncerBenchOptions size one run of the syncer scenario. */
export interface SyncerBenchOptions {
  name: string;
  tenants: number;
  podsPerTenant: number;
  workers: number;
  /** the quiet tenant's Pods, alone and during the flood (0: no fairness phase) */
  quiet: number;
  /**
   * the quiet tenant's pace: one create every quietEveryMs, not waiting for the Pod before to run (0: one after
   * another, each waiting for its Running, as until session 14)
   */
  quietEveryMs: number;
  /** how many times the quiet tenant runs alone and then during a flood; its Pods of all rounds are pooled */
  fairRounds: number;
  /** the noisy tenant's Pods, all created at once */
  flood: number;
  /** how many times the three arms run, interleaved (direct, syncer, same writes, direct, ...) */
  repetitions: number;
  /** the syncer's adaptive concurrency (BENCH_ADAPTIVE=1 or 0, to compare); undefined: the syncer's default */
  adaptive: boolean | undefined;
  /** the syncer's scheduling window (BENCH_WINDOW; 0 turns it off; default the syncer's) */
  window?: number;
  /** the syncer's pace of one tenant's super Pod creates (BENCH_CREATE_RATE=perSecond/burst; 0 turns it off) */
  createRate?: CreateRate;
  /** the share of its rate a tenant with a backlog keeps while another creates (BENCH_CREATE_YIELD; 1 turns it off) */
  createYield?: number;
  /**
   * whether each tenant control plane has an etcd of its own, as the local provisioner gives every tenant
   * (BENCH_TENANT_ETCD=own), or a prefix of the super cluster's (shared)
   */
  tenantEtcd: 'own' | 'shared';
  /**
   * the cores each tenant apiserver runs on at once (GOMAXPROCS; BENCH_TENANT_CPUS, default 0: every core): 1 bounds a
   * flooding tenant's apiserver to one core of the two
   */
  tenantCpus: number;
}

/** envSyncerSettings reads the syncer settings and tenant layout both syncer scenarios take from the environment. */
export function envSyncerSettings(): Pick<
  SyncerBenchOptions,
  'adaptive' | 'window' | 'createRate' | 'createYield' | 'tenantEtcd' | 'tenantCpus'
> {
  return {
    adaptive: process.env.BENCH_ADAPTIVE ? envInt('BENCH_ADAPTIVE', 0) !== 0 : undefined,
    window: process.env.BENCH_WINDOW ? envInt('BENCH_WINDOW', 0) : undefined,
    createRate: envCreateRate(),
    createYield: process.env.BENCH_CREATE_YIELD ? Number(process.env.BENCH_CREATE_YIELD) : undefined,
    tenantEtcd: envTenantEtcd(),
    tenantCpus: envInt('BENCH_TENANT_CPUS', 0),
  };
}

/** envTenantEtcd reads BENCH_TENANT_ETCD: `own` (the default, as the local provisioner runs tenants) or `shared`. */
export function envTenantEtcd(v = process.env.BENCH_TENANT_ETCD): 'own' | 'shared' {
  if (v === undefined || v === '' || v === 'own') return 'own';
  if (v === 'shared') return 'shared';
  throw new Error(`BENCH_TENANT_ETCD: ${v} is neither own nor shared`);
}

/** envCreateRate reads BENCH_CREATE_RATE: `perSecond/burst`, or 0 for no pacing; absent, the syncer's default. */
export function envCreateRate(v = process.env.BENCH_CREATE_RATE): CreateRate | undefined {
  if (v === undefined || v === '') return undefined;
  const [perSecond, burst = '1'] = v.split('/');
  return checkCreateRate({ perSecond: Number(perSecond), burst: Number(burst) }, 'BENCH_CREATE_RATE');
}

/** deleteAllPods removes every Pod of a namespace at once (grace 0: no kubelet has to confirm) and waits. */
export async function deleteAllPods(c: KubeClient, ns: string, deadlineMs: number): Promise<void> {
  // An overloaded apiserver answers a large deletecollection with 504 while it goes on deleting: ask again until none
  // is left.
  const deleteAll = () =>
    c
      .request('DELETE', KubeClient.path(R.pods, ns), {
        body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
      })
      .catch(() => undefined);
  await deleteAll();
  await waitUntil(
    async () => {
      if ((await c.list(R.pods, { namespace: ns, limit: 1 })).items.length === 0) return true;
      await deleteAll();
      return false;
    },
    deadlineMs,
    () => `Pods of ${ns} deleted`,
    500,
  );
}

/** BenchTenants are the run's tenant control planes, a client of each, and each as the syncer's Tenant. */
export interface BenchTenants {
  cps: LocalControlPlane[];
  tenantClients: KubeClient[];
  tenants: Tenant[];
}

/**
 * startTenants starts the run's tenant control planes on the super cluster (apiserver only, each with its own etcd or
 * the super's), records their idle memory in detail.memory, describes them as syncer tenants (the flooding tenant with
 * BENCH_FLOOD_RATE as its own create rate when there is a fairness phase) and creates their `default` ServiceAccount.
 */
export async function startTenants(
  sc: TestSuper['sc'],
  o: SyncerBenchOptions,
  fairness: boolean,
  memFree0: number,
  detail: Record<string, unknown>,
  stamp: (k: string, since: number) => number,
  log: (msg: string) => void,
): Promise<BenchTenants> {
  const T = o.tenants;
  const memFreeSuper = memAvailableMiB();
  const t0 = performance.now();
  log(`starting ${T} tenant control planes (apiserver only, ${o.tenantEtcd} etcd)`);
  const cps: LocalControlPlane[] = new Array<LocalControlPlane>(T);
  await pool(
    Array.from({ length: T }, (_, i) => i),
    4,
    async (i) =>
      void (cps[i] = await sc.addControlPlane(`tenant-${i}`, {
        controllerManager: false,
        ownEtcd: o.tenantEtcd === 'own',
        ...(o.tenantCpus > 0 && { apiserverEnv: { GOMAXPROCS: String(o.tenantCpus) } }),
      })),
  );
  const startSeconds = stamp('tenantsStartSeconds', t0);
  const tenantRss = cps.map((cp) => cp.apiserver.rssBytes() / 2 ** 20);
  const memFreeTenants = memAvailableMiB();
  const perTenantMiB = (memFreeSuper - memFreeTenants) / T;
  detail.memory = {
    memAvailableBeforeMiB: Math.round(memFree0),
    memAvailableAfterSuperMiB: Math.round(memFreeSuper),
    memAvailableAfterTenantsMiB: Math.round(memFreeTenants),
    tenantApiserverRssMiB: {
      mean: Math.round(tenantRss.reduce((a, b) => a + b, 0) / T),
      max: Math.round(Math.max(...tenantRss)),
    },
    memAvailablePerTenantMiB: Math.round(perTenantMiB),
    // With the Pods' objects the tenants grow further; this counts only what they take when idle.
    moreTenantsThatWouldFitIdle: Math.floor(memFreeTenants / Math.max(1, perTenantMiB)),
  };
  log(`tenants up in ${startSeconds} s: ${JSON.stringify(detail.memory)}`);
  const tenantClients = await Promise.all(cps.map((cp) => cp.client()));
  const tenants = cps.map((cp, i) => tenantOf(cp, 'bench', `t${i}`));
  // BENCH_FLOOD_RATE: the flooding tenant's own create rate (as its TenantPolicy would set it), the others' unchanged
  const floodRate = envCreateRate(process.env.BENCH_FLOOD_RATE);
  if (floodRate && fairness) tenants[0]!.podCreateRate = floodRate;
  detail.floodTenantCreateRate = floodRate ?? detail.podCreateRate;
  await pool(tenantClients, 8, async (c) => {
    try {
      await c.create(R.serviceaccounts, {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'default', namespace: 'default' },
      });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  });
  return { cps, tenantClients, tenants };
}
