import { describe, expect, it } from 'vitest';
import { SUPER_INTERNAL_CIDRS } from '@virtualcluster-ts/plugin-sdk';
import type { Pod } from '@virtualcluster-ts/plugin-sdk/pods';
import { ANN } from '../../core/names/names.ts';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext } from '../../core/plugins/testing.ts';
import { checkImage, checkImages, imageFields, registryListed, registryOf, registryRefusal } from './images.ts';
import { podsPlugin } from './index.ts';

describe('registryOf', () => {
  it.each([
    ['nginx', undefined],
    ['library/nginx:1.27', undefined],
    ['docker.io/library/nginx', 'docker.io'],
    ['localhost/x', 'localhost'],
    ['LOCALHOST/x', 'localhost'],
    ['Evil/x', 'evil'],
    ['127.0.0.1:10250/x:1', '127.0.0.1:10250'],
    ['[::1]:5000/x', '[::1]:5000'],
    ['registry:5000/x@sha256:abc', 'registry:5000'],
  ])('%s has registry %s', (image, want) => expect(registryOf(image)).toBe(want));
});

describe('registryRefusal', () => {
  const refused = [
    'localhost',
    'localhost:5000',
    'x.localhost',
    'localhost.',
    'metadata.google.internal',
    'metadata:80',
    'registry:5000',
    '127.0.0.1:10250',
    '127.9.9.9',
    '0.0.0.0:2379',
    '169.254.169.254',
    '10.96.0.1:443',
    '192.168.1.10:5000',
    '172.20.0.5',
    '100.64.0.1',
    '[::1]:5000',
    '[::]:5000',
    '[::ffff:127.0.0.1]:5000',
    '[::ffff:7f00:1]:5000',
    '[64:ff9b::a9fe:a9fe]',
    '[fe80::1]:5000',
    '[fd00::1]',
    '2130706433:5000',
    '0x7f000001',
    '127.1:5000',
    '0177.0.0.1:5000',
    '10.1',
    'localhost.localdomain:5000',
    'localhost6.localdomain6',
    'ip-10-0-0-1.ec2.internal:5000',
    'registry.corp',
    'printer.local:5000',
    'nas.home.arpa',
  ];
  it.each(refused)('refuses %s', (r) => expect(registryRefusal(r, SUPER_INTERNAL_CIDRS)).toBeDefined());

  const allowed = ['docker.io', 'ghcr.io', 'registry.k8s.io:443', '8.8.8.8:5000', '[2001:db8::1]:5000', 'quay.io'];
  it.each(allowed)('allows %s', (r) => expect(registryRefusal(r, SUPER_INTERNAL_CIDRS)).toBeUndefined());

  it("follows the policy's internal ranges on top of the node's own", () => {
    expect(registryRefusal('203.0.113.7', ['203.0.113.0/24'])).toBeDefined();
    expect(registryRefusal('10.0.0.5', [])).toBeUndefined();
    expect(registryRefusal('127.0.0.1', [])).toBeDefined();
    expect(registryRefusal('169.254.169.254', [])).toBeDefined();
  });
});

describe('checkImages', () => {
  const spec = (image: string, where: 'containers' | 'initContainers' | 'volume' = 'containers') => ({
    containers: [{ name: 'ok', image: 'nginx' }, ...(where === 'containers' ? [{ name: 'c', image }] : [])],
    ...(where === 'initContainers' ? { initContainers: [{ name: 'i', image }] } : {}),
    ...(where === 'volume' ? { volumes: [{ name: 'v', image: { reference: image } }] } : {}),
  });
  const tenant = (pods: Record<string, unknown> = {}) => ({ pods, network: {} });

  it.each([
    ['containers', 'spec.containers[1].image'],
    ['initContainers', 'spec.initContainers[0].image'],
    ['volume', 'spec.volumes[0].image.reference'],
  ] as const)('refuses an internal registry in %s, naming %s and the policy field', (where, field) => {
    const r = checkImages(spec('127.0.0.1:10250/x:1', where), tenant());
    expect(r?.field).toBe(field);
    expect(r?.message).toContain('pods.internalRegistries');
  });

  it('lists every image the node pulls', () => {
    expect(
      imageFields({ ...spec('a', 'initContainers'), volumes: [{ name: 'v', image: { reference: 'b' } }] }),
    ).toEqual([
      { field: 'spec.containers[0].image', image: 'nginx' },
      { field: 'spec.initContainers[0].image', image: 'a' },
      { field: 'spec.volumes[0].image.reference', image: 'b' },
    ]);
  });

  it('allows a registry the policy lists, a preloaded image, and public registries', () => {
    expect(checkImages(spec('10.0.0.5:5000/x'), tenant({ internalRegistries: ['10.0.0.5:5000'] }))).toBeUndefined();
    expect(checkImages(spec('10.0.0.5:5001/x'), tenant({ internalRegistries: ['10.0.0.5:5000'] }))).toBeDefined();
    expect(checkImages(spec('localhost/pause:3'), tenant({ preloadedImages: ['localhost/pause:3'] }))).toBeUndefined();
    expect(checkImages(spec('ghcr.io/x/y:1'), tenant())).toBeUndefined();
  });
});

