import { describe, expect, it } from 'vitest';
import type { Container, Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { type Effect, superConfigMapName } from '@virtualcluster-ts/plugin-sdk';
import { testContext, testTenant } from '../../core/plugins/testing.ts';
import { podsPlugin, POD_POLICY_VIOLATION } from './index.ts';
import { ephemeralRefusals, REFUSED_EXIT_CODE } from './ephemeralcontainers.ts';

const IMAGE = 'docker.io/library/busybox:1.36';

const ctx = (podSecurityLevel: 'baseline' | 'privileged' = 'baseline') =>
  testContext({
    tenant: testTenant({
      podSecurityLevel,
      pods: { preloadedImages: [IMAGE] },
      apiserverEndpoint: { host: '10.0.0.9', port: 6443 },
    }),
  });

/** debug is an ephemeral container as `kubectl debug --image busybox --target app` makes it. */
const debug = (name: string, extra: Partial<Container> = {}): Container => ({
  name,
  image: IMAGE,
  targetContainerName: 'app',
  terminationMessagePolicy: 'File',
  ...extra,
});

const SYSADMIN = { securityContext: { privileged: true } };

const tenantPod = (ephemeralContainers: Container[], status?: Pod['status']): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u', generation: 1 },
  spec: {
    containers: [{ name: 'app', image: IMAGE }],
    nodeName: 'vnode',
    ephemeralContainers,
  },
  ...(status && { status }),
});

const superPod = (c: ReturnType<typeof ctx>, ephemeralContainers?: Container[], status?: Pod['status']): Pod => ({
  metadata: { name: 'p', namespace: c.names.superNamespace('default'), generation: 1, resourceVersion: '5' },
  spec: {
    containers: [{ name: 'app', image: IMAGE }],
    nodeName: 'node-1',
    ...(ephemeralContainers && { ephemeralContainers }),
  },
  status: { phase: 'Running', ...status },
});

const events = (effects: Effect[] | undefined) =>
  (effects ?? []).filter((e) => e.type === 'event').map((e) => (e as { message: string }).message);

describe('ephemeralRefusals', () => {
  it.each<[string, 'baseline' | 'privileged', Container[], Container[], Record<string, string>]>([
    ['a plain debug container passes', 'baseline', [debug('d')], [], {}],
    [
      'a privileged one (kubectl debug --profile=sysadmin) is refused below level privileged, at its own index',
      'baseline',
      [debug('d'), debug('s', SYSADMIN)],
      [],
      { s: 'spec.ephemeralContainers[1].securityContext.privileged' },
    ],
    ['at level privileged it passes', 'privileged', [debug('s', SYSADMIN)], [], {}],
    [
      'an image from a registry the policy does not allow is refused',
      'baseline',
      [debug('d', { image: '10.0.0.1:5000/tool' })],
      [],
      { d: 'spec.ephemeralContainers[0].image' },
    ],
    [
      'a field the allow-list does not know is refused',
      'baseline',
      [debug('d', { futureField: true })],
      [],
      { d: 'spec.ephemeralContainers[0].futureField' },
    ],
    ['one the super Pod already runs is not checked again', 'baseline', [debug('s', SYSADMIN)], [debug('s')], {}],
  ])('%s', (_, level, tenant, running, want) => {
    const tspec: PodSpec = { containers: [], ephemeralContainers: tenant };
    const got = ephemeralRefusals(tspec, { containers: [], ephemeralContainers: running }, ctx(level));
    expect(Object.fromEntries([...got].map(([n, r]) => [n, r.field]))).toEqual(want);
  });
});

describe('pods plugin: kubectl debug', () => {
  it('toSuper adds a new ephemeral container to the super Pod, translated as a container is at creation', () => {
    const c = ctx();
    const env = [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }];
    const d = debug('d', { env, envFrom: [{ configMapRef: { name: 'kube-root-ca.crt' } }] });
    const got = podsPlugin.toSuper!(tenantPod([d]), superPod(c), c);
    expect(got.skip).toBeUndefined();
    expect((got.object as Pod).spec?.ephemeralContainers).toEqual([
      {
        name: 'd',
        image: IMAGE,
        targetContainerName: 'app',
        terminationMessagePolicy: 'File',
        // the tenant's namespace, not the super one; the tenant apiserver, not the super's
        env: [
          { name: 'POD', value: 'default' },
          { name: 'KUBERNETES_SERVICE_HOST', value: '10.0.0.9' },
          { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
        ],
        envFrom: [{ configMapRef: { name: superConfigMapName('kube-root-ca.crt') } }],
        imagePullPolicy: 'IfNotPresent',
        securityContext: { capabilities: { drop: ['NET_RAW'] } },
      },
    ]);
  });

  it('one already on the super Pod is left as it is, and a second is added after it', () => {
    const c = ctx();
    const there = { ...debug('d'), imagePullPolicy: 'IfNotPresent' };
    const got = podsPlugin.toSuper!(tenantPod([debug('d'), debug('e')]), superPod(c, [there]), c);
    expect((got.object as Pod).spec?.ephemeralContainers?.map((x) => [x.name, x.imagePullPolicy])).toEqual([
      ['d', 'IfNotPresent'],
      ['e', 'IfNotPresent'],
    ]);
  });

  it('a refused one stays off the super Pod; the rest of the Pod still syncs, with a Warning event once', () => {
    const c = ctx();
    const tenant = tenantPod([debug('s', SYSADMIN), debug('d')]);
    tenant.metadata!.labels = { new: 'label' };
    const got = podsPlugin.toSuper!(tenant, superPod(c), c);
    const sup = got.object as Pod;
    expect(got.skip).toBeUndefined();
    expect(sup.spec?.ephemeralContainers?.map((x) => x.name)).toEqual(['d']);
    expect(sup.metadata?.labels?.new).toBe('label');
    expect(events(got.effects)).toEqual([
      expect.stringMatching(/ephemeralContainers\[0\]\.securityContext\.privileged/),
    ]);
    // toTenant shows it terminated with the reason, which kubectl debug stops waiting on
    const up = podsPlugin.toTenant!(superPod(c, sup.spec?.ephemeralContainers), tenant, c).object as Pod;
    expect(up.status?.ephemeralContainerStatuses).toEqual([
      expect.objectContaining({
        name: 's',
        state: {
          terminated: {
            exitCode: REFUSED_EXIT_CODE,
            reason: POD_POLICY_VIOLATION,
            message: expect.stringMatching(/privileged/),
          },
        },
      }),
    ]);
    // once the tenant Pod shows it, the next pass tells no more
    const again = podsPlugin.toSuper!({ ...tenant, status: up.status }, superPod(c), c);
    expect(events(again.effects)).toEqual([]);
  });

  it('toTenant copies the ephemeral container statuses of the super kubelet', () => {
    const c = ctx();
    const running = [{ name: 'd', state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }];
    const up = podsPlugin.toTenant!(
      superPod(c, [debug('d')], { ephemeralContainerStatuses: running }),
      tenantPod([debug('d')]),
      c,
    ).object as Pod;
    expect(up.status?.ephemeralContainerStatuses).toEqual(running);
  });
});
