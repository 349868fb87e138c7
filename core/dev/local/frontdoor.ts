import net from 'node:net';
import { Counter } from 'prom-client';
import { registry as metricsRegistry } from '../../metrics/registry.ts';

/** FRONT_DOOR_CONNECTIONS is the most connections one front door holds at once (FrontDoorOptions.maxConnections). */
export const FRONT_DOOR_CONNECTIONS = 128;

/** FRONT_DOORS_CONNECTIONS is the most connections all the front doors of a manager hold at once (ConnectionCap). */
export const FRONT_DOORS_CONNECTIONS = 2048;

/**
 * HELLO_TIMEOUT_MS is how long an accepted connection may take to send the first bytes of its TLS handshake; until it
 * has, it neither wakes the tenant nor counts as use.
 */
export const HELLO_TIMEOUT_MS = 10_000;

/** TLS_HANDSHAKE is the content type of a TLS record that carries a handshake message: a ClientHello starts with it. */
const TLS_HANDSHAKE = 0x16;

/** frontDoorRefused counts connections a front door closed without relaying them, by why. */
export const frontDoorRefused = new Counter({
  name: 'vc_frontdoor_connections_refused_total',
  help:
    "Connections a front door closed without relaying: full (its own or all front doors' connection limit reached), " +
    'not-tls (the first bytes were not a TLS handshake), silent (no bytes within the hello timeout).',
  labelNames: ['reason'],
  registers: [metricsRegistry],
});

/**
 * ConnectionCap bounds the connections several front doors hold together: each holds two of the manager's file
 * descriptors (client and apiserver), and the manager's own work needs the rest.
 */
export class ConnectionCap {
  private held = 0;

  constructor(
    /** max is the most connections held at once */
    readonly max: number,
  ) {}

  /** take holds one more connection, or answers false when max are held already. */
  take(): boolean {
    if (this.held >= this.max) return false;
    this.held++;
    return true;
  }

  /** give lets go of one connection take held. */
  give(): void {
    this.held--;
  }
}

/** FrontDoorOptions say where a FrontDoor listens and how it reaches (and wakes) the apiserver behind it. */
export interface FrontDoorOptions {
  /** address to listen on (127.0.0.1: the apiserver certificate names it) */
  host: string;
  /** port to listen on; 0 picks a free one */
  port: number;
  /** when idleness starts counting (ms epoch); default now, 0 for a tenant already asleep */
  activeSinceMs?: number;
  /**
   * upstream answers where the apiserver listens now, starting it first when it sleeps; every connection waits for
   * it, so a client's first request while the tenant sleeps is held until the apiserver answers
   */
  upstream: () => Promise<{ host: string; port: number }>;
  /** the most connections it holds at once (default FRONT_DOOR_CONNECTIONS); one more is closed at once */
  maxConnections?: number;
  /** a bound it shares with other front doors (default: none) */
  shared?: ConnectionCap;
  /** how long a connection may stay silent before its first TLS bytes (default HELLO_TIMEOUT_MS) */
  helloTimeoutMs?: number;
}

/**
 * FrontDoor is the address a sleeping tenant keeps: a TCP relay, bytes untouched (TLS passes through, the client
 * verifies the apiserver's own certificate and the apiserver authenticates the client), in front of the tenant
 * apiserver. A connection counts once its first bytes are a TLS handshake record (a ClientHello, which every client of
 * the apiserver sends first): then it is held (its bytes buffered by the kernel) until upstream() answers, and relayed.
 * One that sends something else, or nothing within the hello timeout, is closed without waking the tenant; so is one
 * past the door's or the shared connection limit. It counts open connections and remembers when the last one spoke
 * TLS or carried bytes, which is how idleness is judged: the manager reaches the apiserver directly, so only the
 * tenant's own users keep it awake. It cannot tell a user from a client without credentials, which the apiserver
 * refuses behind it: what such wakes cost is bounded per tenant by its policy's sleep.maxWakesPerHour.
 */
export class FrontDoor {
  private open = 0;
  /** connections accepted and not closed, whether they spoke TLS yet or not */
  private held = 0;
  private last: number;

  private constructor(
    private readonly server: net.Server,
    private readonly sockets: Set<net.Socket>,
    /** port is where it listens */
    readonly port: number,
    readonly opts: FrontDoorOptions,
  ) {
    this.last = opts.activeSinceMs ?? Date.now();
  }

  /** FrontDoor.start listens on host:port. */
  static async start(opts: FrontDoorOptions): Promise<FrontDoor> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const door = new FrontDoor(server, sockets, (server.address() as net.AddressInfo).port, opts);
    server.on('connection', (client) => door.accept(client));
    return door;
  }

  /** activity is the number of open client connections and when the last one opened or carried bytes (ms epoch). */
  activity(): { open: number; lastActiveMs: number } {
    return { open: this.open, lastActiveMs: this.last };
  }

  private touch(): void {
    this.last = Date.now();
  }

  private accept(client: net.Socket): void {
    const shared = this.opts.shared;
    if (this.held >= (this.opts.maxConnections ?? FRONT_DOOR_CONNECTIONS) || (shared && !shared.take())) {
      frontDoorRefused.inc({ reason: 'full' });
      client.destroy();
      return;
    }
    this.held++;
    this.sockets.add(client);
    let upstream: net.Socket | undefined;
    let spoke = false;
    const close = () => {
      client.destroy();
      upstream?.destroy();
    };
    client.on('error', close);
    client.once('close', () => {
      clearTimeout(silent);
      this.held--;
      shared?.give();
      if (spoke) {
        this.open--;
        this.touch();
      }
      this.sockets.delete(client);
      upstream?.destroy();
    });
    const silent = setTimeout(() => {
      frontDoorRefused.inc({ reason: 'silent' });
      client.destroy();
    }, this.opts.helloTimeoutMs ?? HELLO_TIMEOUT_MS);
    client.once('data', (first: Buffer) => {
      client.pause();
      clearTimeout(silent);
      if (first[0] !== TLS_HANDSHAKE) {
        frontDoorRefused.inc({ reason: 'not-tls' });
        client.destroy();
        return;
      }
      spoke = true;
      this.open++;
      this.touch();
      client.on('data', () => this.touch());
      this.relay(client, first, close, (up) => (upstream = up));
    });
  }

  /** relay connects the client, whose first bytes were `first`, to upstream(), waking the tenant first if it sleeps. */
  private relay(client: net.Socket, first: Buffer, close: () => void, opened: (up: net.Socket) => void): void {
    this.opts.upstream().then(
      (to) => {
        if (client.destroyed) return;
        const up = net.connect(to.port, to.host);
        opened(up);
        this.sockets.add(up);
        up.on('close', () => {
          this.sockets.delete(up);
          client.destroy();
        });
        up.on('error', close);
        up.on('data', () => this.touch());
        up.write(first);
        client.pipe(up);
        up.pipe(client);
        client.resume();
      },
      // The tenant could not be woken: the client sees its connection closed and retries like after any outage.
      () => client.destroy(),
    );
  }

  /** stop closes the listener and every relayed connection. */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
