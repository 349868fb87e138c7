import net from 'node:net';

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
}

/**
 * FrontDoor is the address a sleeping tenant keeps: a TCP relay, bytes untouched (TLS passes through, the client
 * verifies the apiserver's own certificate and the apiserver authenticates the client), in front of the tenant
 * apiserver. Each accepted connection is held (its bytes buffered by the kernel) until upstream() answers, then
 * relayed. It counts open connections and remembers when the last one opened or carried bytes, which is how idleness
 * is judged: the manager reaches the apiserver directly, so only the tenant's own users keep it awake.
 */
export class FrontDoor {
  private open = 0;
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
    this.open++;
    this.touch();
    this.sockets.add(client);
    client.pause();
    let upstream: net.Socket | undefined;
    const close = () => {
      client.destroy();
      upstream?.destroy();
    };
    client.on('error', close);
    client.once('close', () => {
      this.open--;
      this.touch();
      this.sockets.delete(client);
      upstream?.destroy();
    });
    client.on('data', () => this.touch());
    this.opts.upstream().then(
      (to) => {
        if (client.destroyed) return;
        const up = net.connect(to.port, to.host);
        upstream = up;
        this.sockets.add(up);
        up.on('close', () => {
          this.sockets.delete(up);
          client.destroy();
        });
        up.on('error', close);
        up.on('data', () => this.touch());
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
