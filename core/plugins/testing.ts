import { R } from '../kube/resources.ts';
import { namespaceOwnerIn, tenantNaming } from '../names/names.ts';
import { tenantFrom, tenantView } from '../tenancy/tenant.ts';
import type { PluginContext, TenantView } from '../../plugins/sdk/src/contract.ts';
import { MapCache, testContext as sdkTestContext, type TestContextOptions } from '../../plugins/sdk/src/testing.ts';

export {
  MapCache,
  runTable,
  runTransforms,
  type TestContextOptions,
  type TransformCase,
  type TransformResult,
} from '../../plugins/sdk/src/testing.ts';

/**
 * testTenant returns the view of a tenant that plugins get, with the core's own defaults (tenantFrom), for the
 * built-in plugins' unit tests. The SDK's testTenant has the same values without depending on the core.
 */
export function testTenant(over: Partial<TenantView> = {}): TenantView {
  const t = tenantFrom({
    key: 'team-a-1a2b3c-dev',
    vcName: 'dev',
    vcNamespace: 'team-a',
    vcUid: '00000000-0000-0000-0000-00000000000a',
  });
  return { ...tenantView(t), ...over };
}

/**
 * testContext is the SDK's testContext with the core's own naming (tenantNaming), reading super namespaces from the
 * super cache as the syncer does, so the built-in plugins are tested against the production naming rules.
 */
export function testContext(o: TestContextOptions = {}): PluginContext {
  const tenant = o.tenant ?? testTenant();
  const superCache = o.superCache ?? new MapCache();
  const names = tenantNaming(
    tenant.key,
    namespaceOwnerIn((n) => superCache.get(R.namespaces, undefined, n)),
  );
  return sdkTestContext({ names, ...o, tenant, superCache });
}
