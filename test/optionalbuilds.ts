/**
 * Some servers a test needs are large builds that do not fit the cold CI budget on a 2-core machine (SeaweedFS, the
 * Cluster API manager, an older Kubernetes minor). Their tests run where the build is in the toolchain cache, or when
 * VC_OPTIONAL_BUILDS=1 asks for the build; otherwise they are reported skipped, and this says why on stderr.
 */
export const OPTIONAL_BUILDS_ENV = 'VC_OPTIONAL_BUILDS';

/** optionalBuild tells whether the tests of `what` run: its build is cached (`cached`) or asked for. */
export function optionalBuild(what: string, cached: boolean): boolean {
  if (cached || process.env[OPTIONAL_BUILDS_ENV] === '1') return true;
  console.warn(
    `skipped: ${what} is not in the toolchain cache; ${OPTIONAL_BUILDS_ENV}=1 builds it and runs these tests`,
  );
  return false;
}
