import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import pg from 'pg';
import { applyEvent, createSchema } from './store';
import { checkEvent } from './validateEvent';

/**
 * A reference consumer of the payment events (docs/EVENTS.md): one durable queue of the team's own, bound to the
 * routing keys it acts on, with a dead-letter queue beside it; each message checked against the published schemas,
 * applied to the team's own database in one transaction, and acked only after the commit.
 *
 * - Idempotent on the event `id`: delivery is at least once (a relay restart, a replay), and a duplicate changes
 *   nothing (store.ts).
 * - Forward only by status rank, never by arrival order or `data.sequence` gaps (store.ts).
 * - Holds an order or refund whose event carries `disagreements` or a status conflict (store.ts).
 * - Poison messages (not JSON, not the contract, another major version in `dataschema`) go to the dead-letter queue
 *   at once (nack without requeue), where a person looks; event types it does not know are acked and counted.
 * - One consumer per queue, and one message at a time: the per-order order the service publishes in holds only
 *   then. It consumes exclusively, so a second instance on the same queue is refused by the broker. Scale by
 *   giving each instance a queue of its own for other routing keys, not by competing consumers.
 * - A database that fails: the message is retried in place (backing off), so nothing after it overtakes it; on
 *   stop, a message not yet committed is left unacked and the broker delivers it again.
 */

export interface ConsumerOptions {
  amqpUrl: string;
  /** The service's exchange (AMQP_EXCHANGE, default payment.events). */
  exchange: string;
  /** The team's durable queue; its dead letters go to `${queue}.dead`. */
  queue: string;
  /** Routing keys or patterns to bind: what the team acts on (EVENTS.md, "What to bind and what to act on"). */
  bindings: readonly string[];
  databaseUrl: string;
  /** Messages the broker sends ahead of the acks (they are still handled one at a time, in order). */
  prefetch?: number;
  /** First wait before retrying a message whose transaction failed; doubles to a minute. */
  retryMs?: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

export interface ConsumerStats {
  applied: number;
  duplicates: number;
  /** Event types this version does not know, acked. */
  ignored: number;
  deadLettered: number;
  /** Transactions that failed and were retried. */
  failures: number;
}

export const deadLetterQueue = (queue: string): string => `${queue}.dead`;

export class PaymentEventConsumer {
  readonly stats: ConsumerStats = { applied: 0, duplicates: 0, ignored: 0, deadLettered: 0, failures: 0 };
  private connection: ChannelModel | null = null;
  private channel: Channel | null = null;
  private readonly pool: pg.Pool;
  private chain: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();

  constructor(private readonly options: ConsumerOptions) {
    this.pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 2,
      application_name: 'payment-event-consumer',
    });
    // A connection lost while idle, or while in use (its query fails, and the message is retried): logged, never
    // an unhandled 'error' that would end the process.
    this.pool.on('error', (error) => this.log('database connection lost', { error: error.message }));
    this.pool.on('connect', (client) =>
      client.on('error', (error) => this.log('database connection lost', { error: error.message })),
    );
  }

  async start(): Promise<void> {
    await createSchema(this.pool);
    const { amqpUrl, exchange, queue, bindings } = this.options;
    const connection = await amqp.connect(amqpUrl);
    connection.on('error', (error: Error) => this.log('broker connection error', { error: error.message }));
    const channel = await connection.createChannel();
    channel.on('error', (error: Error) => this.log('broker channel error', { error: error.message }));
    this.connection = connection;
    this.channel = channel;
    await channel.assertExchange(exchange, 'topic', { durable: true });
    await channel.assertQueue(deadLetterQueue(queue), { durable: true });
    await channel.assertQueue(queue, {
      durable: true,
      arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': deadLetterQueue(queue) },
    });
    for (const binding of bindings) await channel.bindQueue(queue, exchange, binding);
    await channel.prefetch(this.options.prefetch ?? 50);
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        // One at a time, in the order the broker delivers them.
        this.chain = this.chain.then(() => this.handle(channel, message));
      },
      { noAck: false, exclusive: true },
    );
  }

  /** Stops taking messages, lets the one in hand finish (or give up, unacked), and closes everything. */
  async stop(): Promise<void> {
    this.stopping.abort();
    const connection = this.connection;
    this.connection = null;
    this.channel = null;
    await this.chain;
    await connection?.close().catch(() => undefined);
    await this.pool.end();
  }

  private async handle(channel: Channel, message: ConsumeMessage): Promise<void> {
    if (this.stopping.signal.aborted) return;
    // A replay into this queue comes through the default exchange: its routing key is the queue's name, its
    // AMQP type the event's.
    const type = typeof message.properties.type === 'string' ? message.properties.type : message.fields.routingKey;
    const checked = checkEvent(type, message.content);
    if (checked.outcome === 'unknown_type') {
      this.stats.ignored++;
      this.log('event type not handled: acked', { type });
      channel.ack(message);
      return;
    }
    if (checked.outcome === 'invalid') {
      this.stats.deadLettered++;
      this.log('poison message: dead-lettered', { type, problems: checked.problems });
      channel.nack(message, false, false);
      return;
    }
    for (let waitMs = this.options.retryMs ?? 1000; ; waitMs = Math.min(waitMs * 2, 60_000)) {
      try {
        const applied = await applyEvent(this.pool, checked.event);
        if (applied === 'applied') this.stats.applied++;
        else this.stats.duplicates++;
        // After the commit, never before: a crash in between means a redelivery, which is a duplicate.
        channel.ack(message);
        return;
      } catch (error) {
        this.stats.failures++;
        this.log('event not applied; retrying', { id: checked.event.id, error: (error as Error).message, waitMs });
        if (!(await this.pause(waitMs))) return; // stopping: left unacked, delivered again
      }
    }
  }

  /** Waits, unless the consumer stops first; false when it did. */
  private pause(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.stopping.signal.aborted) return resolve(false);
      const timer = setTimeout(() => resolve(true), ms);
      this.stopping.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
  }

  private log(message: string, fields: Record<string, unknown> = {}): void {
    this.options.log?.(message, { queue: this.options.queue, ...fields });
  }
}
