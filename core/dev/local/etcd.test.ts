import { describe, expect, it } from 'vitest';
import { localEtcdFlags } from './etcd.ts';

describe('localEtcdFlags', () => {
  const base = { dir: '/s/etcd', endpoint: 'http://127.0.0.1:2379', peerPort: 2380, quotaBackendBytes: 1024 };
  it('runs one member on loopback with its data, quota and no metrics listener', () => {
    expect(localEtcdFlags(base)).toEqual([
      '--name=local',
      '--data-dir=/s/etcd/data',
      '--unsafe-no-fsync=true',
      '--listen-client-urls=http://127.0.0.1:2379',
      '--advertise-client-urls=http://127.0.0.1:2379',
      '--listen-peer-urls=http://127.0.0.1:2380',
      '--initial-advertise-peer-urls=http://127.0.0.1:2380',
      '--initial-cluster=local=http://127.0.0.1:2380',
      '--listen-metrics-urls=',
      '--quota-backend-bytes=1024',
      '--log-level=warn',
    ]);
  });

  it("takes a ClusterVersion's flags: a default of that name is replaced in place, others are added", () => {
    const args = localEtcdFlags({ ...base, extraArgs: { 'quota-backend-bytes': '2048', 'snapshot-count': '5000' } });
    expect(args).toContain('--quota-backend-bytes=2048');
    expect(args).not.toContain('--quota-backend-bytes=1024');
    expect(args.at(-1)).toBe('--snapshot-count=5000');
    expect(args).toHaveLength(12);
  });
});
