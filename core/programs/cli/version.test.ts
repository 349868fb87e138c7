import { describe, expect, it } from 'vitest';
import { clientVersion, managerVersion } from './version.ts';

const deployment = (
  labels: Record<string, string> | undefined,
  containers: Array<{ name?: string; image?: string }>,
) => ({
  metadata: { name: 'vc-manager', namespace: 'vc-system', ...(labels && { labels }) },
  spec: { template: { spec: { containers } } },
});

describe('managerVersion', () => {
  it.each([
    {
      name: 'the version label wins over the image tag',
      d: deployment({ 'app.kubernetes.io/version': '0.2.0' }, [{ name: 'manager', image: 'r.example/vc:0.1.0' }]),
      want: { version: '0.2.0', image: 'r.example/vc:0.1.0' },
    },
    {
      name: 'without a label, the tag of the manager container, even after a digest and a registry port',
      d: deployment(undefined, [
        { name: 'sidecar', image: 'r.example/other:9.9' },
        { name: 'manager', image: 'r.example:5000/platform/vc:0.1.3@sha256:' + 'a'.repeat(64) },
      ]),
      want: { version: '0.1.3', image: 'r.example:5000/platform/vc:0.1.3@sha256:' + 'a'.repeat(64) },
    },
    {
      name: 'an image by digest only has no version to tell',
      d: deployment(undefined, [{ name: 'manager', image: 'r.example:5000/vc@sha256:' + 'b'.repeat(64) }]),
      want: { version: 'unknown', image: 'r.example:5000/vc@sha256:' + 'b'.repeat(64) },
    },
    {
      name: 'no container named manager: the first one',
      d: deployment(undefined, [{ name: 'main', image: 'vc:1.0.0' }]),
      want: { version: '1.0.0', image: 'vc:1.0.0' },
    },
    { name: 'no containers at all', d: deployment(undefined, []), want: { version: 'unknown' } },
  ])('$name', ({ d, want }) => {
    expect(managerVersion(d)).toEqual(want);
  });
});

describe('clientVersion', () => {
  it("is this package's version", async () => {
    const pkg = (await import('../../../package.json', { with: { type: 'json' } })).default as { version: string };
    expect(clientVersion()).toBe(pkg.version);
  });
});
