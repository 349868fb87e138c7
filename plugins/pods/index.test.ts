import { describe, expect, it } from 'vitest';
import { ANN, LABEL, MANAGER } from '../../core/names/names.ts';
import type { Decision, Effect } from '../../core/plugins/contract.ts';
import { R } from '../../core/kube/resources.ts';
import { MapCache, testContext, testTenant } from '../../core/plugins/testing.ts';
import type { Tenant } from '../../core/tenancy/tenant.ts';
import plugin, {
  ETC_HOSTS,
  podsPlugin,
  sharedTokenSecretName,
  SUPER_POD_SERVICE_ACCOUNT,
  tokenKeys,
  tokenPlan,
  tokenSecretName,
  translateKubeletPath,
} from './index.ts';
import type { Container, Pod, PodSpec } from '@virtualcluster-ts/plugin-sdk/pods';

const SNS = testContext().names.superNamespace('default');
const podServiceAccount = {
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: { name: 'vc-tenant-pod', namespace: SNS },
};
// kata is a public super RuntimeClass the syncer mirrored into the tenant: Pods naming it keep the name.
const publicKata = {
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name: 'kata', labels: { [LABEL.public]: 'true' } },
  handler: 'kata',
};
const superCache = new MapCache([
  [R.serviceaccounts, [podServiceAccount]],
  [R.runtimeclasses, [publicKata]],
]);
const tenantCache = new MapCache([
  [R.runtimeclasses, [{ ...publicKata, metadata: { name: 'kata', labels: { [LABEL.managedBy]: MANAGER } } }]],
]);
const ctx = testContext({ superCache });
const TUID = 'tenant-uid-1';

const tokenVolume = {
  name: 'kube-api-access-x7k2p',
  projected: {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      {
        downwardAPI: {
          items: [{ fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' }, path: 'namespace' }],
        },
      },
    ],
  },
};
const tokenMount = {
  name: 'kube-api-access-x7k2p',
  mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
  readOnly: true,
};
const tokenSecretVolume = {
  name: 'kube-api-access-x7k2p',
  secret: {
    secretName: 'web-vc-token',
    defaultMode: 420,
    items: [
      { key: 'token', path: 'token' },
      { key: 'ca.crt', path: 'ca.crt' },
      { key: 'namespace', path: 'namespace' },
    ],
  },
};

function tenantPod(spec: Partial<PodSpec> = {}, meta: Record<string, unknown> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      namespace: 'default',
      uid: TUID,
      resourceVersion: '42',
      labels: { app: 'web' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'rs-uid' }],
      ...meta,
    },
    spec: { containers: [{ name: 'app', image: 'nginx:1' }], ...spec },
    status: { phase: 'Pending' },
  };
}

function superPod(spec: Partial<PodSpec> = {}, status: Pod['status'] = {}, meta: Record<string, unknown> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      namespace: SNS,
      uid: 'super-uid-9',
      resourceVersion: '7',
      labels: { app: 'web', [LABEL.managedBy]: MANAGER, [LABEL.cluster]: ctx.tenant.key },
      annotations: { [ANN.cluster]: ctx.tenant.key, [ANN.namespace]: 'default', [ANN.name]: 'web', [ANN.uid]: TUID },
      ...meta,
    },
    spec: { containers: [{ name: 'app', image: 'nginx:1' }], ...spec },
    status,
  };
}

/** superContainer is a container as the super Pod runs it: pulled Always, NET_RAW dropped unless it says otherwise. */
const superContainer = (c: Container): Container => ({
  imagePullPolicy: 'Always',
  securityContext: { capabilities: { drop: ['NET_RAW'] } },
  ...c,
});

const newSuper = (spec: PodSpec, labels: Record<string, string> = { app: 'web' }): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: SNS, labels },
  spec: {
    automountServiceAccountToken: false,
    ...spec,
    containers: spec.containers.map(superContainer),
    ...(spec.initContainers && { initContainers: spec.initContainers.map(superContainer) }),
    serviceAccountName: SUPER_POD_SERVICE_ACCOUNT,
  },
});

type TokenEffect = Extract<Effect, { type: 'serviceAccountToken' }>;
const tokenEffect = (serviceAccount = 'default'): TokenEffect => ({
  type: 'serviceAccountToken',
  namespace: 'default',
  pod: 'web',
  podUid: TUID,
  serviceAccount,
  secretName: 'web-vc-token',
  tokens: [{ key: 'token', expirationSeconds: 3607 }],
});
/** PROJECTED_SUPER_VOLUME is the super Pod volume of a projected volume with two tokens and a ConfigMap. */
const PROJECTED_SUPER_VOLUME = {
  name: 'vault',
  projected: {
    sources: [
      { secret: { name: 'web-vc-token', items: [{ key: 'token-0', path: 'vault-token' }] } },
      { configMap: { name: 'settings' } },
      { secret: { name: 'web-vc-token', items: [{ key: 'token-1', path: 'plain' }] } },
    ],
  },
};
const ADMISSION_TOKEN = { key: 'token', expirationSeconds: 3607 };
const sharedSecretVolume = (serviceAccount = 'default') => ({
  ...tokenSecretVolume,
  secret: { ...tokenSecretVolume.secret, secretName: sharedTokenSecretName(serviceAccount, ADMISSION_TOKEN) },
});
const sharedTokenEffect = (serviceAccount = 'default'): TokenEffect => ({
  ...tokenEffect(serviceAccount),
  secretName: sharedTokenSecretName(serviceAccount, ADMISSION_TOKEN),
  shared: true,
});
const perPod: Partial<Tenant> = { pods: { serviceAccountTokens: 'perPod' } };
const perPodPlan = { secretName: 'web-vc-token', shared: false };

interface ToSuperCase {
  name: string;
  tenant: Pod;
  super?: Pod;
  tenantOver?: Partial<Tenant>;
  want: Decision<Pod>;
}

const NOW = '2026-01-01T00:00:00Z';

