import { describe, expect, it } from 'vitest';
import {
  byWhom,
  formatRequests,
  parseRequestTotals,
  type RequestCounts,
  requestKey,
  type RequestRow,
  requestsPerPod,
  sumCounts,
} from './apirequests.ts';

const line = (verb: string, resource: string, subresource: string, code: string, v: number) =>
  `apiserver_request_total{code="${code}",component="apiserver",dry_run="",group="",resource="${resource}",` +
  `scope="resource",subresource="${subresource}",verb="${verb}",version="v1"} ${v}`;

describe('parseRequestTotals', () => {
  it.each([
    {
      name: 'sums over codes and keeps the subresource',
      text: [line('PATCH', 'pods', 'status', '200', 7), line('PATCH', 'pods', 'status', '409', 2)].join('\n'),
      want: { 'PATCH pods/status': 9 },
    },
    {
      name: 'a request on the resource itself has no subresource part',
      text: [line('POST', 'pods', '', '201', 3), line('POST', 'pods', 'binding', '201', 3)].join('\n'),
      want: { 'POST pods': 3, 'POST pods/binding': 3 },
    },
    {
      name: 'other metrics, their HELP and TYPE lines and histograms are not read',
      text: [
        '# HELP apiserver_request_total [STABLE] Counter of apiserver requests',
        '# TYPE apiserver_request_total counter',
        'apiserver_request_duration_seconds_count{verb="GET",resource="pods"} 99',
        'apiserver_request_total_other{verb="GET",resource="pods"} 5',
        line('WATCH', 'pods', '', '200', 2),
      ].join('\n'),
      want: { 'WATCH pods': 2 },
    },
    {
      name: 'a request with no resource (discovery) is kept under its verb',
      text: 'apiserver_request_total{code="200",component="apiserver",verb="GET"} 4',
      want: { 'GET ': 4 },
    },
    { name: 'nothing', text: '', want: {} },
  ])('$name', ({ text, want }) => {
    expect(parseRequestTotals(text)).toEqual(want);
  });
});

describe('requestsPerPod', () => {
  const pods = 100;
  it.each<{ name: string; before: RequestCounts; after: RequestCounts; bench: RequestCounts; want: RequestRow[] }>([
    {
      name: "the bench's creates are its own rows, the rest the syncer's, per Pod, the most first",
      before: { 'POST pods': 5, 'PATCH pods/status': 10 },
      after: { 'POST pods': 105, 'POST pods/binding': 100, 'PATCH pods/status': 210, 'GET pods': 0, 'PUT leases': 20 },
      bench: { 'POST pods': 100 },
      want: [
        { request: 'PATCH pods/status', perPod: 2, by: 'syncer' },
        { request: 'POST pods', perPod: 1, by: 'bench' },
        { request: 'POST pods/binding', perPod: 1, by: 'syncer' },
        { request: 'PUT leases', perPod: 0.2, by: 'apiserver' },
      ],
    },
    {
      name: 'more of a kind than the bench made: the excess is the syncer’s',
      before: {},
      after: { 'POST pods': 103 },
      bench: { 'POST pods': 100 },
      want: [
        { request: 'POST pods', perPod: 1, by: 'bench' },
        { request: 'POST pods', perPod: 0.03, by: 'syncer' },
      ],
    },
    {
      name: 'a counter that went down (an apiserver restarted) or did not move is left out',
      before: { 'GET pods': 50, 'LIST pods': 3 },
      after: { 'GET pods': 10, 'LIST pods': 3 },
      bench: {},
      want: [],
    },
  ])('$name', ({ before, after, bench, want }) => {
    expect(requestsPerPod(before, after, pods, bench)).toEqual(want);
  });
});

describe('byWhom', () => {
  it.each<[string, 'syncer' | 'apiserver']>([
    ['PUT leases', 'apiserver'],
    ['GET leases', 'apiserver'],
    ['GET /openapi/v3', 'apiserver'],
    ['LIST limitranges', 'apiserver'],
    ['WATCH resourcequotas', 'apiserver'],
    ['POST pods/binding', 'syncer'],
    ['PATCH pods/status', 'syncer'],
    ['LIST pods', 'syncer'],
    ['POST serviceaccounts/token', 'syncer'],
    ['PATCH nodes', 'syncer'],
  ])('%s: %s', (request, want) => {
    expect(byWhom(request)).toBe(want);
  });
});

describe('sumCounts, requestKey and formatRequests', () => {
  it('adds apiservers, names kinds, and totals only the syncer rows', () => {
    expect(sumCounts([{ 'GET pods': 1 }, { 'GET pods': 2, 'LIST pods': 1 }])).toEqual({
      'GET pods': 3,
      'LIST pods': 1,
    });
    expect(requestKey('POST', 'pods', 'binding')).toBe('POST pods/binding');
    expect(requestKey('LIST', 'nodes')).toBe('LIST nodes');
    const out = formatRequests([
      { request: 'POST pods', perPod: 1, by: 'bench' },
      { request: 'POST pods/binding', perPod: 1, by: 'syncer' },
      { request: 'PATCH pods/status', perPod: 1.25, by: 'syncer' },
      { request: 'PUT leases', perPod: 0.2, by: 'apiserver' },
    ]);
    expect(out.split('\n').at(-1)).toMatch(/^\s+2\.250 {2}tenant apiserver requests per Pod made by the syncer$/);
  });
});
