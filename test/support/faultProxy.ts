import net from 'node:net';

export type FaultMode = 'pass' | 'reset' | 'silent';

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
}

/**
 * A TCP proxy between the service and Postgres or RabbitMQ (the shared servers are never touched).
 * - reset:  every open connection is destroyed and new ones are closed at once (a crashed server,
 *           a firewall sending RST): the client learns at once.
 * - silent: a network partition: nothing is forwarded in either direction and nothing is closed;
 *           new connections are accepted but get no answer. When the network heals (pass), the
 *           delayed bytes flow on, as TCP retransmission would deliver them.
 * Independently of the mode, `latencyMs` delays every chunk in each direction (a slow database), and
 * `switchTo` moves it to another server (a Kubernetes Service after a failover).
 */
export class FaultProxy {
  private readonly server: net.Server;
  private readonly pairs = new Set<Pair>();
  private mode: FaultMode = 'pass';
  port = 0;
  /** Connections accepted over the proxy's life (the service's reconnects show here). */
  connections = 0;
  /** Added to every chunk, each way (order kept, also when it changes). */
  latencyMs = 0;

  constructor(
    private targetPort: number,
    private targetHost = '127.0.0.1',
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  get currentMode(): FaultMode {
    return this.mode;
  }

  private accept(client: net.Socket): void {
    this.connections += 1;
    // Like real proxies (and Postgres and pg themselves), forward each chunk at once: with Nagle's
    // algorithm on, a pipelined answer's later chunks would wait for the peer's delayed ACK (40 ms).
    client.setNoDelay(true);
    client.on('error', () => undefined);
    if (this.mode === 'reset') {
      client.destroy();
      return;
    }
    const pair: Pair = { client, upstream: null };
    this.pairs.add(pair);
    client.on('close', () => {
      pair.upstream?.destroy();
      this.pairs.delete(pair);
    });
    if (this.mode === 'silent') client.pause();
    else this.connectUpstream(pair);
  }

  private connectUpstream(pair: Pair): void {
    const upstream = net.connect(this.targetPort, this.targetHost);
    upstream.setNoDelay(true);
    pair.upstream = upstream;
    upstream.on('error', () => undefined);
    upstream.on('close', () => pair.client.destroy());
    this.forward(pair.client, upstream);
    this.forward(upstream, pair.client);
    if (this.mode === 'silent') upstream.pause();
    else pair.client.resume();
  }

  /**
   * Manual forwarding (not pipe) so that a drain never resumes a socket the fault paused. Chunks
   * held back by the latency leave in arrival order, also when latencyMs changes meanwhile (a
   * chunk must never overtake one held before it: the byte stream would be corrupt).
   */
  private forward(from: net.Socket, to: net.Socket): void {
    /** null: the end of the stream. */
    const held: Array<{ chunk: Buffer | null; at: number }> = [];
    let timer: NodeJS.Timeout | null = null;
    const release = (): void => {
      timer = null;
      for (let next = held[0]; next && next.at <= Date.now(); next = held[0]) {
        held.shift();
        if (next.chunk) to.write(next.chunk);
        else to.end();
      }
      if (held[0]) timer = setTimeout(release, held[0].at - Date.now());
    };
    const hold = (chunk: Buffer | null): void => {
      held.push({ chunk, at: Math.max(Date.now() + this.latencyMs, held[held.length - 1]?.at ?? 0) });
      timer ??= setTimeout(release, (held[0]?.at ?? 0) - Date.now());
    };
    from.on('data', (chunk: Buffer) => {
      if (this.latencyMs > 0 || held.length > 0) {
        hold(chunk);
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => {
          if (this.mode === 'pass') from.resume();
        });
      }
    });
    from.on('end', () => (this.latencyMs > 0 || held.length > 0 ? hold(null) : to.end()));
  }

  reset(): void {
    this.mode = 'reset';
    this.closeAll();
  }

  /**
   * The endpoint now leads to another server (a promoted standby): every connection held is closed, as a
   * failover closes them, and new ones reach `targetPort`. The mode is kept.
   */
  switchTo(targetPort: number, targetHost = this.targetHost): void {
    this.targetPort = targetPort;
    this.targetHost = targetHost;
    this.closeAll();
  }

  private closeAll(): void {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream?.destroy();
    }
    this.pairs.clear();
  }

  silent(): void {
    this.mode = 'silent';
    for (const pair of this.pairs) {
      pair.client.pause();
      pair.upstream?.pause();
    }
  }

  /** The network is back: new connections pass, paused ones flow on. */
  pass(): void {
    this.mode = 'pass';
    for (const pair of this.pairs) {
      if (pair.upstream) {
        pair.upstream.resume();
        pair.client.resume();
      } else {
        this.connectUpstream(pair);
      }
    }
  }

  async stop(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
