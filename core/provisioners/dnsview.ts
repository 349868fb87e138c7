import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { readyEndpointsOn, superClusterIPOn } from '@virtualcluster-ts/plugin-sdk';
import { ANN } from '../names/names.ts';

/** DnsViewOptions say where a DnsView listens, its serving certificate, and the tenant apiserver behind it. */
export interface DnsViewOptions {
  host: string;
  /** 0 picks a free port */
  port: number;
  /** serving certificate for `host`, from the tenant CA (the DNS Pod verifies it with its ServiceAccount ca.crt) */
  certPem: string;
  keyPem: string;
  /** the tenant apiserver on loopback and its CA */
  target: { host: string; port: number; caPem: string };
  /** the super clusters whose Pod networks are joined (superAddressed); absent: none */
  joined?: JoinedNetworks;
}

interface ServiceLike {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  spec?: { type?: string; clusterIP?: string; clusterIPs?: string[]; externalName?: string };
}

/** SUPER_VIEW_PATH is the path prefix of the view of one super cluster (superViewServer), then the API path. */
const SUPER_VIEW_PATH = /^\/super\/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\/.*)$/;

/** splitSuperView reads the super cluster of a request path with SUPER_VIEW_PATH, and the API path it asks. */
export function splitSuperView(url: string): { superCluster?: string; path: string } {
  const m = SUPER_VIEW_PATH.exec(url);
  return m ? { superCluster: m[1]!, path: m[3]! } : { path: url };
}

/**
 * notHereName is the name a Service without a copy on super cluster `superCluster` is shown as (an ExternalName whose
 * target says why, under the reserved `.invalid` domain, so nothing resolves it further): a Pod there asking for it
 * gets that CNAME and no address, at once, rather than a cluster IP of another super cluster.
 */
export function notHereName(svc: ServiceLike, superCluster: string): string {
  return `${svc.metadata?.name ?? 'service'}.${svc.metadata?.namespace ?? 'default'}.not-on-super-cluster-${superCluster}.invalid`;
}

/**
 * JoinedNetworks says, for a super cluster, the other super clusters whose Pod network its Pods reach (the manager
 * configuration's `superClusters[].network`: entries with one network name are joined). Absent: none is joined.
 */
export type JoinedNetworks = (superCluster: string) => ReadonlySet<string>;

/**
 * joinedNetworks makes JoinedNetworks from super cluster names and their network names (entries without a network
 * are joined to none).
 */
export function joinedNetworks(supers: ReadonlyArray<{ name: string; network?: string }>): JoinedNetworks {
  const byName = new Map(supers.map((s) => [s.name, s.network]));
  return (superCluster) => {
    const net = byName.get(superCluster);
    if (!net) return new Set();
    return new Set(supers.filter((s) => s.network === net && s.name !== superCluster).map((s) => s.name));
  };
}

/** SUPER_IP_PREFIX is the annotation prefix under which each syncer records its super copy's cluster IP. */
const SUPER_IP_PREFIX = `${ANN.superClusterIP}.`;

/** copiesOf are the super clusters a tenant Service has a copy with a cluster IP on (the syncers' annotations). */
function copiesOf(svc: ServiceLike): string[] {
  return Object.keys(svc.metadata?.annotations ?? {})
    .filter((k) => k.startsWith(SUPER_IP_PREFIX) && svc.metadata!.annotations![k])
    .map((k) => k.slice(SUPER_IP_PREFIX.length));
}

/**
 * joinedReady are the ready addresses of a tenant Service's copies on the super clusters `reach` names (each copy's
 * syncer records them, readyEndpointsOn), when the copy on `superCluster` is recorded with none ready; undefined when
 * that copy has a ready address, has none recorded (its syncer has not said), or no copy in reach has one.
 */
function joinedReady(
  svc: ServiceLike,
  superCluster: string,
  reach: ReadonlySet<string> | undefined,
): string[] | undefined {
  const a = svc.metadata?.annotations ?? {};
  const own = readyEndpointsOn(superCluster);
  if (!reach?.size || !own || a[own] !== '') return undefined;
  const out = new Set<string>();
  for (const c of [...reach].sort()) {
    const k = readyEndpointsOn(c);
    for (const ip of k && a[k] ? a[k].split(',') : []) if (ip) out.add(ip);
  }
  return out.size ? [...out].sort() : undefined;
}

