// Over 500 lines, on purpose: the Pod plugin is one resource's transform (a new or updated super Pod, the service
// account token plan, refusals as effects, status up, the vn-agent's kubelet paths) whose pieces share the Pod
// helpers here. What is a job of its own lives beside it: fields.ts (the field allow-list), translate.ts, downward.ts,
// nodepin.ts, nodename.ts, ephemeral.ts, podsecurity.ts, terminal.ts, gates.ts, tokennode.ts, generation.ts,
// resize.ts, ephemeralcontainers.ts.
import { createHash } from 'node:crypto';
import {
  clone,
  type Decision,
  downMeta,
  type Effect,
  fitName,
  KUBELET_PATHS,
  type KubeletKind,
  type Naming,
  newObject,
  PLUGIN_API_VERSION,
  type PluginContext,
  provenanceOf,
  R,
  type ResourcePlugin,
  type ServiceAccountTokenKey,
  type ServiceAccountTokenMode,
  SUPER_POD_SERVICE_ACCOUNT,
  superConfigMapName,
  type TenantView,
  type VnAgentCapability,
  vNodeName,
} from '@virtualcluster-ts/plugin-sdk';
import { checkPodSecurity } from './podsecurity.ts';
import {
  applyForcedPlacement,
  checkPodPolicy,
  type Container,
  DEFAULT_PODS_POLICY,
  type Pod,
  POD_POLICY_VIOLATION,
  type PodRefusal,
  podRuntimeClass,
  type PodSpec,
  type PodStatus,
  SYNCED_CONDITION,
  type Volume,
  type VolumeProjection,
} from '@virtualcluster-ts/plugin-sdk/pods';
import { terminalStatus } from './terminal.ts';
import { checkNodePins, translateNodePins } from './nodepin.ts';
import { checkNodeName, NODE_NAME_REFUSED, translateNodeName } from './nodename.ts';
import { checkEphemeralClaims } from './ephemeral.ts';
import { downwardAnnotations, resolveTenantFieldRefs, translateDownwardVolumes } from './downward.ts';
import { checkPodFields } from './fields.ts';
import { checkImage, checkImages } from './images.ts';
import { gated } from './gates.ts';
import { resizeContainers } from './resize.ts';
import {
  addEphemeralContainers,
  type ContainerStatus,
  ephemeralRefusals,
  shownRefused,
  withRefusedStatuses,
} from './ephemeralcontainers.ts';
import { generationAnnotation, mapObservedGenerations, TENANT_GENERATION } from './generation.ts';
import { serviceAccountOf, tokenEffectOnceBound } from './tokennode.ts';
import { applyNodeShare } from './nodeshare.ts';
import { claimEphemeralVolumes, confineAffinityNamespaces, dropNetRaw, setPullPolicies } from './translate.ts';
import { rewriteEtcHosts, withoutEtcHostsStatus } from './etchosts.ts';

export type { Pod, PodSpec, PodStatus } from '@virtualcluster-ts/plugin-sdk/pods';
export { SUPER_POD_SERVICE_ACCOUNT } from '@virtualcluster-ts/plugin-sdk';
export { BASELINE_CAPABILITIES, checkPodSecurity } from './podsecurity.ts';
export { SCHEDULING_GATED } from './gates.ts';
export { NODE_NAME_REFUSED } from './nodename.ts';
export { TENANT_GENERATION } from './generation.ts';
export { ETC_HOSTS } from './etchosts.ts';
export {
  applyForcedPlacement,
  checkPodPolicy,
  DEFAULT_PODS_POLICY,
  DEFAULT_TOLERATIONS,
  POD_POLICY_VIOLATION,
  SYNCED_CONDITION,
  SYSTEM_PRIORITY_PREFIX,
} from '@virtualcluster-ts/plugin-sdk/pods';

/** TOKEN_VOLUME_PREFIX starts the name of the projected volume the ServiceAccount admission adds. */
export const TOKEN_VOLUME_PREFIX = 'kube-api-access-';
/** SUPER_POD_GONE is the skip and event reason for a bound tenant Pod whose super Pod no longer exists. */
export const SUPER_POD_GONE = 'SuperPodGone';

