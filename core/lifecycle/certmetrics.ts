import { Gauge } from 'prom-client';
import { registry as metricsRegistry } from '../metrics/registry.ts';
import type { IssuedCertificate } from './certificates.ts';

const live = new Set<CertificateExpiries>();
new Gauge({
  name: 'vc_tenant_certificate_expiry_timestamp_seconds',
  help: 'When each certificate a provisioner renews for a tenant expires (Unix seconds).',
  labelNames: ['vc_namespace', 'vc_name', 'certificate'],
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const e of live)
      for (const [key, certs] of e.entries()) {
        const [ns = '', name = ''] = key.split('/');
        for (const c of certs)
          this.set({ vc_namespace: ns, vc_name: name, certificate: c.name }, c.notAfter.getTime() / 1000);
      }
  },
});

/** CertificateExpiries holds the certificates each served VirtualCluster key's provisioner last reported. */
export class CertificateExpiries {
  private readonly byKey = new Map<string, IssuedCertificate[]>();

  /** set records the key's certificates. */
  set(key: string, certs: IssuedCertificate[]): void {
    this.byKey.set(key, certs);
  }

  /** delete forgets a key that is gone. */
  delete(key: string): void {
    this.byKey.delete(key);
  }

  /** entries lists every key with its certificates. */
  entries(): IterableIterator<[string, IssuedCertificate[]]> {
    return this.byKey.entries();
  }

  /** register makes the metric report these certificates; unregister stops it. */
  register(): void {
    live.add(this);
  }

  /** unregister stops the metric reporting these certificates. */
  unregister(): void {
    live.delete(this);
  }
}
