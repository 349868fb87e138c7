import type { KubeObject } from '../../kube/client.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import { rootNamespaceObject } from '../../tenancy/namespace.ts';
import { apiserverEgressPolicy } from './egress.ts';
import { exposeSettings, type ExposeSettings } from './expose.ts';
import { apiserverFlags, controllerManagerFlags, TENANT_CONTROLLERS } from './flags.ts';

import {
  type ClusterVersion,
  controlPlaneCounts,
  ETCD_CLIENT_SERVICE,
  etcdMemberService,
  etcdMemberURLs,
  etcdURL,
  KUBELET_CA_FILE,
  NATIVE_DEFAULTS,
  NATIVE_PORTS,
  type NativeInput,
  PATHS,
} from './layout.ts';
import {
  containerResources,
  etcdFlags,
  etcdImage,
  goRuntimeEnv,
  hostAliases,
  objectMeta,
  type PodParts,
  POD_NAME_ENV,
  projectedFiles,
  renderSecrets,
  selector,
  statefulSet,
} from './parts.ts';

export {
  ADMIN_KUBECONFIG_KEY,
  controlPlaneCounts,
  apiserverHost,
  apiserverURL,
  ETCD_CLIENT_SERVICE,
  etcdURL,
  KUBE_DIR,
  NATIVE_DEFAULTS,
  NATIVE_PORTS,
  NATIVE_SECRETS,
  nativePKIOptions,
  NETWORK_POLICIES,
  resourceFor,
  type ClusterVersion,
  type NativeInput,
  type NativeServiceIPs,
  type VirtualCluster,
} from './layout.ts';

/**
 * APISERVER_RELOADED are the apiserver's files it reloads when they change, all renewed before expiry
 * (core/provisioners/native/renewal.ts): its serving certificate and its front-proxy client certificate, and its
 * kubelet client certificate, which it reads again for each new connection to a kubelet. A renewal rolls no apiserver.
 */
export const APISERVER_RELOADED: ReadonlySet<string> = new Set([
  PATHS.apiserverCert,
  PATHS.apiserverKey,
  PATHS.frontProxyClientCert,
  PATHS.frontProxyClientKey,
  PATHS.kubeletClientCert,
  PATHS.kubeletClientKey,
]);

/** PROBE_TIMEOUT_S is how long each control-plane probe may take to answer (see renderNative). */
export const PROBE_TIMEOUT_S = 15;

/**
 * renderNative renders a tenant control plane as objects for the super cluster, all in the root namespace: the
 * Namespace; Secrets with the PKI and the admin and controller-manager kubeconfigs (server apiserverURL); etcd
 * (StatefulSet with a data volume, claimed or on the host, the Services of renderNativeServices, a NetworkPolicy
 * admitting only the apiserver to its client port); kube-apiserver (StatefulSet, Service `apiserver`, and the
 * NetworkPolicy of apiserverEgressPolicy) and kube-controller-manager (StatefulSet), with the
 * flags of apiserverFlags and controllerManagerFlags. Every Pod gets the platform's placement and the hostAliases of
 * the known Service IPs. Each pod template carries ANN.configHash, so new
 * certificates or flags roll its StatefulSet. Namespace first, then Secrets, then the rest: an order to apply in.
 */
