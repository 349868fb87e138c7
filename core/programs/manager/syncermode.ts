import { ConfigError, type ManagerConfig } from './config.ts';

/**
 * checkSyncerOnly refuses a `vc syncer --super-cluster` name the configuration lists neither in /superClusters nor
 * in /superClusterRegistry/external (of an enabled registry), or lists in /superClusters without `external: true`:
 * the manager reading that configuration runs that super cluster's syncer itself, and two syncers writing one super
 * cluster fight over every object.
 */
export function checkSyncerOnly(
  supers: NonNullable<ManagerConfig['superClusters']>,
  registeredExternal: readonly string[],
  name: string,
  file: string,
): void {
  const i = supers.findIndex((s) => s.name === name);
  if (i < 0) {
    if (registeredExternal.includes(name)) return;
    const registered = registeredExternal.length ? `; registered external: ${registeredExternal.join(', ')}` : '';
    throw new ConfigError(
      `${file}: /superClusters names no super cluster ${JSON.stringify(name)} (known: ${supers.map((s) => s.name).join(', ')}${registered})`,
    );
  }
  if (!supers[i]!.external)
    throw new ConfigError(
      `${file}: /superClusters/${i}/external: super cluster ${JSON.stringify(name)} is not marked external: true, so the manager runs its syncer itself`,
    );
}