const ended = (p: Pod): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/**
 * boundBySyncer tells a tenant Pod the syncer bound (the Binding set PodScheduled=True; a Pod created with nodeName
 * has no scheduler to set it) that has not ended.
 */
const boundBySyncer = (p: Pod): boolean =>
  !!p.spec?.nodeName &&
  !ended(p) &&
  !!p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True');

/** SYNCED_REASON is the reason of the True VCSynced condition that replaces a refusal once the Pod is synced. */
export const SYNCED_REASON = 'Synced';

/** WAITING_FOR_SERVICE_ACCOUNT is the skip reason while SUPER_POD_SERVICE_ACCOUNT is being created. */
export const WAITING_FOR_SERVICE_ACCOUNT = 'WaitingForServiceAccount';
/** SERVICE_ACCOUNT_RETRY_MS is how soon a Pod waiting for SUPER_POD_SERVICE_ACCOUNT is looked at again. */
export const SERVICE_ACCOUNT_RETRY_MS = 200;

/** WAITING_FOR_RUNTIME_CLASS is the skip reason while the tenant RuntimeClass a Pod names reaches the super cluster. */
export const WAITING_FOR_RUNTIME_CLASS = 'WaitingForRuntimeClass';
/** RUNTIME_CLASS_RETRY_MS is how soon a Pod waiting for its RuntimeClass is looked at again. */
export const RUNTIME_CLASS_RETRY_MS = 500;

/**
 * STATUS_FIELDS are the status fields copied from the super Pod to the tenant Pod. qosClass is not one: the tenant
 * apiserver sets it at creation and refuses a change, and a super LimitRange's defaults can make the super Pod's differ.
 */
export const STATUS_FIELDS = [
  'phase',
  'conditions',
  'podIP',
  'podIPs',
  'hostIP',
  'hostIPs',
  'startTime',
  'containerStatuses',
  'initContainerStatuses',
  'ephemeralContainerStatuses',
  'message',
  'reason',
] as const;

/** tokenSecretName is the super Secret holding the tenant service account tokens of one Pod. */
export function tokenSecretName(podName: string): string {
  return fitName(`${podName}-vc-token`);
}

/**
 * sharedTokenSecretName is the super Secret shared by the Pods of one namespace that run as `serviceAccount` and ask
 * for the same token: `<serviceAccount>-vc-token-<10 hex of sha256 of the account and the request>`. It never equals a
 * tokenSecretName (those end in `-vc-token`, or, cut, in `-<16 hex>`; this ends in `-<10 hex>`, or cut, in a hash of
 * another name), so no Pod's own Secret and no other request's shared one can be taken for it.
 */
export function sharedTokenSecretName(serviceAccount: string, token: ServiceAccountTokenKey): string {
  const request = JSON.stringify([serviceAccount, token.audiences ?? [], token.expirationSeconds ?? null]);
  const h = createHash('sha256').update(request).digest('hex').slice(0, 10);
  return fitName(`${serviceAccount}-vc-token-${h}`);
}

const allContainers = (spec: PodSpec): Container[] => [
  ...spec.containers,
  ...(spec.initContainers ?? []),
  ...(spec.ephemeralContainers ?? []),
];

function renameRootCA(spec: PodSpec): void {
  const rename = (ref: { name?: string } | undefined): void => {
    if (ref?.name) ref.name = superConfigMapName(ref.name);
  };
  for (const v of spec.volumes ?? []) {
    rename(v.configMap);
    for (const s of v.projected?.sources ?? []) rename(s.configMap);
  }
  for (const c of allContainers(spec)) {
    for (const e of c.env ?? []) rename(e.valueFrom?.configMapKeyRef);
    for (const e of c.envFrom ?? []) rename(e.configMapRef);
  }
}

const isTokenVolume = (v: Volume): boolean =>
  v.name.startsWith(TOKEN_VOLUME_PREFIX) && !!v.projected?.sources?.some((s) => s.serviceAccountToken !== undefined);

/** ADMISSION_TOKEN_KEY is the Secret key of the token of the admission's kube-api-access-* volume. */
const ADMISSION_TOKEN_KEY = 'token';

type TokenSource = NonNullable<VolumeProjection['serviceAccountToken']>;

