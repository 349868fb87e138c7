import { describe, expect, it } from 'vitest';
import { externalNameRefusal } from './externalname.ts';

const cases: Array<[string, string | undefined, boolean]> = [
  ['an external host', 'db.example.com', false],
  ['an external host with a trailing dot', 'db.example.com.', false],
  ['the super apiserver', 'kubernetes.default.svc', true],
  ["another tenant's Service", 'web.team-b-4d5e6f-prod-default.svc.cluster.local', true],
  ['a name under the cluster domain', 'anything.cluster.local', true],
  ['a name under the cluster domain, in capitals', 'Web.Default.SVC.Cluster.Local.', true],
  ['a single label, completed by the search path', 'kubernetes', true],
  ['the node metadata address', '169.254.169.254', true],
  ['an IPv6 address', 'fd00::1', true],
  ['a .local name', 'printer.local', true],
  ['no name at all', undefined, true],
  ['the super apiserver by a short name a search path completes', 'kubernetes.default', false],
  ['a Pod record spelling the metadata address, in another cluster domain', '169-254-169-254.x.pod.k8s.example', true],
  ["a Service record in the super's cluster domain, whatever it is", 'web.other.svc.k8s.example', true],
  ['loopback in two numeric labels', '127.1', true],
  ['loopback in hex labels', '0x7f.0x1', true],
  ['a .localhost name', 'api.localhost', true],
  ["the cloud's metadata name", 'metadata.google.internal', true],
  ["a cloud's private zone", 'ip-10-0-0-1.ec2.internal', true],
  ['a home network name', 'nas.home.arpa', true],
  ['a host whose label only contains pod', 'podcasts.example.com', false],
];

describe('externalNameRefusal', () => {
  it.each(cases)('%s (%s)', (_n, externalName, refused) => {
    const r = externalNameRefusal({ type: 'ExternalName', externalName }, 'cluster.local');
    expect(r !== undefined).toBe(refused);
    if (r) expect(r.message).toMatch(/^spec\.externalName /);
  });

  it('looks only at ExternalName Services', () => {
    expect(externalNameRefusal({ type: 'ClusterIP', externalName: 'kubernetes' }, 'cluster.local')).toBeUndefined();
  });

  it("refuses names under the tenant's own cluster domain", () => {
    expect(
      externalNameRefusal({ type: 'ExternalName', externalName: 'x.corp.internal' }, 'corp.internal'),
    ).toBeDefined();
  });
});