/**
 * superAddressed shows a tenant Service as the DNS server of one super cluster must answer it. With one super cluster
 * (no `superCluster`) the Service is returned as it is: its own cluster IP, which the nodes translate to the copy's for
 * the tenant's Pods. With `superCluster` (several super clusters, each DNS server reading the view of its own), it is
 * shown with the cluster IP of that super cluster's copy (superClusterIPOn), which says on which super clusters the
 * Service has a copy at all. Headless and ExternalName Services, and Services whose super copy has no IP yet, are
 * returned as they are. A Service with none there, whose copies are all on super clusters `joined` says that one's Pods
 * reach, is shown headless: the DNS server then answers the ready Pod IPs of the tenant's EndpointSlices, which carry
 * packets across the joined network, where the other super cluster's cluster IP would not. Any other Service with
 * no copy there is shown as an ExternalName named by notHereName. A Service whose copy there is recorded with no
 * ready address while copies on super clusters `joined` reaches have some (joinedReady) is shown with those
 * addresses as its cluster IPs: the DNS server answers each of them, the tenant's own Pods there, across the joined
 * network; as soon as the copy there has a ready address again it is answered with that copy's cluster IP.
 */
export function superAddressed<T extends ServiceLike>(svc: T, superCluster?: string, joined?: JoinedNetworks): T {
  const own = svc.spec?.clusterIP;
  if (!own || own === 'None' || svc.spec?.type === 'ExternalName') return svc;
  // One super cluster: the tenant's own cluster IP, which every node translates for the tenant's Pods
  // (core/vnagent/clusterips.ts), so names, reverse names and the Service's spec agree.
  if (superCluster === undefined) return svc;
  const key = superCluster === undefined ? ANN.superClusterIP : superClusterIPOn(superCluster);
  const ip = key && svc.metadata?.annotations?.[key];
  const reach = superCluster === undefined ? undefined : joined?.(superCluster);
  const far = superCluster === undefined ? undefined : joinedReady(svc, superCluster, reach);
  if (ip && far) return { ...svc, spec: { ...svc.spec, clusterIP: far[0], clusterIPs: far } };
  if (ip) return { ...svc, spec: { ...svc.spec, clusterIP: ip, clusterIPs: [ip] } };
  if (superCluster === undefined) return svc;
  const copies = copiesOf(svc);
  if (reach?.size && copies.length && copies.every((c) => reach.has(c)))
    return { ...svc, spec: { ...svc.spec, clusterIP: 'None', clusterIPs: ['None'] } };
  const spec = { ...svc.spec, type: 'ExternalName', externalName: notHereName(svc, superCluster) };
  delete spec.clusterIP;
  delete spec.clusterIPs;
  return { ...svc, spec };
}

/**
 * rewriteServices applies superAddressed (for `superCluster` and `joined`, if given) to a Service, a ServiceList or a watch event
 * (JSON text), or leaves it.
 */
export function rewriteServices(json: string, superCluster?: string, joined?: JoinedNetworks): string {
  if (!json.trim()) return json;
  const o = JSON.parse(json) as ServiceLike & {
    kind?: string;
    items?: ServiceLike[];
    type?: string;
    object?: ServiceLike & { kind?: string };
  };
  const one = (x: ServiceLike) => superAddressed(x, superCluster, joined);
  if (o.kind === 'ServiceList') return JSON.stringify({ ...o, items: (o.items ?? []).map(one) });
  if (o.kind === 'Service') return JSON.stringify(one(o));
  if (o.type && o.object?.kind === 'Service') return JSON.stringify({ ...o, object: one(o.object) });
  return json;
}

const SERVICES_PATH = /^\/api\/v1\/(namespaces\/[^/]+\/)?services(\/[^/?]+)?(\?|$)/;

/**
 * DnsView is the tenant apiserver as the tenant's DNS server must see it: a read-only (GET only) TLS proxy in front
 * of the tenant apiserver, listening where Pods reach it, that passes the caller's bearer token through (the tenant
 * apiserver authenticates and authorizes every request: the DNS ServiceAccount reads only Services, EndpointSlices and
 * Namespaces) and, with several super clusters, shows each Service with its copy's cluster IP on the view's super
 * cluster (superAddressed). Upstream VirtualCluster answers super cluster IPs from a patched CoreDNS; here the stock
 * CoreDNS `kubernetes` plugin reads this view. Responses
 * are JSON (the proxy asks for it), so it can rewrite list results and watch events line by line.
 */
export class DnsView {
  private constructor(
    private readonly server: https.Server,
    /** port is where it listens */
    readonly port: number,
    readonly opts: DnsViewOptions,
  ) {}

  /** DnsView.start listens on host:port. */
  static async start(opts: DnsViewOptions): Promise<DnsView> {
    const server = https.createServer(
      { cert: opts.certPem, key: opts.keyPem, ALPNProtocols: ['http/1.1'] },
      (req, res) => relay(opts.target, req, res, opts.joined),
    );
    return new DnsView(server, await listen(server, opts.host, opts.port), opts);
  }

