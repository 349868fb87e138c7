import { join } from 'node:path';
import { PKI_FILES } from '../../pki/pki.ts';
import { TENANT_DEFAULTS } from '../../tenancy/defaults.ts';
import type { ExtraArgs } from '../../api/controlplane.ts';

/**
 * ControlPlanePaths says where a control plane's files are, as the processes see them: a state directory on this
 * machine for the local provisioner, Secret mounts inside the Pods for the native one.
 */
export interface ControlPlanePaths {
  caFile: string;
  caKey: string;
  /** the one CA certificate that signs CSRs with caKey, where caFile may be a bundle (a CA rotation); default caFile */
  signingCert?: string;
  apiserverCert: string;
  apiserverKey: string;
  /** verifies service-account tokens */
  saPub: string;
  /** signs service-account tokens */
  saKey: string;
  frontProxyCa: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
  kubeletClientCert: string;
  kubeletClientKey: string;
  /** static bearer tokens (`--token-auth-file`); no such flag when absent */
  tokenFile?: string;
  /** kube-controller-manager's kubeconfig, also used for its delegated authentication and authorization */
  kubeconfig: string;
}

/** ApiserverPaths are the files kube-apiserver reads. */
export type ApiserverPaths = Omit<ControlPlanePaths, 'caKey' | 'kubeconfig'>;

/** ControllerManagerPaths are the files kube-controller-manager reads. */
export type ControllerManagerPaths = Pick<
  ControlPlanePaths,
  'caFile' | 'caKey' | 'signingCert' | 'saKey' | 'kubeconfig'
>;

/** ApiserverFlagsInput is everything apiserverFlags needs. */
export interface ApiserverFlagsInput {
  paths: ApiserverPaths;
  etcdServers: string | readonly string[];
  /** etcd key prefix: `/<name>` on a shared etcd, `/registry` on a dedicated one */
  etcdPrefix: string;
  bindAddress: string;
  /** the address the apiserver announces; a Pod may pass `$(POD_IP)` for the kubelet to expand */
  advertiseAddress: string;
  securePort: number;
  serviceCidr: string;
  /** cluster DNS domain of the service-account issuer; default TENANT_DEFAULTS.clusterDomain */
  clusterDomain?: string;
  extraArgs?: ExtraArgs;
}

/** ControllerManagerFlagsInput is everything controllerManagerFlags needs. */
export interface ControllerManagerFlagsInput {
  paths: ControllerManagerPaths;
  bindAddress: string;
  securePort: number;
  clusterName: string;
  serviceCidr: string;
  /** `--controllers` value, e.g. `*` or TENANT_CONTROLLERS */
  controllers: string;
  /** leader election among replicas; default false (a single process) */
  leaderElect?: boolean;
  extraArgs?: ExtraArgs;
}

/**
 * pkiPaths lays out ControlPlanePaths kubeadm style: every certificate and key under pkiDir with the names of
 * PKI_FILES, the kubeconfig and token file where given.
 */
export function pkiPaths(pkiDir: string, files: { kubeconfig: string; tokenFile?: string }): ControlPlanePaths {
  const at = (name: string): string => join(pkiDir, name);
  return {
    caFile: at(PKI_FILES.ca.cert),
    caKey: at(PKI_FILES.ca.key),
    apiserverCert: at(PKI_FILES.apiserver.cert),
    apiserverKey: at(PKI_FILES.apiserver.key),
    saPub: at(PKI_FILES.serviceAccount.publicKey),
    saKey: at(PKI_FILES.serviceAccount.privateKey),
    frontProxyCa: at(PKI_FILES.frontProxyCA.cert),
    frontProxyClientCert: at(PKI_FILES.frontProxyClient.cert),
    frontProxyClientKey: at(PKI_FILES.frontProxyClient.key),
    kubeletClientCert: at(PKI_FILES.kubeletClient.cert),
    kubeletClientKey: at(PKI_FILES.kubeletClient.key),
    ...(files.tokenFile === undefined ? {} : { tokenFile: files.tokenFile }),
    kubeconfig: files.kubeconfig,
  };
}