const toSuperCases: ToSuperCase[] = [
  {
    name: 'a tenant Pod naming a node that is not its own is refused with an event and a VCSynced condition',
    tenant: tenantPod({ nodeName: 'node-1' }),
    want: {
      object: null,
      skip: { reason: 'NodeNameRefused', message: expect.stringContaining('"node-1"') as unknown as string },
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'web', uid: TUID },
          eventType: 'Warning',
          reason: 'NodeNameRefused',
          message: expect.stringContaining('spec.nodeName') as unknown as string,
        },
        {
          type: 'tenantCondition',
          namespace: 'default',
          name: 'web',
          uid: TUID,
          condition: {
            type: 'VCSynced',
            status: 'False',
            reason: 'NodeNameRefused',
            message: expect.stringContaining('is not a node of this tenant') as unknown as string,
          },
        },
      ],
    },
  },
  {
    name: 'a system- priority class is refused even when the policy lists it, with an event and a VCSynced condition',
    tenantOver: { pods: { priorityClasses: ['system-node-critical'] } },
    tenant: tenantPod({ priorityClassName: 'system-node-critical' }),
    want: {
      object: null,
      skip: {
        reason: 'PodPolicyViolation',
        message: expect.stringContaining('spec.priorityClassName "system-node-critical"') as unknown as string,
      },
      effects: [
        {
          type: 'event',
          side: 'tenant',
          regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'web', uid: TUID },
          eventType: 'Warning',
          reason: 'PodPolicyViolation',
          message: expect.stringContaining('spec.priorityClassName') as unknown as string,
        },
        {
          type: 'tenantCondition',
          namespace: 'default',
          name: 'web',
          uid: TUID,
          condition: {
            type: 'VCSynced',
            status: 'False',
            reason: 'PodPolicyViolation',
            message: expect.stringContaining('spec.priorityClassName') as unknown as string,
          },
        },
      ],
    },
  },
  {
    name: "a Pod the tenant's Pod Security level forbids is refused by the syncer, naming the field",
    tenantOver: { podSecurityLevel: 'restricted' },
    tenant: tenantPod(),
    want: {
      object: null,
      skip: {
        reason: 'PodPolicyViolation',
        message: expect.stringContaining(
          'spec.containers[0].securityContext.allowPrivilegeEscalation',
        ) as unknown as string,
      },
      effects: expect.arrayContaining([expect.objectContaining({ type: 'tenantCondition' })]) as unknown as Effect[],
    },
  },
  {
    name: 'a toleration of every taint is refused under the default policy',
    tenant: tenantPod({ tolerations: [{ operator: 'Exists' }] }),
    want: {
      object: null,
      skip: {
        reason: 'PodPolicyViolation',
        message: expect.stringContaining('spec.tolerations[0]') as unknown as string,
      },
      effects: expect.arrayContaining([expect.objectContaining({ type: 'tenantCondition' })]) as unknown as Effect[],
    },
  },
  {
    name: 'new super Pod: every projected serviceAccountToken source reads a tenant-minted token from the vc-token Secret, minted after the bind',
    tenant: tenantPod({
      serviceAccountName: 'builder',
      volumes: [
        {
          name: 'vault',
          projected: {
            sources: [
              { serviceAccountToken: { audience: 'vault', expirationSeconds: 600, path: 'vault-token' } },
              { configMap: { name: 'settings' } },
              { serviceAccountToken: { path: 'plain' } },
            ],
          },
        },
      ],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'nginx:1' }],
        volumes: [
          {
            name: 'vault',
            projected: {
              sources: [
                { secret: { name: 'web-vc-token', items: [{ key: 'token-0', path: 'vault-token' }] } },
                { configMap: { name: 'settings' } },
                { secret: { name: 'web-vc-token', items: [{ key: 'token-1', path: 'plain' }] } },
              ],
            },
          },
        ],
      }),
    },
  },
  {
    name: 'a bound tenant Pod (its super Pod made as above): the Secret of its own gets every projected token, minted now',
    tenant: tenantPod({
      serviceAccountName: 'builder',
      nodeName: 'node-1',
      volumes: [
        {
          name: 'vault',
          projected: {
            sources: [
              { serviceAccountToken: { audience: 'vault', expirationSeconds: 600, path: 'vault-token' } },
              { configMap: { name: 'settings' } },
              { serviceAccountToken: { path: 'plain' } },
            ],
          },
        },
      ],
    }),
    super: superPod({ nodeName: 'node-1', volumes: [PROJECTED_SUPER_VOLUME] }),
    want: {
      object: {
        ...superPod({ nodeName: 'node-1', volumes: [PROJECTED_SUPER_VOLUME] }),
        metadata: { ...superPod().metadata, labels: { app: 'web' }, annotations: undefined },
      },
      effects: [
        {
          type: 'serviceAccountToken',
          namespace: 'default',
          pod: 'web',
          podUid: TUID,
          serviceAccount: 'builder',
          secretName: 'web-vc-token',
          tokens: [{ key: 'token-0', audiences: ['vault'], expirationSeconds: 600 }, { key: 'token-1' }],
        },
      ],
    },
  },
  {
    name: 'a bound tenant Pod whose super Pod exists is synced (nodeName came from the bind)',
    tenant: tenantPod({ nodeName: 'node-1' }),
    super: superPod({ nodeName: 'node-1' }),
    want: {
      object: {
        ...superPod({ nodeName: 'node-1' }),
        metadata: { ...superPod().metadata, labels: { app: 'web' }, annotations: undefined },
      },
    },
  },
  {
    name: 'a tenant Pod the syncer bound whose super Pod is gone is deleted, with a Warning event',
    tenant: {
      ...tenantPod({ nodeName: 'node-1' }),
      status: { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }] },
    },
    want: {
      object: null,
      skip: { reason: 'SuperPodGone', message: expect.stringContaining('super Pod') as unknown as string },
      effects: [
        expect.objectContaining({ type: 'event', reason: 'SuperPodGone' }) as unknown as Effect,
        { type: 'deleteTenant', namespace: 'default', name: 'web', uid: TUID, gracePeriodSeconds: 0 },
      ],
    },
  },
  {
    name: 'a finished tenant Pod whose super Pod is gone is left alone',
    tenant: {
      ...tenantPod({ nodeName: 'node-1' }),
      status: { phase: 'Succeeded', conditions: [{ type: 'PodScheduled', status: 'True' }] },
    },
    // not run again, nor refused: nothing is written
    want: { object: null },
  },
  {
    name: 'a terminating tenant Pod with a super Pod: the super Pod must go',
    tenant: tenantPod({}, { deletionTimestamp: NOW }),
    super: superPod(),
    want: { object: null },
  },
  {
    name: 'a terminating tenant Pod without a super Pod is made terminal and deleted at once (no kubelet finalizes it)',
    tenant: tenantPod({ nodeName: 'node-1' }, { deletionTimestamp: NOW }),
    want: {
      object: null,
      effects: [
        {
          type: 'deleteTenant',
          namespace: 'default',
          name: 'web',
          uid: TUID,
          gracePeriodSeconds: 0,
          status: { phase: 'Failed' },
        },
      ],
    },
  },
  {
    name: 'new super Pod: spec copied, nodeName cleared, hostname and subdomain kept, owners and status dropped',
    tenant: tenantPod({
      hostname: 'web-0',
      subdomain: 'web-headless',
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'nginx:1' }],
        hostname: 'web-0',
        subdomain: 'web-headless',
        schedulerName: 'default-scheduler',
        tolerations: [
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        ],
      }),
    },
  },
  {
    name: 'new super Pod: every container pulls its image again, whatever the tenant asked',
    tenant: tenantPod({
      containers: [{ name: 'app', image: 'private/app:1', imagePullPolicy: 'Never' }],
      initContainers: [{ name: 'init', image: 'private/init:1', imagePullPolicy: 'IfNotPresent' }],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'private/app:1' }],
        initContainers: [{ name: 'init', image: 'private/init:1' }],
      }),
    },
  },
  {
    name: "new super Pod: an image the platform preloaded runs from the node's store, every other is pulled",
    tenant: tenantPod({
      containers: [
        { name: 'app', image: 'docker.io/library/busybox:1.35', imagePullPolicy: 'Never' },
        { name: 'side', image: 'docker.io/library/busybox:1.36' },
      ],
      initContainers: [{ name: 'init', image: 'registry.k8s.io/pause:3.10', imagePullPolicy: 'Always' }],
    }),
    tenantOver: { pods: { preloadedImages: ['docker.io/library/busybox:1.35', 'registry.k8s.io/pause:3.10'] } },
    want: {
      object: newSuper({
        containers: [
          { name: 'app', image: 'docker.io/library/busybox:1.35', imagePullPolicy: 'IfNotPresent' },
          { name: 'side', image: 'docker.io/library/busybox:1.36' },
        ],
        initContainers: [{ name: 'init', image: 'registry.k8s.io/pause:3.10', imagePullPolicy: 'IfNotPresent' }],
      }),
    },
  },
  {
    name: "new super Pod with a subdomain: the platform's init container gives it the tenant's line in /etc/hosts",
    tenant: tenantPod({ hostname: 'web-0', subdomain: 'web-headless' }),
    tenantOver: { pods: { etcHostsImage: 'docker.io/library/busybox:1.35' } },
    want: {
      object: newSuper({
        hostname: 'web-0',
        subdomain: 'web-headless',
        containers: [
          {
            name: 'app',
            image: 'nginx:1',
            volumeMounts: [{ name: ETC_HOSTS, mountPath: '/etc/hosts', subPath: 'hosts' }],
          },
        ],
        initContainers: [
          {
            name: ETC_HOSTS,
            image: 'docker.io/library/busybox:1.35',
            imagePullPolicy: 'Always',
            command: [
              'sh',
              '-c',
              `sed -E "$1" /etc/hosts > /${ETC_HOSTS}/hosts`,
              ETC_HOSTS,
              `s/^([^[:space:]]+[[:space:]]+[^[:space:].]+)\\.web-headless\\.${SNS}\\.svc\\.[^[:space:]]+/\\1.web-headless.default.svc.cluster.local/`,
            ],
            volumeMounts: [{ name: ETC_HOSTS, mountPath: `/${ETC_HOSTS}` }],
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 65534,
              runAsGroup: 65534,
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
              seccompProfile: { type: 'RuntimeDefault' },
            },
            terminationMessagePolicy: 'FallbackToLogsOnError',
          },
        ],
        volumes: [{ name: ETC_HOSTS, emptyDir: {} }],
      }),
    },
  },
  {
    name: 'new super Pod: reserved annotations of the tenant are not copied down',
    tenant: tenantPod({}, { annotations: { note: 'x', [ANN.cluster]: 'forged' } }),
    want: {
      object: {
        ...newSuper({ containers: [{ name: 'app', image: 'nginx:1' }] }),
        metadata: { name: 'web', namespace: SNS, labels: { app: 'web' }, annotations: { note: 'x' } },
      },
    },
  },
  {
    name: "new super Pod under perPod: the kube-api-access volume becomes the Pod's vc-token Secret, minted after the bind",
    tenantOver: perPod,
    tenant: tenantPod({
      serviceAccountName: 'default',
      containers: [{ name: 'app', image: 'nginx:1', volumeMounts: [tokenMount] }],
      volumes: [{ name: 'data', emptyDir: {} }, tokenVolume],
    }),
    want: {
      object: newSuper({
        serviceAccountName: 'default',
        containers: [{ name: 'app', image: 'nginx:1', volumeMounts: [tokenMount] }],
        volumes: [{ name: 'data', emptyDir: {} }, tokenSecretVolume],
      }),
    },
  },
  {
    name: 'a bound tenant Pod under perPod: the token effect names the Pod service account',
    tenantOver: perPod,
    tenant: tenantPod({ serviceAccountName: 'builder', nodeName: 'node-1', volumes: [tokenVolume] }),
    super: superPod({ nodeName: 'node-1', automountServiceAccountToken: false, volumes: [tokenSecretVolume] }),
    want: {
      object: {
        ...superPod({ nodeName: 'node-1', automountServiceAccountToken: false, volumes: [tokenSecretVolume] }),
        metadata: { ...superPod().metadata, labels: { app: 'web' }, annotations: undefined },
      },
      effects: [tokenEffect('builder')],
    },
  },
  {
    name: "new super Pod (shared, the default): the kube-api-access volume reads its ServiceAccount's shared Secret",
    tenant: tenantPod({
      containers: [{ name: 'app', image: 'nginx:1', volumeMounts: [tokenMount] }],
      volumes: [{ name: 'data', emptyDir: {} }, tokenVolume],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'nginx:1', volumeMounts: [tokenMount] }],
        volumes: [{ name: 'data', emptyDir: {} }, sharedSecretVolume()],
      }),
      effects: [sharedTokenEffect()],
    },
  },
  {
    name: "new super Pod (shared): a Pod of another ServiceAccount reads that account's shared Secret",
    tenant: tenantPod({ serviceAccountName: 'builder', volumes: [tokenVolume] }),
    want: {
      object: newSuper({
        serviceAccountName: 'builder',
        containers: [{ name: 'app', image: 'nginx:1' }],
        volumes: [sharedSecretVolume('builder')],
      }),
      effects: [sharedTokenEffect('builder')],
    },
  },
  {
    name: 'new super Pod (shared): the admission token beside a token for another audience goes per Pod (after the bind)',
    tenant: tenantPod({
      volumes: [
        tokenVolume,
        {
          name: 'vault',
          projected: { sources: [{ serviceAccountToken: { audience: 'vault', path: 'vault-token' } }] },
        },
      ],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'nginx:1' }],
        volumes: [
          tokenSecretVolume,
          {
            name: 'vault',
            projected: {
              sources: [{ secret: { name: 'web-vc-token', items: [{ key: 'token-0', path: 'vault-token' }] } }],
            },
          },
        ],
      }),
    },
  },
  {
    name: 'new super Pod: a projected volume not from the ServiceAccount admission is left alone',
    tenant: tenantPod({
      volumes: [{ name: 'kube-api-access-x', projected: { sources: [{ secret: { name: 's' } }] } }],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'nginx:1' }],
        volumes: [{ name: 'kube-api-access-x', projected: { sources: [{ secret: { name: 's' } }] } }],
      }),
    },
  },
  {
    name: 'new super Pod: kube-root-ca.crt is renamed in volumes, projections, env and envFrom',
    tenant: tenantPod({
      containers: [
        {
          name: 'app',
          image: 'nginx:1',
          env: [
            { name: 'CA', valueFrom: { configMapKeyRef: { name: 'kube-root-ca.crt', key: 'ca.crt' } } },
            { name: 'OTHER', valueFrom: { configMapKeyRef: { name: 'settings', key: 'x' } } },
          ],
          envFrom: [{ configMapRef: { name: 'kube-root-ca.crt' } }, { secretRef: { name: 'kube-root-ca.crt' } }],
        },
      ],
      initContainers: [{ name: 'init', image: 'busybox', envFrom: [{ configMapRef: { name: 'kube-root-ca.crt' } }] }],
      volumes: [
        { name: 'ca', configMap: { name: 'kube-root-ca.crt' } },
        {
          name: 'mix',
          projected: { sources: [{ configMap: { name: 'kube-root-ca.crt' } }, { configMap: { name: 'settings' } }] },
        },
      ],
    }),
    want: {
      object: newSuper({
        containers: [
          {
            name: 'app',
            image: 'nginx:1',
            env: [
              { name: 'CA', valueFrom: { configMapKeyRef: { name: 'tenant-kube-root-ca.crt', key: 'ca.crt' } } },
              { name: 'OTHER', valueFrom: { configMapKeyRef: { name: 'settings', key: 'x' } } },
            ],
            envFrom: [
              { configMapRef: { name: 'tenant-kube-root-ca.crt' } },
              { secretRef: { name: 'kube-root-ca.crt' } },
            ],
          },
        ],
        initContainers: [
          { name: 'init', image: 'busybox', envFrom: [{ configMapRef: { name: 'tenant-kube-root-ca.crt' } }] },
        ],
        volumes: [
          { name: 'ca', configMap: { name: 'tenant-kube-root-ca.crt' } },
          {
            name: 'mix',
            projected: {
              sources: [{ configMap: { name: 'tenant-kube-root-ca.crt' } }, { configMap: { name: 'settings' } }],
            },
          },
        ],
      }),
    },
  },
  {
    name: 'new super Pod: the tenant apiserver endpoint is set in every container and init container',
    tenantOver: { apiserverEndpoint: { host: '10.0.0.5', port: 6443 } },
    tenant: tenantPod({
      containers: [
        {
          name: 'app',
          image: 'nginx:1',
          env: [
            { name: 'KUBERNETES_SERVICE_HOST', value: 'wrong' },
            { name: 'A', value: '1' },
          ],
        },
        { name: 'side', image: 'envoy' },
      ],
      initContainers: [{ name: 'init', image: 'busybox' }],
    }),
    want: {
      object: newSuper({
        containers: [
          {
            name: 'app',
            image: 'nginx:1',
            env: [
              { name: 'KUBERNETES_SERVICE_HOST', value: '10.0.0.5' },
              { name: 'A', value: '1' },
              { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
            ],
          },
          {
            name: 'side',
            image: 'envoy',
            env: [
              { name: 'KUBERNETES_SERVICE_HOST', value: '10.0.0.5' },
              { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
            ],
          },
        ],
        initContainers: [
          {
            name: 'init',
            image: 'busybox',
            env: [
              { name: 'KUBERNETES_SERVICE_HOST', value: '10.0.0.5' },
              { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
            ],
          },
        ],
      }),
    },
  },
  {
    name: 'new super Pod: fields the super admission recomputes or forbids at creation are dropped',
    tenantOver: { pods: { priorityClasses: ['high'] } },
    tenant: tenantPod({
      priority: 1000,
      priorityClassName: 'high',
      preemptionPolicy: 'PreemptLowerPriority',
      runtimeClassName: 'kata',
      overhead: { cpu: '250m' },
      ephemeralContainers: [{ name: 'debug', image: 'busybox' }],
    }),
    want: {
      object: newSuper({
        containers: [{ name: 'app', image: 'nginx:1' }],
        priorityClassName: 'high',
        runtimeClassName: 'kata',
      }),
    },
  },
  {
    name: 'existing super Pod: only labels, annotations, images and activeDeadlineSeconds follow; defaulted fields survive',
    tenant: tenantPod(
      {
        containers: [{ name: 'app', image: 'nginx:2', env: [{ name: 'NEW', value: 'ignored' }] }],
        initContainers: [{ name: 'init', image: 'busybox:2', imagePullPolicy: 'Always' }],
        activeDeadlineSeconds: 30,
        hostname: 'changed',
      },
      { labels: { app: 'web', tier: 'front' }, annotations: { note: 'y' } },
    ),
    super: superPod(
      {
        containers: [
          {
            name: 'app',
            image: 'nginx:1',
            terminationMessagePath: '/dev/termination-log',
            imagePullPolicy: 'Always',
          },
        ],
        initContainers: [{ name: 'init', image: 'busybox:1', imagePullPolicy: 'Always' }],
        activeDeadlineSeconds: 60,
        dnsPolicy: 'None',
        dnsConfig: { nameservers: ['10.96.0.99'] },
        schedulerName: 'default-scheduler',
        tolerations: [
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        ],
        nodeName: 'node-1',
        priority: 0,
      },
      { phase: 'Running' },
    ),
    want: {
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'web',
          namespace: SNS,
          uid: 'super-uid-9',
          resourceVersion: '7',
          labels: { app: 'web', tier: 'front' },
          annotations: { note: 'y' },
        },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'nginx:2',
              terminationMessagePath: '/dev/termination-log',
              imagePullPolicy: 'Always',
            },
          ],
          initContainers: [{ name: 'init', image: 'busybox:2', imagePullPolicy: 'Always' }],
          activeDeadlineSeconds: 30,
          dnsPolicy: 'None',
          dnsConfig: { nameservers: ['10.96.0.99'] },
          schedulerName: 'default-scheduler',
          tolerations: [
            { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
          ],
          nodeName: 'node-1',
          priority: 0,
        },
        status: { phase: 'Running' },
      },
    },
  },
  {
    name: 'existing super Pod using the shared Secret: its effect is emitted again, even once the tenant is perPod',
    tenantOver: perPod,
    tenant: tenantPod({ volumes: [tokenVolume] }),
    super: superPod({ automountServiceAccountToken: false, volumes: [sharedSecretVolume()] }),
    want: {
      object: {
        ...superPod({ automountServiceAccountToken: false, volumes: [sharedSecretVolume()] }),
        metadata: { ...superPod().metadata, labels: { app: 'web' }, annotations: undefined },
      },
      effects: [sharedTokenEffect()],
    },
  },
  {
    name: 'existing super Pod using the vc-token Secret, the tenant Pod not bound yet: no token (it would carry no node)',
    tenant: tenantPod({ volumes: [tokenVolume] }),
    super: superPod({ automountServiceAccountToken: false, volumes: [tokenSecretVolume] }),
    want: {
      object: {
        ...superPod({ automountServiceAccountToken: false, volumes: [tokenSecretVolume] }),
        metadata: { ...superPod().metadata, labels: { app: 'web' }, annotations: undefined },
      },
    },
  },
  {
    name: 'existing super Pod using the vc-token Secret: the token effect is emitted again so the core keeps it fresh',
    tenant: tenantPod({ nodeName: 'node-1', volumes: [tokenVolume] }),
    super: superPod({ automountServiceAccountToken: false, volumes: [tokenSecretVolume] }),
    want: {
      object: {
        ...superPod({ automountServiceAccountToken: false, volumes: [tokenSecretVolume] }),
        metadata: { ...superPod().metadata, labels: { app: 'web' }, annotations: undefined },
      },
      effects: [tokenEffect()],
    },
  },
];

