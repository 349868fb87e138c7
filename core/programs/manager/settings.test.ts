import { describe, expect, it } from 'vitest';
import { IDENTITY } from '../../names/names.ts';
import { SYNCER_DEFAULTS } from '../../syncer/syncer.ts';
import type { ManagerConfig } from './config.ts';
import { gitopsSettings, registrySettings, syncerSettings, tenantRequestTimeoutMs } from './settings.ts';
import { managerShape, MANAGER_DEFAULTS } from './shape.ts';

/** config is a manager configuration of the given sections. */
const config = (c: Omit<ManagerConfig, 'apiVersion' | 'kind'>): ManagerConfig => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'ManagerConfiguration',
  ...c,
});

describe('manager settings', () => {
  it('syncerSettings turns seconds into milliseconds and fills the patrol interval', () => {
    expect(syncerSettings(config({}))).toEqual({
      patrolIntervalMs: MANAGER_DEFAULTS.syncer.patrolIntervalSeconds * 1000,
    });
    const rate = { perSecond: 5, burst: 10 };
    expect(
      syncerSettings(
        config({
          syncer: { workers: 4, podCreateRate: rate, tenantRequestTimeoutSeconds: 3, patrolIntervalSeconds: 7 },
        }),
      ),
    ).toMatchObject({ workers: 4, podCreateRate: rate, tenantRequestTimeoutMs: 3000, patrolIntervalMs: 7000 });
  });

  it.each([
    { cfg: {}, want: SYNCER_DEFAULTS.tenantRequestTimeoutMs },
    { cfg: { syncer: { tenantRequestTimeoutSeconds: 2 } }, want: 2000 },
  ] as { cfg: Omit<ManagerConfig, 'apiVersion' | 'kind'>; want: number }[])(
    'tenantRequestTimeoutMs of $cfg is $want',
    (c) => {
      expect(tenantRequestTimeoutMs(config(c.cfg))).toBe(c.want);
    },
  );

  it('gitopsSettings fills defaults and names the declared sources as platform sources', () => {
    const got = gitopsSettings({
      enabled: true,
      minIntervalSeconds: 5,
      sources: [{ metadata: { namespace: 'ns', name: 'a' } }, { metadata: { name: 'b' } }],
    });
    expect(got).toMatchObject({
      cacheRoot: MANAGER_DEFAULTS.gitops.cacheDir,
      timeoutMs: MANAGER_DEFAULTS.gitops.timeoutSeconds * 1000,
      minIntervalMs: 5000,
      scope: { platformSources: ['ns/a', '/b'] },
    });
  });

  it('registrySettings reserves the configured names; in vc syncer it reads its own registration and writes nothing', () => {
    const cfg = config({
      superClusters: [{ name: 'meta' }],
      superClusterRegistry: { enabled: true, probeIntervalSeconds: 2, external: ['x'] },
    });
    expect(registrySettings(cfg, managerShape(cfg, 'm.yaml'))).toEqual({
      namespace: undefined,
      reserved: ['meta'],
      probeIntervalMs: 2000,
      connectTimeoutMs: undefined,
      fieldManager: IDENTITY.manager,
    });
    expect(registrySettings(cfg, managerShape(cfg, 'm.yaml', 'x'))).toMatchObject({ only: 'x', writeStatus: false });
  });
});