const tokenKey = (source: TokenSource): ServiceAccountTokenKey => {
  const t: ServiceAccountTokenKey = { key: ADMISSION_TOKEN_KEY };
  if (source.audience) t.audiences = [source.audience];
  if (source.expirationSeconds !== undefined) t.expirationSeconds = source.expirationSeconds;
  return t;
};

/**
 * tokenKeys lists the tokens a tenant Pod spec asks for, in volume order: the admission's kube-api-access-* volume
 * under `token`, every other projected serviceAccountToken source under `token-<n>`.
 */
export function tokenKeys(spec: PodSpec | undefined): ServiceAccountTokenKey[] {
  const out: ServiceAccountTokenKey[] = [];
  let n = 0;
  for (const v of spec?.volumes ?? []) {
    for (const s of v.projected?.sources ?? []) {
      if (!s.serviceAccountToken) continue;
      out.push(
        isTokenVolume(v)
          ? tokenKey(s.serviceAccountToken)
          : { ...tokenKey(s.serviceAccountToken), key: `token-${n++}` },
      );
    }
  }
  return out;
}

/** TokenPlan is which super Secret a Pod's tokens live in and whether other Pods share it. */
export interface TokenPlan {
  secretName: string;
  shared: boolean;
}

/**
 * tokenPlan decides where the tokens of a Pod live. Under `shared` (the default), a Pod whose only token is the
 * admission's kube-api-access one for the tenant apiserver (no audience) reads the Secret its namespace's Pods of the
 * same ServiceAccount and token lifetime share; every other Pod (a custom audience or path: tokens for other systems,
 * which may tell Pods apart by their bound Pod) and every Pod under `perPod` gets a Secret of its own.
 */
export function tokenPlan(
  tokens: readonly ServiceAccountTokenKey[],
  serviceAccount: string,
  podName: string,
  mode: ServiceAccountTokenMode = DEFAULT_PODS_POLICY.serviceAccountTokens,
): TokenPlan {
  const [only] = tokens;
  if (mode === 'shared' && tokens.length === 1 && only?.key === ADMISSION_TOKEN_KEY && !only.audiences?.length)
    return { secretName: sharedTokenSecretName(serviceAccount, only), shared: true };
  return { secretName: tokenSecretName(podName), shared: false };
}

/**
 * replaceTokenSources makes every projected serviceAccountToken source of a new super Pod read the super Secret the
 * syncer fills with tokens minted by the tenant apiserver (keys as tokenKeys names them), so the super cluster never
 * mints a token for a tenant Pod: the admission's kube-api-access-* volume becomes a Secret volume holding token,
 * ca.crt and namespace; in other projected volumes each token source becomes a projection of its key.
 */
function replaceTokenSources(spec: PodSpec, secretName: string): void {
  let n = 0;
  spec.volumes = spec.volumes?.map((v) => {
    if (isTokenVolume(v)) {
      const secret: NonNullable<Volume['secret']> = {
        secretName,
        items: [ADMISSION_TOKEN_KEY, 'ca.crt', 'namespace'].map((key) => ({ key, path: key })),
      };
      if (v.projected?.defaultMode !== undefined) secret.defaultMode = v.projected.defaultMode;
      return { name: v.name, secret };
    }
    if (!v.projected?.sources?.some((s) => s.serviceAccountToken)) return v;
    const sources = v.projected.sources.map((s): VolumeProjection => {
      if (!s.serviceAccountToken) return s;
      return { secret: { name: secretName, items: [{ key: `token-${n++}`, path: s.serviceAccountToken.path }] } };
    });
    return { ...v, projected: { ...v.projected, sources } };
  });
}

const readsSecret = (v: Volume, secretName: string): boolean =>
  v.secret?.secretName === secretName ||
  !!v.projected?.sources?.some((s) => (s.secret as { name?: string } | undefined)?.name === secretName);

function setApiserverEnv(spec: PodSpec, endpoint: { host: string; port: number }): void {
  const wanted = { KUBERNETES_SERVICE_HOST: endpoint.host, KUBERNETES_SERVICE_PORT: String(endpoint.port) };
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
    const env = (c.env ??= []);
    for (const [name, value] of Object.entries(wanted)) {
      const i = env.findIndex((e) => e.name === name);
      if (i >= 0) env[i] = { name, value };
      else env.push({ name, value });
    }
  }
}