/** normalize drops undefined-valued keys, as a JSON round trip (and the core's JSON Patch diff) would. */
const normalize = <T>(d: T): T => JSON.parse(JSON.stringify(d)) as T;

describe('pods plugin: toSuper', () => {
  it.each(toSuperCases)('$name', (c) => {
    const tenant = testTenant(c.tenantOver);
    const got = podsPlugin.toSuper!(
      structuredClone(c.tenant),
      c.super && structuredClone(c.super),
      testContext({ tenant, superCache, tenantCache }),
    );
    const want = { ...c.want, object: c.want.object && normalize(c.want.object) };
    expect(got).toEqual(want);
  });

  it('creates the super Pod of a Pod naming one of its vNodes on the super node behind it, as upstream: no scheduler', () => {
    const withNode = new MapCache([
      [R.serviceaccounts, [podServiceAccount]],
      [R.runtimeclasses, [publicKata]],
      [R.nodes, [{ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, status: {} }]],
      [R.pods, [superPod({ nodeName: 'n1' }, {}, { name: 'other' })]],
    ]);
    const got = podsPlugin.toSuper!(
      tenantPod({ nodeName: 'n1' }),
      undefined,
      testContext({ superCache: withNode, tenantCache }),
    );
    expect(got.skip).toBeUndefined();
    expect(got.object?.spec?.nodeName).toBe('n1');
    expect(got.object?.spec?.affinity).toBeUndefined();
    // bound already: the tenant Pod is not bound again once its super Pod runs there
    const up = podsPlugin.toTenant!(
      superPod({ nodeName: 'n1' }, { phase: 'Running' }),
      tenantPod({ nodeName: 'n1' }),
      testContext({ superCache: withNode }),
    );
    expect(up.effects ?? []).toEqual([]);
    expect(up.object?.status?.phase).toBe('Running');
  });

  it('refuses a Pod with a field no rule names, telling the tenant on an event and the VCSynced condition', () => {
    const got = podsPlugin.toSuper!(
      tenantPod({ futureField: true }),
      undefined,
      testContext({ superCache, tenantCache }),
    );
    expect(got.object).toBeNull();
    expect(got.skip?.reason).toBe('PodPolicyViolation');
    const [event, condition] = got.effects as [
      Extract<Effect, { type: 'event' }>,
      Extract<Effect, { type: 'tenantCondition' }>,
    ];
    expect(event.message).toMatch(/^spec\.futureField: no rule exists for this field yet/);
    expect(condition.condition).toMatchObject({ status: 'False', message: event.message });
  });

  it('waits for the scheduling gates to go, then creates the super Pod without them', () => {
    const ctx = testContext({ superCache, tenantCache });
    const gatedPod = tenantPod({ schedulingGates: [{ name: 'example.com/quota' }] });
    expect(podsPlugin.toSuper!(gatedPod, undefined, ctx)).toEqual({
      object: null,
      skip: { reason: 'SchedulingGated', message: expect.stringContaining('example.com/quota') as unknown as string },
    });
    const open = podsPlugin.toSuper!(tenantPod({ schedulingGates: [] }), undefined, ctx);
    expect(open.object?.spec?.schedulingGates).toBeUndefined();
  });

  it('confines Pod affinity to super namespaces and reads ephemeral volumes from the tenant-made claim', () => {
    const ctx = testContext({ superCache, tenantCache });
    const got = podsPlugin.toSuper!(
      tenantPod({
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'k', namespaces: ['default'] }],
          },
        },
        volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } }],
      }),
      undefined,
      ctx,
    );
    const anti = (
      got.object?.spec?.affinity as {
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: Array<{ namespaces: string[] }> };
      }
    ).podAntiAffinity;
    expect(anti.requiredDuringSchedulingIgnoredDuringExecution[0]?.namespaces).toEqual([SNS]);
    expect(got.object?.spec?.volumes).toEqual([
      { name: 'scratch', persistentVolumeClaim: { claimName: 'web-scratch' } },
    ]);
  });

  it('pulls every image Always except the exact names of the platform preloaded images', () => {
    const tenant = testTenant({ pods: { preloadedImages: ['registry.k8s.io/pause:3.10'] } });
    const got = podsPlugin.toSuper!(
      tenantPod({
        containers: [
          { name: 'preloaded', image: 'registry.k8s.io/pause:3.10', imagePullPolicy: 'Never' },
          { name: 'other-tag', image: 'registry.k8s.io/pause:3.9' },
        ],
        initContainers: [{ name: 'init', image: 'registry.k8s.io/pause:3.10' }],
      }),
      undefined,
      testContext({ tenant, superCache, tenantCache }),
    );
    const spec = (got.object as Pod).spec!;
    expect(spec.containers.map((c) => c.imagePullPolicy)).toEqual(['IfNotPresent', 'Always']);
    expect(spec.initContainers?.map((c) => c.imagePullPolicy)).toEqual(['IfNotPresent']);
  });

  it("waits for the super Pods' ServiceAccount, asking the core to create it", () => {
    const got = podsPlugin.toSuper!(tenantPod(), undefined, testContext());
    expect(got).toEqual({
      object: normalize(newSuper({ containers: [{ name: 'app', image: 'nginx:1' }] })),
      skip: { reason: 'WaitingForServiceAccount', message: expect.any(String) as unknown as string },
      effects: [{ type: 'superServiceAccount', namespace: 'default', name: SUPER_POD_SERVICE_ACCOUNT }],
      requeueAfterMs: 200,
    });
  });

  it('tokenKeys lists the admission token under "token" and the others by order', () => {
    expect(
      tokenKeys(
        tenantPod({
          volumes: [tokenVolume, { name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'p' } }] } }],
        }).spec,
      ),
    ).toEqual([{ key: 'token', expirationSeconds: 3607 }, { key: 'token-0' }]);
  });

  it.each<[string, Parameters<typeof tokenPlan>, { secretName: string; shared: boolean }]>([
    [
      'the admission token alone, shared by default',
      [[ADMISSION_TOKEN], 'default', 'web', undefined],
      { secretName: sharedTokenSecretName('default', ADMISSION_TOKEN), shared: true },
    ],
    ['the admission token under perPod', [[ADMISSION_TOKEN], 'default', 'web', 'perPod'], perPodPlan],
    ['no token at all: the Pod name, unused', [[], 'default', 'web', 'shared'], perPodPlan],
    [
      'the admission token with an audience (a hand-made kube-api-access volume)',
      [[{ ...ADMISSION_TOKEN, audiences: ['vault'] }], 'default', 'web', 'shared'],
      perPodPlan,
    ],
    ['another projected token alone', [[{ key: 'token-0' }], 'default', 'web', 'shared'], perPodPlan],
    [
      'the admission token and another one',
      [[ADMISSION_TOKEN, { key: 'token-0', audiences: ['vault'] }], 'default', 'web', 'shared'],
      perPodPlan,
    ],
  ])('tokenPlan: %s', (_name, args, want) => {
    expect(tokenPlan(...args)).toEqual(want);
  });

  it('sharedTokenSecretName differs by ServiceAccount and request, never equals a Pod Secret, and fits 63', () => {
    const names = [
      sharedTokenSecretName('default', ADMISSION_TOKEN),
      sharedTokenSecretName('builder', ADMISSION_TOKEN),
      sharedTokenSecretName('default', { key: 'token', expirationSeconds: 600 }),
      sharedTokenSecretName('default', { key: 'token' }),
      sharedTokenSecretName('default', { key: 'token', audiences: ['x'], expirationSeconds: 3607 }),
      sharedTokenSecretName('s'.repeat(253), ADMISSION_TOKEN),
      sharedTokenSecretName('s'.repeat(253), { key: 'token' }),
    ];
    expect(new Set(names).size).toBe(names.length);
    expect(names[0]).toMatch(/^default-vc-token-[0-9a-f]{10}$/);
    expect(sharedTokenSecretName('default', { ...ADMISSION_TOKEN, key: 'other' })).toBe(names[0]);
    for (const n of names) expect(n.length).toBeLessThanOrEqual(63);
    // A Pod named like a shared Secret gets a Secret of its own name plus -vc-token.
    expect(tokenSecretName(names[0]!)).not.toBe(names[0]);
    expect(tokenSecretName(names[0]!.replace(/-vc-token-[0-9a-f]+$/, ''))).not.toBe(names[0]);
  });

  it('fits a long Pod name into the token Secret name', () => {
    const long = 'a'.repeat(70);
    const got = podsPlugin.toSuper!(
      tenantPod({ volumes: [tokenVolume] }, { name: long }),
      undefined,
      testContext({ tenant: testTenant(perPod), superCache }),
    );
    const secretName = tokenSecretName(long);
    expect(secretName.length).toBeLessThanOrEqual(63);
    expect(got.object?.spec?.volumes?.[0]?.secret?.secretName).toBe(secretName);
    // its token is asked for once the tenant Pod is bound (tokennode.ts)
    expect(got.effects).toBeUndefined();
  });

  it('does not modify its arguments', () => {
    const t = tenantPod({
      nodeName: 'n',
      volumes: [tokenVolume, { name: 'ca', configMap: { name: 'kube-root-ca.crt' } }],
    });
    const s = superPod();
    const [t0, s0] = [structuredClone(t), structuredClone(s)];
    podsPlugin.toSuper!(t, undefined, ctx);
    podsPlugin.toSuper!({ ...t, spec: { ...t.spec!, nodeName: undefined } }, undefined, ctx);
    podsPlugin.toSuper!(t, s, ctx);
    expect([t, s]).toEqual([t0, s0]);
  });
});

