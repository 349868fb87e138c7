import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rootNamespace } from '../../names/names.ts';
import {
  ConfigError,
  loadManagerConfig,
  managerDefaults,
  metaOnlyProblem,
  staticTenants,
  type ManagerConfig,
} from './config.ts';
import { testDir } from '../../../test/tmpdir.ts';

const dir = testDir('vc-config-');
const write = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const header = 'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: ManagerConfiguration\n';

describe('manager configuration', () => {
  it('loads tenants with defaults and resolves paths against the file', () => {
    write('a.kubeconfig', 'apiVersion: v1\nkind: Config\n');
    const f = write(
      'ok.yaml',
      `${header}plugins:\n  thirdParty: [./plugin]\ntenants:\n  - {name: dev, namespace: team-a, uid: u1, kubeconfig: a.kubeconfig, weight: 3}\n`,
    );
    const cfg = loadManagerConfig(f);
    expect(cfg.plugins?.thirdParty).toEqual([join(dir, 'plugin')]);
    const [t] = staticTenants(cfg, f);
    expect(t).toMatchObject({
      key: rootNamespace('team-a', 'dev', 'u1'),
      weight: 3,
      podSecurityLevel: 'baseline',
      clusterDomain: 'cluster.local',
    });
    expect(t!.kubeconfig).toContain('kind: Config');
  });

  it('loads the scheduler section', () => {
    const f = write(
      'sched.yaml',
      `${header}scheduler: {enabled: true, policy: pack, namespace: vc-system, workers: 2}\n`,
    );
    expect(loadManagerConfig(f).scheduler).toEqual({
      enabled: true,
      policy: 'pack',
      namespace: 'vc-system',
      workers: 2,
    });
  });

  it.each([
    ['invalid YAML', `${header}tenants: [\n`, /bad\.yaml: invalid YAML/],
    ['an unknown field', `${header}tenats: []\n`, /bad\.yaml: \/tenats is not a known field/],
    [
      'a bad field of a tenant, naming the tenant',
      `${header}tenants:\n  - {name: dev, namespace: team-a, uid: u, kubeconfig: k, weight: 0}\n`,
      /bad\.yaml: \/tenants\/0\/weight must be >= 1 \(tenant team-a\/dev\)/,
    ],
    [
      'a missing required field',
      `${header}tenants:\n  - {name: dev, namespace: team-a, kubeconfig: k}\n`,
      /\/tenants\/0\/uid is required/,
    ],
    [
      'a duplicate tenant',
      `${header}tenants:\n  - {name: dev, namespace: a, uid: u, kubeconfig: k}\n  - {name: dev, namespace: a, uid: v, kubeconfig: k}\n`,
      /\/tenants\/1 tenant a\/dev is listed twice/,
    ],
    [
      'an invalid GitSource in gitops.sources, naming it',
      `${header}gitops:\n  sources:\n    - {apiVersion: tenancy.x-k8s.io/v1alpha1, kind: GitSource, ` +
        `metadata: {name: t, namespace: n}, spec: {url: 'not a url', ref: {branch: main}}}\n`,
      /bad\.yaml: \/gitops\/sources\/0 GitSource n\/t: \/spec\/url/,
    ],
    [
      'a forced toleration with an unknown operator (a definition of the TenantPolicy schema)',
      `${header}tenantDefaults:\n  pods:\n    forced:\n      tolerations: [{key: pool, operator: In}]\n`,
      /bad\.yaml: \/tenantDefaults\/pods\/forced\/tolerations\/0\/operator must be one of/,
    ],
    [
      'a per-tenant cap above the workers',
      `${header}syncer: {workers: 4, maxInFlightPerTenant: 5}\n`,
      /bad\.yaml: \/syncer\/maxInFlightPerTenant \(5\) must not exceed \/syncer\/workers \(4\)/,
    ],
    [
      'a tenant request timeout of zero',
      `${header}syncer: {tenantRequestTimeoutSeconds: 0}\n`,
      /\/syncer\/tenantRequestTimeoutSeconds must be > 0/,
    ],
    [
      'a scheduler policy that does not exist',
      `${header}scheduler: {enabled: true, policy: random}\n`,
      /bad\.yaml: \/scheduler\/policy must be one of/,
    ],
    ['the wrong kind', 'apiVersion: tenancy.x-k8s.io/v1alpha1\nkind: Other\n', /\/kind must be equal to constant/],
  ])('rejects %s with the file and field', (_, text, want) => {
    const f = write('bad.yaml', text);
    expect(() => loadManagerConfig(f)).toThrow(ConfigError);
    expect(() => loadManagerConfig(f)).toThrow(want);
  });

  it('names the tenant and path when a kubeconfig cannot be read', () => {
    const f = write(
      'nokc.yaml',
      `${header}tenants:\n  - {name: dev, namespace: team-a, uid: u, kubeconfig: missing.kubeconfig}\n`,
    );
    expect(() => staticTenants(loadManagerConfig(f), f)).toThrow(
      /\/tenants\/0\/kubeconfig tenant team-a\/dev: cannot read .*missing\.kubeconfig/,
    );
  });

  it('gives tenantDefaults to every policy evaluation and to the static tenants, which have no policy', () => {
    write('b.kubeconfig', 'apiVersion: v1\nkind: Config\n');
    const f = write(
      'defaults.yaml',
      `${header}tenantDefaults:\n  pods:\n    forced:\n      nodeSelector: {pool: tenants}\n` +
        `  copiedMetadata:\n    labels: [app]\n` +
        `virtualClusters:\n  defaultPluginConfig: {dns: {ndots: 2}}\n` +
        `tenants:\n  - {name: dev, namespace: team-a, uid: u1, kubeconfig: b.kubeconfig}\n`,
    );
    const cfg = loadManagerConfig(f);
    expect(managerDefaults(cfg)).toStrictEqual({
      pluginConfig: { dns: { ndots: 2 } },
      podsForced: { nodeSelector: { pool: 'tenants' } },
      copiedMetadata: { labels: ['app'] },
      provisioner: 'native',
    });
    const [t] = staticTenants(cfg, f);
    expect(t?.pods).toStrictEqual({ forced: { nodeSelector: { pool: 'tenants' } } });
    expect(t?.copiedMetadata).toStrictEqual({ labels: ['app'] });
    expect(managerDefaults(loadManagerConfig(write('none.yaml', header)))).toStrictEqual({ provisioner: 'native' });
  });

  it.each([
    ['in the cluster, nothing named', 'virtualClusters: {enabled: true}\n', 'native'],
    ['in the cluster, native named', 'virtualClusters: {defaultProvisioner: native}\n', 'native'],
    ['local settings present', 'virtualClusters: {local: {stateDir: s, etcdEndpoint: http://e}}\n', 'local'],
    [
      'local settings present, native named',
      'virtualClusters: {defaultProvisioner: native, local: {stateDir: s, etcdEndpoint: http://e}}\n',
      'native',
    ],
  ])('gives VirtualClusters naming no provisioner the configured default: %s', (_case, body, want) => {
    expect(managerDefaults(loadManagerConfig(write('prov.yaml', header + body))).provisioner).toBe(want);
  });

  it('refuses local as the default where the manager cannot run local control planes', () => {
    const f = write('badprov.yaml', `${header}virtualClusters: {defaultProvisioner: local}\n`);
    expect(() => loadManagerConfig(f)).toThrow(
      /\/virtualClusters\/defaultProvisioner is local but \/virtualClusters\/local is not set/,
    );
  });
});

