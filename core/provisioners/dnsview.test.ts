import { describe, expect, it } from 'vitest';
import { ANN } from '../names/names.ts';
import { joinedNetworks, rewriteServices, splitSuperView, superAddressed } from './dnsview.ts';
import { readyEndpointsOn, superViewServer } from '@virtualcluster-ts/plugin-sdk';

const svc = (spec: Record<string, unknown>, superIP?: string) => ({
  kind: 'Service',
  metadata: { name: 'web', ...(superIP && { annotations: { [ANN.superClusterIP]: superIP } }) },
  spec,
});

describe('superAddressed', () => {
  it.each([
    [
      'one super cluster: a ClusterIP Service keeps its own (the nodes translate it)',
      svc({ clusterIP: '10.32.0.5' }, '10.96.1.2'),
      '10.32.0.5',
    ],
    ['a Service not synced yet keeps its own', svc({ clusterIP: '10.32.0.5' }), '10.32.0.5'],
    ['a headless Service stays headless', svc({ clusterIP: 'None' }, '10.96.1.2'), 'None'],
    ['an ExternalName Service is left alone', svc({ type: 'ExternalName' }, '10.96.1.2'), undefined],
  ])('%s', (_n, s, want) => {
    expect(superAddressed(s).spec.clusterIP).toBe(want);
  });
  it('one super cluster: the Service is returned unchanged', () => {
    const s = svc({ clusterIP: '10.32.0.5', clusterIPs: ['10.32.0.5'] }, '10.96.1.2');
    expect(superAddressed(s)).toBe(s);
  });
});

describe('rewriteServices', () => {
  const s = {
    ...svc({ clusterIP: '10.32.0.5' }),
    metadata: { name: 'web', annotations: { [`${ANN.superClusterIP}.r1`]: '10.96.1.2' } },
  };
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
  ])('rewrites %s for the view of one of several super clusters, and leaves it with one', (_n, doc, pick) => {
    expect(pick(JSON.parse(rewriteServices(JSON.stringify(doc), 'r1')))).toBe('10.96.1.2');
    expect(pick(JSON.parse(rewriteServices(JSON.stringify(doc))))).toBe('10.32.0.5');
  });
  it('leaves other documents and blank lines as they are', () => {
    const status = JSON.stringify({ kind: 'Status', code: 403 });
    expect(rewriteServices(status)).toBe(status);
    expect(rewriteServices('')).toBe('');
  });
});

