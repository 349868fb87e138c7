import { describe, expect, it } from 'vitest';
import { R } from '../../core/kube/resources.ts';
import { ANN, LABEL, MANAGER, superClusterName } from '../../core/names/names.ts';
import type { RuntimeClassesPolicyView, TenantView } from '../../core/plugins/contract.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import { podRuntimeClass, type PodRuntimeClass, type RuntimeClass } from '@virtualcluster-ts/plugin-sdk/pods';

const KEY = testTenant().key;
const TENANT_UID = 'tenant-gvisor-uid';

const rc = (name: string, handler: string, meta: Record<string, unknown> = {}): RuntimeClass => ({
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name, ...meta },
  handler,
});
const owned = (cluster: string, uid: string) => ({
  labels: { [LABEL.managedBy]: MANAGER },
  annotations: { [ANN.cluster]: cluster, [ANN.name]: 'gvisor', [ANN.uid]: uid },
});

// The tenant: its own classes gvisor (runsc) and plain (runc), a mirror of the public kata, and a forged "mirror" of
// the platform's private class.
const tenantClasses = [
  rc('gvisor', 'runsc', { uid: TENANT_UID }),
  rc('plain', 'runc', { uid: 'tenant-plain-uid' }),
  rc('kata', 'kata', { labels: { [LABEL.managedBy]: MANAGER } }),
  rc('private', 'private', { labels: { [LABEL.managedBy]: MANAGER } }),
  rc('pending', 'runc', { uid: 'tenant-pending-uid' }),
];
// The super: public kata, the platform's private class, and the synced copies of gvisor and plain.
const superClasses = [
  rc('kata', 'kata', { labels: { [LABEL.public]: 'true' } }),
  rc('private', 'private'),
  rc(superClusterName(KEY, 'gvisor'), 'runsc', owned(KEY, TENANT_UID)),
  rc(superClusterName(KEY, 'plain'), 'runc', owned(KEY, 'tenant-plain-uid')),
];

const withPolicy = (runtimeClasses?: RuntimeClassesPolicyView, over: Partial<TenantView> = {}) =>
  testTenant({ ...(runtimeClasses && { runtimeClasses }), ...over });
const gvisorAllowed = { handlers: ['runc', 'runsc'] };
const sandboxed = { handlers: ['runc', 'kata'], required: 'kata' };
const refused = (message: string): PodRuntimeClass => ({
  refusal: { field: 'spec.runtimeClassName', message: `spec.runtimeClassName: ${message}` },
});

const cases: Array<[string, string | undefined, TenantView, PodRuntimeClass]> = [
  ['no class, no policy: none', undefined, withPolicy(), { name: undefined }],
  ['public class: same name', 'kata', withPolicy(), { name: 'kata' }],
  ["tenant's own class: its super name", 'gvisor', withPolicy(gvisorAllowed), { name: `${KEY}-gvisor` }],
  ['class missing in the tenant', 'nope', withPolicy(), refused('RuntimeClass "nope" does not exist in the tenant')],
  [
    "tenant's own class with a handler the policy refuses",
    'gvisor',
    withPolicy(),
    refused(
      'RuntimeClass "gvisor" is refused: handler: handler "runsc" is not allowed by the TenantPolicy (runtimeClasses.handlers: runc)',
    ),
  ],
  [
    'a forged mirror of a class the platform did not make public',
    'private',
    withPolicy(),
    refused('RuntimeClass "private" is not a public RuntimeClass of the super cluster'),
  ],
  [
    "tenant's own class not in the super yet: wait",
    'pending',
    withPolicy(),
    { wait: `RuntimeClass "pending" is being synced to the super cluster as ${KEY}-pending` },
  ],
  [
    'own class while the tenant disables the plugin',
    'plain',
    withPolicy(undefined, { plugins: { disable: ['runtimeclasses'] } }),
    refused('RuntimeClass "plain" is the tenant\'s own and this tenant disables the runtimeclasses plugin'),
  ],
  ['required sandbox, no class: the sandbox', undefined, withPolicy(sandboxed), { name: 'kata' }],
  ['required sandbox, naming it', 'kata', withPolicy(sandboxed), { name: 'kata' }],
  [
    'required sandbox, own class with another handler: cannot leave it',
    'plain',
    withPolicy(sandboxed),
    refused(
      'RuntimeClass "plain" runs handler "runc"; this tenant\'s Pods must run in RuntimeClass "kata" (handler "kata", runtimeClasses.required)',
    ),
  ],
  [
    'required sandbox that does not exist',
    undefined,
    withPolicy({ required: 'firecracker' }),
    refused(
      'the RuntimeClass "firecracker" this tenant\'s Pods must run in (runtimeClasses.required) does not exist in the super cluster',
    ),
  ],
];

describe('podRuntimeClass', () => {
  it.each(cases)('%s', (_, requested, tenant, want) => {
    const ctx = testContext({
      tenant,
      tenantCache: new MapCache([[R.runtimeclasses, tenantClasses]]),
      superCache: new MapCache([[R.runtimeclasses, superClasses]]),
    });
    expect(podRuntimeClass(requested, ctx)).toEqual(want);
  });

  it("refuses a tenant class whose super name holds something that is not the tenant's", () => {
    const ctx = testContext({
      tenant: withPolicy(),
      tenantCache: new MapCache([[R.runtimeclasses, tenantClasses]]),
      superCache: new MapCache([[R.runtimeclasses, [rc(superClusterName(KEY, 'plain'), 'runc')]]]),
    });
    expect(podRuntimeClass('plain', ctx)).toEqual(
      refused(`the super RuntimeClass ${KEY}-plain of RuntimeClass "plain" is not this tenant's`),
    );
  });

  it('waits while the super copy is still that of a deleted class of the same name', () => {
    const ctx = testContext({
      tenant: withPolicy(),
      tenantCache: new MapCache([[R.runtimeclasses, tenantClasses]]),
      superCache: new MapCache([[R.runtimeclasses, [rc(superClusterName(KEY, 'plain'), 'runc', owned(KEY, 'old'))]]]),
    });
    expect(podRuntimeClass('plain', ctx)).toHaveProperty('wait');
  });

  it('with a required sandbox, a tenant class running the sandbox handler is the sandbox', () => {
    const ctx = testContext({
      tenant: withPolicy({ handlers: ['runsc'], required: 'gvisor-platform' }),
      tenantCache: new MapCache([[R.runtimeclasses, tenantClasses]]),
      superCache: new MapCache([[R.runtimeclasses, [...superClasses, rc('gvisor-platform', 'runsc')]]]),
    });
    expect(podRuntimeClass('gvisor', ctx)).toEqual({ name: `${KEY}-gvisor` });
  });
});
