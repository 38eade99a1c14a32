import type { Duplex } from 'node:stream';
import amqp, { type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import type { Logger } from '../observability/logger';
import type { PublishFailureReason, RelayMetrics } from '../observability/metrics';
import { CLOUDEVENTS_CONTENT_TYPE } from './cloudEvents';

export interface OutgoingEvent {
  id: string;
  type: string;
  message: string;
  /** When it was stored: the AMQP timestamp, on its first publication and on every replay. */
  createdAt: Date;
}

declare module 'amqplib' {
  interface Connection {
    /** The socket amqplib writes its frames to (lib/connection.js), left out of its typings. */
    readonly stream?: Duplex;
  }
}

/**
 * Holds a socket's writes back while a batch is published, so that the batch leaves in one write (one system call
 * here, one read for the broker) rather than one per message. amqplib moves a channel's frames to the socket, one
 * write each, in a setImmediate that the channel's 'readable' event (a nextTick, queued by the first publish)
 * schedules; the socket is uncorked in a setImmediate queued after that one. Were amqplib to flush otherwise,
 * the writes would only go out one by one again: the order of frames never depends on it.
 */
function corked<T>(socket: Duplex | undefined, publishAll: () => T): T {
  socket?.cork();
  try {
    return publishAll();
  } finally {
    if (socket) process.nextTick(() => setImmediate(() => socket.uncork()));
  }
}

/**
 * What opening does to the exchange: the relay declares it (durable topic); a replay only checks that it exists,
 * so that it never fails on an exchange declared otherwise (406) nor makes one; the default exchange ('') is there.
 */
export type ExchangeDeclaration = 'assert' | 'check' | 'none';

/** How a message is sent: by default to the exchange with its type as routing key, as the relay does. */
export interface PublishOptions {
  routingKey?: string;
  headers?: Readonly<Record<string, string>>;
}

/** The header a replayed message carries: when the replay published it (ISO 8601). */
export const REPLAY_HEADER = 'replayed-at';

/**
 * What the broker said of one message: confirmed (`routed` false when it was returned first: published
 * `mandatory`, no queue was bound for its routing key), or why it was not.
 */
export type PublishResult =
  { id: string; ok: true; routed: boolean } | { id: string; ok: false; reason: PublishFailureReason; error: string };

/** Whether the broker answers: null when it does, or why not (a code such as ECONNREFUSED). */
export async function probeBroker(url: string, timeoutMs: number): Promise<string | null> {
  try {
    const connection = await amqp.connect(url, {
      timeout: timeoutMs,
      clientProperties: { connection_name: 'payment-notification-receiver:probe' },
    });
    connection.on('error', () => undefined);
    await connection.close().catch(() => undefined);
    return null;
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    return typeof code === 'string' ? code : typeof message === 'string' ? message : 'unknown error';
  }
}

/**
 * One broker connection with a confirm channel on which the exchange is declared. A message counts
 * as published when the broker confirmed it; one it returned first (no queue bound) is confirmed
 * but not routed.
 */
export class BrokerChannel {
  private connection: ChannelModel | null = null;
  private channel: ConfirmChannel | null = null;
  /** messageIds the broker returned (mandatory, no queue bound); RabbitMQ sends the return before the ack. */
  private readonly returned = new Set<string>();

  constructor(
    private readonly url: string,
    private readonly exchange: string,
    private readonly confirmTimeoutMs: number,
    private readonly metrics: RelayMetrics,
    private readonly logger: Logger,
    private readonly declare: ExchangeDeclaration = 'assert',
  ) {}

  get isOpen(): boolean {
    return this.channel !== null;
  }

  async open(): Promise<void> {
    if (this.channel) return;
    const connection = await amqp.connect(this.url, {
      clientProperties: { connection_name: 'payment-notification-receiver:relay' },
    });
    // Listen for errors at once: a connection that breaks while the channel is being set up emits
    // 'error', and an 'error' without a listener would end the process.
    connection.on('error', (error: Error) =>
      this.logger.warn({ err: { message: error.message } }, 'broker connection error'),
    );
    try {
      const channel = await connection.createConfirmChannel();
      channel.on('error', (error: Error) =>
        this.logger.warn({ err: { message: error.message } }, 'broker channel error'),
      );
      if (this.declare === 'assert') await channel.assertExchange(this.exchange, 'topic', { durable: true });
      else if (this.declare === 'check') await channel.checkExchange(this.exchange);
      channel.on('return', (message: Message) => {
        const id = message.properties.messageId as string | undefined;
        if (id) this.returned.add(id);
      });
      channel.on('close', () => this.dropped());
      connection.on('close', () => this.dropped());
      this.connection = connection;
      this.channel = channel;
      this.metrics.brokerConnectionUp.set(1);
      this.logger.info({ exchange: this.exchange }, 'broker connected');
    } catch (error) {
      await connection.close().catch(() => undefined);
      throw error;
    }
  }

  private dropped(): void {
    if (this.channel || this.connection) this.logger.warn('broker connection closed');
    this.channel = null;
    const connection = this.connection;
    this.connection = null;
    this.metrics.brokerConnectionUp.set(0);
    connection?.close().catch(() => undefined);
  }

  /**
   * Whether a queue exists and may be published to: `exclusive` when another connection holds it exclusively (a
   * consumer's private queue, such as `events watch`'s: the broker answers a passive declare of it with 405
   * RESOURCE_LOCKED). Asked on a channel of its own (the broker closes a channel that asks for a missing or locked
   * queue). Throws when there is no connection.
   */
  async queueState(queue: string): Promise<'available' | 'missing' | 'exclusive'> {
    if (!this.connection) throw new Error('no broker connection');
    const channel = await this.connection.createChannel();
    channel.on('error', () => undefined);
    try {
      await channel.checkQueue(queue);
      return 'available';
    } catch (error) {
      const { code } = error as { code?: unknown };
      if (code === 404) return 'missing';
      if (code === 405) return 'exclusive';
      throw error;
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  /** Publishes every event and waits for each confirm (or the batch's confirm timeout). Never throws. */
  async publish(events: readonly OutgoingEvent[], options: PublishOptions = {}): Promise<PublishResult[]> {
    const channel = this.channel;
    if (!channel)
      return events.map((e) => ({ id: e.id, ok: false, reason: 'connection', error: 'no broker connection' }));
    const settlers: Array<(result: PublishResult) => void> = [];
    const confirmed = corked(this.connection?.connection.stream, () =>
      events.map(
        (event) =>
          new Promise<PublishResult>((resolve) => {
            settlers.push(resolve);
            const settle = (error: unknown): void => {
              const returned = this.returned.delete(event.id);
              if (error)
                resolve({
                  id: event.id,
                  ok: false,
                  reason: this.channel ? 'nack' : 'connection',
                  error: error instanceof Error ? error.message : JSON.stringify(error),
                });
              else resolve({ id: event.id, ok: true, routed: !returned });
            };
            try {
              channel.publish(
                this.exchange,
                options.routingKey ?? event.type,
                Buffer.from(event.message),
                {
                  persistent: true,
                  mandatory: true,
                  messageId: event.id,
                  contentType: CLOUDEVENTS_CONTENT_TYPE,
                  type: event.type,
                  timestamp: Math.floor(event.createdAt.getTime() / 1000),
                  ...(options.headers ? { headers: options.headers } : {}),
                },
                settle,
              );
            } catch (error) {
              resolve({ id: event.id, ok: false, reason: 'connection', error: (error as Error).message });
            }
          }),
      ),
    );
    // One timer for the batch: whatever is unconfirmed when it fires counts as timed out (a
    // promise settles once, so confirms that arrived first keep their result).
    const timer = setTimeout(() => {
      events.forEach((event, i) =>
        settlers[i]?.({
          id: event.id,
          ok: false,
          reason: 'timeout',
          error: `no confirm within ${this.confirmTimeoutMs} ms`,
        }),
      );
    }, this.confirmTimeoutMs);
    const results = await Promise.all(confirmed).finally(() => clearTimeout(timer));
    // After a timeout the channel's state is unknown: start over on a fresh connection.
    if (results.some((r) => !r.ok && r.reason === 'timeout')) await this.close();
    return results;
  }

  /** Closes the connection; a broker that does not answer the close within a second is left behind. */
  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    this.channel = null;
    this.metrics.brokerConnectionUp.set(0);
    if (!connection) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      connection.close().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 1000);
      }),
    ]).finally(() => clearTimeout(timer));
  }
}