describe('certificate settings of local tenants', () => {
  const local = (certs: string) =>
    write(
      'certs.yaml',
      `${header}virtualClusters: {local: {stateDir: s, etcdEndpoint: 'http://127.0.0.1:2379', certificates: ${certs}}}\n`,
    );
  it('loads a leaf lifetime and a renewal fraction', () => {
    const cfg = loadManagerConfig(local('{validityDays: 0.0014, renewFraction: 0.5}'));
    expect(cfg.virtualClusters?.local?.certificates).toEqual({ validityDays: 0.0014, renewFraction: 0.5 });
  });
  it.each([['{renewFraction: 1}'], ['{renewFraction: 0}'], ['{validityDays: 0}'], ['{lifetime: 3}']])(
    'refuses %s, naming the field',
    (certs) => expect(() => loadManagerConfig(local(certs))).toThrow(/certificates/),
  );
});

describe('several super clusters in the configuration', () => {
  it('accepts external super clusters and placedOnly, and gives static tenants their superCluster', () => {
    write('r.kubeconfig', 'apiVersion: v1\nkind: Config\n');
    const f = write(
      'multi.yaml',
      `${header}superClusters:\n  - {name: r1}\n  - {name: r2, kubeconfig: r.kubeconfig, external: true}\n` +
        `syncer: {placedOnly: true}\n` +
        `tenants:\n  - {name: a, namespace: t, uid: u, kubeconfig: r.kubeconfig, superCluster: r2}\n` +
        `  - {name: b, namespace: t, uid: v, kubeconfig: r.kubeconfig}\n`,
    );
    const cfg = loadManagerConfig(f);
    expect(cfg.superClusters?.[1]).toMatchObject({ name: 'r2', external: true, kubeconfig: join(dir, 'r.kubeconfig') });
    expect(cfg.syncer?.placedOnly).toBe(true);
    expect(staticTenants(cfg, f).map((t) => t.superCluster)).toEqual(['r2', undefined]);
  });

  // A meta cluster apart from the super clusters (vc up --meta): the first entry only, with the scheduler on and a
  // super cluster to place on.
  it.each([
    [
      'the meta cluster apart, r1 registered',
      {
        superClusters: [{ name: 'meta', metaOnly: true }],
        scheduler: { enabled: true },
        superClusterRegistry: { enabled: true },
      },
      undefined,
    ],
    [
      'the meta cluster apart, r1 static',
      { superClusters: [{ name: 'meta', metaOnly: true }, { name: 'r1' }], scheduler: { enabled: true } },
      undefined,
    ],
    ['no metaOnly at all', { superClusters: [{ name: 'r1' }] }, undefined],
    [
      'metaOnly on a later entry',
      { superClusters: [{ name: 'r1' }, { name: 'm', metaOnly: true }], scheduler: { enabled: true } },
      /\/superClusters\/1\/metaOnly: only the first/,
    ],
    [
      'without the scheduler',
      { superClusters: [{ name: 'meta', metaOnly: true }, { name: 'r1' }] },
      /needs \/scheduler\/enabled/,
    ],
    [
      'nothing to place on',
      { superClusters: [{ name: 'meta', metaOnly: true }], scheduler: { enabled: true } },
      /leaves no super cluster/,
    ],
    [
      'metaOnly and external',
      {
        superClusters: [{ name: 'meta', metaOnly: true, external: true }, { name: 'r1' }],
        scheduler: { enabled: true },
      },
      /metaOnly and external/,
    ],
    [
      'a network on the meta cluster apart',
      {
        superClusters: [
          { name: 'meta', metaOnly: true, network: 'flat' },
          { name: 'r1', network: 'flat' },
        ],
        scheduler: { enabled: true },
      },
      /\/superClusters\/0\/network: a meta cluster apart/,
    ],
  ] as const)('metaOnly: %s', (_, cfg, problem) => {
    const got = metaOnlyProblem(cfg as unknown as ManagerConfig);
    if (problem) expect(got).toMatch(problem);
    else expect(got).toBeUndefined();
  });

  it('loadManagerConfig refuses a metaOnly configuration without the scheduler, naming the file and field', () => {
    const f = write('meta.yaml', `${header}superClusters:\n  - {name: meta, metaOnly: true}\n  - {name: r1}\n`);
    expect(() => loadManagerConfig(f)).toThrow(/meta\.yaml: \/superClusters\/0\/metaOnly needs/);
  });

  it('loads superClusters[].network and refuses one that is not a name, naming the file and field', () => {
    const f = write(
      'net.yaml',
      `${header}superClusters:\n  - {name: r1, network: flat}\n  - {name: r2, network: flat}\n`,
    );
    expect(loadManagerConfig(f).superClusters?.map((s) => s.network)).toEqual(['flat', 'flat']);
    const bad = write('net-bad.yaml', `${header}superClusters:\n  - {name: r1, network: Flat_Net}\n`);
    expect(() => loadManagerConfig(bad)).toThrow(/net-bad\.yaml.*\/superClusters\/0\/network/s);
  });

  it('refuses placedOnly that is not a boolean, naming the field', () => {
    const f = write('bad-placed.yaml', `${header}syncer: {placedOnly: yes-please}\n`);
    expect(() => loadManagerConfig(f)).toThrow(/placedOnly/);
  });

  it('loads plugins.generic entries and refuses one the schema rejects, naming the field', () => {
    const entry =
      '{name: widgets, resource: {group: example.com, version: v1, resource: widgets, kind: Widget, namespaced: true}, ' +
      'direction: down, statusUp: true, names: {prefix: w-}, ' +
      'fields: {copy: [spec], drop: ["spec.targets[].port"], translate: [{path: spec.peer, to: name}]}}';
    const f = write('generic.yaml', `${header}plugins:\n  generic:\n    - ${entry}\n`);
    expect(loadManagerConfig(f).plugins?.generic?.[0]).toMatchObject({ name: 'widgets', direction: 'down' });
    for (const [name, bad, field] of [
      ['sideways', entry.replace('direction: down', 'direction: sideways'), /generic\/0\/direction/],
      ['translate', entry.replace('to: name', 'to: anywhere'), /generic\/0\/fields\/translate\/0\/to/],
      ['path', entry.replace('copy: [spec]', 'copy: ["spec/../x"]'), /generic\/0\/fields\/copy\/0/],
    ] as const) {
      const g = write(`generic-${name}.yaml`, `${header}plugins:\n  generic:\n    - ${bad}\n`);
      expect(() => loadManagerConfig(g)).toThrow(field);
    }
  });
});
