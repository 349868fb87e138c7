import { checkFields, type FieldShape, fieldRule as F } from '@virtualcluster-ts/plugin-sdk';
import type { PodRefusal, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

/** POD_FIELDS_VERSION is the Kubernetes version whose Pod fields POD_SPEC_FIELDS names, every one of them. */
export const POD_FIELDS_VERSION = 'v1.36';

const POLICY = 'the pods policy (checkPodPolicy)';
const SECURITY = 'the tenant Pod Security level (checkPodSecurity)';

const labelSelector = F.object({
  matchLabels: F.copy,
  matchExpressions: F.list({ key: F.copy, operator: F.copy, values: F.copy }),
});

const NODE_TERM: FieldShape = {
  matchExpressions: F.list({ key: F.check(POLICY), operator: F.copy, values: F.copy }),
  matchFields: F.list(
    { key: F.check('node pins (nodepin.ts)'), operator: F.copy, values: F.translate('vNode to super node') },
    'check',
    'node pins name only nodes the tenant runs on (nodepin.ts)',
  ),
};

const ACROSS =
  'selects namespaces of the super cluster by label, other tenants\u2019 included; name the namespaces in `namespaces` instead';

const POD_TERM: FieldShape = {
  labelSelector,
  topologyKey: F.copy,
  namespaces: F.translate('each tenant namespace becomes its super namespace, so the term stays within the tenant'),
  namespaceSelector: F.refuse(ACROSS),
  // merged into labelSelector from the Pod's own labels: confined by the term's namespaces like labelSelector
  matchLabelKeys: F.copy,
  mismatchLabelKeys: F.copy,
};

const POD_AFFINITY: FieldShape = {
  requiredDuringSchedulingIgnoredDuringExecution: F.list(POD_TERM),
  preferredDuringSchedulingIgnoredDuringExecution: F.list({ weight: F.copy, podAffinityTerm: F.object(POD_TERM) }),
};

const AFFINITY: FieldShape = {
  nodeAffinity: F.object({
    requiredDuringSchedulingIgnoredDuringExecution: F.object({ nodeSelectorTerms: F.list(NODE_TERM) }),
    preferredDuringSchedulingIgnoredDuringExecution: F.list({ weight: F.copy, preference: F.object(NODE_TERM) }),
  }),
  podAffinity: F.object(POD_AFFINITY),
  podAntiAffinity: F.object(POD_AFFINITY),
};

const SE_LINUX = F.object({ user: F.check(SECURITY), role: F.check(SECURITY), type: F.check(SECURITY), level: F.copy });
const GMSA = F.refuse(
  'a group managed service account is an identity of the Windows node\u2019s domain: the node retrieves it for ' +
    'whichever Pod names it, so a tenant could run as another tenant\u2019s or the platform\u2019s account',
);
const WINDOWS = F.object({
  gmsaCredentialSpecName: GMSA,
  gmsaCredentialSpec: GMSA,
  runAsUserName: F.copy,
  hostProcess: F.check(SECURITY),
});
const PROFILE = F.object({ type: F.check(SECURITY), localhostProfile: F.copy });

const CONTAINER_SECURITY: FieldShape = {
  capabilities: F.object({ add: F.check(SECURITY), drop: F.translate('NET_RAW is dropped unless added') }),
  privileged: F.check(SECURITY),
  seLinuxOptions: SE_LINUX,
  windowsOptions: WINDOWS,
  runAsUser: F.check(SECURITY),
  runAsGroup: F.copy,
  runAsNonRoot: F.check(SECURITY),
  readOnlyRootFilesystem: F.copy,
  allowPrivilegeEscalation: F.check(SECURITY),
  procMount: F.check(SECURITY),
  seccompProfile: PROFILE,
  appArmorProfile: PROFILE,
};

const POD_SECURITY: FieldShape = {
  seLinuxOptions: SE_LINUX,
  windowsOptions: WINDOWS,
  runAsUser: F.check(SECURITY),
  runAsGroup: F.copy,
  runAsNonRoot: F.check(SECURITY),
  supplementalGroups: F.copy,
  supplementalGroupsPolicy: F.copy,
  fsGroup: F.copy,
  sysctls: F.list({ name: F.check(SECURITY), value: F.copy }),
  fsGroupChangePolicy: F.copy,
  seccompProfile: PROFILE,
  appArmorProfile: PROFILE,
  seLinuxChangePolicy: F.copy,
};

const FROM_NODE =
  'the kubelet would connect from the node to a host the tenant names (the node itself, the platform network); ' +
  'leave it empty so that the Pod is probed on its own IP';

const HANDLER: FieldShape = {
  exec: F.object({ command: F.copy }),
  httpGet: F.object({
    path: F.copy,
    port: F.copy,
    host: F.refuse(FROM_NODE),
    scheme: F.copy,
    httpHeaders: F.list({ name: F.copy, value: F.copy }),
  }),
  tcpSocket: F.object({ port: F.copy, host: F.refuse(FROM_NODE) }),
};

const PROBE = F.object({
  ...HANDLER,
  grpc: F.object({ port: F.copy, service: F.copy }),
  initialDelaySeconds: F.copy,
  timeoutSeconds: F.copy,
  periodSeconds: F.copy,
  successThreshold: F.copy,
  failureThreshold: F.copy,
  terminationGracePeriodSeconds: F.copy,
});

const LIFECYCLE_HANDLER = F.object({ ...HANDLER, sleep: F.object({ seconds: F.copy }) });

const CLAIMS = F.refuse(
  'dynamic resource allocation is not synced: the super cluster would look for the ResourceClaim among its own',
);
const RESOURCES = F.object({ limits: F.copy, requests: F.copy, claims: CLAIMS });

const KEY_REF = F.object({ name: F.copy, key: F.copy, optional: F.copy });

const CONTAINER: FieldShape = {
  name: F.copy,
  image: F.copy,
  command: F.copy,
  args: F.copy,
  workingDir: F.copy,
  ports: F.list({
    name: F.copy,
    hostPort: F.check(POLICY),
    containerPort: F.copy,
    protocol: F.copy,
    hostIP: F.copy,
  }),
  envFrom: F.list({
    prefix: F.copy,
    configMapRef: F.object({ name: F.translate('kube-root-ca.crt is renamed'), optional: F.copy }, 'translate'),
    secretRef: F.object({ name: F.copy, optional: F.copy }),
  }),
  env: F.list({
    name: F.copy,
    value: F.copy,
    valueFrom: F.object({
      fieldRef: F.object(
        { apiVersion: F.copy, fieldPath: F.translate('the tenant Pod\u2019s value, as a literal (downward.ts)') },
        'translate',
      ),
      resourceFieldRef: F.object({ containerName: F.copy, resource: F.copy, divisor: F.copy }),
      configMapKeyRef: F.object({ name: F.translate('kube-root-ca.crt is renamed'), key: F.copy, optional: F.copy }),
      secretKeyRef: KEY_REF,
      fileKeyRef: F.object({ volumeName: F.copy, path: F.copy, key: F.copy, optional: F.copy }),
    }),
  }),
  resources: RESOURCES,
  resizePolicy: F.list({ resourceName: F.copy, restartPolicy: F.copy }),
  restartPolicy: F.copy,
  restartPolicyRules: F.list({
    action: F.copy,
    exitCodes: F.object({ operator: F.copy, values: F.copy }),
  }),
  volumeMounts: F.list({
    name: F.copy,
    readOnly: F.copy,
    recursiveReadOnly: F.copy,
    mountPath: F.copy,
    subPath: F.copy,
    mountPropagation: F.copy,
    subPathExpr: F.copy,
  }),
  volumeDevices: F.list({ name: F.copy, devicePath: F.copy }),
  livenessProbe: PROBE,
  readinessProbe: PROBE,
  startupProbe: PROBE,
  lifecycle: F.object({ postStart: LIFECYCLE_HANDLER, preStop: LIFECYCLE_HANDLER, stopSignal: F.copy }),
  terminationMessagePath: F.copy,
  terminationMessagePolicy: F.copy,
  imagePullPolicy: F.translate('Always, unless the image is one the platform preloaded'),
  securityContext: F.object(CONTAINER_SECURITY),
  stdin: F.copy,
  stdinOnce: F.copy,
  tty: F.copy,
};

const BY_ID =
  'an in-tree volume names a disk or share by an id any tenant could name, with the node\u2019s credentials; ' +
  'use a PersistentVolumeClaim, whose volume the platform provisions';

const ITEMS = F.list({ key: F.copy, path: F.copy, mode: F.copy });
const DOWNWARD_ITEMS = F.list({
  path: F.copy,
  fieldRef: F.object({
    apiVersion: F.copy,
    fieldPath: F.translate('the tenant Pod\u2019s metadata, through annotations the syncer sets (downward.ts)'),
  }),
  resourceFieldRef: F.object({ containerName: F.copy, resource: F.copy, divisor: F.copy }),
  mode: F.copy,
});

const PROJECTION: FieldShape = {
  secret: F.object({ name: F.copy, items: ITEMS, optional: F.copy }),
  downwardAPI: F.object({ items: DOWNWARD_ITEMS }),
  configMap: F.object({ name: F.translate('kube-root-ca.crt is renamed'), items: ITEMS, optional: F.copy }),
  serviceAccountToken: F.translate('a token the tenant apiserver mints, served from a super Secret'),
  clusterTrustBundle: F.refuse(
    'ClusterTrustBundles are not synced: the kubelet would read the super cluster\u2019s own trust bundles',
  ),
  podCertificate: F.refuse(
    'pod certificates are not synced: the super kubelet would have the super cluster sign a certificate naming ' +
      'the super Pod and its syncer-made ServiceAccount, an identity in the platform, not the tenant',
  ),
};

const VOLUME: FieldShape = {
  name: F.copy,
  hostPath: F.check(POLICY),
  emptyDir: F.object({ medium: F.copy, sizeLimit: F.copy }),
  secret: F.object({ secretName: F.copy, items: ITEMS, defaultMode: F.copy, optional: F.copy }),
  configMap: F.object({
    name: F.translate('kube-root-ca.crt is renamed'),
    items: ITEMS,
    defaultMode: F.copy,
    optional: F.copy,
  }),
  downwardAPI: F.object({ items: DOWNWARD_ITEMS, defaultMode: F.copy }),
  projected: F.object({ sources: F.list(PROJECTION), defaultMode: F.copy }),
  persistentVolumeClaim: F.object({ claimName: F.copy, readOnly: F.copy }),
  ephemeral: F.translate(
    'a claim of the Pod\u2019s own: the tenant makes it from the template and it syncs as every claim does',
  ),
  image: F.object(
    { reference: F.copy, pullPolicy: F.translate('Always, unless the image is one the platform preloaded') },
    'translate',
  ),
  csi: F.check(`${POLICY}: inline CSI volumes need pods.volumeTypes csi`),
  ...Object.fromEntries(
    ['nfs', 'iscsi', 'rbd', 'cephfs', 'flexVolume', 'gitRepo'].map((k) => [k, F.check(`${POLICY}: pods.volumeTypes`)]),
  ),
  ...Object.fromEntries(
    [
      'gcePersistentDisk',
      'awsElasticBlockStore',
      'glusterfs',
      'cinder',
      'flocker',
      'fc',
      'azureFile',
      'vsphereVolume',
      'quobyte',
      'azureDisk',
      'photonPersistentDisk',
      'portworxVolume',
      'scaleIO',
      'storageos',
    ].map((k) => [k, F.refuse(BY_ID)]),
  ),
};

/**
 * POD_SPEC_FIELDS is the rule of every PodSpec field of Kubernetes POD_FIELDS_VERSION (and of every field inside
 * the containers, volumes, security contexts, probes and scheduling terms): copied, checked by a named check,
 * translated for the super cluster, or refused. A field it does not name is refused (checkPodFields).
 */
export const POD_SPEC_FIELDS: FieldShape = {
  volumes: F.list(VOLUME),
  initContainers: F.list(CONTAINER),
  containers: F.list(CONTAINER),
  // kubectl debug's containers: added to a running super Pod through its ephemeralcontainers subresource, each checked
  // like a container (ephemeralcontainers.ts); a Pod is created without them
  ephemeralContainers: F.list({ ...CONTAINER, targetContainerName: F.copy }),
  restartPolicy: F.copy,
  terminationGracePeriodSeconds: F.check(POLICY),
  activeDeadlineSeconds: F.copy,
  dnsPolicy: F.translate('the dns plugin points ClusterFirst Pods at the tenant\u2019s DNS'),
  nodeSelector: F.check(POLICY),
  serviceAccountName: F.translate('the super Pod runs as the token-less vc-tenant-pod'),
  serviceAccount: F.translate('dropped, as serviceAccountName'),
  automountServiceAccountToken: F.translate('false; tokens come from the tenant apiserver'),
  nodeName: F.translate('a vNode of the tenant (checkNodeName): a required node affinity to its super node'),
  hostNetwork: F.check(POLICY),
  hostPID: F.check(POLICY),
  hostIPC: F.check(POLICY),
  shareProcessNamespace: F.copy,
  securityContext: F.object(POD_SECURITY),
  imagePullSecrets: F.list({ name: F.copy }),
  hostname: F.copy,
  subdomain: F.copy,
  affinity: F.object(AFFINITY),
  schedulerName: F.check(POLICY),
  tolerations: F.list(
    { key: F.copy, operator: F.copy, value: F.copy, effect: F.copy, tolerationSeconds: F.copy },
    'check',
    POLICY,
  ),
  hostAliases: F.list({ ip: F.copy, hostnames: F.copy }),
  priorityClassName: F.check(POLICY),
  priority: F.translate('dropped: the super admission computes it from priorityClassName'),
  dnsConfig: F.object({ nameservers: F.copy, searches: F.copy, options: F.list({ name: F.copy, value: F.copy }) }),
  readinessGates: F.list({ conditionType: F.copy }),
  runtimeClassName: F.translate('the super RuntimeClass the tenant\u2019s maps to (runtimeclass.ts)'),
  enableServiceLinks: F.copy,
  preemptionPolicy: F.translate('dropped: the super admission computes it from priorityClassName'),
  overhead: F.translate('dropped: the super admission computes it from runtimeClassName'),
  topologySpreadConstraints: F.list({
    maxSkew: F.copy,
    topologyKey: F.copy,
    whenUnsatisfiable: F.copy,
    // counts only the Pods of the Pod's own namespace
    labelSelector,
    minDomains: F.copy,
    nodeAffinityPolicy: F.copy,
    nodeTaintsPolicy: F.copy,
    matchLabelKeys: F.copy,
  }),
  setHostnameAsFQDN: F.copy,
  os: F.object({ name: F.copy }),
  hostUsers: F.copy,
  schedulingGates: F.translate('the super Pod is created once the tenant removed every gate'),
  resourceClaims: CLAIMS,
  resources: RESOURCES,
  hostnameOverride: F.copy,
  schedulingGroup: F.refuse(
    'PodGroups are not synced: the super scheduler would look for the group among the super cluster\u2019s own',
  ),
};

/**
 * checkPodFields returns the first field of a tenant Pod spec that POD_SPEC_FIELDS refuses or does not know, or
 * undefined. The checks that `check` rules name run after it (checkPodPolicy, checkNodePins, checkPodSecurity).
 */
export function checkPodFields(spec: PodSpec): PodRefusal | undefined {
  return checkFields(
    spec,
    POD_SPEC_FIELDS,
    'spec',
    `the syncer knows the Pod fields of Kubernetes ${POD_FIELDS_VERSION}, and refuses a Pod with a field added ` +
      'since until a rule says how it is kept within the tenant',
  );
}
