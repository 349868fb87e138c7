import { describe, expect, it } from 'vitest';
import { parseKubeVersion, UNKNOWN_VERSION, UPGRADE_REFUSED, upgradeVerdict } from './upgrade.ts';

describe('parseKubeVersion', () => {
  it.each([
    ['v1.36.3', { major: 1, minor: 36, patch: 3 }],
    ['1.35.4', { major: 1, minor: 35, patch: 4 }],
    ['v1.36.0-rc.1', { major: 1, minor: 36, patch: 0 }],
    ['v1.36', undefined],
    ['latest', undefined],
    ['v1.x.3', undefined],
  ])('%s', (text, want) => {
    const got = parseKubeVersion(text);
    expect(got && { major: got.major, minor: got.minor, patch: got.patch }).toEqual(want);
  });
});

describe('upgradeVerdict', () => {
  it.each([
    ['v1.36.3', 'v1.36.3', 'same', undefined],
    ['v1.36.1', 'v1.36.3', 'patch', undefined],
    ['v1.36.3', 'v1.36.1', 'patch', undefined],
    ['v1.35.4', 'v1.36.3', 'minor', undefined],
    ['v1.34.2', 'v1.36.3', 'refused', UPGRADE_REFUSED],
    ['v1.36.3', 'v1.35.4', 'refused', UPGRADE_REFUSED],
    ['v1.36.3', 'v2.0.0', 'refused', UPGRADE_REFUSED],
    ['v1.36.3', 'newest', 'refused', UNKNOWN_VERSION],
    ['garbage', 'v1.36.3', 'refused', UPGRADE_REFUSED],
  ])('%s -> %s is %s', (from, to, kind, reason) => {
    const v = upgradeVerdict(from, to);
    expect(v.kind).toBe(kind);
    if (v.kind === 'refused') expect(v.reason).toBe(reason);
  });

  it('says what to do instead of a skip and of a downgrade', () => {
    const skip = upgradeVerdict('v1.34.2', 'v1.36.3');
    expect(skip.kind === 'refused' && skip.message).toMatch(/skips 1 minor.*one minor at a time; name v1\.35\.x first/);
    const down = upgradeVerdict('v1.36.3', 'v1.35.4');
    expect(down.kind === 'refused' && down.message).toMatch(/is a downgrade: .*cannot move to an older minor/);
  });
});