const podRef = (p: Pod) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  namespace: p.metadata?.namespace ?? '',
  name: p.metadata?.name ?? '',
  uid: p.metadata?.uid ?? '',
});

/**
 * deleteTenant finishes a terminating tenant Pod whose super Pod is gone: the terminal status a kubelet would have
 * written (so controllers holding finalizers on it let go; given `now`), then the delete with no grace period left.
 */
function deleteTenant(p: Pod, now?: Date): Effect {
  const { namespace, name, uid } = podRef(p);
  const status = now && terminalStatus(p, now);
  return { type: 'deleteTenant', namespace, name, uid, gracePeriodSeconds: 0, ...(status && { status }) };
}

/**
 * clearRefusal is the effect that turns a tenant Pod's False VCSynced condition (an earlier refusal, before a policy
 * change let it through) into True once the Pod is synced; undefined when the Pod carries no such condition, so a
 * Pod that was never refused costs no write.
 */
function clearRefusal(tenantPod: Pod): Effect | undefined {
  const c = tenantPod.status?.conditions?.find((x) => x.type === SYNCED_CONDITION);
  if (!c || c.status === 'True') return undefined;
  const { namespace, name, uid } = podRef(tenantPod);
  return {
    type: 'tenantCondition',
    namespace,
    name,
    uid,
    condition: {
      type: SYNCED_CONDITION,
      status: 'True',
      reason: SYNCED_REASON,
      message: 'the Pod is synced to the super cluster',
    },
  };
}

/** withClearedRefusal adds clearRefusal's effect to a decision that writes the super Pod. */
function withClearedRefusal(tenantPod: Pod, d: Decision<Pod>): Decision<Pod> {
  const clear = d.object && !d.skip ? clearRefusal(tenantPod) : undefined;
  return clear ? { ...d, effects: [...(d.effects ?? []), clear] } : d;
}

/** refusalEvent is the Warning event on the tenant Pod that tells why the syncer refused it (or part of it). */
const refusalEvent = (tenantPod: Pod, r: PodRefusal, reason: string = POD_POLICY_VIOLATION): Effect => ({
  type: 'event',
  side: 'tenant',
  regarding: podRef(tenantPod),
  eventType: 'Warning',
  reason,
  message: r.message,
});

/**
 * translateContainers makes the containers of a spec ready for the super cluster as newSuperPod makes a new Pod's:
 * tenant fieldRefs resolved, kube-root-ca.crt renamed, pull policies, NET_RAW dropped, the tenant apiserver's address.
 * updateSuperPod runs it on the ephemeral containers `kubectl debug` adds, as the containers of a spec of their own.
 */
function translateContainers(spec: PodSpec, tenantPod: Pod, ctx: PluginContext): void {
  resolveTenantFieldRefs(spec, tenantPod, false);
  renameRootCA(spec);
  setPullPolicies(spec, new Set(ctx.tenant.pods?.preloadedImages ?? []));
  dropNetRaw(spec);
  if (ctx.tenant.apiserverEndpoint) setApiserverEnv(spec, ctx.tenant.apiserverEndpoint);
}

/**
 * refuse turns a refusal into a skip the tenant sees: a Warning event and a False VCSynced condition, with `reason`
 * (a policy violation unless told otherwise).
 */
function refuse(tenantPod: Pod, r: PodRefusal, reason: string = POD_POLICY_VIOLATION): Decision<Pod> {
  const ref = podRef(tenantPod);
  return {
    object: null,
    skip: { reason, message: r.message },
    effects: [
      refusalEvent(tenantPod, r, reason),
      {
        type: 'tenantCondition',
        namespace: ref.namespace,
        name: ref.name,
        uid: ref.uid,
        condition: { type: SYNCED_CONDITION, status: 'False', reason, message: r.message },
      },
    ],
  };
}

