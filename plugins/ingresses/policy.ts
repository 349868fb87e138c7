import { type IngressesPolicyView, metaKeyMatches } from '@virtualcluster-ts/plugin-sdk';

/** INGRESS_POLICY_VIOLATION is the reason of the event on a tenant Ingress its policy refuses. */
export const INGRESS_POLICY_VIOLATION = 'IngressPolicyViolation';
/** ANNOTATIONS_IGNORED is the reason of the event naming the annotations not copied to the super Ingress. */
export const ANNOTATIONS_IGNORED = 'AnnotationsIgnored';
/** CLASS_ANNOTATION is the annotation that named an Ingress's class before spec.ingressClassName. */
export const CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

/**
 * DEFAULT_INGRESSES_POLICY is the built-in ingresses policy: no host, no named class, no annotation. A tenant serves
 * nothing on the shared ingress controllers until the platform grants it hosts. It equals the TenantPolicy schema's
 * defaults (policy.test.ts holds them together).
 */
export const DEFAULT_INGRESSES_POLICY = {
  hosts: [],
  classes: [],
  annotations: [],
} as const satisfies Required<IngressesPolicyView>;

/** IngressRule is the part of an Ingress rule the policy reads. */
export interface IngressRule {
  host?: string;
  http?: { paths?: Array<{ backend?: { resource?: unknown; service?: { name?: string } } }> };
}

/** IngressShape is the part of an Ingress the policy reads. */
export interface IngressShape {
  metadata?: { annotations?: Record<string, string> };
  spec?: {
    ingressClassName?: string;
    rules?: unknown[];
    tls?: unknown[];
    defaultBackend?: unknown;
  };
}

/** IngressRefusal is one thing an Ingress asks for beyond its tenant's policy, naming the field. */
export interface IngressRefusal {
  field: string;
  message: string;
}

/**
 * hostAllowed says whether a policy's host patterns cover an Ingress host: `a.example.com` covers that host only;
 * `*.example.com` covers every host under example.com at any depth, wildcard hosts such as `*.x.example.com` included,
 * but not example.com itself. Hosts compare without regard to case.
 */
export function hostAllowed(host: string, patterns: readonly string[]): boolean {
  const h = host.toLowerCase();
  return patterns.some((raw) => {
    const p = raw.toLowerCase();
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) && h.length > p.length - 1 : h === p;
  });
}

/** isSnippet says whether an annotation key names a configuration snippet (ingress-nginx, NGINX Inc., HAProxy…). */
export const isSnippet = (key: string): boolean => /snippet/i.test(key.slice(key.lastIndexOf('/') + 1));

const list = (xs: readonly string[]): string => (xs.length ? xs.join(', ') : 'none');

/**
 * checkIngress lists what an Ingress asks for beyond the policy: hosts (rules and tls) outside ingresses.hosts, a
 * rule without a host or a default backend (either catches the traffic of every host no Ingress claims on a shared
 * controller), a resource backend (an object the syncer does not manage), and a class outside ingresses.classes
 * (spec.ingressClassName or the class annotation; naming none leaves the super's default class).
 */
export function checkIngress(ing: IngressShape, policy: IngressesPolicyView | undefined): IngressRefusal[] {
  const hosts = policy?.hosts ?? DEFAULT_INGRESSES_POLICY.hosts;
  const classes = policy?.classes ?? DEFAULT_INGRESSES_POLICY.classes;
  const out: IngressRefusal[] = [];
  const spec = ing.spec ?? {};
  if (spec.defaultBackend !== undefined)
    out.push({
      field: 'spec.defaultBackend',
      message: 'a default backend would catch every host of the shared ingress controller; use rules with hosts',
    });
  const rules = (spec.rules ?? []) as IngressRule[];
  rules.forEach((r, i) => {
    if (!r?.host)
      out.push({
        field: `spec.rules[${i}].host`,
        message: 'a rule without a host would catch every host of the shared ingress controller',
      });
    else if (!hostAllowed(r.host, hosts))
      out.push({
        field: `spec.rules[${i}].host`,
        message: `host "${r.host}" is not among the hosts the tenant's policy allows (ingresses.hosts: ${list(hosts)})`,
      });
    (r?.http?.paths ?? []).forEach((p, j) => {
      if (p?.backend?.resource !== undefined)
        out.push({
          field: `spec.rules[${i}].http.paths[${j}].backend.resource`,
          message: 'resource backends are not synced; use a Service backend',
        });
    });
  });
  ((spec.tls ?? []) as Array<{ hosts?: string[] }>).forEach((t, i) =>
    (t?.hosts ?? []).forEach((h, j) => {
      if (!hostAllowed(h, hosts))
        out.push({
          field: `spec.tls[${i}].hosts[${j}]`,
          message: `host "${h}" is not among the hosts the tenant's policy allows (ingresses.hosts: ${list(hosts)})`,
        });
    }),
  );
  const named: Array<[string, string | undefined]> = [
    ['spec.ingressClassName', spec.ingressClassName],
    [`metadata.annotations[${CLASS_ANNOTATION}]`, ing.metadata?.annotations?.[CLASS_ANNOTATION]],
  ];
  for (const [field, cls] of named)
    if (cls !== undefined && !classes.includes(cls))
      out.push({
        field,
        message: `ingress class "${cls}" is not among the classes the tenant's policy allows (ingresses.classes: ${list(classes)})`,
      });
  return out;
}

/**
 * externalNameBackends lists the Service backends of an Ingress that are ExternalName Services in the tenant
 * (`typeOf` answers a Service's type in the Ingress's namespace, undefined when it does not exist). Such a Service has
 * no super copy (the services plugin keeps it in the tenant): on the shared ingress controller the backend would be an
 * alias it resolves and connects to from the platform network, wherever the name points then.
 */
export function externalNameBackends(
  ing: IngressShape,
  typeOf: (service: string) => string | undefined,
): IngressRefusal[] {
  const out: IngressRefusal[] = [];
  const rules = (ing.spec?.rules ?? []) as IngressRule[];
  rules.forEach((r, i) =>
    (r?.http?.paths ?? []).forEach((p, j) => {
      const name = p?.backend?.service?.name;
      if (name && typeOf(name) === 'ExternalName')
        out.push({
          field: `spec.rules[${i}].http.paths[${j}].backend.service.name`,
          message:
            `Service "${name}" is an ExternalName Service: the shared ingress controller would follow its alias from ` +
            "the platform's network; back the Ingress with a Service that selects Pods",
        });
    }),
  );
  return out;
}

/**
 * splitAnnotations sorts a tenant Ingress's annotations (reserved and opaque keys already left out) into those copied
 * to the super Ingress and those dropped. For Ingresses this list decides, not the general copiedMetadata one: keys
 * the policy's ingresses.annotations patterns match (`*` is any run of characters without `/`, as in
 * copiedMetadata), and the class annotation, which checkIngress has checked. Snippet keys are always dropped: they
 * put tenant text into the configuration of a controller every tenant shares.
 */
export function splitAnnotations(
  annotations: Record<string, string> | undefined,
  policy: IngressesPolicyView | undefined,
): { kept: string[]; dropped: string[] } {
  const allowed = policy?.annotations ?? DEFAULT_INGRESSES_POLICY.annotations;
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const key of Object.keys(annotations ?? {}).sort()) {
    const listed = key === CLASS_ANNOTATION || allowed.some((p) => metaKeyMatches(p, key));
    if (listed && !isSnippet(key)) kept.push(key);
    else dropped.push(key);
  }
  return { kept, dropped };
}
