import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superClusterName } from '../../core/names/names.ts';
import type { Effect, ResourcePlugin, RouteContext } from '../../core/plugins/contract.ts';
import { MapCache, runTable, testTenant, type TransformResult } from '../../core/plugins/testing.ts';
import { builtinPlugins } from '../registry.ts';
import plugins, { publicRuntimeclassesPlugin, runtimeclassesPlugin, type RuntimeClass } from './index.ts';

const tenant = testTenant();
const SUPER_NAME = superClusterName(tenant.key, 'gvisor');

const rc = (name: string, over: Partial<RuntimeClass> = {}, meta: Record<string, unknown> = {}): RuntimeClass => ({
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name, ...meta },
  handler: 'runc',
  ...over,
});

const tenantGvisor = (over: Partial<RuntimeClass> = {}) =>
  rc(
    'gvisor',
    { overhead: { podFixed: { cpu: '100m', memory: '64Mi' } }, ...over },
    {
      uid: 'tenant-rc-uid',
      labels: { team: 'a', [`${LABEL.public}`]: 'true' },
    },
  );

const refusedEvent = (message: string): Effect => ({
  type: 'event',
  side: 'tenant',
  regarding: { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', name: 'gvisor', uid: 'tenant-rc-uid' },
  eventType: 'Warning',
  reason: 'RuntimeClassPolicyViolation',
  message: `RuntimeClass gvisor is not synced to the super cluster: ${message}`,
});

describe('runtimeclasses plugin (tenant classes down)', () => {
  it('syncs allowed classes under the tenant-unique name and refuses the others with an event', () => {
    const gvisorPolicy = testTenant({ runtimeClasses: { handlers: ['runsc'] } });
    const got = runTable(runtimeclassesPlugin, {
      'allowed handler: copied under the tenant name, overhead kept, reserved labels stripped': {
        tenantObj: tenantGvisor(),
      },
      'policy lists the handler': { tenantObj: tenantGvisor({ handler: 'runsc' }), tenant: gvisorPolicy },
      'existing super copy: built on it, server fields kept': {
        tenantObj: tenantGvisor({ scheduling: { nodeSelector: { 'kubernetes.io/arch': 'amd64' } } }),
        superObj: rc(SUPER_NAME, {}, { uid: 'super-uid', resourceVersion: '7' }),
      },
      'forbidden handler: no super copy, Warning event': { tenantObj: tenantGvisor({ handler: 'runsc' }) },
      'forbidden handler with a super copy: the copy goes': {
        tenantObj: tenantGvisor({ handler: 'runsc' }),
        superObj: rc(SUPER_NAME, { handler: 'runsc' }, { uid: 'super-uid' }),
      },
      'scheduling tolerates every taint: refused by the pods policy': {
        tenantObj: tenantGvisor({ scheduling: { tolerations: [{ operator: 'Exists' }] } }),
      },
      'scheduling selects a node label the policy does not allow': {
        tenantObj: tenantGvisor({ scheduling: { nodeSelector: { 'node-role.kubernetes.io/control-plane': '' } } }),
      },
      'a mirror of a public class is not the tenant’s: nothing down': {
        tenantObj: rc('kata', { handler: 'kata' }, { labels: { [LABEL.managedBy]: MANAGER } }),
      },
    });
    const copy = (over: Partial<RuntimeClass> = {}, meta: Record<string, unknown> = {}): RuntimeClass => ({
      ...rc(SUPER_NAME, { overhead: { podFixed: { cpu: '100m', memory: '64Mi' } } }, { labels: { team: 'a' } }),
      ...over,
      metadata: { name: SUPER_NAME, labels: { team: 'a' }, ...meta },
    });
    expect(got).toStrictEqual<Record<string, TransformResult<RuntimeClass>>>({
      'allowed handler: copied under the tenant name, overhead kept, reserved labels stripped': {
        down: { object: copy() },
      },
      'policy lists the handler': { down: { object: copy({ handler: 'runsc' }) } },
      'existing super copy: built on it, server fields kept': {
        down: {
          object: copy(
            { scheduling: { nodeSelector: { 'kubernetes.io/arch': 'amd64' } } },
            { uid: 'super-uid', resourceVersion: '7' },
          ),
        },
      },
      'forbidden handler: no super copy, Warning event': {
        down: {
          object: null,
          effects: [
            refusedEvent('handler: handler "runsc" is not allowed by the TenantPolicy (runtimeClasses.handlers: runc)'),
          ],
        },
      },
      'forbidden handler with a super copy: the copy goes': {
        down: {
          object: null,
          effects: [
            refusedEvent('handler: handler "runsc" is not allowed by the TenantPolicy (runtimeClasses.handlers: runc)'),
          ],
        },
      },
      'scheduling tolerates every taint: refused by the pods policy': {
        down: {
          object: null,
          effects: [
            refusedEvent(
              'scheduling.tolerations[0]: scheduling.tolerations[0] {key: "", operator: Exists, effect: (all)} is not ' +
                'allowed by the TenantPolicy (pods.tolerations: node.kubernetes.io/not-ready:NoExecute, ' +
                'node.kubernetes.io/unreachable:NoExecute, node.kubernetes.io/disk-pressure:NoSchedule, ' +
                'node.kubernetes.io/memory-pressure:NoSchedule, node.kubernetes.io/pid-pressure:NoSchedule, ' +
                'node.kubernetes.io/unschedulable:NoSchedule)',
            ),
          ],
        },
      },
      'scheduling selects a node label the policy does not allow': {
        down: {
          object: null,
          effects: [
            refusedEvent(
              'scheduling.nodeSelector["node-role.kubernetes.io/control-plane"]: scheduling.nodeSelector[' +
                '"node-role.kubernetes.io/control-plane"]: node label key "node-role.kubernetes.io/control-plane" is ' +
                'not allowed by the TenantPolicy (pods.nodeLabelKeys: kubernetes.io/os, kubernetes.io/arch, ' +
                'topology.kubernetes.io/*)',
            ),
          ],
        },
      },
      'a mirror of a public class is not the tenant’s: nothing down': { down: { object: null } },
    });
  });

  it('names the super copy after the tenant, so two tenants never share one', () => {
    const other = testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' });
    const mine = runtimeclassesPlugin.superName('', 'gvisor', { tenant, names: undefined as never });
    const theirs = runtimeclassesPlugin.superName('', 'gvisor', { tenant: other, names: undefined as never });
    expect(mine).toEqual({ name: `${tenant.key}-gvisor` });
    expect(theirs.name).not.toBe(mine.name);
    // A tenant naming its class after another tenant's super copy still lands under its own prefix.
    expect(runtimeclassesPlugin.superName('', theirs.name, { tenant, names: undefined as never }).name).toBe(
      `${tenant.key}-${theirs.name}`,
    );
  });
});

describe('runtimeclasses-public plugin (platform classes up)', () => {
  const kata = (over: Partial<RuntimeClass> = {}, labels: Record<string, string> = { [LABEL.public]: 'true' }) =>
    rc(
      'kata',
      {
        handler: 'kata',
        overhead: { podFixed: { memory: '160Mi' } },
        scheduling: { nodeSelector: { sandbox: 'kata' }, tolerations: [{ key: 'sandbox', operator: 'Exists' }] },
        ...over,
      },
      { uid: 'super-kata', labels: { ...labels, tier: 'sandbox' } },
    );
  const mirror = (over: Partial<RuntimeClass> = {}) =>
    rc('kata', { handler: 'kata', ...over }, { uid: 'mirror-uid', labels: { [LABEL.managedBy]: MANAGER } });

  it('copies public classes with handler and overhead, never scheduling, and leaves tenant classes alone', () => {
    const got = runTable(publicRuntimeclassesPlugin, {
      'public class, new in the tenant': { superObj: kata() },
      'public class, mirror exists: follows the super': {
        superObj: kata(),
        tenantObj: mirror({ overhead: { podFixed: { memory: '1Mi' } } }),
      },
      'class not public (or no longer)': { superObj: kata({}, {}), tenantObj: mirror() },
      'gone from the super': { tenantObj: mirror() },
      'a tenant copy in the super is never public': {
        superObj: {
          ...kata(),
          metadata: {
            name: 'kata',
            labels: { [LABEL.public]: 'true', [LABEL.managedBy]: MANAGER },
            annotations: { [ANN.cluster]: 'team-b-4d5e6f-prod' },
          },
        },
        tenantObj: mirror(),
      },
      'the tenant has its own class of that name': { superObj: kata(), tenantObj: tenantGvisor({ handler: 'runc' }) },
      'platform recreated the class with another handler: the mirror is replaced': {
        superObj: kata({ handler: 'kata-qemu' }),
        tenantObj: mirror(),
      },
    });
    const own = tenantGvisor({ handler: 'runc' });
    expect(got).toStrictEqual<Record<string, TransformResult<RuntimeClass>>>({
      'public class, new in the tenant': {
        up: {
          object: {
            ...rc(
              'kata',
              { handler: 'kata', overhead: { podFixed: { memory: '160Mi' } } },
              { labels: { tier: 'sandbox' } },
            ),
          },
        },
      },
      'public class, mirror exists: follows the super': {
        up: {
          object: rc(
            'kata',
            { handler: 'kata', overhead: { podFixed: { memory: '160Mi' } } },
            { uid: 'mirror-uid', labels: { tier: 'sandbox', [LABEL.managedBy]: MANAGER } },
          ),
        },
      },
      'class not public (or no longer)': { up: { object: null } },
      'gone from the super': { up: { object: null } },
      'a tenant copy in the super is never public': { up: { object: null } },
      'the tenant has its own class of that name': {
        up: {
          object: own,
          skip: {
            reason: 'NameTaken',
            message: 'the tenant has a RuntimeClass gvisor of its own; the public one is not copied',
          },
        },
      },
      'platform recreated the class with another handler: the mirror is replaced': { up: { object: null } },
    });
  });

  it('routes public classes to every tenant and nothing else anywhere', () => {
    const tenants = [tenant, testTenant({ key: 'team-b-4d5e6f-prod', vcName: 'prod', vcNamespace: 'team-b' })];
    const rctx = { tenants, superCache: new MapCache() } as unknown as RouteContext;
    expect(publicRuntimeclassesPlugin.route(kata(), rctx)).toEqual(
      tenants.map((t) => ({ tenant: t.key, namespace: '', name: 'kata' })),
    );
    expect(publicRuntimeclassesPlugin.route(kata({}, {}), rctx)).toEqual([]);
  });
});

describe('runtimeclasses registry entry', () => {
  it('registers both plugins, on by default, for the one RuntimeClass resource', () => {
    expect(builtinPlugins).toEqual(expect.arrayContaining([...plugins]));
    for (const p of plugins as readonly ResourcePlugin[]) {
      expect(p.manifest.resource).toEqual(R.runtimeclasses);
      expect(p.manifest.optIn).toBeUndefined();
    }
  });
});
