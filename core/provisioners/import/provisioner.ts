import { KubeClient } from '../../kube/client.ts';
import { parseKubeconfig, renderSafeKubeconfig } from '../../kube/kubeconfig.ts';
import { R } from '../../kube/resources.ts';
import { ProvisionRefused, type ProvisionLimits, type Provisioner, type ProvisionState } from '../provisioner.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';

/**
 * ImportProvisioner adopts an existing cluster given by a kubeconfig Secret in the VirtualCluster's namespace. It
 * checks that the cluster answers and never deletes it: removing the VirtualCluster only forgets it. The Secret is
 * written by whoever may write that namespace, so its kubeconfig is parsed by parseKubeconfig, which refuses exec and
 * auth-provider plugins, files, plain http and skipped TLS verification (a KubeconfigError naming the Secret, its key
 * and the field); what is passed on is a kubeconfig rendered from the accepted inline data alone. It reads only a
 * Secret the tenant's policy grants it (spec.grants.importSecrets, passed in the limits): a namespace writer cannot
 * have the manager read, and hand back as the tenant's kubeconfig, a Secret the platform keeps in that namespace.
 */
export class ImportProvisioner implements Provisioner {
  readonly type = 'import';

  constructor(private readonly meta: KubeClient) {}

  async ensure(vc: VirtualCluster, _root: string, limits: ProvisionLimits = {}): Promise<ProvisionState> {
    const ref = vc.spec.provisioner?.import?.kubeconfigSecretRef;
    if (!ref) throw new Error('spec.provisioner.import.kubeconfigSecretRef is required for the import provisioner');
    const ns = vc.metadata!.namespace!;
    if (!(limits.importSecrets ?? []).some((x) => x.namespace === ns && x.name === ref.name))
      throw new ProvisionRefused(
        'ImportSecretNotGranted',
        `spec.provisioner.import.kubeconfigSecretRef.name: Secret ${ns}/${ref.name} is not granted to the import ` +
          `provisioner by the VirtualCluster's TenantPolicy (spec.grants.importSecrets); it is not read`,
      );
    const key = ref.key ?? 'kubeconfig';
    const secret = await this.meta.getOrNull<{ data?: Record<string, string> }>(
      R.secrets,
      vc.metadata!.namespace,
      ref.name,
    );
    if (!secret) return { ready: false, waitingFor: `Secret ${vc.metadata!.namespace}/${ref.name}` };
    const data = secret.data?.[key];
    if (!data)
      throw new Error(
        `Secret ${vc.metadata!.namespace}/${ref.name} has no key "${key}" (spec.provisioner.import.kubeconfigSecretRef.key)`,
      );
    const safe = parseKubeconfig(
      Buffer.from(data, 'base64').toString('utf8'),
      `Secret ${vc.metadata!.namespace}/${ref.name} (key "${key}")`,
    );
    const kubeconfig = renderSafeKubeconfig(safe);
    const client = KubeClient.fromSafe(safe);
    try {
      await client.request('GET', '/version', { timeoutMs: 5000 });
    } catch (e) {
      return {
        ready: false,
        waitingFor: `the imported cluster to answer (${e instanceof Error ? e.message : String(e)})`,
      };
    } finally {
      client.close();
    }
    return { ready: true, result: { kubeconfig } };
  }

  async remove(): Promise<void> {}
}