function newSuperPod(
  tenantPod: Pod,
  ctx: PluginContext,
  target: { namespace: string; name: string },
  runtimeClassName: string | undefined,
): Decision<Pod> {
  const spec = clone(tenantPod.spec ?? { containers: [] });
  resolveTenantFieldRefs(spec, tenantPod, true);
  translateDownwardVolumes(spec);
  translateNodePins(spec, ctx);
  translateNodeName(spec, ctx);
  if (runtimeClassName) spec.runtimeClassName = runtimeClassName;
  else delete spec.runtimeClassName;
  // Pods cannot be created with ephemeral containers; priority, preemptionPolicy and overhead are recomputed by the
  // super's admission from priorityClassName and runtimeClassName, and rejected when the tenant's values differ.
  for (const f of ['ephemeralContainers', 'priority', 'preemptionPolicy', 'overhead', 'schedulingGates'] as const)
    delete spec[f];
  applyForcedPlacement(spec, ctx.tenant.pods);
  applyNodeShare(spec, ctx);
  confineAffinityNamespaces(spec, ctx.names);
  claimEphemeralVolumes(spec, target.name);
  dropNetRaw(spec);
  const effects: Effect[] = [];
  const tokens = tokenKeys(spec);
  const tokenAt = tokenPlan(tokens, serviceAccountOf(tenantPod), target.name, ctx.tenant.pods?.serviceAccountTokens);
  replaceTokenSources(spec, tokenAt.secretName);
  if (tokens.length) effects.push(...tokenEffectOnceBound(tenantPod, tokenAt, tokens));
  renameRootCA(spec);
  setPullPolicies(spec, new Set(ctx.tenant.pods?.preloadedImages ?? []));
  spec.serviceAccountName = SUPER_POD_SERVICE_ACCOUNT;
  delete spec.serviceAccount;
  spec.automountServiceAccountToken = false;
  if (ctx.tenant.apiserverEndpoint) setApiserverEnv(spec, ctx.tenant.apiserverEndpoint);
  rewriteEtcHosts(
    spec,
    {
      tenantNamespace: tenantPod.metadata?.namespace ?? '',
      superNamespace: target.namespace,
      clusterDomain: ctx.tenant.clusterDomain,
    },
    ctx.tenant.pods?.etcHostsImage,
    new Set(ctx.tenant.pods?.preloadedImages ?? []),
  );
  const meta = downMeta(tenantPod, undefined, ctx, target, {
    ...downwardAnnotations(tenantPod, ctx.tenant.opaqueMetaPrefixes),
    ...generationAnnotation(tenantPod),
  });
  const object = newObject<Pod>(tenantPod, meta, { spec });
  if (!ctx.superCache.get(R.serviceaccounts, target.namespace, SUPER_POD_SERVICE_ACCOUNT)) {
    // The object goes with the skip so that the core's namespace ownership check still applies to this create.
    return {
      object,
      skip: {
        reason: WAITING_FOR_SERVICE_ACCOUNT,
        message: `creating ServiceAccount ${SUPER_POD_SERVICE_ACCOUNT} in the super namespace`,
      },
      effects: [
        {
          type: 'superServiceAccount',
          namespace: tenantPod.metadata?.namespace ?? '',
          name: SUPER_POD_SERVICE_ACCOUNT,
        },
      ],
      requeueAfterMs: SERVICE_ACCOUNT_RETRY_MS,
    };
  }
  return effects.length ? { object, effects } : { object };
}

