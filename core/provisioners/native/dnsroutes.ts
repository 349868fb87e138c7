import { issueCert, type ControlPlanePKI } from '../../pki/pki.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import { DnsViews, type JoinedNetworks } from '../dnsview.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';

/** dnsViewServerName is the TLS server name a native tenant's DNS server asks the shared DNS view for. */
export function dnsViewServerName(root: string): string {
  return `${root}.dns-view.invalid`;
}

/**
 * DnsViewRoutes keeps the native tenants' routes on the one shared DNS view (core/provisioners/dnsview.ts) the
 * platform serves (NativeOptions.dnsView): the view is started with the first tenant that needs it, a failed start
 * is tried again by the next reconcile, and each tenant is told apart by its TLS server name (dnsViewServerName).
 */
export class DnsViewRoutes {
  /** the shared DNS view, started with the first tenant that needs it */
  private views?: Promise<DnsViews>;

  constructor(private readonly at: { host: string; port: number; joined?: JoinedNetworks }) {}

  /**
   * route routes the tenant's server name on the shared DNS view to its apiserver, with a serving certificate of the
   * tenant CA (its DNS server verifies it with its ServiceAccount's ca.crt); the certificate is made again only when
   * the CA or the apiserver address changed, or the manager restarted. It answers where the tenant's DNS server
   * reaches the view and the server name it asks for.
   */
  async route(
    vc: VirtualCluster,
    root: string,
    pki: ControlPlanePKI,
    target: { host: string; port: number; caPem: string },
  ): Promise<{ host: string; port: number; tlsServerName: string }> {
    const views = await this.started();
    const serverName = dnsViewServerName(root);
    const have = views.route(serverName)?.target;
    if (have?.caPem !== target.caPem || have.host !== target.host || have.port !== target.port) {
      const serving = await issueCert(pki.ca, {
        commonName: 'vc-tenant-dns-view',
        dnsNames: [serverName],
        usages: ['server'],
        validityDays: vc.spec.pkiExpireDays ?? TENANT_DEFAULTS.pkiExpireDays,
      });
      views.set({ serverName, certPem: serving.certPem, keyPem: serving.keyPem, target });
    }
    return { host: views.host, port: views.port, tlsServerName: serverName };
  }

  /** remove drops the tenant's route (nothing when the view never started, or failed to). */
  async remove(root: string): Promise<void> {
    (await this.views?.catch(() => undefined))?.delete(dnsViewServerName(root));
  }

  /** stop closes the shared DNS view (the manager stopping; it outlives leadership terms); a next route reopens it. */
  async stop(): Promise<void> {
    const views = this.views;
    this.views = undefined;
    await (await views?.catch(() => undefined))?.stop();
  }

  /** started starts the shared DNS view once; a failed start is tried again by the next call. */
  private started(): Promise<DnsViews> {
    if (!this.views) {
      const started = DnsViews.start(this.at);
      this.views = started;
      started.catch(() => {
        if (this.views === started) this.views = undefined;
      });
    }
    return this.views;
  }
}
