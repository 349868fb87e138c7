import { isAlreadyExists, type KubeClient, type KubeObject, type Resource } from '../kube/client.ts';
import { R } from '../kube/resources.ts';
import { IDENTITY } from '../names/names.ts';
import { NODE_IMAGES } from '../toolchain/node.ts';

/** TENANT_DNS_NAMESPACE is where a tenant's DNS server runs, inside the tenant, as kubeadm puts it. */
export const TENANT_DNS_NAMESPACE = 'kube-system';
/** TENANT_DNS_NAME names the tenant DNS Deployment, ServiceAccount, ConfigMap and its RBAC. */
export const TENANT_DNS_NAME = 'coredns';
/** TENANT_DNS_SERVICE is the tenant Service the DNS plugin points tenant Pods at (through its super copy). */
export const TENANT_DNS_SERVICE = 'kube-dns';
/** TENANT_DNS_PORT is where CoreDNS listens in its Pod: above 1024, so it needs no capability and runs as non-root. */
export const TENANT_DNS_PORT = 1053;
/** TENANT_DNS_READY_PORT is CoreDNS' `ready` plugin: ready once the kubernetes plugin has listed the tenant. */
export const TENANT_DNS_READY_PORT = 8181;

/** TenantDnsOptions shape the tenant DNS objects. */
export interface TenantDnsOptions {
  /** the tenant's cluster domain (spec.clusterDomain) */
  clusterDomain: string;
  /** the CoreDNS image; defaults to the node toolchain's */
  image?: string;
  /**
   * where CoreDNS reads the tenant's Services (a provisioner's dnsApiEndpoint), with the Pod's ServiceAccount token
   * and CA; absent, in-cluster (KUBERNETES_SERVICE_HOST/PORT). tlsServerName, when set, is the name CoreDNS asks
   * for (SNI) and verifies the certificate against instead of host
   */
  apiserver?: { host: string; port: number; tlsServerName?: string };
}

/** SA_DIR is where the ServiceAccount token and CA are mounted in every Pod. */
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * dnsKubeconfig is CoreDNS' kubeconfig for an apiserver address (and the TLS server name to ask for, if any): the
 * Pod's own ServiceAccount token and CA files.
 */
export function dnsKubeconfig(apiserver: { host: string; port: number; tlsServerName?: string }): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'tenant',
        cluster: {
          server: `https://${apiserver.host}:${apiserver.port}`,
          'certificate-authority': `${SA_DIR}/ca.crt`,
          ...(apiserver.tlsServerName && { 'tls-server-name': apiserver.tlsServerName }),
        },
      },
    ],
    users: [{ name: 'coredns', user: { tokenFile: `${SA_DIR}/token` } }],
    contexts: [{ name: 'tenant', context: { cluster: 'tenant', user: 'coredns' } }],
    'current-context': 'tenant',
  });
}

/**
 * corefile is the tenant CoreDNS configuration: authoritative for the cluster domain and the reverse zones from the
 * tenant's Services and EndpointSlices (the kubernetes plugin, in-cluster credentials: the tenant apiserver), no Pod
 * records, and nothing else: there is no `forward`, so a name outside those zones is REFUSED instead of being asked
 * of a resolver that knows the super cluster's or the host's names.
 */
export function corefile(clusterDomain: string, kubeconfig?: string): string {
  return [
    `${clusterDomain}:${TENANT_DNS_PORT} in-addr.arpa:${TENANT_DNS_PORT} ip6.arpa:${TENANT_DNS_PORT} {`,
    '    errors',
    `    ready :${TENANT_DNS_READY_PORT}`,
    `    kubernetes ${clusterDomain} in-addr.arpa ip6.arpa {`,
    ...(kubeconfig ? [`        kubeconfig ${kubeconfig} tenant`] : []),
    '        pods disabled',
    '        ttl 30',
    '    }',
    '    cache 30',
    '    loop',
    '    reload',
    '}',
    '',
  ].join('\n');
}

// The tenant's own label, as kubeadm sets it: the platform's labels are the syncer's to write in the super cluster.
const labels = { 'k8s-app': TENANT_DNS_SERVICE };
const meta = (name: string, namespaced = true) => ({
  name,
  ...(namespaced && { namespace: TENANT_DNS_NAMESPACE }),
  labels,
});

