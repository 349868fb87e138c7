/**
 * `vc certs renew NAME [--cert CERT...]`: renew a tenant's certificates now rather than at their time (issue 33 §4),
 * in the manner of `kubeadm certs renew`, through the renew-certificates annotation the manager acts on. The
 * certificates go through the same steps as a scheduled renewal (docs/operations/certificates.md).
 */
import type { Command } from 'commander';
import { ANN } from '../../names/names.ts';
import { parseRenewalRequest, RENEWABLE } from '../../pki/renewal.ts';
import { addClusterOptions, clusterClient } from './kubeconfig.ts';
import { CliError } from './errors.ts';
import { annotate, read } from './sleep.ts';

interface Flags {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  cert: string[];
}

/**
 * renewalRequestValue is the annotation's value for a renewal asked for at `now` (to the second) of `certs` (every
 * renewable certificate when empty), checked as the manager reads it: an unknown name is refused here.
 */
export function renewalRequestValue(certs: readonly string[], now: Date): string {
  const time = new Date(Math.floor(now.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const value = certs.length ? `${certs.join(',')}@${time}` : time;
  const r = parseRenewalRequest(value, '--cert');
  if ('refused' in r) throw new CliError(r.refused);
  return value;
}

/** registerCertsCommands adds `vc certs renew`. */
export function registerCertsCommands(program: Command): void {
  const certs = program.command('certs').description("a tenant's certificates");
  addClusterOptions(certs.command('renew <name>'))
    .description(
      "renew a tenant's certificates at once, as at the end of their life: those issued before now get new ones " +
        '(the kubelet client one in two steps, published first), without restarting the apiserver',
    )
    .option(
      '--cert <cert>',
      `a certificate to renew (repeat for more; default all): ${Object.keys(RENEWABLE).join(', ')}`,
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('-n, --namespace <ns>', 'namespace of the VirtualCluster', 'default')
    .action(async (name: string, o: Flags) => {
      const value = renewalRequestValue(o.cert, new Date());
      const c = await clusterClient(o);
      await read(c, o.namespace, name);
      await annotate(c, o.namespace, name, ANN.renewCertificates, value);
      process.stdout.write(
        `VirtualCluster ${o.namespace}/${name}: ${ANN.renewCertificates}=${value}; the manager renews ` +
          `${o.cert.length ? o.cert.join(', ') : 'every renewable certificate'} issued before then at its next ` +
          'reconcile (vc describe: CertificatesValid; kubeletClientCertFingerprint for kubelet-client)\n',
      );
    });
}
