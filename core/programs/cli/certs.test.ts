import { describe, expect, it } from 'vitest';
import { parseRenewalRequest } from '../../pki/renewal.ts';
import { renewalRequestValue } from './certs.ts';

describe('vc certs renew: the annotation it writes', () => {
  const now = new Date('2026-12-01T10:00:00.750Z');
  it.each([
    // [--cert values, annotation]
    [[], '2026-12-01T10:00:00Z'],
    [['kubelet-client'], 'kubelet-client@2026-12-01T10:00:00Z'],
    [['admin', 'controller-manager'], 'admin,controller-manager@2026-12-01T10:00:00Z'],
  ])('--cert %j: %s, which the manager reads as that request', (certs, value) => {
    expect(renewalRequestValue(certs, now)).toBe(value);
    expect(parseRenewalRequest(value, 'x')).toMatchObject({ before: new Date('2026-12-01T10:00:00Z') });
  });

  it('refuses an unknown certificate before writing anything, naming the flag and the names it takes', () => {
    expect(() => renewalRequestValue(['kubelet'], now)).toThrow(
      '--cert: "kubelet@2026-12-01T10:00:00Z": unknown certificate "kubelet"; the names are apiserver, ' +
        'front-proxy-client, admin, controller-manager, scheduler, kubelet-client',
    );
  });
});