describe('pods plugin: images from internal registries', () => {
  const SNS = testContext().names.superNamespace('default');
  const superCache = new MapCache([
    [
      R.serviceaccounts,
      [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vc-tenant-pod', namespace: SNS } }],
    ],
  ]);
  const ctx = testContext({ superCache });
  const meta = { name: 'web', namespace: 'default', uid: 'tenant-uid-1' };
  const tenantPod = (image: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta,
    spec: { containers: [{ name: 'app', image }] },
  });
  const superPod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      namespace: SNS,
      uid: 'super-uid',
      annotations: {
        [ANN.cluster]: ctx.tenant.key,
        [ANN.namespace]: 'default',
        [ANN.name]: 'web',
        [ANN.uid]: meta.uid,
      },
    },
    spec: { containers: [{ name: 'app', image: 'nginx:1', imagePullPolicy: 'Always' }] },
  };

  it('refuses a new Pod whose image is on the node itself, with the reason on the Pod', () => {
    const got = podsPlugin.toSuper!(tenantPod('localhost:10250/x:1'), undefined, ctx);
    expect(got.object).toBeNull();
    expect(got.skip?.reason).toBe('PodPolicyViolation');
    expect(got.skip?.message).toMatch(/^spec\.containers\[0\]\.image "localhost:10250\/x:1": registry localhost/);
  });

  it('keeps the image a running super Pod has when the tenant changes it to an internal registry', () => {
    const got = podsPlugin.toSuper!(tenantPod('169.254.169.254/latest:1'), structuredClone(superPod), ctx);
    expect(got.skip?.reason).toBe('PodPolicyViolation');
    expect(got.object?.spec?.containers[0]?.image).toBe('nginx:1');
    expect(got.effects?.map((e) => e.type)).toEqual(['event', 'tenantCondition']);
  });

  describe('a container made for a preloaded image (IfNotPresent, which cannot change)', () => {
    const preloadedCtx = testContext({
      superCache,
      tenant: {
        ...testContext().tenant,
        pods: {
          ...testContext().tenant.pods!,
          preloadedImages: ['registry.k8s.io/pause:3.10', 'registry.k8s.io/pause:3.9'],
        },
      },
    });
    const running = (image: string, imagePullPolicy: string | undefined) => {
      const p = structuredClone(superPod);
      p.spec!.containers[0] = { name: 'app', image, ...(imagePullPolicy && { imagePullPolicy }) };
      return p;
    };
    it.each([
      [
        'to an image that must be pulled: refused, the node cache would serve it',
        'IfNotPresent',
        'ghcr.io/b/private:1',
        true,
      ],
      ['to another preloaded image: copied', 'IfNotPresent', 'registry.k8s.io/pause:3.9', false],
      ['with no pull policy read back: refused', undefined, 'ghcr.io/b/private:1', true],
      ['of a container that pulls (Always): copied', 'Always', 'ghcr.io/b/private:1', false],
    ])('%s', (_what, policy, image, refused) => {
      const got = podsPlugin.toSuper!(tenantPod(image), running('registry.k8s.io/pause:3.10', policy), preloadedCtx);
      const c = got.object?.spec?.containers[0];
      if (refused) {
        expect(got.skip?.reason).toBe('PodPolicyViolation');
        expect(got.skip?.message).toMatch(
          /^spec\.containers\[0\]\.image "ghcr\.io\/b\/private:1": the container runs the preloaded image/,
        );
        expect(c?.image).toBe('registry.k8s.io/pause:3.10');
      } else {
        expect(got.skip).toBeUndefined();
        expect(c?.image).toBe(image);
      }
    });
  });

  it('copies an image change to a public registry', () => {
    const got = podsPlugin.toSuper!(tenantPod('ghcr.io/x/y:2'), structuredClone(superPod), ctx);
    expect(got.skip).toBeUndefined();
    expect(got.object?.spec?.containers[0]?.image).toBe('ghcr.io/x/y:2');
  });
});

describe('registryListed', () => {
  it.each([
    ['docker.io', ['*'], true],
    ['docker.io', ['docker.io', 'ghcr.io'], true],
    ['registry.example.com:5000', ['registry.example.com'], true],
    ['registry.example.com:5000', ['registry.example.com:5000'], true],
    ['registry.example.com', ['registry.example.com:5000'], false],
    ['eu.registry.example.com', ['*.example.com'], true],
    ['example.com', ['*.example.com'], false],
    ['evilexample.com', ['*.example.com'], false],
    ['127.0.0.1.nip.io', ['docker.io', '*.example.com'], false],
    ['docker.io', [], false],
  ])('%s in %j: %s', (registry, listed, want) => expect(registryListed(registry, listed)).toBe(want));
});

describe('checkImage under pods.registries', () => {
  const tenant = (registries: string[], internalRegistries: string[] = []) => ({
    pods: { registries, internalRegistries },
    network: { internalCIDRs: [...SUPER_INTERNAL_CIDRS] },
  });
  it.each([
    ['a public name resolving inward, with a list', 'n.127.0.0.1.nip.io/x:1', tenant(['docker.io']), true],
    ['a Docker Hub image without a registry, docker.io listed', 'nginx:1', tenant(['docker.io']), false],
    ['a Docker Hub image without a registry, docker.io not listed', 'nginx:1', tenant(['ghcr.io']), true],
    [
      'an internal registry the policy names, not in the list',
      '10.0.0.5:5000/x:1',
      tenant(['docker.io'], ['10.0.0.5:5000']),
      false,
    ],
    ['a public name under the default list', 'n.127.0.0.1.nip.io/x:1', tenant(['*']), false],
  ])('%s', (_what, image, t, refused) => {
    const r = checkImage({ field: 'spec.containers[0].image', image }, t);
    expect(r !== undefined).toBe(refused);
    if (r && image.startsWith('n.')) expect(r.message).toContain('pods.registries: docker.io');
  });
});
