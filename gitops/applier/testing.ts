import type { Artifact, ParseError, SourceDocument } from '../artifact.ts';
import type { InventoryEntry } from './objects.ts';

/** REV1 and REV2 are two commit ids for tests. */
export const REV1 = 'a'.repeat(40);
/** REV2 is a second commit id, see REV1. */
export const REV2 = 'b'.repeat(40);

/** vcDoc is a valid VirtualCluster document. */
export function vcDoc(namespace: string, name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'VirtualCluster',
    metadata: { name, namespace },
    spec: { provisioner: { type: 'local' }, ...spec },
  };
}

/** cvDoc is a valid ClusterVersion document. */
export function cvDoc(name: string, kubernetesVersion = 'v1.36.3'): Record<string, unknown> {
  return {
    apiVersion: 'tenancy.x-k8s.io/v1alpha1',
    kind: 'ClusterVersion',
    metadata: { name },
    spec: { kubernetesVersion },
  };
}

/** makeArtifact builds an Artifact by hand from documents per file (in file order), as the git source would. */
export function makeArtifact(
  files: Record<string, Array<Record<string, unknown>>>,
  o: { revision?: string; parseErrors?: ParseError[]; path?: string } = {},
): Artifact {
  const documents: SourceDocument[] = [];
  for (const [file, objects] of Object.entries(files))
    objects.forEach((object, index) => documents.push({ file, index, object }));
  return {
    url: 'https://git.example.com/platform/tenants.git',
    ref: 'main',
    revision: o.revision ?? REV1,
    digest: `sha256:${'0'.repeat(64)}`,
    path: o.path ?? 'tenants',
    documents,
    parseErrors: o.parseErrors ?? [],
    fetchedAt: '2026-01-01T00:00:00Z',
  };
}

/** vcEntry is an inventory entry of a VirtualCluster. */
export function vcEntry(namespace: string, name: string, uid = `uid-${namespace}-${name}`): InventoryEntry {
  return { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'VirtualCluster', namespace, name, uid };
}

/** cvEntry is an inventory entry of a ClusterVersion. */
export function cvEntry(name: string, uid = `uid-cv-${name}`): InventoryEntry {
  return { apiVersion: 'tenancy.x-k8s.io/v1alpha1', kind: 'ClusterVersion', name, uid };
}
