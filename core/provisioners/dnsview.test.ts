import { describe, expect, it } from 'vitest';
import { ANN } from '../names/names.ts';
import { rewriteServices, superAddressed } from './dnsview.ts';

const svc = (spec: Record<string, unknown>, superIP?: string) => ({
  kind: 'Service',
  metadata: { name: 'web', ...(superIP && { annotations: { [ANN.superClusterIP]: superIP } }) },
  spec,
});

describe('superAddressed', () => {
  it.each([
    ['a ClusterIP Service shows its super cluster IP', svc({ clusterIP: '10.32.0.5' }, '10.96.1.2'), '10.96.1.2'],
    ['a Service not synced yet keeps its own', svc({ clusterIP: '10.32.0.5' }), '10.32.0.5'],
    ['a headless Service stays headless', svc({ clusterIP: 'None' }, '10.96.1.2'), 'None'],
    ['an ExternalName Service is left alone', svc({ type: 'ExternalName' }, '10.96.1.2'), undefined],
  ])('%s', (_n, s, want) => {
    expect(superAddressed(s).spec.clusterIP).toBe(want);
  });
  it('replaces clusterIPs with the super IP alone', () => {
    expect(superAddressed(svc({ clusterIP: '10.32.0.5', clusterIPs: ['10.32.0.5'] }, '10.96.1.2')).spec).toEqual({
      clusterIP: '10.96.1.2',
      clusterIPs: ['10.96.1.2'],
    });
  });
});

describe('rewriteServices', () => {
  const s = svc({ clusterIP: '10.32.0.5' }, '10.96.1.2');
  it.each([
    [
      'a list',
      { kind: 'ServiceList', items: [s] },
      (o: { items: Array<{ spec: { clusterIP: string } }> }) => o.items[0]!.spec.clusterIP,
    ],
    [
      'a watch event',
      { type: 'MODIFIED', object: s },
      (o: { object: { spec: { clusterIP: string } } }) => o.object.spec.clusterIP,
    ],
    ['a single Service', s, (o: { spec: { clusterIP: string } }) => o.spec.clusterIP],
  ])('rewrites %s', (_n, doc, pick) => {
    expect(pick(JSON.parse(rewriteServices(JSON.stringify(doc))))).toBe('10.96.1.2');
  });
  it('leaves other documents and blank lines as they are', () => {
    const status = JSON.stringify({ kind: 'Status', code: 403 });
    expect(rewriteServices(status)).toBe(status);
    expect(rewriteServices('')).toBe('');
  });
});
