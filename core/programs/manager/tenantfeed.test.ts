import { describe, expect, it } from 'vitest';
import { MutableTenantRegistry, tenantFrom } from '../../tenancy/tenant.ts';
import { TenantFeed, type TenantFeedSource } from './tenantfeed.ts';
import { retriedOnce } from './manager.ts';
import { knownSuperCluster } from './term.ts';

const tenant = (name: string) => tenantFrom({ vcNamespace: 'ns', vcName: name, vcUid: `u-${name}`, key: name });

/** source is a meta cluster's tenant set as the feed reads it (in the manager, MetaTenantRegistry). */
function source(): MutableTenantRegistry & TenantFeedSource & { starts: number } {
  return Object.assign(new MutableTenantRegistry(), {
    starts: 0,
    async start(this: { starts: number }) {
      this.starts++;
    },
    async stop() {},
  });
}

const keys = (r: MutableTenantRegistry) =>
  r
    .list()
    .map((t) => t.key)
    .sort();

describe('TenantFeed', () => {
  it('a syncer process follows the meta cluster all along and never removes a static tenant', async () => {
    const tenants = new MutableTenantRegistry([tenant('static')]);
    const meta = source();
    const feed = new TenantFeed(tenants, meta, false);
    meta.upsert(tenant('a'));
    await feed.lead();
    meta.upsert(tenant('b'));
    meta.remove('a');
    meta.remove('static');
    expect(keys(tenants)).toEqual(['b', 'static']);
  });

  it('a manager standing by follows the meta cluster, leaves the set to its controller while it leads, and takes it back', async () => {
    const tenants = new MutableTenantRegistry([tenant('static')]);
    const meta = source();
    const feed = new TenantFeed(tenants, meta, true);
    meta.upsert(tenant('a'));
    expect(keys(tenants)).toEqual(['a', 'static']);
    await feed.lead();
    meta.upsert(tenant('b'));
    tenants.upsert(tenant('term-only'));
    expect(keys(tenants)).toEqual(['a', 'static', 'term-only']);
    feed.standBy();
    expect(keys(tenants)).toEqual(['a', 'b', 'static']);
  });

  it('starts its source once, and again after a start that failed', async () => {
    const meta = source();
    let fail = true;
    meta.start = async function (this: { starts: number }) {
      this.starts++;
      if (fail) throw new Error('meta cluster unreachable');
    };
    const feed = new TenantFeed(new MutableTenantRegistry(), meta, true);
    await expect(feed.start()).rejects.toThrow('meta cluster unreachable');
    fail = false;
    await feed.start();
    await feed.lead();
    expect(meta.starts).toBe(2);
  });
});

describe('retriedOnce', () => {
  it('hands every caller one result and loads again after a failure', async () => {
    let calls = 0;
    const load = retriedOnce(async () => {
      calls++;
      if (calls === 1) throw new Error('first');
      return calls;
    });
    await expect(load()).rejects.toThrow('first');
    expect(await Promise.all([load(), load()])).toEqual([2, 2]);
    expect(calls).toBe(2);
  });
});

describe('knownSuperCluster', () => {
  it('accepts a live name and lists the known ones otherwise', () => {
    expect(knownSuperCluster([{ name: 'a' }, { name: 'b' }], 'b')).toBe(true);
    expect(knownSuperCluster([{ name: 'a' }, { name: 'b' }], 'c')).toBe(
      'no super cluster of that name is configured or registered (known: a, b)',
    );
  });
});
