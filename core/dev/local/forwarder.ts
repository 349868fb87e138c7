import net from 'node:net';

/** ForwarderOptions say where a TcpForwarder listens and the one address it forwards to. */
export interface ForwarderOptions {
  /** address to listen on, e.g. a real node's bridge gateway */
  host: string;
  /** port to listen on; 0 picks a free one */
  port: number;
  /** the only destination: every accepted connection goes there, whatever the client sends */
  target: { host: string; port: number };
}

/**
 * TcpForwarder relays TCP connections from one listening address to one fixed destination, bytes untouched (TLS
 * passes through end to end: the client verifies the destination's certificate, the destination authenticates the
 * client). It is how Pods on a real node reach a tenant apiserver that listens on the host's loopback: the
 * destination is fixed when it starts, so a client can reach nothing else through it.
 */
export class TcpForwarder {
  private constructor(
    private readonly server: net.Server,
    private readonly sockets: Set<net.Socket>,
    /** port is where it listens */
    readonly port: number,
    readonly opts: ForwarderOptions,
  ) {}

  /** TcpForwarder.start listens on host:port and relays each connection to the target. */
  static async start(opts: ForwarderOptions): Promise<TcpForwarder> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((client) => {
      const upstream = net.connect(opts.target.port, opts.target.host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new TcpForwarder(server, sockets, (server.address() as net.AddressInfo).port, opts);
  }

  /** stop closes the listener and every relayed connection. */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
