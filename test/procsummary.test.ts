import { describe, expect, it } from 'vitest';
import { processSummaryLines, summarizeProcessStats } from './procsummary.ts';

const line = (o: object) => JSON.stringify(o);

describe('process start summary', () => {
  const cases: Array<{ name: string; lines: string[]; want: string[] }> = [
    { name: 'nothing started', lines: [], want: [] },
    {
      name: 'starts and ready times per component, busiest files first',
      lines: [
        line({ component: 'etcd', event: 'start', label: 'a.it.test.ts' }),
        line({ component: 'etcd', event: 'ready', ms: 1000, label: 'a.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'start', label: 'a.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'ready', ms: 4000, label: 'a.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'start', label: 'b.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'ready', ms: 6000, label: 'b.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'start', label: 'b.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'start', label: 'b.it.test.ts' }),
      ],
      want: [
        'process starts: 5',
        '      4  kube-apiserver, ready in 5.0 s mean, 10.0 s summed',
        '      1  etcd, ready in 1.0 s mean, 1.0 s summed',
        'test files starting the most processes:',
        '      3  b.it.test.ts',
      ],
    },
    {
      name: 'a start without a readiness check, an unlabelled start and a torn line',
      lines: [line({ component: 'kubelet', event: 'start' }), '{"component":"etc'],
      want: [
        'process starts: 1',
        '      1  kubelet',
        'test files starting the most processes:',
        '      1  (unlabelled)',
      ],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(processSummaryLines(summarizeProcessStats(c.lines), 1)).toEqual(c.want);
    });
});