export function renderNative(input: NativeInput): KubeObject[] {
  const { vc, clusterVersion: cv, rootNamespace: root } = input;
  const s = vc.spec;
  const serviceCidr = s.serviceCidr ?? TENANT_DEFAULTS.serviceCidr;
  const secrets = renderSecrets(input);
  const secretData = new Map(secrets.map((x) => [x.metadata!.name!, x.data as Record<string, string>]));
  const counts = controlPlaneCounts(vc, cv);
  const kcmReplicas = counts.controllerManager;

  const apiserverArgs = apiserverFlags({
    paths: PATHS,
    etcdServers: counts.etcd > 1 ? etcdMemberURLs(root, counts.etcd) : etcdURL(root),
    etcdPrefix: '/registry',
    bindAddress: '0.0.0.0',
    advertiseAddress: '$(POD_IP)',
    securePort: NATIVE_PORTS.apiserver,
    serviceCidr,
    clusterDomain: s.clusterDomain ?? TENANT_DEFAULTS.clusterDomain,
    extraArgs: {
      ...cv.spec.apiServer?.extraArgs,
      ...s.apiServer?.extraArgs,
      // the platform's, after the tenant's (the allow-list refuses the flag from a VirtualCluster or ClusterVersion)
      ...(input.kubeletCA && { 'kubelet-certificate-authority': KUBELET_CA_FILE }),
    },
  });
  const kcmArgs = controllerManagerFlags({
    paths: PATHS,
    bindAddress: '0.0.0.0',
    securePort: NATIVE_PORTS.controllerManager,
    clusterName: root,
    serviceCidr,
    controllers: TENANT_CONTROLLERS,
    leaderElect: kcmReplicas > 1,
    extraArgs: {
      ...cv.spec.controllerManager?.extraArgs,
      ...s.controllerManager?.extraArgs,
      // two replicas without leader election would both run every controller: a flag turning it off is overridden
      ...(kcmReplicas > 1 && { 'leader-elect': 'true' }),
    },
  });
  // The policy's storage quota of the tenant's etcd (quota.etcdBytes); a ClusterVersion flag of the platform wins.
  const quota: Record<string, string> =
    input.etcdBytes === undefined ? {} : { 'quota-backend-bytes': String(input.etcdBytes) };
  const etcdArgs = etcdFlags(root, { ...quota, ...cv.spec.etcd?.extraArgs }, counts.etcd);

  const [etcdService, etcdClientService, apiserverService, ...memberServices] = renderNativeServices(
    cv,
    root,
    exposeSettings(s.apiServer?.expose, cv.spec.apiServer?.serviceType),
    counts.etcd,
  );
  const pod: PodParts = {
    hostAliases: hostAliases(root, input.serviceIPs),
    placement: input.placement,
  };
  const k8sImage = (name: string): string => `registry.k8s.io/${name}:${cv.spec.kubernetesVersion}`;
  // Every probe may take PROBE_TIMEOUT_S to answer (kubeadm's choice for its static control-plane Pods): with the
  // default of 1 s, a busy node's slow answers take every apiserver of a tenant out of its Service at once.
  const httpProbe = (path: string, port: number, scheme = 'HTTP') => ({
    httpGet: { path, port, scheme },
    timeoutSeconds: PROBE_TIMEOUT_S,
  });
  const httpsProbe = (path: string, port: number) => httpProbe(path, port, 'HTTPS');

  return [
    rootNamespaceObject(vc.metadata ?? {}, root),
    ...secrets,
    etcdService,
    etcdClientService,
    ...memberServices,
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: objectMeta(root, 'etcd', 'etcd'),
      spec: {
        podSelector: { matchLabels: selector(root, 'etcd') },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [{ podSelector: { matchLabels: selector(root, 'apiserver') } }],
            ports: [{ protocol: 'TCP', port: NATIVE_PORTS.etcdClient }],
          },
          {
            from: [{ podSelector: { matchLabels: selector(root, 'etcd') } }],
            ports: [{ protocol: 'TCP', port: NATIVE_PORTS.etcdPeer }],
          },
          { ports: [{ protocol: 'TCP', port: NATIVE_PORTS.etcdMetrics }] },
        ],
      },
    },
    statefulSet(root, 'etcd', {
      ...pod,
      replicas: counts.etcd,
      serviceName: 'etcd',
      files: new Map(),
      args: etcdArgs,
      container: {
        image: etcdImage(cv),
        command: ['etcd'],
        ...((counts.etcd > 1 || goRuntimeEnv(cv.spec.etcd)) && {
          env: [
            ...(counts.etcd > 1
              ? [{ name: POD_NAME_ENV, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }]
              : []),
            ...envList(goRuntimeEnv(cv.spec.etcd)),
          ],
        }),
        ports: [
          { name: 'client', containerPort: NATIVE_PORTS.etcdClient },
          { name: 'peer', containerPort: NATIVE_PORTS.etcdPeer },
          { name: 'metrics', containerPort: NATIVE_PORTS.etcdMetrics },
        ],
        volumeMounts: [{ name: 'data', mountPath: '/var/lib/etcd' }],
        resources: containerResources('etcd', cv.spec.etcd?.resources, input.etcdBytes),
        readinessProbe: { ...httpProbe('/readyz', NATIVE_PORTS.etcdMetrics), periodSeconds: 5, failureThreshold: 3 },
        livenessProbe: { ...httpProbe('/livez', NATIVE_PORTS.etcdMetrics), periodSeconds: 10, failureThreshold: 8 },
        startupProbe: { ...httpProbe('/readyz', NATIVE_PORTS.etcdMetrics), periodSeconds: 5, failureThreshold: 24 },
      },
      ...(input.etcdHostPath
        ? { volumes: [{ name: 'data', hostPath: { path: input.etcdHostPath, type: 'DirectoryOrCreate' } }] }
        : {
            volumeClaimTemplates: [
              {
                apiVersion: 'v1',
                kind: 'PersistentVolumeClaim',
                metadata: { name: 'data' },
                spec: {
                  accessModes: ['ReadWriteOnce'],
                  resources: { requests: { storage: cv.spec.etcd?.storageSize ?? NATIVE_DEFAULTS.etcdStorageSize } },
                },
              },
            ],
          }),
    }),
    apiserverService,
    apiserverEgressPolicy(root, undefined, input.vnAgents, input.platformAddresses),
    statefulSet(root, 'apiserver', {
      ...pod,
      replicas: counts.apiserver,
      serviceName: 'apiserver',
      files: projectedFiles(apiserverArgs, secretData),
      reloaded: APISERVER_RELOADED,
      args: apiserverArgs,
      container: {
        image: cv.spec.apiServer?.image ?? k8sImage('kube-apiserver'),
        command: ['kube-apiserver'],
        env: [
          { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          ...envList(goRuntimeEnv(cv.spec.apiServer)),
        ],
        ports: [{ name: 'https', containerPort: NATIVE_PORTS.apiserver }],
        resources: containerResources('apiserver', cv.spec.apiServer?.resources),
        readinessProbe: { ...httpsProbe('/readyz', NATIVE_PORTS.apiserver), periodSeconds: 5, failureThreshold: 3 },
        livenessProbe: { ...httpsProbe('/livez', NATIVE_PORTS.apiserver), periodSeconds: 10, failureThreshold: 8 },
        startupProbe: { ...httpsProbe('/livez', NATIVE_PORTS.apiserver), periodSeconds: 5, failureThreshold: 48 },
        securityContext: { capabilities: { drop: ['ALL'] } },
      },
    }),
    statefulSet(root, 'controller-manager', {
      ...pod,
      replicas: kcmReplicas,
      serviceName: 'controller-manager',
      files: projectedFiles(kcmArgs, secretData),
      args: kcmArgs,
      container: {
        image: cv.spec.controllerManager?.image ?? k8sImage('kube-controller-manager'),
        command: ['kube-controller-manager'],
        ...(goRuntimeEnv(cv.spec.controllerManager) && { env: envList(goRuntimeEnv(cv.spec.controllerManager)) }),
        ports: [{ name: 'https', containerPort: NATIVE_PORTS.controllerManager }],
        resources: containerResources('controller-manager', cv.spec.controllerManager?.resources),
        readinessProbe: {
          ...httpsProbe('/healthz', NATIVE_PORTS.controllerManager),
          periodSeconds: 10,
          failureThreshold: 3,
        },
        livenessProbe: {
          ...httpsProbe('/healthz', NATIVE_PORTS.controllerManager),
          periodSeconds: 10,
          failureThreshold: 8,
        },
        startupProbe: {
          ...httpsProbe('/healthz', NATIVE_PORTS.controllerManager),
          periodSeconds: 5,
          failureThreshold: 48,
        },
        securityContext: { capabilities: { drop: ['ALL'] } },
      },
    }),
  ];
}