function updateSuperPod(
  tenantPod: Pod,
  superPod: Pod,
  ctx: PluginContext,
  target: { namespace: string; name: string },
): Decision<Pod> {
  const desired = clone(superPod);
  desired.metadata = downMeta(tenantPod, superPod, ctx, target, {
    ...downwardAnnotations(tenantPod, ctx.tenant.opaqueMetaPrefixes),
    ...generationAnnotation(tenantPod),
  });
  const spec = desired.spec;
  const tspec = tenantPod.spec;
  if (!spec || !tspec) return { object: desired };
  // An image the tenant changed is checked like one at creation; a refused one is not copied (the super container
  // keeps the image it runs) and the tenant is told why on the Pod. A container's pull policy cannot change: one made
  // for a preloaded image (IfNotPresent) may only move to another preloaded image, or the node's cache would serve it
  // an image another tenant pulled with its own credentials.
  let refused: PodRefusal | undefined;
  const preloaded = new Set(ctx.tenant.pods?.preloadedImages ?? []);
  const images = (where: string, cs: Container[] | undefined, from: Container[] | undefined): void => {
    for (const c of cs ?? []) {
      const i = from?.findIndex((x) => x.name === c.name) ?? -1;
      const t = i >= 0 ? from![i] : undefined;
      if (t?.image === undefined || t.image === c.image) continue;
      const field = `spec.${where}[${i}].image`;
      const r =
        checkImage({ field, image: t.image }, ctx.tenant) ??
        (c.imagePullPolicy !== 'Always' && !preloaded.has(t.image)
          ? {
              field,
              message:
                `${field} "${t.image}": the container runs the preloaded image "${c.image}" with imagePullPolicy ` +
                `${c.imagePullPolicy ?? 'unset'}, which a Pod cannot change, and this image must be pulled ` +
                `(Always); create a new Pod to run it`,
            }
          : undefined);
      if (r) refused ??= r;
      else c.image = t.image;
    }
  };
  images('containers', spec.containers, tspec.containers);
  images('initContainers', spec.initContainers, tspec.initContainers);
  if (refused) {
    // the super Pod does not run the tenant's spec of this generation: it keeps the generation it was written from
    const was = superPod.metadata?.annotations?.[TENANT_GENERATION];
    const annotations = { ...desired.metadata.annotations };
    if (was === undefined) delete annotations[TENANT_GENERATION];
    else annotations[TENANT_GENERATION] = was;
    desired.metadata.annotations = annotations;
    return { ...refuse(tenantPod, refused), object: desired };
  }
  if (tspec.activeDeadlineSeconds !== undefined) spec.activeDeadlineSeconds = tspec.activeDeadlineSeconds;
  resizeContainers(spec.containers, tspec.containers);
  // kubectl debug: the tenant's new ephemeral containers, checked and translated as containers are at creation
  const refusedDebug = ephemeralRefusals(tspec, spec, ctx);
  addEphemeralContainers(spec, tspec, refusedDebug, (s) => translateContainers(s, tenantPod, ctx));
  const debugEvents = [...refusedDebug]
    .filter(([n]) => !shownRefused(tenantPod, n))
    .map(([, r]): Effect => refusalEvent(tenantPod, r));
  // The Secret the super Pod was created with, whatever the tenant's setting says now (a spec is immutable).
  const tokens = tokenKeys(tspec);
  const reads = (p: TokenPlan) => !!spec.volumes?.some((v) => readsSecret(v, p.secretName));
  const perPod = tokenPlan(tokens, serviceAccountOf(tenantPod), target.name, 'perPod');
  const shared = tokenPlan(tokens, serviceAccountOf(tenantPod), target.name, 'shared');
  const at = reads(perPod) ? perPod : shared.shared && reads(shared) ? shared : undefined;
  const effects = [...(at ? tokenEffectOnceBound(tenantPod, at, tokens) : []), ...debugEvents];
  return effects.length ? { object: desired, effects } : { object: desired };
}

/**
 * tokenOnBind goes right after the bind of a tenant Pod whose super Pod reads a token Secret of its own: run in order
 * after the Binding, the token names the node at once, not after the tenant watch brings the bound Pod back.
 */
function tokenOnBind(tenantPod: Pod, superPod: Pod): Effect[] {
  const tokens = tokenKeys(tenantPod.spec);
  const own = tokenPlan(tokens, serviceAccountOf(tenantPod), superPod.metadata?.name ?? '', 'perPod');
  if (!tokens.length || !superPod.spec?.volumes?.some((v) => readsSecret(v, own.secretName))) return [];
  const bound = { ...tenantPod, spec: { ...tenantPod.spec!, nodeName: superPod.spec.nodeName } };
  return tokenEffectOnceBound(bound, own, tokens);
}

/**
 * KUBELET_REMOVED_CONDITIONS are the Pod conditions a kubelet removes once they no longer hold (an in-place resize
 * pending or in progress): when the super Pod no longer has one, neither does the tenant Pod.
 */
const KUBELET_REMOVED_CONDITIONS: ReadonlySet<string> = new Set(['PodResizePending', 'PodResizeInProgress']);

/**
 * copyStatus copies STATUS_FIELDS from the super status; tenant condition types the super lacks are kept, but for
 * KUBELET_REMOVED_CONDITIONS.
 */
