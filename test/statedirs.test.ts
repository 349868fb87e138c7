import { describe, expect, it } from 'vitest';
import { mountsUnder } from './statedirs.ts';

const info = [
  '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw',
  '31 22 0:27 / /tmp/vc-bench-x/node/rootfs rw - overlay overlay rw,lowerdir=/a',
  '32 22 0:28 / /tmp/vc-bench-x\\040two/m rw - tmpfs tmpfs rw',
  '33 22 0:29 / /tmp/vc-bench-xy rw - tmpfs tmpfs rw',
  '34 22 0:30 / /tmp/vc-bench-x rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('mountsUnder', () => {
  it.each([
    ['/tmp/vc-bench-x', ['/tmp/vc-bench-x/node/rootfs', '/tmp/vc-bench-x']],
    ['/tmp/vc-bench-x/', ['/tmp/vc-bench-x/node/rootfs', '/tmp/vc-bench-x']],
    ['/tmp/vc-bench-x two', ['/tmp/vc-bench-x two/m']],
    ['/tmp/vc-bench-z', []],
    ['/tmp/vc-bench-xy', ['/tmp/vc-bench-xy']],
  ])('under %s: %j (a sibling with the same prefix is not below it)', (dir, want) => {
    expect(mountsUnder(info, dir)).toEqual(want);
  });
});