/**
 * renderNativeServices are the Services of a tenant control plane, which need no PKI: `etcd` (headless, it names
 * the members `etcd-<i>`), ETCD_CLIENT_SERVICE (a ClusterIP for etcd's client port), `apiserver`, of the exposed
 * type (spec.apiServer.expose, else the ClusterVersion's serviceType, else ClusterIP) with the chosen node port if
 * any, and with several etcd members one ClusterIP Service `etcd-<i>` per member (etcdMemberService), ready or not,
 * since members must reach each other before any is ready. The provisioner applies them first: their ClusterIPs go
 * into the Pods' /etc/hosts (the local super cluster has no cluster DNS) and, when the manager reaches the apiserver
 * there, into the apiserver's certificate; the exposed addresses go there too.
 */
export function renderNativeServices(
  cv: ClusterVersion,
  root: string,
  expose: ExposeSettings = exposeSettings(undefined, cv.spec.apiServer?.serviceType),
  etcdMembers = 1,
): KubeObject[] {
  const members: KubeObject[] =
    etcdMembers <= 1
      ? []
      : Array.from({ length: etcdMembers }, (_, i) => ({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: objectMeta(root, etcdMemberService(i), 'etcd'),
          spec: {
            publishNotReadyAddresses: true,
            selector: { ...selector(root, 'etcd'), 'statefulset.kubernetes.io/pod-name': `etcd-${i}` },
            ports: [
              { name: 'client', port: NATIVE_PORTS.etcdClient, targetPort: NATIVE_PORTS.etcdClient },
              { name: 'peer', port: NATIVE_PORTS.etcdPeer, targetPort: NATIVE_PORTS.etcdPeer },
            ],
          },
        }));
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: objectMeta(root, 'etcd', 'etcd'),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector: selector(root, 'etcd'),
        ports: [
          { name: 'client', port: NATIVE_PORTS.etcdClient, targetPort: NATIVE_PORTS.etcdClient },
          { name: 'peer', port: NATIVE_PORTS.etcdPeer, targetPort: NATIVE_PORTS.etcdPeer },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: objectMeta(root, ETCD_CLIENT_SERVICE, 'etcd'),
      spec: {
        selector: selector(root, 'etcd'),
        ports: [{ name: 'client', port: NATIVE_PORTS.etcdClient, targetPort: NATIVE_PORTS.etcdClient }],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: objectMeta(root, 'apiserver', 'apiserver'),
      spec: {
        type: expose.type,
        selector: selector(root, 'apiserver'),
        ports: [
          {
            name: 'https',
            port: NATIVE_PORTS.apiserver,
            targetPort: NATIVE_PORTS.apiserver,
            ...(expose.nodePort !== undefined && { nodePort: expose.nodePort }),
          },
        ],
      },
    },
    ...members,
  ];
}

/** envList is a container's env entries of plain values, by name. */
function envList(env: Record<string, string> = {}): Array<{ name: string; value: string }> {
  return Object.entries(env).map(([name, value]) => ({ name, value }));
}
