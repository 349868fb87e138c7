/**
 * Stream limits of the vn-agent: every request it relays (a log read, a `follow` log stream, exec, attach,
 * port-forward) holds a kubelet connection for as long as it runs. Without a bound per tenant, one tenant that opens
 * thousands of `kubectl logs -f` takes every connection and file descriptor the agent has, and the other tenants'
 * streams wait or fail. StreamLimits counts what runs, per tenant and in all, and refuses the one over a limit with a
 * reason the tenant reads (HTTP 429).
 */

/** DEFAULT_STREAMS_PER_TENANT is how many relayed requests and streams one tenant may have open on one agent. */
export const DEFAULT_STREAMS_PER_TENANT = 64;
/** DEFAULT_STREAMS is how many the agent relays in all, across tenants. */
export const DEFAULT_STREAMS = 1024;
/** TOO_MANY_STREAMS is the HTTP status of a request over a limit. */
export const TOO_MANY_STREAMS = 429;

/** StreamLimitOptions are the limits; absent ones take the defaults, 0 is not allowed (the config schema's minimum). */
export interface StreamLimitOptions {
  perTenant?: number;
  total?: number;
}

/** Slot is a granted stream: release it once, when the request or stream ends. */
export type Slot = { ok: true; release: () => void } | { ok: false; reason: string };

/** StreamLimits grants slots per tenant and in all; a refused tenant does not count against the others. */
export class StreamLimits {
  private readonly open = new Map<string, number>();
  private all = 0;
  readonly perTenant: number;
  readonly total: number;

  constructor(o: StreamLimitOptions = {}) {
    this.perTenant = o.perTenant ?? DEFAULT_STREAMS_PER_TENANT;
    this.total = o.total ?? DEFAULT_STREAMS;
  }

  /** acquire takes a slot for a tenant, or says which limit refuses it. */
  acquire(tenant: string): Slot {
    const mine = this.open.get(tenant) ?? 0;
    if (mine >= this.perTenant)
      return {
        ok: false,
        reason:
          `too many streams: tenant ${tenant} has ${mine} requests and streams open on this vn-agent, its limit ` +
          `(streamsPerTenant ${this.perTenant}); close some (kubectl logs -f, exec, port-forward) or retry later`,
      };
    if (this.all >= this.total)
      return {
        ok: false,
        reason: `too many streams: this vn-agent relays ${this.all} requests and streams, its limit (streams ${this.total}); retry later`,
      };
    this.open.set(tenant, mine + 1);
    this.all++;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.all--;
        const n = (this.open.get(tenant) ?? 1) - 1;
        if (n > 0) this.open.set(tenant, n);
        else this.open.delete(tenant);
      },
    };
  }

  /** openOf is how many slots a tenant holds now. */
  openOf(tenant: string): number {
    return this.open.get(tenant) ?? 0;
  }
}
