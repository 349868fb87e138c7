import { publishable, publishApiserverEndpoint } from '../kube/apiendpoint.ts';
import { KubeClient } from '../kube/client.ts';
import { objectKey } from '../kube/informer.ts';
import type { Result } from '../controller/runner.ts';
import { childLogger } from '../log.ts';
import type { Provisioned } from '../provisioners/provisioner.ts';
import { TENANT_DEFAULTS } from '../tenancy/defaults.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import { ensureTenantDns } from './tenantdns.ts';

// What the VirtualCluster controller writes into a served tenant's own apiserver, through the admin kubeconfig its
// provisioner answered: a failure is logged and tried again soon, the tenant keeps running.

const log = childLogger({ controller: 'virtualcluster' });

/** TENANT_WRITE_RETRY_MS is how soon a write into the tenant's apiserver that failed is tried again. */
const TENANT_WRITE_RETRY_MS = 5000;

/**
 * publishEndpoint writes the tenant's `default/kubernetes` Endpoints and EndpointSlice (its apiserver runs with
 * --endpoint-reconciler-type=none) with the provisioner's apiserverEndpoint, the address the tenant's Pods get as
 * KUBERNETES_SERVICE_HOST; nothing when that is not an address the apiserver takes in Endpoints (a host name,
 * loopback). Applied on every pass, so a tenant admin's edit is put back; a failure is logged and retried.
 */
export async function publishEndpoint(vc: VirtualCluster, p: Provisioned): Promise<Result> {
  const endpoint = p.apiserverEndpoint;
  if (!endpoint || !publishable(endpoint.host)) return;
  let tenant: KubeClient | undefined;
  try {
    tenant = await KubeClient.fromString(p.kubeconfig, `the kubeconfig of VirtualCluster ${objectKey(vc)}`);
    await publishApiserverEndpoint(tenant, endpoint.host, endpoint.port);
    return;
  } catch (e) {
    const err = e instanceof Error ? e.message : String(e);
    log.warn({ vc: objectKey(vc), err }, 'tenant default/kubernetes endpoints not written yet');
    return { requeueAfter: TENANT_WRITE_RETRY_MS };
  } finally {
    tenant?.close();
  }
}

/**
 * ensureDns creates the tenant's missing DNS objects (core/lifecycle/tenantdns.ts) with the given CoreDNS image (absent:
 * the default); a failure is logged and retried, the tenant keeps running.
 */
export async function ensureDns(vc: VirtualCluster, p: Provisioned, image: string | undefined): Promise<Result> {
  let tenant: KubeClient | undefined;
  try {
    tenant = await KubeClient.fromString(p.kubeconfig, `the kubeconfig of VirtualCluster ${objectKey(vc)}`);
    const created = await ensureTenantDns(tenant, {
      clusterDomain: vc.spec?.clusterDomain ?? TENANT_DEFAULTS.clusterDomain,
      image,
      ...(p.dnsApiEndpoint && { apiserver: p.dnsApiEndpoint }),
    });
    if (created.length) log.info({ vc: objectKey(vc), created }, 'tenant DNS created');
    return;
  } catch (e) {
    log.warn({ vc: objectKey(vc), err: e instanceof Error ? e.message : String(e) }, 'tenant DNS not created yet');
    return { requeueAfter: TENANT_WRITE_RETRY_MS };
  } finally {
    tenant?.close();
  }
}
