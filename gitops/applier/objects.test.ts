import { describe, expect, it } from 'vitest';
import { ANN } from '../../core/names/names.ts';
import { renderDesired, renewalRequestError } from './objects.ts';
import { makeArtifact, vcDoc } from './testing.ts';

describe('renewal requests in a definition', () => {
  const withRenewal = (doc: Record<string, unknown>, v: unknown) => ({
    ...doc,
    metadata: { ...(doc.metadata as object), annotations: { [ANN.renewCertificates]: v } },
  });

  it.each([
    { value: undefined, refused: undefined },
    { value: '2026-12-01T10:00:00Z', refused: undefined },
    { value: 'kubelet-client,admin@2026-12-01T10:00:00+01:00', refused: undefined },
    { value: 'tomorrow', refused: /the time is not RFC 3339/ },
    { value: 'etcd@2026-12-01T10:00:00Z', refused: /unknown certificate "etcd"; the names are apiserver/ },
    { value: 5, refused: /5 is not a renewal request/ },
  ])('$value: refused $refused', ({ value, refused }) => {
    const doc = value === undefined ? vcDoc('team', 'a') : withRenewal(vcDoc('team', 'a'), value);
    const got = renewalRequestError('VirtualCluster', doc);
    if (refused) expect(got).toMatch(refused);
    else expect(got).toBeUndefined();
  });

  it('refuses a VirtualCluster whose renewal request the manager would ignore, naming file, object and field', () => {
    const r = renderDesired(
      makeArtifact({ 'tenants/app.yaml': [withRenewal(vcDoc('team', 'app'), 'kubelet@2026-12-01T10:00:00Z')] }),
    );
    expect(r.objects).toEqual([]);
    expect(r.named.has('VirtualCluster/team/app')).toBe(true);
    expect(r.errors).toEqual([
      expect.objectContaining({
        reason: 'ValidationFailed',
        file: 'tenants/app.yaml',
        object: 'VirtualCluster team/app',
        pointer: '/metadata/annotations/tenancy.x-k8s.io~1renew-certificates',
        message:
          'tenants/app.yaml: VirtualCluster team/app: /metadata/annotations/tenancy.x-k8s.io~1renew-certificates ' +
          '"kubelet@2026-12-01T10:00:00Z": unknown certificate "kubelet"; the names are apiserver, ' +
          'front-proxy-client, admin, controller-manager, scheduler, kubelet-client',
      }),
    ]);
  });
});
