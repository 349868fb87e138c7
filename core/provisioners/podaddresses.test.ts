import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/client.ts';
import { LABEL, MANAGER } from '../../plugins/sdk/src/names.ts';
import { PodAddressIndex, podAddressesOf } from './podaddresses.ts';

const pod = (
  name: string,
  o: {
    root?: string;
    managed?: boolean;
    ip?: string;
    ips?: string[];
    phase?: string;
    deleting?: boolean;
    hostNetwork?: boolean;
  } = {},
): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: `${o.root ?? 'a-1'}-default`,
      labels: {
        ...(o.managed !== false && { [LABEL.managedBy]: MANAGER }),
        ...(o.root !== '' && { [LABEL.cluster]: o.root ?? 'a-1' }),
      },
      ...(o.deleting && { deletionTimestamp: '2026-01-01T00:00:00Z' }),
    },
    spec: { ...(o.hostNetwork && { hostNetwork: true }) },
    status: {
      ...(o.phase && { phase: o.phase }),
      ...(o.ip && { podIP: o.ip }),
      ...(o.ips && { podIPs: o.ips.map((ip) => ({ ip })) }),
    },
  }) as KubeObject;

describe('podAddressesOf', () => {
  it.each([
    {
      name: "a running Pod of the syncer's",
      p: pod('w', { ip: '10.1.0.5', phase: 'Running' }),
      want: { root: 'a-1', addresses: ['10.1.0.5'] },
    },
    {
      name: 'both families, each once',
      p: pod('w', { ip: '10.1.0.5', ips: ['10.1.0.5', 'fd00::5'] }),
      want: { root: 'a-1', addresses: ['10.1.0.5', 'fd00::5'] },
    },
    { name: 'no address yet', p: pod('w', { phase: 'Pending' }), want: undefined },
    {
      name: "a Pod the syncer did not make (the platform's)",
      p: pod('w', { ip: '10.1.0.5', managed: false }),
      want: undefined,
    },
    { name: 'no tenant label', p: pod('w', { ip: '10.1.0.5', root: '' }), want: undefined },
    {
      name: 'being deleted: its address goes back to the pool',
      p: pod('w', { ip: '10.1.0.5', deleting: true }),
      want: undefined,
    },
    { name: 'finished (Succeeded)', p: pod('w', { ip: '10.1.0.5', phase: 'Succeeded' }), want: undefined },
    { name: 'finished (Failed, evicted)', p: pod('w', { ip: '10.1.0.5', phase: 'Failed' }), want: undefined },
    {
      name: "on the host network: the address is the node's",
      p: pod('w', { ip: '10.1.0.5', hostNetwork: true }),
      want: undefined,
    },
  ])('$name', ({ p, want }) => {
    expect(podAddressesOf(p)).toEqual(want);
  });
});

describe('PodAddressIndex', () => {
  it('folds Pod events into addresses per tenant and tells only the tenants whose set changed', () => {
    const feed = new PodAddressIndex();
    const told: string[] = [];
    const inf = {
      h: {
        onAdd: (p: KubeObject) => told.push(...feed.change(undefined, p)),
        onUpdate: (o: KubeObject, p: KubeObject) => told.push(...feed.change(o, p)),
        onDelete: (p: KubeObject) => told.push(...feed.change(p, undefined)),
      },
    };
    const a1 = pod('w1', { ip: '10.1.0.5' });
    const a2 = pod('w2', { ip: '10.1.0.6' });
    const b1 = pod('w1', { root: 'b-2', ip: '10.1.0.7' });
    inf.h.onAdd(a1);
    inf.h.onAdd(a2);
    inf.h.onAdd(b1);
    expect(feed.of('a-1')).toEqual(['10.1.0.5', '10.1.0.6']);
    expect(feed.of('b-2')).toEqual(['10.1.0.7']);
    expect(told).toEqual(['a-1', 'a-1', 'b-2']);
    // a status write that keeps the address tells nobody
    inf.h.onUpdate(a1, { ...a1, metadata: { ...a1.metadata, resourceVersion: '9' } });
    expect(told).toHaveLength(3);
    // deletion starts: the address leaves at once, before the Pod is gone
    const deleting = pod('w1', { ip: '10.1.0.5', deleting: true });
    inf.h.onUpdate(a1, deleting);
    expect(feed.of('a-1')).toEqual(['10.1.0.6']);
    inf.h.onDelete(deleting);
    inf.h.onDelete(a2);
    expect(feed.of('a-1')).toEqual([]);
    expect(told).toEqual(['a-1', 'a-1', 'b-2', 'a-1', 'a-1']);
    expect(feed.of('nobody')).toEqual([]);
  });
});
