import net from 'node:net';

/**
 * A TCP proxy the test can cut and restore, so a "database down" or "broker down" is simulated
 * without touching the shared servers. Cut: open connections are destroyed and new ones refused
 * (closed immediately).
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private cut = false;
  port = 0;

  constructor(private readonly targetPort: number, private readonly targetHost = '127.0.0.1') {
    this.server = net.createServer((client) => this.accept(client));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  private accept(client: net.Socket): void {
    if (this.cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  /** Drops every open connection and refuses new ones until restore(). */
  cutConnections(): void {
    this.cut = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.cut = false;
  }

  async stop(): Promise<void> {
    this.cutConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