/**
 * tenantDnsObjects are the tenant objects of a tenant's DNS server, in creation order: a ServiceAccount whose
 * ClusterRole reads only Services, EndpointSlices and Namespaces (what the kubernetes plugin lists; no Secrets, no
 * Pods, nothing to write), the Corefile ConfigMap, a CoreDNS Deployment (non-root, no capabilities, read-only root,
 * RuntimeDefault seccomp: within the `restricted` Pod Security level) and the `kube-dns` Service (53 UDP and TCP).
 */
export function tenantDnsObjects(o: TenantDnsOptions): Array<{ resource: Resource; object: KubeObject }> {
  const roleName = `system:${TENANT_DNS_NAME}`;
  const selector = { 'k8s-app': TENANT_DNS_SERVICE };
  return [
    {
      resource: R.serviceaccounts,
      object: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(TENANT_DNS_NAME) },
    },
    {
      resource: R.clusterroles,
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta(roleName, false),
        rules: [
          { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        ],
      } as KubeObject,
    },
    {
      resource: R.clusterrolebindings,
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: meta(roleName, false),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
        subjects: [{ kind: 'ServiceAccount', name: TENANT_DNS_NAME, namespace: TENANT_DNS_NAMESPACE }],
      } as KubeObject,
    },
    {
      resource: R.configmaps,
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: meta(TENANT_DNS_NAME),
        data: o.apiserver
          ? { Corefile: corefile(o.clusterDomain, '/etc/coredns/kubeconfig'), kubeconfig: dnsKubeconfig(o.apiserver) }
          : { Corefile: corefile(o.clusterDomain) },
      } as KubeObject,
    },
    {
      resource: R.deployments,
      object: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: meta(TENANT_DNS_NAME),
        spec: {
          replicas: 1,
          selector: { matchLabels: selector },
          template: {
            metadata: { labels: selector },
            spec: {
              serviceAccountName: TENANT_DNS_NAME,
              // the DNS server itself must not be pointed at the DNS it serves
              dnsPolicy: 'Default',
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 65532,
                runAsGroup: 65532,
                seccompProfile: { type: 'RuntimeDefault' },
              },
              containers: [
                {
                  name: 'coredns',
                  image: o.image ?? NODE_IMAGES.coredns,
                  imagePullPolicy: 'IfNotPresent',
                  args: ['-conf', '/etc/coredns/Corefile'],
                  ports: [
                    { name: 'dns', containerPort: TENANT_DNS_PORT, protocol: 'UDP' },
                    { name: 'dns-tcp', containerPort: TENANT_DNS_PORT, protocol: 'TCP' },
                  ],
                  readinessProbe: {
                    httpGet: { path: '/ready', port: TENANT_DNS_READY_PORT },
                    periodSeconds: 2,
                  },
                  resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } },
                  securityContext: {
                    allowPrivilegeEscalation: false,
                    readOnlyRootFilesystem: true,
                    capabilities: { drop: ['ALL'] },
                  },
                  volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                },
              ],
              volumes: [{ name: 'config', configMap: { name: TENANT_DNS_NAME } }],
            },
          },
        },
      } as KubeObject,
    },
    {
      resource: R.services,
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta(TENANT_DNS_SERVICE),
        spec: {
          selector,
          ports: [
            { name: 'dns', port: 53, targetPort: TENANT_DNS_PORT, protocol: 'UDP' },
            { name: 'dns-tcp', port: 53, targetPort: TENANT_DNS_PORT, protocol: 'TCP' },
          ],
        },
      } as KubeObject,
    },
  ];
}

/**
 * ensureTenantDns creates, in the tenant, each tenant DNS object that is missing, and leaves existing ones alone:
 * like kubeadm's addons they are the tenant's after the first start (a tenant may tune its Corefile), and one it
 * deletes comes back at the next reconcile. Returns the `kind/name` of the objects it created.
 */
export async function ensureTenantDns(tenant: KubeClient, o: TenantDnsOptions): Promise<string[]> {
  const created: string[] = [];
  for (const { resource, object } of tenantDnsObjects(o)) {
    const md = object.metadata!;
    if (await tenant.getOrNull(resource, md.namespace, md.name!)) continue;
    try {
      await tenant.create(resource, object, { fieldManager: IDENTITY.manager });
      created.push(`${object.kind}/${md.name}`);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  return created;
}
