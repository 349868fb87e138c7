import { describe, expect, it } from 'vitest';
import { nodeAddressesChanged, readsNodeAddresses, type NodeWithAddresses, type Provisioner } from './provisioner.ts';

const node = (...addresses: string[]): NodeWithAddresses => ({
  status: { addresses: addresses.map((address) => ({ type: 'InternalIP', address })) },
});

describe('nodeAddressesChanged', () => {
  it.each([
    ['a Node that joins', undefined, node('10.0.0.5'), true],
    ['a Node that leaves', node('10.0.0.5'), undefined, true],
    ['a Node without addresses that joins', undefined, node(), true],
    ['an address added', node('10.0.0.5'), node('10.0.0.5', '203.0.113.7'), true],
    ['an address replaced', node('10.0.0.5'), node('10.0.0.6'), true],
    ['the same addresses in another order', node('10.0.0.5', 'fd00::5'), node('fd00::5', '10.0.0.5'), false],
    ['an address listed twice', node('10.0.0.5'), node('10.0.0.5', '10.0.0.5'), false],
    ['a Hostname added (a name, not an address)', node('10.0.0.5'), node('10.0.0.5', 'worker-1'), false],
    ['a heartbeat: nothing of the addresses', node('10.0.0.5'), node('10.0.0.5'), false],
  ])('%s: %s', (_what, a, b, changed) => {
    expect(nodeAddressesChanged(a, b)).toBe(changed);
  });
});

describe('readsNodeAddresses', () => {
  const base: Provisioner = {
    type: 't',
    ensure: () => Promise.resolve({ ready: false, waitingFor: 'nothing' }),
    remove: async () => {},
  };
  it('is true only for a provisioner that marks itself so', () => {
    expect(readsNodeAddresses({ ...base, readsNodeAddresses: true } as Provisioner)).toBe(true);
    expect(readsNodeAddresses(base)).toBe(false);
    expect(readsNodeAddresses(undefined)).toBe(false);
  });
});
