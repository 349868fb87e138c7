/**
 * What a GitSource may write, as the platform decides it in the manager configuration (never the GitSource itself
 * or the documents of its repository): the namespaces, whether cluster-scoped kinds, and whether it may take over
 * objects that are not its own. The checks are pure; the applier reads the live owners and asks them.
 */
import { SOURCE_LABEL, describeRef, sourceLabelValue, type ObjectRef, type GitSourceRef } from './objects.ts';

/** SourcePolicy is the platform's entry for one GitSource (manager configuration `gitops.policy.sources["ns/name"]`). */
export interface SourcePolicy {
  /** namespaces the source may write into besides its own; `*` allows every namespace */
  targetNamespaces?: string[];
  /** whether the source may write cluster-scoped kinds (ClusterVersion) */
  clusterScoped?: boolean;
  /** objects the source may take over: hand-made ones (no SOURCE_LABEL) and those of other GitSources */
  adopt?: { handMade?: boolean; otherSources?: boolean };
}

/** ScopePolicy is the scope part of the manager configuration's `gitops` section. */
export interface ScopePolicy {
  /** per GitSource `namespace/name` */
  sources?: Readonly<Record<string, SourcePolicy>>;
  /** GitSources declared in the manager configuration (`gitops.sources`), as `namespace/name` */
  platformSources?: readonly string[];
}

/** SourceScope is what one GitSource may write, resolved from the policy. */
export interface SourceScope {
  /** every namespace the source may write into (its own first); `*` for all */
  namespaces: readonly string[];
  clusterScoped: boolean;
  adoptHandMade: boolean;
  adoptFromOtherSources: boolean;
}

/** LiveOwner is what an existing object says about its owner: the SOURCE_LABEL value, absent for a hand-made object. */
export interface LiveOwner {
  source?: string;
  /** the resourceVersion the owner was read at; the apply sends it as a precondition */
  resourceVersion?: string;
}

/**
 * scopeOf resolves the scope of a GitSource: its own namespace plus the policy's targetNamespaces; cluster-scoped
 * kinds when the policy says so, or, without a say, when the source is a platform source (declared in the manager
 * configuration); adoption only when the policy opts in.
 */
export function scopeOf(source: GitSourceRef, policy: ScopePolicy = {}): SourceScope {
  const key = `${source.namespace}/${source.name}`;
  const p = policy.sources?.[key] ?? {};
  const platform = policy.platformSources?.includes(key) ?? false;
  return {
    namespaces: [source.namespace, ...(p.targetNamespaces ?? []).filter((n) => n !== source.namespace)],
    clusterScoped: p.clusterScoped ?? platform,
    adoptHandMade: p.adopt?.handMade ?? false,
    adoptFromOtherSources: p.adopt?.otherSources ?? false,
  };
}

/** ScopeViolation is why one object is refused: the JSON pointer of the field at fault and the problem. */
export interface ScopeViolation {
  pointer: string;
  message: string;
}

/** checkScope tells whether a source may write an object of `namespaced` kind at `ref`, or why not. */
export function checkScope(
  ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>,
  namespaced: boolean,
  source: GitSourceRef,
  scope: SourceScope,
): ScopeViolation | undefined {
  const who = `GitSource ${source.namespace}/${source.name}`;
  if (!namespaced) {
    if (scope.clusterScoped) return undefined;
    const setting = `gitops.policy.sources["${source.namespace}/${source.name}"].clusterScoped`;
    return {
      pointer: '/kind',
      message:
        `${ref.kind} is cluster-scoped and ${who} may not write cluster-scoped kinds (the platform allows it ` +
        `with ${setting} in the manager configuration)`,
    };
  }
  const ns = ref.namespace ?? '';
  if (scope.namespaces.includes('*') || scope.namespaces.includes(ns)) return undefined;
  return {
    pointer: '/metadata/namespace',
    message: `namespace ${JSON.stringify(ns)} is outside the scope of ${who}, which may write only into ${scope.namespaces.join(', ')}`,
  };
}

/**
 * checkOwner tells whether a source may server-side apply (with force) over an existing object, or why not: its own
 * objects (SOURCE_LABEL names it) always; another source's or a hand-made one only when the scope opts in. A missing
 * object (`live` null) is created.
 */
export function checkOwner(
  ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>,
  live: LiveOwner | null,
  source: GitSourceRef,
  scope: SourceScope,
): string | undefined {
  if (!live) return undefined;
  if (live.source === sourceLabelValue(source)) return undefined;
  const refusal = `GitSource ${source.namespace}/${source.name} does not take it over`;
  if (live.source === undefined) {
    return scope.adoptHandMade
      ? undefined
      : `${describeRef(ref)} exists and was not made by a GitSource (no ${SOURCE_LABEL} label); ${refusal}`;
  }
  return scope.adoptFromOtherSources
    ? undefined
    : `${describeRef(ref)} exists and belongs to GitSource ${live.source} (label ${SOURCE_LABEL}); ${refusal}`;
}