function copyStatus(from: PodStatus | undefined, to: PodStatus | undefined): PodStatus {
  const out: PodStatus = { ...to };
  const src: Record<string, unknown> = from ?? {};
  const dst: Record<string, unknown> = out;
  for (const f of STATUS_FIELDS) {
    if (src[f] === undefined) delete dst[f];
    else dst[f] = clone(src[f]);
  }
  if (from?.conditions) {
    const known = new Set(from.conditions.map((c) => c.type));
    const tenantOnly = (to?.conditions ?? []).filter(
      (c) => !known.has(c.type) && !KUBELET_REMOVED_CONDITIONS.has(c.type),
    );
    out.conditions = [...clone(from.conditions), ...clone(tenantOnly)];
  } else if (to?.conditions) {
    out.conditions = clone(to.conditions);
  }
  const inits = out.initContainerStatuses as Array<{ name?: string }> | undefined;
  if (inits) {
    const kept = withoutEtcHostsStatus(inits);
    if (kept.length) out.initContainerStatuses = kept;
    else delete out.initContainerStatuses;
  }
  return out;
}

const SEGMENT = /^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$/;

/**
 * translateKubeletPath rewrites a kubelet API path the tenant apiserver sent to a vNode so the super kubelet
 * understands it: the tenant namespace becomes the super namespace and the optional pod uid segment is dropped (the
 * super Pod has another uid). Paths other than containerLogs, exec, attach, run and portForward are refused (null).
 */
export function translateKubeletPath(path: string, ctx: { names: Naming; tenant: TenantView }): string | null {
  const q = path.indexOf('?');
  const query = q >= 0 ? path.slice(q) : '';
  const parts = (q >= 0 ? path.slice(0, q) : path).split('/');
  if (parts.shift() !== '') return null;
  const kind = parts.shift() ?? '';
  const shape: { min: number; max: number; uidAt?: number } | undefined = Object.hasOwn(KUBELET_PATHS, kind)
    ? KUBELET_PATHS[kind as KubeletKind]
    : undefined;
  if (!shape || parts.length < shape.min || parts.length > shape.max) return null;
  if (!parts.every((s) => SEGMENT.test(s))) return null;
  if (shape.uidAt !== undefined && parts.length === shape.max) parts.splice(shape.uidAt, 1);
  const [ns, ...rest] = parts;
  return `/${kind}/${[ctx.names.superNamespace(ns!), ...rest].join('/')}${query}`;
}

/**
 * podsPlugin syncs tenant Pods to the super cluster and their status back. New super Pods get the tenant spec with
 * a tenant-chosen nodeName naming the super node behind the vNode (nodename.ts), the service
 * account token served from a super Secret, kube-root-ca.crt renamed and the platform's forced node selector and
 * tolerations (pods.forced); existing ones (immutable spec) only follow the
 * allow-listed labels and annotations, images and activeDeadlineSeconds. A super Pod that got scheduled asks the core
 * to bind the tenant Pod to the matching vNode; a Pod refused earlier then gets VCSynced=True.
 */