interface ToTenantCase {
  name: string;
  super: Pod | undefined;
  tenant: Pod;
  want: Decision<Pod>;
}

const runningStatus = {
  phase: 'Running',
  conditions: [
    { type: 'PodScheduled', status: 'True' },
    { type: 'Ready', status: 'True' },
  ],
  podIP: '10.244.1.7',
  podIPs: [{ ip: '10.244.1.7' }],
  hostIP: '192.168.0.11',
  hostIPs: [{ ip: '192.168.0.11' }],
  startTime: '2026-01-01T00:00:01Z',
  containerStatuses: [
    { name: 'app', ready: true, restartCount: 0, image: 'nginx:1', imageID: 'sha', state: { running: {} } },
  ],
  initContainerStatuses: [{ name: 'init', ready: true, restartCount: 0, state: { terminated: { exitCode: 0 } } }],
  qosClass: 'BestEffort',
  nominatedNodeName: 'super-only',
};
const { nominatedNodeName: _, qosClass: _qos, ...copiedStatus } = runningStatus;

const toTenantCases: ToTenantCase[] = [
  {
    name: 'the bind of a tenant Pod whose super Pod reads a token Secret of its own is followed by that token',
    super: superPod({ nodeName: 'node-1', volumes: [tokenSecretVolume] }, { phase: 'Pending' }),
    tenant: tenantPod({ volumes: [tokenVolume] }),
    want: {
      object: { ...tenantPod({ volumes: [tokenVolume] }), status: { phase: 'Pending' } },
      effects: [{ type: 'bind', namespace: 'default', name: 'web', uid: TUID, node: 'node-1' }, tokenEffect()],
    },
  },
  {
    name: 'the bind of a tenant Pod reading a shared token Secret is followed by nothing (it was minted at create)',
    super: superPod({ nodeName: 'node-1', volumes: [sharedSecretVolume()] }, { phase: 'Pending' }),
    tenant: tenantPod({ volumes: [tokenVolume] }),
    want: {
      object: { ...tenantPod({ volumes: [tokenVolume] }), status: { phase: 'Pending' } },
      effects: [{ type: 'bind', namespace: 'default', name: 'web', uid: TUID, node: 'node-1' }],
    },
  },
  {
    name: "the tenant Pod keeps its own qosClass when a super LimitRange's defaults made the super Pod's differ",
    super: superPod({ nodeName: 'node-1' }, { ...runningStatus, qosClass: 'Burstable' }),
    tenant: { ...tenantPod({ nodeName: 'node-1' }), status: { qosClass: 'BestEffort' } },
    want: { object: { ...tenantPod({ nodeName: 'node-1' }), status: { ...copiedStatus, qosClass: 'BestEffort' } } },
  },
  {
    name: "the super Pod's /etc/hosts init container is not shown in the tenant Pod's status",
    super: superPod(
      { nodeName: 'node-1' },
      {
        ...runningStatus,
        initContainerStatuses: [
          { name: ETC_HOSTS, ready: true, restartCount: 0, state: { terminated: { exitCode: 0 } } },
          ...runningStatus.initContainerStatuses,
        ],
      },
    ),
    tenant: tenantPod({ nodeName: 'node-1' }),
    want: { object: { ...tenantPod({ nodeName: 'node-1' }), status: copiedStatus } },
  },
  {
    name: 'status is copied up from the super Pod; a bound tenant Pod gets no bind effect',
    super: superPod({ nodeName: 'node-1' }, runningStatus),
    tenant: tenantPod({ nodeName: 'node-1' }),
    want: { object: { ...tenantPod({ nodeName: 'node-1' }), status: copiedStatus } },
  },
  {
    name: 'a scheduled super Pod binds the unbound tenant Pod to the vNode of the same name',
    super: superPod(
      { nodeName: 'node-1' },
      { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] },
    ),
    tenant: tenantPod(),
    want: {
      object: { ...tenantPod(), status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] } },
      effects: [{ type: 'bind', namespace: 'default', name: 'web', uid: TUID, node: 'node-1' }],
    },
  },
  {
    name: 'a super Pod not yet scheduled: status only, no bind',
    super: superPod({}, { phase: 'Pending' }),
    tenant: tenantPod(),
    want: { object: tenantPod() },
  },
  {
    name: 'a terminating tenant Pod is not bound',
    super: superPod({ nodeName: 'node-1' }, { phase: 'Running' }),
    tenant: tenantPod({}, { deletionTimestamp: NOW }),
    want: { object: { ...tenantPod({}, { deletionTimestamp: NOW }), status: { phase: 'Running' } } },
  },
  {
    name: 'fields the super Pod no longer has are cleared; tenant-only condition types are kept',
    super: superPod({ nodeName: 'node-1' }, { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] }),
    tenant: {
      ...tenantPod({ nodeName: 'node-1' }),
      status: {
        phase: 'Pending',
        message: 'old',
        reason: 'Old',
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'example.com/gate', status: 'True' },
        ],
      },
    },
    want: {
      object: {
        ...tenantPod({ nodeName: 'node-1' }),
        status: {
          phase: 'Running',
          conditions: [
            { type: 'Ready', status: 'False' },
            { type: 'example.com/gate', status: 'True' },
          ],
        },
      },
    },
  },
  {
    name: 'the super Pod is gone and the tenant Pod is terminating: made terminal (Failed), deleted with grace 0',
    super: undefined,
    tenant: tenantPod({ nodeName: 'node-1' }, { deletionTimestamp: NOW }),
    want: {
      object: tenantPod({ nodeName: 'node-1' }, { deletionTimestamp: NOW }),
      effects: [
        {
          type: 'deleteTenant',
          namespace: 'default',
          name: 'web',
          uid: TUID,
          gracePeriodSeconds: 0,
          status: { phase: 'Failed' },
        },
      ],
    },
  },
  {
    name: 'the super Pod is gone and the tenant Pod lives: nothing changes',
    super: undefined,
    tenant: tenantPod(),
    want: { object: tenantPod() },
  },
  {
    name: 'a super Pod of an earlier tenant Pod with the same name lends neither status nor node',
    super: superPod({ nodeName: 'node-1' }, runningStatus, {
      annotations: {
        [ANN.cluster]: ctx.tenant.key,
        [ANN.namespace]: 'default',
        [ANN.name]: 'web',
        [ANN.uid]: 'older-uid',
      },
    }),
    tenant: tenantPod(),
    want: { object: tenantPod() },
  },
];

