import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeObject } from '../../kube/client.ts';
import { fromPackageRoot } from '../../paths.ts';
import { toolchainDir } from '../../toolchain/toolchain.ts';

/** INSTALL_COMPONENTS are what `vc install --components` chooses from: the base and the components of deploy/. */
export const INSTALL_COMPONENTS = ['manager', 'vn-agent', 'scheduler'] as const;
/** InstallComponent is one of INSTALL_COMPONENTS. */
export type InstallComponent = (typeof INSTALL_COMPONENTS)[number];

/** INSTALL_LABELS are the labels every object `vc install` applies carries; uninstall and prune select by managedBy. */
export const INSTALL_LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  partOf: 'app.kubernetes.io/part-of',
  version: 'app.kubernetes.io/version',
} as const;

/** FIELD_MANAGER is the server-side apply field manager of `vc install`, also the managed-by label's value. */
export const FIELD_MANAGER = 'vc-install';

/** MANAGED_SELECTOR selects every object `vc install` applied. */
export const MANAGED_SELECTOR = `${INSTALL_LABELS.managedBy}=${FIELD_MANAGER}`;

/** BASE_IMAGE is the image name deploy/ refers to; --image replaces it (kustomize `images`). */
export const BASE_IMAGE = 'virtualcluster-ts';

/** InstallError is a setting or a step of install/uninstall that cannot go on; its message says what to do. */
export class InstallError extends Error {
  override name = 'InstallError';
}

/** InstallSettings are what `vc install` renders deploy/ with. */
export interface InstallSettings {
  components: InstallComponent[];
  /** the image reference for the manager and the vn-agent; absent: the base's own */
  image?: string;
  /** the version label's value (this package's version) */
  version: string;
}

/** ImageOverride is a kustomize `images` entry for BASE_IMAGE. */
export interface ImageOverride {
  name: typeof BASE_IMAGE;
  newName: string;
  newTag?: string;
  digest?: string;
}

/**
 * parseComponents reads a --components value (comma-separated). manager is the base and must be listed; an unknown
 * or repeated name is an error naming it and the choices.
 */
export function parseComponents(text: string): InstallComponent[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const out: InstallComponent[] = [];
  for (const n of names) {
    if (!(INSTALL_COMPONENTS as readonly string[]).includes(n))
      throw new InstallError(`--components: unknown component "${n}" (choose from ${INSTALL_COMPONENTS.join(', ')})`);
    if (out.includes(n as InstallComponent)) throw new InstallError(`--components: "${n}" is listed twice`);
    out.push(n as InstallComponent);
  }
  if (!out.includes('manager'))
    throw new InstallError('--components: manager is the base of every installation and must be listed');
  return out;
}

/**
 * parseImage turns an image reference (`registry:5000/path/name:tag`, `name@sha256:...`) into the kustomize
 * override of BASE_IMAGE. A reference without tag or digest keeps the name only (kustomize then keeps the base's tag).
 */
export function parseImage(ref: string): ImageOverride {
  const at = ref.indexOf('@');
  if (at >= 0) {
    const digest = ref.slice(at + 1);
    if (!/^sha256:[0-9a-f]{64}$/.test(digest))
      throw new InstallError(`--image ${ref}: the digest must be sha256:<64 hex digits>`);
    return { name: BASE_IMAGE, newName: checkName(ref, ref.slice(0, at)), digest };
  }
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > slash) {
    const tag = ref.slice(colon + 1);
    if (!/^[\w][\w.-]{0,127}$/.test(tag)) throw new InstallError(`--image ${ref}: "${tag}" is not a valid tag`);
    return { name: BASE_IMAGE, newName: checkName(ref, ref.slice(0, colon)), newTag: tag };
  }
  return { name: BASE_IMAGE, newName: checkName(ref, ref) };
}

function checkName(ref: string, name: string): string {
  if (!/^[a-z0-9]+([._\-/:][a-z0-9]+)*$/.test(name))
    throw new InstallError(`--image ${ref}: "${name}" is not a valid image name (lowercase, [registry/]path)`);
  return name;
}

/**
 * kustomizationFor is the kustomization `vc install` renders: deploy/ as the base, the chosen components, the image
 * override and the install labels on every object's metadata (not on selectors, which must not change across
 * versions). `base` is deploy/'s path relative to the directory the kustomization is written in (kustomize refuses
 * absolute ones).
 */
export function kustomizationFor(s: InstallSettings, base: string): Record<string, unknown> {
  const components = s.components.filter((c) => c !== 'manager').map((c) => `${base}/${c}`);
  return {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [base],
    ...(components.length && { components }),
    ...(s.image && { images: [parseImage(s.image)] }),
    labels: [
      {
        pairs: {
          [INSTALL_LABELS.managedBy]: FIELD_MANAGER,
          [INSTALL_LABELS.partOf]: 'virtualcluster-ts',
          [INSTALL_LABELS.version]: s.version,
        },
        includeSelectors: false,
      },
    ],
  };
}

/** packageVersion is this package's version, the version label of what it installs. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(fromPackageRoot('package.json'), 'utf8')) as { version: string }).version;
}

/**
 * findKubectl is the kubectl that renders deploy/: the first on PATH, else the toolchain's (`vc toolchain build`).
 * Undefined when there is none.
 */
export function findKubectl(path = process.env.PATH ?? ''): string | undefined {
  for (const dir of [...path.split(delimiter).filter(Boolean), toolchainDir()]) {
    const p = join(dir, 'kubectl');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Rendered is the render of deploy/ with the settings: the objects in kustomize's order, and the YAML itself. */
export interface Rendered {
  objects: KubeObject[];
  yaml: string;
}

/**
 * renderInstall renders deploy/ (one source of truth, the same `kubectl apply -k deploy/` reads) with the settings,
 * by `kubectl kustomize` on a kustomization written to a temporary directory and removed again.
 */
export async function renderInstall(
  s: InstallSettings,
  o: { deployDir?: string; kubectl?: string } = {},
): Promise<Rendered> {
  const kubectl = o.kubectl ?? findKubectl();
  if (!kubectl)
    throw new InstallError(
      'vc install renders deploy/ with `kubectl kustomize`: put kubectl on PATH, or build the toolchain (vc toolchain build)',
    );
  const deployDir = o.deployDir ?? fromPackageRoot('deploy');
  const dir = mkdtempSync(join(tmpdir(), 'vc-install-'));
  try {
    writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomizationFor(s, relative(dir, deployDir))));
    const { stdout } = await promisify(execFile)(kubectl, ['kustomize', dir], { maxBuffer: 64 << 20 });
    return { objects: parseObjects(stdout), yaml: stdout };
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new InstallError(`rendering ${deployDir} with ${kubectl} kustomize: ${err.stderr?.trim() || err.message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** parseObjects reads a multi-document YAML stream into its objects (empty documents left out). */
export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((x): x is KubeObject => !!x);
}

/** objectRef identifies an object across renders and the cluster: `group/Kind namespace/name`. */
export function objectRef(o: KubeObject): string {
  const group = (o.apiVersion ?? '').includes('/') ? o.apiVersion!.split('/')[0] : '';
  const ns = o.metadata?.namespace;
  return `${group ? `${group}/` : ''}${o.kind}${ns ? ` ${ns}/` : ' '}${o.metadata?.name}`;
}
