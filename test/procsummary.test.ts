import { describe, expect, it } from 'vitest';
import { processSummaryLines, summarizeProcessStats } from './procsummary.ts';

const line = (o: object) => JSON.stringify(o);

describe('process start summary', () => {
  const cases: Array<{ name: string; lines: string[]; top?: number; want: string[] }> = [
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
    {
      name: 'CPU time of stopped components and of whole files, most costly file first',
      top: 3,
      lines: [
        line({ component: 'kube-apiserver', event: 'start', label: 'a.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'stop', cpu: 2.5, label: 'a.it.test.ts' }),
        line({ component: 'etcd', event: 'start', label: 'a.it.test.ts' }),
        line({ component: 'etcd', event: 'stop', cpu: 0.75, label: 'a.it.test.ts' }),
        line({ component: 'test file', event: 'file', cpu: 9, label: 'a.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'start', label: 'b.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'start', label: 'b.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'stop', cpu: 3, label: 'b.it.test.ts' }),
        line({ component: 'test file', event: 'file', cpu: 12.25, label: 'b.it.test.ts' }),
        line({ component: 'test file', event: 'file', cpu: 1, label: 'c.it.test.ts' }),
        line({ component: 'kube-apiserver', event: 'stop', label: 'c.it.test.ts' }),
      ],
      want: [
        'process starts: 4',
        '      3  kube-apiserver, 5.5 CPU-s over 2 stopped',
        '      1  etcd, 0.8 CPU-s over 1 stopped',
        'test files starting the most processes:',
        '      2  a.it.test.ts',
        '      2  b.it.test.ts',
        'test files using the most CPU (CPU-s of the file with all it reaped; of its components, with starts):',
        '     12.3  b.it.test.ts: kube-apiserver 3.0 (2)',
        '      9.0  a.it.test.ts: kube-apiserver 2.5 (1), etcd 0.8 (1)',
        '      1.0  c.it.test.ts',
      ],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      expect(processSummaryLines(summarizeProcessStats(c.lines), c.top ?? 1)).toEqual(c.want);
    });
});
