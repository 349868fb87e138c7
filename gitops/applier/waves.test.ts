import { describe, expect, it } from 'vitest';
import { APPLY_WAVE_ANNOTATION, renderDesired, waveOf } from './objects.ts';
import { cvDoc, makeArtifact, vcDoc } from './testing.ts';

/** withWave is a document annotated with an apply wave. */
function withWave(doc: Record<string, unknown>, wave: unknown): Record<string, unknown> {
  const meta = doc.metadata as Record<string, unknown>;
  return { ...doc, metadata: { ...meta, annotations: { [APPLY_WAVE_ANNOTATION]: wave } } };
}

describe('apply waves', () => {
  it.each([
    { annotation: undefined, wave: 0 },
    { annotation: '2', wave: 2 },
    { annotation: '-1', wave: -1 },
    { annotation: '1000', wave: 1000 },
    { annotation: '1001', error: true },
    { annotation: '1.5', error: true },
    { annotation: ' 1', error: true },
    { annotation: 'first', error: true },
    { annotation: 3, error: true },
  ])('reads $annotation as $wave', ({ annotation, wave, error }) => {
    const doc = annotation === undefined ? vcDoc('team', 'a') : withWave(vcDoc('team', 'a'), annotation);
    const got = waveOf(doc);
    if (error) expect(got).toEqual({ error: expect.stringMatching(/is not an apply wave: an integer from -1000/) });
    else expect(got).toBe(wave);
  });

  it('orders by wave first, then ClusterVersions before VirtualClusters, then by name', () => {
    const r = renderDesired(
      makeArtifact({
        'tenants/app.yaml': [withWave(vcDoc('team', 'app'), '1')],
        'tenants/shared.yaml': [vcDoc('team', 'shared')],
        'versions/late.yaml': [withWave(cvDoc('late'), '1')],
        'versions/v1.yaml': [cvDoc('v1')],
        'tenants/early.yaml': [withWave(vcDoc('team', 'early'), '-1')],
      }),
    );
    expect(r.errors).toEqual([]);
    expect(r.objects.map((o) => `${o.wave} ${o.ref.kind} ${o.ref.name}`)).toEqual([
      '-1 VirtualCluster early',
      '0 ClusterVersion v1',
      '0 VirtualCluster shared',
      '1 ClusterVersion late',
      '1 VirtualCluster app',
    ]);
  });

  it('refuses a document with a bad wave, naming file, object and field, and keeps it from being pruned', () => {
    const r = renderDesired(makeArtifact({ 'tenants/app.yaml': [withWave(vcDoc('team', 'app'), 'soon')] }));
    expect(r.objects).toEqual([]);
    expect(r.named.has('VirtualCluster/team/app')).toBe(true);
    expect(r.errors).toEqual([
      expect.objectContaining({
        reason: 'ValidationFailed',
        file: 'tenants/app.yaml',
        object: 'VirtualCluster team/app',
        pointer: '/metadata/annotations/tenancy.x-k8s.io~1apply-wave',
        message: expect.stringContaining('tenants/app.yaml: VirtualCluster team/app: /metadata/annotations/'),
      }),
    ]);
  });
});