/** apiserverFlags returns the kube-apiserver command line, `--name=value` each, extraArgs applied. */
export function apiserverFlags(input: ApiserverFlagsInput): string[] {
  const p = input.paths;
  const etcd = typeof input.etcdServers === 'string' ? input.etcdServers : input.etcdServers.join(',');
  const issuer = `https://kubernetes.default.svc.${input.clusterDomain ?? TENANT_DEFAULTS.clusterDomain}`;
  // The key set is served under the issuer's own address, not the apiserver's advertised one (upstream's default,
  // https://<advertise-address>:<port>, is loopback or a bridge address no Pod or relying party reaches): whoever
  // can fetch <issuer>/.well-known/openid-configuration can then fetch the keys it names. An issuer set through
  // extraArgs keeps upstream's default unless the key set's URI is set there too.
  const ownIssuer = !Object.keys(input.extraArgs ?? {}).some((k) => k.replace(/^-+/, '') === 'service-account-issuer');
  const defaults: Array<[string, string | undefined]> = [
    ['etcd-servers', etcd],
    ['etcd-prefix', input.etcdPrefix],
    ['bind-address', input.bindAddress],
    ['advertise-address', input.advertiseAddress],
    ['secure-port', String(input.securePort)],
    ['tls-cert-file', p.apiserverCert],
    ['tls-private-key-file', p.apiserverKey],
    ['client-ca-file', p.caFile],
    ['token-auth-file', p.tokenFile],
    ['service-account-issuer', issuer],
    ['service-account-jwks-uri', ownIssuer ? `${issuer}/openid/v1/jwks` : undefined],
    ['service-account-key-file', p.saPub],
    ['service-account-signing-key-file', p.saKey],
    ['service-cluster-ip-range', input.serviceCidr],
    ['authorization-mode', 'Node,RBAC'],
    ['endpoint-reconciler-type', 'none'],
    ['allow-privileged', 'true'],
    ['kubelet-preferred-address-types', 'InternalIP,Hostname'],
    ['kubelet-client-certificate', p.kubeletClientCert],
    ['kubelet-client-key', p.kubeletClientKey],
    ['requestheader-client-ca-file', p.frontProxyCa],
    ['requestheader-allowed-names', 'front-proxy-client'],
    ['requestheader-extra-headers-prefix', 'X-Remote-Extra-'],
    ['requestheader-group-headers', 'X-Remote-Group'],
    ['requestheader-username-headers', 'X-Remote-User'],
    ['proxy-client-cert-file', p.frontProxyClientCert],
    ['proxy-client-key-file', p.frontProxyClientKey],
    ['profiling', 'false'],
    ['v', '1'],
  ];
  return flagList(defaults, input.extraArgs);
}

/** controllerManagerFlags returns the kube-controller-manager command line, `--name=value` each, extraArgs applied. */
export function controllerManagerFlags(input: ControllerManagerFlagsInput): string[] {
  const p = input.paths;
  const defaults: Array<[string, string | undefined]> = [
    ['kubeconfig', p.kubeconfig],
    ['authentication-kubeconfig', p.kubeconfig],
    ['authorization-kubeconfig', p.kubeconfig],
    ['leader-elect', String(input.leaderElect ?? false)],
    ['bind-address', input.bindAddress],
    ['secure-port', String(input.securePort)],
    ['use-service-account-credentials', 'true'],
    ['service-account-private-key-file', p.saKey],
    ['root-ca-file', p.caFile],
    ['cluster-signing-cert-file', p.signingCert ?? p.caFile],
    ['cluster-signing-key-file', p.caKey],
    ['cluster-name', input.clusterName],
    ['service-cluster-ip-range', input.serviceCidr],
    ['controllers', input.controllers],
    ['profiling', 'false'],
    ['v', '1'],
  ];
  return flagList(defaults, input.extraArgs);
}

/**
 * parseFlagArgs turns `--name=value` (or a bare `--name`, meaning `true`) arguments into ExtraArgs; a later
 * argument of the same name wins, as it would on a command line of single-valued flags.
 */
export function parseFlagArgs(args: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const arg of args) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    if (!m) throw new Error(`flag ${JSON.stringify(arg)}: want --name=value`);
    out[flagName(m[1]!)] = m[2] ?? 'true';
  }
  return out;
}

const FLAG_NAME = /^[a-z0-9][a-z0-9-]*$/;

/** flagName strips leading dashes and rejects anything that is not a flag name. */
function flagName(raw: string): string {
  const name = raw.replace(/^--?/, '');
  if (!FLAG_NAME.test(name)) throw new Error(`invalid flag name ${JSON.stringify(raw)}`);
  return name;
}

/**
 * flagList renders `--name=value` flags: the defaults in their order (a default whose value is undefined is left
 * out unless extraArgs gives it), each replaced by extraArgs of the same name, then the other extraArgs by name.
 */
export function flagList(
  defaults: ReadonlyArray<readonly [string, string | undefined]>,
  extraArgs: ExtraArgs = {},
): string[] {
  const extra = new Map<string, string>();
  for (const [raw, value] of Object.entries(extraArgs)) {
    const name = flagName(raw);
    if (extra.has(name)) throw new Error(`flag --${name} given twice in extraArgs`);
    extra.set(name, value);
  }
  const out: string[] = [];
  for (const [name, value] of defaults) {
    const v = extra.get(name) ?? value;
    extra.delete(name);
    if (v !== undefined) out.push(`--${name}=${v}`);
  }
  for (const name of [...extra.keys()].sort()) out.push(`--${name}=${extra.get(name)!}`);
  return out;
}

/**
 * TENANT_CONTROLLERS is the kube-controller-manager --controllers value for tenant control planes. The controllers
 * that act on nodes and volumes are off: vNodes have no kubelet and no lease (node lifecycle would taint and evict
 * every tenant Pod), and the super cluster binds and attaches volumes (the syncer carries the result up).
 */
export const TENANT_CONTROLLERS = [
  '*',
  '-node-lifecycle-controller',
  '-taint-eviction-controller',
  '-node-ipam-controller',
  '-persistentvolume-binder-controller',
  '-persistentvolume-attach-detach-controller',
  '-service-lb-controller',
].join(',');
