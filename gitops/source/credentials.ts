/**
 * Which Secrets a GitSource may take its credentials from, and where they may go (issue 31 §6). A Secret is git
 * credentials only when it says so: the label tenancy.x-k8s.io/git-credentials "true" and the annotation
 * tenancy.x-k8s.io/git-hosts listing the hosts it was made for. Another Secret of the namespace (a tenant's
 * kubeconfig, a platform token) is never sent to a git server a GitSource author picked; granted credentials go only to
 * the listed hosts, whatever a redirect or a changed url says. The checks are pure; the fetcher applies mayReceive
 * to every request it sends.
 */
import { ANN, LABEL } from '../../core/names/names.ts';
import { ambiguousAuthority } from './address.ts';

/** GIT_CREDENTIALS_LABEL marks a Secret the platform allows as a GitSource's credentials (value "true"). */
export const GIT_CREDENTIALS_LABEL = LABEL.gitCredentials;
/** GIT_HOSTS_ANNOTATION lists, comma-separated, the hosts (host or host:port) a credentials Secret is for. */
export const GIT_HOSTS_ANNOTATION = ANN.gitHosts;

/** CredentialSecret is what is read of a Secret named by spec.secretRef. */
export interface CredentialSecret {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
}

/**
 * urlCredentialsRefusal says why a GitSource url that carries credentials itself (`https://user:token@host/…`) is
 * refused, or undefined for a url without them. Such credentials come from no Secret the platform granted, are
 * written into the object for every reader of it, and were the one thing a url's cache was not keyed by.
 */
export function urlCredentialsRefusal(
  url: string,
  field = 'spec.url',
  secretField = 'spec.secretRef',
): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.username === '' && u.password === '') return undefined;
  return (
    `${field} carries credentials (user:password@ before the host): credentials come only from a Secret the ` +
    `platform made for the purpose (${secretField}, label ${GIT_CREDENTIALS_LABEL}: "true"); remove them from the url`
  );
}

/**
 * urlAuthorityRefusal says why a url whose host parsers read differently (ambiguousAuthority: a `%` or a `\` in it)
 * is refused, or undefined: the address checked and the address reached would differ.
 */
export function urlAuthorityRefusal(url: string, field = 'spec.url'): string | undefined {
  const authority = ambiguousAuthority(url);
  if (authority === undefined) return undefined;
  return `${field} has a percent-escape or a backslash in its host (${JSON.stringify(authority)}); write the host as it is`;
}

/** urlRefusal is the first of urlAuthorityRefusal and urlCredentialsRefusal that refuses the url, or undefined. */
export function urlRefusal(url: string, field = 'spec.url', secretField = 'spec.secretRef'): string | undefined {
  return urlAuthorityRefusal(url, field) ?? urlCredentialsRefusal(url, field, secretField);
}

/**
 * credentialHosts checks that a Secret may serve as the credentials of a GitSource fetching `url` and returns the
 * hosts it is for; otherwise an error naming the Secret, the label or annotation, and the GitSource field.
 */
export function credentialHosts(secret: CredentialSecret, url: string): string[] {
  const m = secret.metadata ?? {};
  const where = `Secret ${m.namespace}/${m.name} (spec.secretRef)`;
  if (m.labels?.[GIT_CREDENTIALS_LABEL] !== 'true')
    throw new Error(
      `${where} is not allowed as git credentials: it lacks the label ${GIT_CREDENTIALS_LABEL}: "true" that marks a ` +
        `Secret made for that purpose`,
    );
  const hosts = (m.annotations?.[GIT_HOSTS_ANNOTATION] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  if (!hosts.length)
    throw new Error(`${where} names no host its credentials are for (annotation ${GIT_HOSTS_ANNOTATION})`);
  if (!mayReceive(hosts, url))
    throw new Error(
      `${where} is for ${hosts.join(', ')} (annotation ${GIT_HOSTS_ANNOTATION}); spec.url host ` +
        `${new URL(url).host} is not one of them`,
    );
  return hosts;
}

/**
 * mayReceive tells whether credentials for `hosts` may be sent with a request to `url`: its host:port, or for https
 * its bare host name, is listed. An entry without a port matches every https port of that host; credentials go over
 * plain http only to a port the entry names, so that a url moved to another port of the host (or to http) does not
 * send them in the clear.
 */
export function mayReceive(hosts: readonly string[], url: string): boolean {
  const u = new URL(url);
  const name = u.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  const https = u.protocol === 'https:';
  return hosts.some((h) => {
    const entry = h.toLowerCase();
    if (entry === `${name}:${port}` || entry === `[${name}]:${port}`) return true;
    return https && (entry === name || entry === `[${name}]`);
  });
}

/** defaultHosts are the hosts credentials without a host list go to: the host and port of the source's url alone. */
export function defaultHosts(url: string): string[] {
  const u = new URL(url);
  return [`${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`];
}

/**
 * withCredentialsFor is the headers of one request to `url` (a hop of `firstUrl`'s call): the Authorization header
 * only where `hosts` may receive it and the call was not moved from https to plain http; removed otherwise.
 */
export function withCredentialsFor(
  headers: Record<string, string> | undefined,
  url: string,
  hosts: readonly string[],
  firstUrl: string,
): Record<string, string> | undefined {
  if (!headers) return headers;
  const downgraded = new URL(firstUrl).protocol === 'https:' && new URL(url).protocol !== 'https:';
  if (mayReceive(hosts, url) && !downgraded) return headers;
  return Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'authorization'));
}
