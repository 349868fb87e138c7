/**
 * Grants: what a VirtualCluster may choose by name is granted by the platform, never picked by the author (issue 31
 * §1). The grant lives on the TenantPolicy (spec.grants), in the style of a RoleBinding whose role is the policy
 * itself: the subjects who may name the policy, and the super clusters, ClusterVersions and import Secrets its
 * VirtualClusters may name. Everything is denied unless granted; naming nothing takes the platform's own choice (the
 * default policy, the first super cluster, the default version) and needs no grant. The decision is pure; the gates
 * (admission, `vc validate`, the applier, the controller) gather the subject and ask it.
 */
import type { TenantPolicySpec as GeneratedSpec } from '../api/generated.ts';
import type { VirtualCluster } from '../api/virtualcluster.ts';
import { LABEL, sourceLabelValue } from '../names/names.ts';

/** GrantsSpec is spec.grants of a TenantPolicy. */
export type GrantsSpec = NonNullable<GeneratedSpec['grants']>;

/** GrantSubject is who asks: the VirtualCluster's namespace, that namespace's labels, and the GitSource applying it. */
export interface GrantSubject {
  namespace: string;
  /** the namespace's labels; undefined where the caller cannot read them (selector grants then cannot match) */
  namespaceLabels?: Readonly<Record<string, string>>;
  /** the GitSource that applies the VirtualCluster, as its source label value (`namespace.name`), when one does */
  gitSource?: string;
}

/**
 * GRANTED_BY_CONTROLLER stands for the subject where the grants were checked already and the reader has no namespaces
 * to check them again: the vn-agent's view of a tenant's plugins (core/vnagent/directory.ts). A syncer apart from the
 * manager judges grants itself (core/lifecycle/metatenants.ts).
 */
export const GRANTED_BY_CONTROLLER = 'granted-by-controller' as const;

/** GrantViolation is one choice made without a grant: the VirtualCluster field and what is missing. */
export interface GrantViolation {
  field: string;
  message: string;
}

/** PolicyLike is what grantViolations reads of a TenantPolicy. */
export interface PolicyLike {
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: { grants?: GrantsSpec };
}

/**
 * subjectOf is the subject of a VirtualCluster as stored: its namespace and the GitSource its source label names
 * (written only by the applier; admission keeps everybody else from setting it). The namespace's labels are the
 * caller's to add.
 */
export function subjectOf(
  vc: { metadata?: { namespace?: string; labels?: Record<string, string> } },
  namespaceLabels?: Readonly<Record<string, string>>,
): GrantSubject {
  const m = vc.metadata ?? {};
  const source = m.labels?.[LABEL.gitSource];
  return {
    namespace: m.namespace ?? '',
    ...(namespaceLabels && { namespaceLabels }),
    ...(source && { gitSource: source }),
  };
}

/** subjectMatches tells whether one grant subject covers the asker. */
function subjectMatches(s: NonNullable<GrantsSpec['subjects']>[number], who: GrantSubject): boolean {
  if (s.kind === 'GitSource')
    return !!who.gitSource && who.gitSource === sourceLabelValue({ namespace: s.namespace ?? '', name: s.name ?? '' });
  if (s.name !== undefined) return s.name === who.namespace;
  const want = Object.entries(s.selector?.matchLabels ?? {});
  const have = who.namespaceLabels;
  return !!have && want.length > 0 && want.every(([k, v]) => have[k] === v);
}

/** describeSubject names the asker in a refusal. */
function describeSubject(who: GrantSubject): string {
  const ns = `namespace "${who.namespace}"${who.namespaceLabels ? '' : ' (its labels not read here)'}`;
  return who.gitSource ? `${ns} or GitSource "${who.gitSource}"` : ns;
}

/**
 * grantViolations checks what a VirtualCluster names against the grants of the policy it resolved to (undefined: no
 * TenantPolicy, so nothing is granted): the policy itself unless it is the default one (`isDefault`), the super
 * cluster, the ClusterVersion and the import Secret. Each violation names the field and the grant that is missing.
 */
export function grantViolations(
  vc: Pick<VirtualCluster, 'spec'>,
  policy: PolicyLike | undefined,
  isDefault: boolean,
  who: GrantSubject,
): GrantViolation[] {
  const out: GrantViolation[] = [];
  const s = vc.spec ?? {};
  const g: GrantsSpec = policy?.spec?.grants ?? {};
  const name = policy?.metadata?.name;
  const under = name ? `TenantPolicy "${name}"` : 'the built-in defaults (no TenantPolicy applies)';
  if (name && s.policyName && !isDefault && !(g.subjects ?? []).some((x) => subjectMatches(x, who)))
    out.push({
      field: 'spec.policyName',
      message: `TenantPolicy "${name}" is not granted to ${describeSubject(who)} (its spec.grants.subjects)`,
    });
  const named = (field: string, value: string | undefined, list: readonly string[] | undefined, grant: string) => {
    if (value !== undefined && !(list ?? []).includes(value))
      out.push({ field, message: `${JSON.stringify(value)} is not granted by ${under} (spec.grants.${grant})` });
  };
  named('spec.superCluster', s.superCluster, g.superClusters, 'superClusters');
  named('spec.clusterVersionName', s.clusterVersionName, g.clusterVersions, 'clusterVersions');
  const ref = s.provisioner?.type === 'import' ? s.provisioner.import?.kubeconfigSecretRef : undefined;
  if (ref && !importSecretGranted(policy, who.namespace, ref.name))
    out.push({
      field: 'spec.provisioner.import.kubeconfigSecretRef.name',
      message: `Secret ${who.namespace}/${ref.name} is not granted to the import provisioner by ${under} (spec.grants.importSecrets)`,
    });
  return out;
}

/** importSecretGranted tells whether the policy lets the import provisioner read Secret namespace/name. */
export function importSecretGranted(policy: PolicyLike | undefined, namespace: string, name: string): boolean {
  return (policy?.spec?.grants?.importSecrets ?? []).some((x) => x.namespace === namespace && x.name === name);
}
