import type { KubeObject } from '../../kube/client.ts';
import { credentialsFor, parseImageRef, type Credentials } from '../../toolchain/ociref.ts';
import { INSTALL_LABELS, InstallError } from './render.ts';

/** PULL_SECRET is the name of the image pull Secret `vc install --pull-credentials` writes in each namespace. */
export const PULL_SECRET = 'vc-image-pull';

/** WORKLOAD_KINDS are the rendered kinds whose Pod template gets the pull Secret. */
const WORKLOAD_KINDS = ['Deployment', 'DaemonSet'] as const;

/**
 * dockerConfigJson is the `.dockerconfigjson` of a kubernetes.io/dockerconfigjson Secret that holds one registry's
 * credentials, as the kubelet passes them with each pull of that registry's images.
 */
export function dockerConfigJson(registry: string, c: Pick<Credentials, 'username' | 'password'>): string {
  const auth = Buffer.from(`${c.username}:${c.password}`).toString('base64');
  return JSON.stringify({ auths: { [registry]: { username: c.username, password: c.password, auth } } });
}

/**
 * pullCredentials finds the credentials of the --image registry in the docker config file (the file `vc image push`
 * reads). An install that asks for them and finds none is an error naming the file and the registry.
 */
export function pullCredentials(image: string | undefined, file?: string): { registry: string; config: string } {
  if (!image) throw new InstallError('--pull-credentials: give --image, the image whose registry wants credentials');
  const { registry } = parseImageRef(image);
  const creds = file ? credentialsFor(registry, file) : credentialsFor(registry);
  if (!creds)
    throw new InstallError(
      `--pull-credentials: no credentials for ${registry} in ${file ?? 'the docker config file'} ` +
        `(its "auths" needs an entry for ${registry}: docker login ${registry}, or write one by hand)`,
    );
  return { registry, config: dockerConfigJson(registry, creds) };
}

/**
 * exportCredentialsProblem says why a combination of `vc install`'s pull options is refused, or undefined when it is
 * not. `--export` with `--pull-credentials` would print the registry's password (base64, which is no protection) into
 * YAML that is usually committed to git: it needs `--export-credentials`, which says so; `--pull-secret` names a
 * Secret the platform creates itself (sealed, or from its secret store) instead. The two pull options exclude each
 * other, and `--export-credentials` means nothing without both `--export` and `--pull-credentials`.
 */
export function exportCredentialsProblem(o: {
  export?: boolean;
  pullCredentials?: boolean;
  exportCredentials?: boolean;
  pullSecret?: string;
}): string | undefined {
  if (o.pullCredentials && o.pullSecret !== undefined)
    return '--pull-credentials and --pull-secret exclude each other: the first writes a pull Secret, the second names one';
  if (o.export && o.pullCredentials && !o.exportCredentials)
    return (
      '--export --pull-credentials would print the registry password into the YAML (base64 in a Secret ' +
      `${PULL_SECRET}): add --export-credentials to print it anyway and keep the output out of git, or use ` +
      '--pull-secret NAME to name a kubernetes.io/dockerconfigjson Secret you create in each namespace yourself'
    );
  if (o.exportCredentials && !(o.export && o.pullCredentials))
    return '--export-credentials: only with --export and --pull-credentials';
  return undefined;
}

/**
 * withPullSecretRef names the pull Secret `name` in the imagePullSecrets of every rendered Deployment and DaemonSet
 * (after any they name already), without writing the Secret: the platform creates it in each namespace. Pure.
 */
export function withPullSecretRef(objects: readonly KubeObject[], name: string): KubeObject[] {
  return objects.map((o) => {
    if (!isWorkload(o)) return o;
    const copy = structuredClone(o) as KubeObject & {
      spec?: { template?: { spec?: { imagePullSecrets?: Array<{ name: string }> } } };
    };
    const pod = copy.spec?.template?.spec;
    if (!pod)
      throw new InstallError(`render: ${o.kind} ${o.metadata?.namespace}/${o.metadata?.name} has no Pod template`);
    const names = pod.imagePullSecrets ?? [];
    if (!names.some((s) => s.name === name)) pod.imagePullSecrets = [...names, { name }];
    return copy;
  });
}

const isWorkload = (o: KubeObject) => (WORKLOAD_KINDS as readonly string[]).includes(o.kind ?? '');

/**
 * withPullSecret adds to a render one pull Secret (type kubernetes.io/dockerconfigjson, the given config) in every
 * namespace that has a Deployment or DaemonSet, each right after its namespace's first object, and names it in those
 * workloads' imagePullSecrets (after any they name already). Pure: the input objects are not changed.
 */
export function withPullSecret(objects: readonly KubeObject[], config: string, name = PULL_SECRET): KubeObject[] {
  const namespaces = new Set(objects.filter(isWorkload).map((o) => o.metadata?.namespace ?? ''));
  if (namespaces.has('')) throw new InstallError('render: a Deployment or DaemonSet without metadata.namespace');
  const out: KubeObject[] = [];
  for (const o of withPullSecretRef(objects, name)) {
    out.push(o);
    const ns = o.kind === 'Namespace' ? o.metadata?.name : undefined;
    if (ns && namespaces.delete(ns)) out.push(pullSecret(ns, name, config, o.metadata?.labels));
  }
  // a workload in a namespace the render does not create (the platform's own): its Secret goes first, labelled as the
  // workload is
  const rest = [...namespaces].map((ns) =>
    pullSecret(ns, name, config, objects.find((o) => isWorkload(o) && o.metadata?.namespace === ns)?.metadata?.labels),
  );
  return [...rest, ...out];
}

function pullSecret(
  namespace: string,
  name: string,
  config: string,
  from: Record<string, string> | undefined,
): KubeObject {
  // the install's own labels (uninstall and prune find the Secret by them), not the namespace's Pod Security ones
  const labels = Object.fromEntries(
    Object.values(INSTALL_LABELS)
      .filter((k) => from?.[k] !== undefined)
      .map((k) => [k, from![k]!]),
  );
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, ...(Object.keys(labels).length && { labels }) },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(config).toString('base64') },
  } as KubeObject;
}
