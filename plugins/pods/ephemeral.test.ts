import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext } from '../../core/plugins/testing.ts';
import type { PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';
import { checkEphemeralClaims } from './ephemeral.ts';

const POD = { namespace: 'default', name: 'a', uid: 'uid-a' };

/** claim is a tenant claim `name` in default, controlled by the Pod of `owner` (none: made by hand). */
const claim = (name: string, owner?: string, controller = true) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    name,
    namespace: 'default',
    ...(owner && { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'x', uid: owner, controller }] }),
  },
});

const withVolume = (name: string): PodSpec => ({
  containers: [{ name: 'c', image: 'x' }],
  volumes: [
    { name: 'plain', emptyDir: {} },
    { name, ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } },
  ],
});

describe('checkEphemeralClaims', () => {
  it.each<[string, PodSpec, KubeObject[], string | undefined]>([
    ['no ephemeral volume: nothing to check', { containers: [] }, [claim('a-b-c')], undefined],
    ['the claim is not made yet: the tenant controller makes it', withVolume('b-c'), [], undefined],
    [
      'the claim the tenant controller made for this Pod passes',
      withVolume('b-c'),
      [claim('a-b-c', 'uid-a')],
      undefined,
    ],
    [
      'a claim of the same name made by hand (no owner) is refused',
      withVolume('b-c'),
      [claim('a-b-c')],
      'spec.volumes[1].ephemeral',
    ],
    [
      'the claim of another Pod whose name collides after translation (Pod a-b, volume c) is refused',
      withVolume('b-c'),
      [claim('a-b-c', 'uid-a-b')],
      'spec.volumes[1].ephemeral',
    ],
    [
      'an owner reference to this Pod that is not the controller does not make the claim its own',
      withVolume('b-c'),
      [claim('a-b-c', 'uid-a', false)],
      'spec.volumes[1].ephemeral',
    ],
  ])('%s', (_, spec, claims, field) => {
    const ctx = testContext({ tenantCache: new MapCache([[R.persistentvolumeclaims, claims]]) });
    const refusal = checkEphemeralClaims(spec, POD, ctx);
    if (!field) return expect(refusal).toBeUndefined();
    expect(refusal?.field).toBe(field);
    expect(refusal?.message).toContain('PVC default/a-b-c was not created for this Pod');
  });
});
