import { describe, expect, it } from 'vitest';
import { validate } from '../../schemas/validate.ts';
import { reconcileOptionsFor, type GitSource } from './gitsource.ts';
import { CONFIRM_DELETION_ANNOTATION, sourceLabelValue } from './objects.ts';
import { REV1 } from './testing.ts';

const gs = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'GitSource',
  metadata: { name: 'tenants', namespace: 'platform' },
  spec: { url: 'https://git.example.com/platform/tenants.git', ref: { branch: 'main' }, ...spec },
  ...extra,
});

describe('GitSource schema', () => {
  it.each([
    ['minimal', gs({})],
    [
      'full',
      gs({
        ref: { semver: '>=1.2.0 <2.0.0' },
        path: './clusters/prod',
        interval: '1m30s',
        timeout: '45s',
        secretRef: { name: 'git-credentials' },
        verify: { mode: 'head', secretRef: { name: 'trusted-keys' } },
        suspend: false,
        prune: true,
        safety: { maxDeletes: 0, maxDeletePercent: 100 },
        webhook: { kind: 'github', secretRef: { name: 'hook' } },
      }),
    ],
    ['a commit ref', gs({ ref: { commit: REV1 } })],
    ['a tag ref and http', gs({ url: 'http://git.local:3000/t.git', ref: { tag: 'v1.2.3' } })],
    ['the root path', gs({ path: '.' })],
    ['a dot directory', gs({ path: '.tenants/a' })],
  ])('accepts %s', (_, value) => {
    expect(validate('gitSource', value)).toEqual([]);
  });

  it.each([
    ['no url', gs({ url: undefined }), '/spec/url'],
    ['an ssh url', gs({ url: 'ssh://git@example.com/t.git' }), '/spec/url'],
    ['two refs', gs({ ref: { branch: 'main', tag: 'v1' } }), '/spec/ref'],
    ['no ref kind', gs({ ref: {} }), '/spec/ref'],
    ['a short commit', gs({ ref: { commit: 'abc123' } }), '/spec/ref/commit'],
    ['a branch with ..', gs({ ref: { branch: 'a..b' } }), '/spec/ref/branch'],
    ['a path escaping the repository', gs({ path: 'tenants/../../etc' }), '/spec/path'],
    ['an absolute path', gs({ path: '/etc' }), '/spec/path'],
    ['an interval without unit', gs({ interval: '60' }), '/spec/interval'],
    ['a percent over 100', gs({ safety: { maxDeletePercent: 101 } }), '/spec/safety/maxDeletePercent'],
    ['a negative maxDeletes', gs({ safety: { maxDeletes: -1 } }), '/spec/safety/maxDeletes'],
    ['an unknown verify mode', gs({ verify: { mode: 'all', secretRef: { name: 'k' } } }), '/spec/verify/mode'],
    ['an unknown webhook kind', gs({ webhook: { kind: 'bitbucket', secretRef: { name: 'k' } } }), '/spec/webhook/kind'],
    [
      'an inventory entry without uid',
      gs({}, { status: { inventory: [{ apiVersion: 'v', kind: 'K', name: 'n' }] } }),
      '/status/inventory/0/uid',
    ],
  ])('rejects %s at its pointer', (_, value, pointer) => {
    const v = value as { spec: Record<string, unknown> };
    if (v.spec.url === undefined) delete v.spec.url;
    expect([...new Set(validate('gitSource', value).map((e) => e.pointer))]).toEqual([pointer]);
  });
});

describe('reconcileOptionsFor', () => {
  it('applies the schema defaults and reads the confirmation and generation', () => {
    const g = gs({}) as unknown as GitSource;
    expect(reconcileOptionsFor(g)).toEqual({ prune: true, safety: { maxDeletes: 3, maxDeletePercent: 25 } });
    const confirmed = gs(
      { prune: false, safety: { maxDeletes: 1 } },
      { metadata: { name: 't', namespace: 'p', generation: 4, annotations: { [CONFIRM_DELETION_ANNOTATION]: REV1 } } },
    );
    expect(reconcileOptionsFor(confirmed as unknown as GitSource)).toEqual({
      prune: false,
      safety: { maxDeletes: 1, maxDeletePercent: 25 },
      confirmation: REV1,
      generation: 4,
    });
  });
});

describe('sourceLabelValue', () => {
  it('is namespace.name, hashed down to a valid label value when too long', () => {
    expect(sourceLabelValue({ namespace: 'platform', name: 'tenants' })).toBe('platform.tenants');
    const long = sourceLabelValue({ namespace: 'n'.repeat(40), name: 'm'.repeat(40) });
    expect(long).toHaveLength(63);
    expect(long).toMatch(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/);
    expect(long).not.toBe(sourceLabelValue({ namespace: 'n'.repeat(40), name: 'm'.repeat(41) }));
  });
});