export const podsPlugin: ResourcePlugin<Pod> & Required<Pick<VnAgentCapability, 'translateKubeletPath'>> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'pods',
    version: '0.1.0',
    description:
      'Pods down (spec at creation, labels, images), status and node binding up; kubelet paths for the vn-agent',
    resource: { ...R.pods },
    direction: 'both',
    sourceOfTruth: 'tenant',
    processes: ['manager', 'vn-agent'],
  },
  reads: [
    { resource: R.serviceaccounts, side: 'super' },
    // node pins and spec.nodeName name vNodes: checked against the super nodes (nodepin.ts, nodename.ts)
    { resource: R.nodes, side: 'super' },
    { resource: R.runtimeclasses, side: 'tenant' },
    { resource: R.runtimeclasses, side: 'super' },
    { resource: R.persistentvolumeclaims, side: 'tenant' }, // ephemeral volumes' claims (ephemeral.ts)
  ],

  toSuper(tenantPod, superPod, ctx) {
    const ns = tenantPod.metadata?.namespace ?? '';
    const name = tenantPod.metadata?.name ?? '';
    if (tenantPod.metadata?.deletionTimestamp) {
      return superPod ? { object: null } : { object: null, effects: [deleteTenant(tenantPod, ctx.now)] };
    }
    if (!superPod && boundBySyncer(tenantPod)) {
      // Its super Pod is gone (deleted behind the syncer's back, or evicted): a bound Pod cannot be placed again, so
      // it goes, as a Pod does when its node is lost, and its controller makes a new one.
      const message = `the super Pod of this Pod is gone; the Pod is deleted so that its controller can replace it`;
      return {
        object: null,
        skip: { reason: SUPER_POD_GONE, message },
        effects: [
          {
            type: 'event',
            side: 'tenant',
            regarding: podRef(tenantPod),
            eventType: 'Warning',
            reason: SUPER_POD_GONE,
            message,
          },
          deleteTenant(tenantPod),
        ],
      };
    }
    if (!superPod && tenantPod.spec?.nodeName && ended(tenantPod)) {
      // A Pod that ran to its end (its super Pod since removed) is not run again.
      return { object: null };
    }
    if (!superPod) {
      const spec = tenantPod.spec ?? { containers: [] };
      const pinned = checkNodeName(spec, ctx);
      if (pinned) return refuse(tenantPod, pinned, NODE_NAME_REFUSED);
      const refusal =
        checkPodFields(spec) ??
        checkPodPolicy(spec, ctx.tenant.pods, undefined, ctx.tenant.podSecurityLevel) ??
        checkImages(spec, ctx.tenant) ??
        checkNodePins(spec, ctx) ??
        checkEphemeralClaims(spec, podRef(tenantPod), ctx) ??
        checkPodSecurity(spec, ctx.tenant.podSecurityLevel);
      if (refusal) return refuse(tenantPod, refusal);
      if (spec.schedulingGates?.length) return gated(tenantPod);
    }
    const target = { namespace: ctx.names.superNamespace(ns), name };
    if (superPod) return withClearedRefusal(tenantPod, updateSuperPod(tenantPod, superPod, ctx, target));
    const rc = podRuntimeClass(tenantPod.spec?.runtimeClassName, ctx);
    if ('refusal' in rc) return refuse(tenantPod, rc.refusal);
    if ('wait' in rc)
      return {
        object: null,
        skip: { reason: WAITING_FOR_RUNTIME_CLASS, message: rc.wait },
        requeueAfterMs: RUNTIME_CLASS_RETRY_MS,
      };
    return withClearedRefusal(tenantPod, newSuperPod(tenantPod, ctx, target, rc.name));
  },

  toTenant(superPod, tenantPod, ctx) {
    if (!tenantPod) return { object: null };
    const terminating = !!tenantPod.metadata?.deletionTimestamp;
    const p = provenanceOf(superPod);
    const mine = superPod && !(p?.uid && p.uid !== tenantPod.metadata?.uid);
    if (!superPod || !mine) {
      return terminating
        ? { object: clone(tenantPod), effects: [deleteTenant(tenantPod, ctx.now)] }
        : { object: clone(tenantPod) };
    }
    const desired = clone(tenantPod);
    desired.status = mapObservedGenerations(copyStatus(superPod.status, tenantPod.status), superPod, tenantPod);
    const refusedDebug = ephemeralRefusals(tenantPod.spec, superPod.spec, ctx);
    const debug = withRefusedStatuses(
      desired.status.ephemeralContainerStatuses as ContainerStatus[] | undefined,
      refusedDebug,
    );
    if (debug) desired.status.ephemeralContainerStatuses = debug;
    const superNode = superPod.spec?.nodeName;
    if (superNode && !tenantPod.spec?.nodeName && !terminating) {
      const { namespace, name, uid } = podRef(tenantPod);
      // The tenant Pod is bound to the vNode of its super node (named per super cluster when several serve it).
      const node = vNodeName(superNode, ctx.sharedTenants ? ctx.superCluster : undefined);
      const bind: Effect = { type: 'bind', namespace, name, uid, node };
      return { object: desired, effects: [bind, ...tokenOnBind(tenantPod, superPod)] };
    }
    return { object: desired };
  },

  translateKubeletPath,
};

export default podsPlugin;
