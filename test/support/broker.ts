import { randomBytes } from 'node:crypto';
import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib';

export const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export const uniqueExchange = (): string => `test.payment.events.${randomBytes(4).toString('hex')}`;

/** Deletes an exchange a test made (a no-op when it does not exist or the broker is away). */
export async function deleteExchange(exchange: string, url = AMQP_URL): Promise<void> {
  try {
    const connection = await amqp.connect(url);
    try {
      const channel = await connection.createChannel();
      await channel.deleteExchange(exchange);
    } finally {
      await connection.close().catch(() => undefined);
    }
  } catch {
    // Nothing to clean up.
  }
}

/** A queue of the test's own bound to the exchange, collecting every message it receives. */
export class EventConsumer {
  readonly messages: ConsumeMessage[] = [];
  private connection: ChannelModel | null = null;

  constructor(
    private readonly exchange: string,
    private readonly bindingKey = '#',
    private readonly url = AMQP_URL,
  ) {}

  async start(): Promise<this> {
    this.connection = await amqp.connect(this.url);
    const channel = await this.connection.createChannel();
    await channel.assertExchange(this.exchange, 'topic', { durable: true });
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
    await channel.bindQueue(queue, this.exchange, this.bindingKey);
    await channel.consume(queue, (message) => message && this.messages.push(message), { noAck: true });
    return this;
  }

  bodies<T = Record<string, unknown>>(): T[] {
    return this.messages.map((m) => JSON.parse(m.content.toString('utf8')) as T);
  }

  async waitFor(count: number, timeoutMs = 15_000): Promise<ConsumeMessage[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} messages, got ${this.messages.length}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return this.messages;
  }

  /** Stops consuming and deletes the exchange (it belongs to the test). */
  async stop(): Promise<void> {
    if (!this.connection) return;
    const channel = await this.connection.createChannel();
    await channel.deleteExchange(this.exchange).catch(() => undefined);
    await this.connection.close().catch(() => undefined);
    this.connection = null;
  }
}