  /** stop closes the listener and every connection. */
  async stop(): Promise<void> {
    await close(this.server);
  }
}

/** DnsViewRoute is one tenant behind a shared DnsViews listener. */
export interface DnsViewRoute {
  /** the TLS server name (SNI) the tenant's DNS server asks for (its kubeconfig's tls-server-name) */
  serverName: string;
  /** serving certificate for serverName, from the tenant CA */
  certPem: string;
  keyPem: string;
  /** the tenant apiserver and its CA */
  target: { host: string; port: number; caPem: string };
}

/**
 * DnsViews serves the DNS views (see DnsView) of several tenant apiservers on one address: each tenant's DNS server
 * names its tenant by the TLS server name it asks for (SNI), gets a certificate of its own tenant's CA for that name,
 * and its requests go to that tenant's apiserver only. A connection without a known server name fails its handshake.
 * The view is a router, not a gate: each tenant apiserver still authenticates the token its DNS server sends.
 */
export class DnsViews {
  private constructor(
    private readonly server: https.Server,
    /** host is where it listens */
    readonly host: string,
    /** port is where it listens */
    readonly port: number,
    private readonly routes: Map<string, { route: DnsViewRoute; context: tls.SecureContext }>,
  ) {}

  /** DnsViews.start listens on host:port (0 picks a free port) with no route yet. */
  static async start(opts: { host: string; port: number; joined?: JoinedNetworks }): Promise<DnsViews> {
    const routes = new Map<string, { route: DnsViewRoute; context: tls.SecureContext }>();
    const server = https.createServer(
      {
        ALPNProtocols: ['http/1.1'],
        SNICallback: (name, cb) => {
          const r = routes.get(name.toLowerCase());
          if (r) cb(null, r.context);
          else cb(new Error(`no tenant DNS view for server name ${name}`));
        },
      },
      (req, res) => {
        const r = routes.get(((req.socket as TLSSocket).servername || '').toLowerCase());
        if (r) return relay(r.route.target, req, res, opts.joined);
        res.writeHead(421, { 'content-type': 'text/plain' }).end('no tenant DNS view for this server name\n');
      },
    );
    return new DnsViews(server, opts.host, await listen(server, opts.host, opts.port), routes);
  }

  /** set adds or replaces the route of a server name. */
  set(route: DnsViewRoute): void {
    const context = tls.createSecureContext({ cert: route.certPem, key: route.keyPem });
    this.routes.set(route.serverName.toLowerCase(), { route, context });
  }

  /** route is the route of a server name, if any. */
  route(serverName: string): DnsViewRoute | undefined {
    return this.routes.get(serverName.toLowerCase())?.route;
  }

  /** delete removes a server name's route; its open connections are served until they close. */
  delete(serverName: string): void {
    this.routes.delete(serverName.toLowerCase());
  }

  /** stop closes the listener and every connection. */
  async stop(): Promise<void> {
    await close(this.server);
  }
}

async function listen(server: https.Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

async function close(server: https.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

function relay(
  target: DnsViewOptions['target'],
  req: IncomingMessage,
  res: ServerResponse,
  joined?: JoinedNetworks,
): void {
  if (req.method !== 'GET') {
    res.writeHead(405, { 'content-type': 'text/plain' }).end('the DNS view of the tenant apiserver is read-only\n');
    return;
  }
  const headers = { ...req.headers, accept: 'application/json', host: `${target.host}:${target.port}` };
  delete headers['accept-encoding'];
  // The DNS server of one super cluster reads the view under its path prefix (superViewPath).
  const { superCluster, path } = splitSuperView(req.url ?? '');
  const up = https.request(
    { host: target.host, port: target.port, path, method: 'GET', headers, ca: target.caPem },
    (ur) => {
      const rewrite = SERVICES_PATH.test(path) && ur.statusCode === 200;
      const h = { ...ur.headers };
      if (rewrite) delete h['content-length'];
      res.writeHead(ur.statusCode ?? 502, h);
      if (!rewrite) {
        ur.pipe(res);
        return;
      }
      // list bodies are one JSON document, watch bodies one event per line: rewrite each complete line
      let rest = '';
      ur.setEncoding('utf8');
      ur.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        if (lines.length) res.write(lines.map((l) => rewriteServices(l, superCluster, joined)).join('\n') + '\n');
      });
      ur.on('end', () => res.end(rest ? rewriteServices(rest, superCluster, joined) : ''));
      ur.on('error', () => res.destroy());
    },
  );
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`tenant apiserver: ${e.message}\n`);
  });
  res.on('close', () => up.destroy());
  up.end();
}
