import { describe, expect, it } from 'vitest';
import { NUMERIC_HOST, privateNameRefusal } from './hosts.ts';

describe('privateNameRefusal', () => {
  it.each([
    ['localhost', 'loopback'],
    ['localhost.localdomain', 'loopback'],
    ['localhost6.localdomain6', 'loopback'],
    ['ip6-localhost', 'loopback'],
    ['api.localhost', '.localhost'],
    ['node-1.localdomain', '.localdomain'],
    ['metadata.google.internal', '.internal'],
    ['ip-10-0-0-1.ec2.internal', '.internal'],
    ['printer.local', '.local'],
    ['nas.home.arpa', '.home.arpa'],
    ['git.corp', '.corp'],
    ['registry.lan', '.lan'],
  ])('refuses %s (%s)', (name, why) => expect(privateNameRefusal(name)).toContain(why));

  it.each(['docker.io', 'registry.k8s.io', 'localhosting.example.com', 'internal.example.com', 'example.local.io'])(
    'leaves %s alone: the public DNS answers it',
    (name) => expect(privateNameRefusal(name)).toBeUndefined(),
  );
});

describe('NUMERIC_HOST', () => {
  it.each(['127.1', '0x7f.1', '2130706433', '0177.0.0.1', '10.0.0.1'])('reads %s as an address', (h) =>
    expect(NUMERIC_HOST.test(h)).toBe(true),
  );
  it.each(['1.2.3.4.5', 'x1.example.com', '0x7g'])('does not read %s as one', (h) =>
    expect(NUMERIC_HOST.test(h)).toBe(false),
  );
});
