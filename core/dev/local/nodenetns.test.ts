import { describe, expect, it } from 'vitest';
import { inNetns, nodeNetnsNames, uplinkOf } from './nodenetns.ts';

describe('uplinkOf', () => {
  it.each([
    ['10.213.0.0/24', '10.214.0.1', '10.214.0.2'],
    ['10.213.17.0/24', '10.214.17.1', '10.214.17.2'],
    ['10.213.249.0/24', '10.214.249.1', '10.214.249.2'],
  ])('pairs %s with the /30 of 10.214.0.0/16 of the same third octet', (cidr, host, node) => {
    expect(uplinkOf(cidr)).toEqual({ hostAddress: host, nodeAddress: node });
  });

  it.each(['10.212.3.0/24', '10.213.3.0/25', '10.213.300.0/24', '10.213.3.1/24', ''])('refuses %j', (cidr) => {
    expect(() => uplinkOf(cidr)).toThrow('a /24 of 10.213.0.0/16');
  });
});

describe('nodeNetnsNames', () => {
  it('derives names of at most 15 characters, distinct per node directory and stable for one', () => {
    const a = nodeNetnsNames('/state/nodes/r1-real-0');
    const b = nodeNetnsNames('/state/nodes/r2-real-0');
    for (const n of [a, b]) for (const v of Object.values(n)) expect(v.length).toBeLessThanOrEqual(15);
    expect(a).toEqual(nodeNetnsNames('/state/nodes/r1-real-0'));
    expect(a.netns).not.toBe(b.netns);
    expect(a.hostLink).not.toBe(b.hostLink);
    expect(new Set(Object.values(a)).size).toBe(3);
  });
});

describe('inNetns', () => {
  it('enters only the network namespace and execs the program with its own arguments', () => {
    expect(inNetns('vcns-1', '/bin/kubelet', ['--v=2'])).toEqual({
      command: 'nsenter',
      args: ['--net=/run/netns/vcns-1', '--', '/bin/kubelet', '--v=2'],
    });
  });
});