describe('the view of one super cluster', () => {
  const on = (sc: string) => `${ANN.superClusterIP}.${sc}`;
  const ready = (sc: string) => readyEndpointsOn(sc)!;
  const s2 = (spec: Record<string, unknown>, annotations: Record<string, string>) => ({
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop', annotations },
    spec,
  });
  it.each([
    [
      "its own copy's IP",
      s2({ clusterIP: '10.32.0.5' }, { [on('r2')]: '10.96.2.2', [on('r1')]: '10.96.1.1' }),
      { clusterIP: '10.96.2.2', clusterIPs: ['10.96.2.2'] },
    ],
    [
      "never another super cluster's IP: a Service with no copy here is named why",
      s2({ clusterIP: '10.32.0.5' }, { [on('r1')]: '10.96.1.1', [ANN.superClusterIP]: '10.96.1.1' }),
      { type: 'ExternalName', externalName: 'web.shop.not-on-super-cluster-r2.invalid' },
    ],
    ['headless stays headless', s2({ clusterIP: 'None' }, {}), { clusterIP: 'None' }],
    [
      'ExternalName is left alone',
      s2({ type: 'ExternalName', externalName: 'x.example' }, {}),
      { type: 'ExternalName', externalName: 'x.example' },
    ],
  ])('%s', (_n, svc, want) => {
    expect(superAddressed(svc, 'r2').spec).toEqual(want);
    expect(JSON.parse(rewriteServices(JSON.stringify({ type: 'ADDED', object: svc }), 'r2')).object.spec).toEqual(want);
  });

  describe('joined Pod networks', () => {
    // r1 and r2 share network "flat", r3 has one of its own, r4 none
    const joined = joinedNetworks([
      { name: 'r1', network: 'flat' },
      { name: 'r2', network: 'flat' },
      { name: 'r3', network: 'island' },
      { name: 'r4' },
    ]);
    const headless = { clusterIP: 'None', clusterIPs: ['None'] };
    const invalid = (sc: string) => ({
      type: 'ExternalName',
      externalName: `web.shop.not-on-super-cluster-${sc}.invalid`,
    });
    it.each([
      [
        'a copy here keeps its own IP',
        'r1',
        { [on('r1')]: '10.96.1.1', [on('r2')]: '10.96.2.2' },
        { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] },
      ],
      [
        'copies only on joined super clusters: headless, answered with their Pod IPs',
        'r1',
        { [on('r2')]: '10.96.2.2' },
        headless,
      ],
      [
        'a copy on a super cluster not joined: named why',
        'r1',
        { [on('r2')]: '10.96.2.2', [on('r3')]: '10.96.3.3' },
        invalid('r1'),
      ],
      ['only on a super cluster of another network: named why', 'r1', { [on('r3')]: '10.96.3.3' }, invalid('r1')],
      ['a super cluster in no network joins none', 'r4', { [on('r1')]: '10.96.1.1' }, invalid('r4')],
      ['the only one of its network joins none', 'r3', { [on('r1')]: '10.96.1.1' }, invalid('r3')],
      ['no copy anywhere yet (no IP recorded): named why', 'r1', {}, invalid('r1')],
      ['an empty recorded IP is no copy', 'r1', { [on('r2')]: '' }, invalid('r1')],
      // a spread namespace: copies on r1 and r2, each syncer recording its copy's ready addresses (ready())
      [
        'spread, ready here: its own IP',
        'r1',
        { [on('r1')]: '10.96.1.1', [ready('r1')]: '10.244.1.5', [on('r2')]: '10.96.2.2', [ready('r2')]: '10.244.2.7' },
        { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] },
      ],
      [
        'spread, none ready here: the ready Pod IPs of the joined copies',
        'r1',
        { [on('r1')]: '10.96.1.1', [ready('r1')]: '', [on('r2')]: '10.96.2.2', [ready('r2')]: '10.244.2.9,10.244.2.7' },
        { clusterIP: '10.244.2.7', clusterIPs: ['10.244.2.7', '10.244.2.9'] },
      ],
      [
        'spread, none ready here nor there: its own IP (refused at once)',
        'r1',
        { [on('r1')]: '10.96.1.1', [ready('r1')]: '', [on('r2')]: '10.96.2.2', [ready('r2')]: '' },
        { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] },
      ],
      [
        'spread, nothing recorded here yet: its own IP',
        'r1',
        { [on('r1')]: '10.96.1.1', [on('r2')]: '10.96.2.2', [ready('r2')]: '10.244.2.7' },
        { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] },
      ],
      [
        'spread onto a super cluster of another network: never its addresses',
        'r1',
        { [on('r1')]: '10.96.1.1', [ready('r1')]: '', [on('r3')]: '10.96.3.3', [ready('r3')]: '10.244.3.3' },
        { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] },
      ],
      [
        'spread over three: only the joined one of them',
        'r1',
        {
          [on('r1')]: '10.96.1.1',
          [ready('r1')]: '',
          [on('r2')]: '10.96.2.2',
          [ready('r2')]: '10.244.2.7',
          [on('r3')]: '10.96.3.3',
          [ready('r3')]: '10.244.3.3',
        },
        { clusterIP: '10.244.2.7', clusterIPs: ['10.244.2.7'] },
      ],
      [
        'spread, a super cluster in no network: its own IP',
        'r4',
        { [on('r4')]: '10.96.4.4', [ready('r4')]: '', [on('r1')]: '10.96.1.1', [ready('r1')]: '10.244.1.5' },
        { clusterIP: '10.96.4.4', clusterIPs: ['10.96.4.4'] },
      ],
    ])('%s', (_n, sc, annotations, want) => {
      const svc = s2({ clusterIP: '10.32.0.5', clusterIPs: ['10.32.0.5'], ports: [{ port: 80 }] }, annotations);
      expect(superAddressed(svc, sc, joined).spec).toEqual({ ports: [{ port: 80 }], ...want });
      const list = { kind: 'ServiceList', items: [svc] };
      expect(JSON.parse(rewriteServices(JSON.stringify(list), sc, joined)).items[0].spec).toEqual({
        ports: [{ port: 80 }],
        ...want,
      });
    });
    it.each([
      ['headless stays headless', { clusterIP: 'None' }],
      ['ExternalName is left alone', { type: 'ExternalName', externalName: 'x.example' }],
    ])('%s', (_n, spec) => {
      expect(superAddressed(s2(spec, { [on('r2')]: '10.96.2.2' }), 'r1', joined).spec).toEqual(spec);
    });
    it('without joined networks a spread Service keeps its own copy with none ready there', () => {
      const svc = s2(
        { clusterIP: '10.32.0.5' },
        { [on('r1')]: '10.96.1.1', [ready('r1')]: '', [ready('r2')]: '10.244.2.7' },
      );
      expect(superAddressed(svc, 'r1').spec).toEqual({ clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1'] });
    });
    it('joinedNetworks lists the others of a network, never the asker', () => {
      expect([...joined('r2')]).toEqual(['r1']);
      expect([...joined('r3')]).toEqual([]);
      expect([...joined('unknown')]).toEqual([]);
    });
  });

  it.each([
    ['/super/r2/api/v1/services?watch=true', { superCluster: 'r2', path: '/api/v1/services?watch=true' }],
    ['/api/v1/services', { path: '/api/v1/services' }],
    ['/super/R2!/api/v1/services', { path: '/super/R2!/api/v1/services' }],
    ['/super/r2', { path: '/super/r2' }],
  ])('splitSuperView %s', (url, want) => expect(splitSuperView(url)).toEqual(want));

  it('superViewServer puts the prefix after the server', () => {
    expect(superViewServer('https://10.0.0.1:4443/', 'r2')).toBe('https://10.0.0.1:4443/super/r2');
  });
});