describe('pods plugin: toTenant', () => {
  it.each(toTenantCases)('$name', (c) => {
    const got = podsPlugin.toTenant!(c.super && structuredClone(c.super), structuredClone(c.tenant), ctx);
    expect(got).toEqual(c.want);
  });
});

describe('pods plugin: bind with several super clusters', () => {
  it('binds the tenant Pod to the vNode named after its super cluster and node (r2.node-1), only when shared', () => {
    const scheduled = { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] };
    for (const [shared, node] of [
      [true, 'r2.node-1'],
      [false, 'node-1'],
    ] as const) {
      const c = { ...ctx, superCluster: 'r2', ...(shared && { sharedTenants: true }) };
      const got = podsPlugin.toTenant!(superPod({ nodeName: 'node-1' }, scheduled), tenantPod(), c);
      expect(got.effects).toEqual([{ type: 'bind', namespace: 'default', name: 'web', uid: TUID, node }]);
    }
  });
});

describe('pods plugin: translateKubeletPath', () => {
  const cases: Array<[string, string | null]> = [
    ['/containerLogs/default/web/app', `/containerLogs/${SNS}/web/app`],
    [
      '/containerLogs/default/web/app?follow=true&tailLines=10',
      `/containerLogs/${SNS}/web/app?follow=true&tailLines=10`,
    ],
    ['/exec/default/web/app?command=sh&stdin=1&tty=1', `/exec/${SNS}/web/app?command=sh&stdin=1&tty=1`],
    ['/exec/default/web/3f2a-uid/app?command=ls', `/exec/${SNS}/web/app?command=ls`],
    ['/attach/default/web/app?stdout=1', `/attach/${SNS}/web/app?stdout=1`],
    ['/attach/default/web/3f2a-uid/app', `/attach/${SNS}/web/app`],
    ['/portForward/default/web?port=80', `/portForward/${SNS}/web?port=80`],
    ['/portForward/default/web/3f2a-uid', `/portForward/${SNS}/web`],
    ['/run/default/web/app', `/run/${SNS}/web/app`],
    ['/run/default/web/3f2a-uid/app', `/run/${SNS}/web/app`],
    ['/containerLogs/default/web', null],
    ['/containerLogs/default/web/uid/app', null],
    ['/exec/default/web', null],
    ['/exec/default/web/uid/app/extra', null],
    ['/portForward/default', null],
    ['/exec/../kube-system/web/app', null],
    ['/exec/default/web/%2e%2e/app', null],
    ['/exec/default//app', null],
    ['/pods', null],
    ['/metrics', null],
    ['/stats/summary', null],
    ['/logs/syslog', null],
    ['/configz', null],
    ['/checkpoint/default/web/app', null],
    ['/toString/default/web/app', null],
    ['exec/default/web/app', null],
  ];
  it.each(cases)('%s -> %s', (path, want) => {
    expect(translateKubeletPath(path, ctx)).toBe(want);
  });
  it('is the plugin vn-agent capability', () => {
    expect(podsPlugin.translateKubeletPath).toBe(translateKubeletPath);
  });
});

describe('pods plugin: manifest', () => {
  it('owns core/v1 pods in both directions, runs in the manager and the vn-agent, and is the default export', () => {
    expect(podsPlugin.manifest).toEqual({
      apiVersion: 'plugins.tenancy.x-k8s.io/v1',
      name: 'pods',
      version: '0.1.0',
      description: expect.any(String),
      resource: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true },
      direction: 'both',
      sourceOfTruth: 'tenant',
      processes: ['manager', 'vn-agent'],
    });
    expect(plugin).toBe(podsPlugin);
  });
});
